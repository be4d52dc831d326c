import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync, statSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { AppError, echo } from '../errors';

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

/** True when `path` is `root` or below it (both already resolved). */
function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root + sep);
}

/** The real path of `path`, or undefined when it does not exist (a missing component, or one that is not a directory). */
function realOrMissing(path: string, name: string): string | undefined {
  try {
    return realpathSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ELOOP') throw new AppError('path_invalid', `file name cannot be resolved (symlink loop): ${echo(name)}`);
    if (code === 'ENAMETOOLONG') throw new AppError('path_invalid', `file name too long: ${echo(name)}`);
    throw err;
  }
}

/**
 * Resolves a file name that came from a request inside `root`, or refuses it:
 * no absolute paths, no `..`, no symlink that leads outside `root` (400 `path_outside_root`);
 * a symlink loop or a name too long for the file system is 400 `path_invalid`.
 * A name may be a file that does not exist yet, but its directory must exist: a name whose
 * directory is missing is 404 `path_not_found`, never a raw file-system error. Only `root`
 * itself is the caller's configuration: when it is missing, the file-system error stands.
 */
export function resolveInside(root: string, name: string): string {
  if (typeof name !== 'string' || name === '' || name.includes('\0') || isAbsolute(name)) {
    throw new AppError('path_outside_root', `file name not allowed: ${echo(name)}`);
  }
  const rootReal = realpathSync(root);
  const candidate = resolve(rootReal, name);
  if (!within(rootReal, candidate)) {
    throw new AppError('path_outside_root', `file name resolves outside its directory: ${echo(name)}`);
  }
  const real = realOrMissing(candidate, name);
  if (real === undefined) {
    // Does not exist yet: its directory must exist and still be inside.
    const parent = realOrMissing(dirname(candidate), name);
    if (parent === undefined || !statSync(parent).isDirectory()) throw new AppError('path_not_found', `no such directory for file name ${echo(name)}`);
    if (!within(rootReal, parent)) throw new AppError('path_outside_root', `file name resolves outside its directory: ${echo(name)}`);
    return candidate;
  }
  if (!within(rootReal, real)) {
    throw new AppError('path_outside_root', `file name resolves outside its directory: ${echo(name)}`);
  }
  return candidate;
}
