/** `npm run build:cli` (and the root `prepare`): compiles the `ironlens` command into packages/cli/dist. */
import { buildCli } from '../packages/cli/src/build';

process.stdout.write(`[build-cli] ${await buildCli()}\n`);
