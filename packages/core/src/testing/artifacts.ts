import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `<repository>/.artifacts`: where tests leave screenshots, tool logs and builds (ignored by git). */
export const ARTIFACTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', '.artifacts');

/**
 * A path for one test artifact, unique to this run: `.artifacts/<name>-<time>-<pid>-<random><ext>`,
 * so parallel and repeated runs never overwrite each other. Creates `.artifacts/` itself.
 */
export function artifactPath(name: string, ext = ''): string {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  return join(ARTIFACTS_DIR, `${name}-${stamp}-${process.pid}-${randomBytes(3).toString('hex')}${ext}`);
}
