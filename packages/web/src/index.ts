import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The web package's directory (where `vite.config.ts` lives). */
export const webRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Where `npm run build -w @ironlens/web` writes the console's assets (gitignored). */
export const webDistDir = join(webRoot, 'dist');

/** The command that builds them; servers print it when the assets are missing. */
export const WEB_BUILD_COMMAND = 'npm run build -w @ironlens/web';

export { buildWebAssets } from './build';
