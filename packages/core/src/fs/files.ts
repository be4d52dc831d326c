import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { AppError, echo } from '../errors';

/**
 * Every file ironlens creates for itself is opened with this flag: `O_CREAT | O_EXCL`, so a file
 * or a symlink someone planted at the name is an error (`EEXIST`), never written through.
 */
const EXCLUSIVE = 'wx';

/**
 * Creates `file`, which must not exist (a symlink there counts: `EEXIST`), with `data` and
 * `mode` (default `0o600`; the umask can only take bits away), and fsyncs it. The one way
 * ironlens creates a file of its own at a name: {@link replaceFileSync} and
 * {@link writeFileAtomic} write their temporaries through it.
 */
export function createFileExclusiveSync(file: string, data: string | Buffer, mode = 0o600): void {
  const fd = openSync(file, EXCLUSIVE, mode);
  try {
    writeFileSync(fd, data);
    fsyncSync(fd);
  } catch (err) {
    // Ours (the open succeeded): not left half-written.
    closeSync(fd);
    unlinkSync(file);
    throw err;
  }
  closeSync(fd);
}

/** {@link createFileExclusiveSync}, without blocking the event loop on the write and the fsync. */
export async function createFileExclusive(file: string, data: string | Buffer, mode = 0o600): Promise<void> {
  const fh = await open(file, EXCLUSIVE, mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } catch (err) {
    await fh.close();
    await unlink(file).catch(() => {});
    throw err;
  }
  await fh.close();
}

/** A temporary's name beside `file`: `.<name>.<12 random hex>.tmp` (nobody can plant a file there in advance). */
export function temporaryNameFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
}

/**
 * Replaces `file` with `data` (mode `mode`, default `0o600`) in one rename: the temporary `temp`
 * (default {@link temporaryNameFor}) is created exclusively ({@link createFileExclusiveSync}) and
 * renamed over `file`. Readers see the old content or the new, never half; a file planted at the
 * temporary's name is refused (`EEXIST`) and left as it was.
 */
export function replaceFileSync(file: string, data: string | Buffer, mode = 0o600, temp = temporaryNameFor(file)): void {
  createFileExclusiveSync(temp, data, mode);
  try {
    renameSync(temp, file);
  } catch (err) {
    try {
      unlinkSync(temp);
    } catch {
      // gone already
    }
    throw err;
  }
}

/**
 * Writes `data` to `file` atomically, as {@link replaceFileSync} does (its directory made when
 * missing; mode default `0o644`), without blocking the event loop.
 */
export async function writeFileAtomic(file: string, data: string | Buffer, mode = 0o644, temp = temporaryNameFor(file)): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  await createFileExclusive(temp, data, mode);
  try {
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch(() => {});
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
