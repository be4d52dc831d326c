import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
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

export interface GptPartition {
  number: number;
  type: string;
  guid: string;
  first: number;
  last: number;
  name: string;
}

export interface Gpt {
  diskGuid: string;
  partitions: GptPartition[];
  /** Both headers' and both entry arrays' CRC32s are right, and the backup header mirrors the primary. */
  valid: boolean;
  problems: string[];
}

const guidAt = (b: Buffer, at: number): string => {
  const h = (from: number, to: number, reverse: boolean) => {
    const part = Buffer.from(b.subarray(at + from, at + to));
    return (reverse ? part.reverse() : part).toString('hex');
  };
  return `${h(0, 4, true)}-${h(4, 6, true)}-${h(6, 8, true)}-${h(8, 10, false)}-${h(10, 16, false)}`;
};

/** Reads a GPT (primary header at LBA 1, backup at the last sector) and checks its CRC32s. */
export function readGpt(file: string): Gpt | undefined {
  const head = readSectors(file, 1, 1);
  if (head.toString('latin1', 0, 8) !== 'EFI PART') return undefined;
  const problems: string[] = [];
  const header = (h: Buffer, label: string) => {
    const size = h.readUInt32LE(12);
    const copy = Buffer.from(h.subarray(0, size));
    copy.writeUInt32LE(0, 16);
    if (crc32(copy) !== h.readUInt32LE(16)) problems.push(`${label} header CRC32`);
    return { current: Number(h.readBigUInt64LE(24)), backup: Number(h.readBigUInt64LE(32)), entriesAt: Number(h.readBigUInt64LE(72)), count: h.readUInt32LE(80), size: h.readUInt32LE(84), crc: h.readUInt32LE(88) };
  };
  const primary = header(head, 'primary');
  const entries = readSectors(file, primary.entriesAt, Math.ceil((primary.count * primary.size) / 512)).subarray(0, primary.count * primary.size);
  if (crc32(entries) !== primary.crc) problems.push('primary entries CRC32');
  const backupHead = readSectors(file, primary.backup, 1);
  if (backupHead.toString('latin1', 0, 8) !== 'EFI PART') problems.push('no backup header');
  else {
    const backup = header(backupHead, 'backup');
    if (backup.current !== primary.backup || backup.backup !== 1) problems.push('backup header LBAs');
    const backupEntries = readSectors(file, backup.entriesAt, Math.ceil((backup.count * backup.size) / 512)).subarray(0, backup.count * backup.size);
    if (!backupEntries.equals(entries)) problems.push('backup entries differ');
  }
  const partitions: GptPartition[] = [];
  for (let i = 0; i < primary.count; i++) {
    const e = i * primary.size;
    if (entries.subarray(e, e + 16).every((b) => b === 0)) continue;
    const name = entries.toString('utf16le', e + 56, e + 128).replace(/\0.*$/s, '');
    partitions.push({ number: i + 1, type: guidAt(entries, e), guid: guidAt(entries, e + 16), first: Number(entries.readBigUInt64LE(e + 32)), last: Number(entries.readBigUInt64LE(e + 40)), name });
  }
  return { diskGuid: guidAt(head, 56), partitions, valid: problems.length === 0, problems };
}

/**
 * An EFI application's PE header: its machine (0x8664 for x86-64) and its Authenticode
 * signature (the certificate table, data directory 4), or undefined when it is no PE image.
 */
export function peSignature(b: Buffer): { machine: number; signature?: Buffer } | undefined {
  if (b.length < 0x40 || b.toString('latin1', 0, 2) !== 'MZ') return undefined;
  const pe = b.readUInt32LE(0x3c);
  if (pe + 24 > b.length || b.toString('latin1', pe, pe + 4) !== 'PE\0\0') return undefined;
  const machine = b.readUInt16LE(pe + 4);
  const opt = pe + 24;
  const magic = b.readUInt16LE(opt);
  // Data directories start 96 (PE32) or 112 (PE32+) bytes into the optional header; 8 bytes each.
  const dirs = opt + (magic === 0x20b ? 112 : 96);
  if (dirs + 5 * 8 > b.length) return { machine };
  const at = b.readUInt32LE(dirs + 4 * 8);
  const size = b.readUInt32LE(dirs + 4 * 8 + 4);
  if (!at || !size || at + size > b.length) return { machine };
  return { machine, signature: b.subarray(at, at + size) };
}
