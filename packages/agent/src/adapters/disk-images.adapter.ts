import { randomBytes } from 'node:crypto';
import { constants, realpathSync } from 'node:fs';
import { copyFile, link, lstat, open, readdir, stat, statfs, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { AppError, type Exec, echo, exec as defaultExec, resolveInside } from '@ironlens/core';

/** How a disk was made from its master: a reflink clone sharing extents, or a byte copy. */
export type CloneMode = 'reflink' | 'copy';

export interface ImageFile {
  name: string;
  size: number;
  mtimeMs: number;
}

export interface DiskImagesOptions {
  /** The command runner for the sparse copy fallback. Default is core's `exec`. */
  exec?: Exec;
  /** Longest time a copy may take. Default is 6 hours. */
  copyTimeoutMs?: number;
}

/** statfs magic numbers of the file systems an image directory is likely to be on. */
const FS_TYPES = new Map<number, string>([
  [0xef53, 'ext4'],
  [0x58465342, 'xfs'],
  [0x9123683e, 'btrfs'],
  [0x2fc12fc1, 'zfs'],
  [0x01021994, 'tmpfs'],
  [0x794c7630, 'overlayfs'],
  [0x6969, 'nfs'],
  [0xff534d42, 'cifs'],
  [0xf2f52010, 'f2fs'],
  [0x65735546, 'fuse'],
]);

const TMP_SUFFIX = '.ironlens-tmp';

/** True for the agent's own work files in the image directory (hidden, or an unfinished clone). */
export function isWorkFile(name: string): boolean {
  return name.startsWith('.') || name.endsWith(TMP_SUFFIX);
}

/**
 * The image files in DISK_DIR: reflink clones with a copy fallback, sparse blank disks,
 * listing and removal. Names that come from requests go through `resolve` first.
 */
export class DiskImages {
  /** DISK_DIR with symlinks resolved: every backing path the agent hands out starts with it. */
  readonly dir: string;
  private readonly exec: Exec;
  private readonly copyTimeoutMs: number;

  constructor(dir: string, opts: DiskImagesOptions = {}) {
    this.dir = realpathSync(dir);
    this.exec = opts.exec ?? defaultExec;
    this.copyTimeoutMs = opts.copyTimeoutMs ?? 6 * 3600_000;
  }

  /** The path of a file name the agent itself found in DISK_DIR. */
  pathOf(name: string): string {
    return join(this.dir, name);
  }

  /** True when `path` names a file directly in DISK_DIR (symlinked directories resolved). */
  holds(path: string): boolean {
    try {
      return realpathSync(dirname(path)) === this.dir;
    } catch {
      return false;
    }
  }

  /**
   * The absolute path of a file name from a request, directly inside DISK_DIR, or 400
   * (`filename_invalid` for a name with a directory part, `path_outside_root`). The name is
   * checked before the file system is asked, so no file-system error can escape.
   */
  resolve(name: string): string {
    if (typeof name !== 'string' || name.includes('/')) {
      throw new AppError('filename_invalid', `file name must name a file directly in the image directory: ${echo(name)}`);
    }
    return resolveInside(this.dir, name);
  }

  /** The file's stat when it is a regular file (symlinks followed), otherwise undefined. */
  async fileStat(path: string): Promise<ImageFile | undefined> {
    try {
      const s = await stat(path);
      return s.isFile() ? { name: basename(path), size: s.size, mtimeMs: s.mtimeMs } : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** True when anything is at `path`, a dangling symlink included. */
  async exists(path: string): Promise<boolean> {
    try {
      await lstat(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  /**
   * The real path of a file the agent found in DISK_DIR when it stays inside DISK_DIR (the
   * rule a request's name follows, {@link resolveInside}); undefined for a link that leads
   * outside, a dangling one, or a loop.
   */
  realInside(name: string): string | undefined {
    try {
      resolveInside(this.dir, name);
      return realpathSync(join(this.dir, name));
    } catch {
      return undefined;
    }
  }

  /**
   * Regular files directly in DISK_DIR, sorted by name: work files left out, and links that
   * lead outside DISK_DIR too (a link to /etc/passwd is neither listed, exported nor cloned).
   */
  async list(): Promise<ImageFile[]> {
    const names = (await readdir(this.dir)).filter((n) => !isWorkFile(n)).sort();
    const files: ImageFile[] = [];
    for (const name of names) {
      if (this.realInside(name) === undefined) continue;
      const f = await this.fileStat(join(this.dir, name)).catch(() => undefined);
      if (f) files.push(f);
    }
    return files;
  }

  /** Names in DISK_DIR that {@link list} leaves out because they lead outside it (work files not included). */
  async outsideLinks(): Promise<string[]> {
    const names = (await readdir(this.dir)).filter((n) => !isWorkFile(n)).sort();
    return names.filter((n) => this.realInside(n) === undefined);
  }

  /**
   * Clones `src` to `dst`: a reflink (FICLONE) where the file system shares extents
   * (XFS with reflink, btrfs), otherwise a sparse-preserving copy (`cp --sparse=always`;
   * Node's own copy would write every hole out). The clone is made under a hidden temporary
   * name and linked into place only when complete, never over an existing file
   * (409 `file_exists`).
   */
  async clone(src: string, dst: string): Promise<CloneMode> {
    const tmp = join(dirname(dst), `.${basename(dst)}.${randomBytes(4).toString('hex')}${TMP_SUFFIX}`);
    try {
      let mode: CloneMode;
      try {
        await copyFile(src, tmp, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE_FORCE);
        mode = 'reflink';
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') throw new AppError('file_not_found', `master not found: ${basename(src)}`);
        if (code === 'EEXIST') throw err;
        await unlink(tmp).catch(() => {});
        await this.exec(['cp', '--sparse=always', '--reflink=never', '--', src, tmp], { timeoutMs: this.copyTimeoutMs });
        mode = 'copy';
      }
      await this.linkNew(tmp, dst);
      return mode;
    } finally {
      await unlink(tmp).catch(() => {});
    }
  }

  /** Makes a sparse file of `size` bytes at `dst` (like `truncate -s`), never over an existing file. */
  async createSparse(dst: string, size: number): Promise<void> {
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      fh = await open(dst, 'wx', 0o644);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new AppError('file_exists', `backing file already exists: ${basename(dst)}`);
      throw err;
    }
    try {
      await fh.truncate(size);
    } catch (err) {
      await fh.close();
      await unlink(dst).catch(() => {});
      throw err;
    }
    await fh.close();
  }

  async remove(path: string): Promise<void> {
    await unlink(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  /** The file system DISK_DIR is on: `xfs`, `btrfs`, `ext4`…, or `0x<magic>` for one not in the table. */
  async fsType(): Promise<string> {
    const s = await statfs(this.dir);
    const type = Number(s.type) >>> 0;
    return FS_TYPES.get(type) ?? `0x${type.toString(16)}`;
  }

  private async linkNew(from: string, to: string): Promise<void> {
    try {
      await link(from, to);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new AppError('file_exists', `backing file already exists: ${basename(to)}`);
      throw err;
    }
  }
}
