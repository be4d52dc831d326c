import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { AppError } from '../errors';

/**
 * Writes `data` to `file` atomically: a temporary file in the same directory, fsync,
 * then rename over the target. Readers see the old content or the new, never half.
 */
export async function writeFileAtomic(file: string, data: string | Buffer, mode = 0o644): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, 'w', mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
}

/**
 * Resolves a file name that came from a request inside `root`, or refuses it:
 * no absolute paths, no `..`, no symlink that leads outside `root`.
 */
export function resolveInside(root: string, name: string): string {
  if (typeof name !== 'string' || name === '' || name.includes('\0') || isAbsolute(name)) {
    throw new AppError('path_outside_root', `file name not allowed: ${JSON.stringify(name)}`);
  }
  const rootReal = realpathSync(root);
  const candidate = resolve(rootReal, name);
  if (candidate !== rootReal && !candidate.startsWith(rootReal + sep)) {
    throw new AppError('path_outside_root', `file name resolves outside its directory: ${JSON.stringify(name)}`);
  }
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    // Does not exist yet: its parent must still be inside.
    const parent = realpathSync(dirname(candidate));
    if (parent !== rootReal && !parent.startsWith(rootReal + sep)) {
      throw new AppError('path_outside_root', `file name resolves outside its directory: ${JSON.stringify(name)}`);
    }
    return candidate;
  }
  if (real !== rootReal && !real.startsWith(rootReal + sep)) {
    throw new AppError('path_outside_root', `file name resolves outside its directory: ${JSON.stringify(name)}`);
  }
  return candidate;
}
