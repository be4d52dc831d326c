import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Exec, exec as realExec } from '@ironlens/core';

/**
 * Reads a master image without mounting it (tests and `ironlens master build`'s own checks):
 * the MBR's partition table, and files of the ext4 partition through `debugfs` at the
 * partition's byte offset (`image?offset=N`, e2fsprogs' unix I/O option).
 */

export interface MbrPartition {
  index: number;
  active: boolean;
  type: number;
  startSector: number;
  sectors: number;
}

export interface Mbr {
  signature: boolean;
  bootCode: Buffer;
  partitions: MbrPartition[];
}

export function readSectors(file: string, start: number, count: number): Buffer {
  const buf = Buffer.alloc(count * 512);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, buf.length, start * 512);
  } finally {
    closeSync(fd);
  }
  return buf;
}

export function readMbr(file: string): Mbr {
  const s = readSectors(file, 0, 1);
  const partitions: MbrPartition[] = [];
  for (let i = 0; i < 4; i++) {
    const e = 446 + i * 16;
    if (s[e + 4] === 0) continue;
    partitions.push({ index: i + 1, active: s[e] === 0x80, type: s[e + 4], startSector: s.readUInt32LE(e + 8), sectors: s.readUInt32LE(e + 12) });
  }
  return { signature: s[510] === 0x55 && s[511] === 0xaa, bootCode: s.subarray(0, 440), partitions };
}

/** One ext4 filesystem inside an image, read with debugfs (read-only). */
export class Ext4Reader {
  constructor(
    private readonly image: string,
    private readonly offsetBytes: number,
    private readonly exec: Exec = realExec,
  ) {}

  private get device(): string {
    return `${this.image}?offset=${this.offsetBytes}`;
  }

  async debugfs(request: string): Promise<string> {
    const r = await this.exec(['debugfs', '-R', request, this.device], { env: { ...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin` }, timeoutMs: 120_000 });
    return r.stdout;
  }

  /** Names in a directory (without `.` and `..`); empty when it does not exist. */
  async ls(dir: string): Promise<string[]> {
    const out = await this.debugfs(`ls -p ${dir}`);
    // `-p`: /inode/mode/uid/gid/name/size/
    return out
      .split('\n')
      .map((l) => l.split('/'))
      .filter((f) => f.length >= 7 && f[5] !== '.' && f[5] !== '..' && f[5] !== '')
      .map((f) => f[5]);
  }

  /** Mode (octal permission bits and type), uid, size; undefined when missing. */
  async stat(path: string): Promise<{ mode: number; type: string; size: number; uid: number } | undefined> {
    const out = await this.debugfs(`stat ${path}`);
    const m = /Type: (\S+)\s+Mode:\s+(\d+)/.exec(out);
    if (!m) return undefined;
    const size = Number(/Size: (\d+)/.exec(out)?.[1] ?? 0);
    const uid = Number(/User:\s+(\d+)/.exec(out)?.[1] ?? -1);
    return { type: m[1], mode: Number.parseInt(m[2], 8), size, uid };
  }

  /** A file's bytes (dumped to a temporary file: debugfs' stdout is text). */
  async cat(path: string): Promise<Buffer> {
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-ext4-'));
    try {
      await this.debugfs(`dump ${path} ${join(dir, 'f')}`);
      return existsSync(join(dir, 'f')) ? readFileSync(join(dir, 'f')) : Buffer.alloc(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** A symlink's target (fast symlinks are printed by `stat`). */
  async readlink(path: string): Promise<string | undefined> {
    const out = await this.debugfs(`stat ${path}`);
    return /Fast link dest: "([^"]*)"/.exec(out)?.[1];
  }
}

/** The names in a (possibly concatenated) `newc` cpio archive. */
export function cpioNames(buf: Buffer): { names: string[]; end: number } {
  const names: string[] = [];
  let off = 0;
  while (off + 110 <= buf.length && buf.toString('latin1', off, off + 6) === '070701') {
    const hex = (i: number) => Number.parseInt(buf.toString('latin1', off + 6 + i * 8, off + 14 + i * 8), 16);
    const fileSize = hex(6);
    const nameSize = hex(11);
    const name = buf.toString('latin1', off + 110, off + 110 + nameSize - 1);
    off = align4(off + 110 + nameSize);
    off = align4(off + fileSize);
    if (name === 'TRAILER!!!') {
      // Archives may be concatenated (early firmware cpio, then the main one); zero padding between.
      while (off < buf.length && buf[off] === 0) off++;
      continue;
    }
    names.push(name);
  }
  return { names, end: off };
}

const align4 = (n: number) => (n + 3) & ~3;
