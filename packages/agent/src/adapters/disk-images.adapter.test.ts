import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoopXfs, mountLoopXfs } from '../testing/xfs-loop';
import { DiskImages } from './disk-images.adapter';

const MiB = 1024 * 1024;

/** A master with 4 MiB of data at offset 0 and 4 MiB at 60 MiB, 64 MiB long, the rest holes. */
async function makeMaster(path: string) {
  await exec(['truncate', '-s', '64M', path]);
  await exec(['dd', 'if=/dev/urandom', `of=${path}`, 'bs=1M', 'count=4', 'conv=notrunc', 'status=none']);
  await exec(['dd', 'if=/dev/urandom', `of=${path}`, 'bs=1M', 'count=4', 'seek=60', 'conv=notrunc', 'status=none']);
}

const allocated = (path: string) => statSync(path).blocks * 512;

describe('DiskImages on ext4 (no reflink): copy fallback', () => {
  let dir: string;
  let images: DiskImages;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ironlens-images-'));
    images = new DiskImages(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs on a file system without reflink (the premise of this block)', async () => {
    expect(['ext4', 'tmpfs', 'overlayfs']).toContain(await images.fsType());
  });

  it('clones by copy, keeps the holes, and leaves no work file', async () => {
    await makeMaster(join(dir, '_tpl_ubuntu.img'));
    const mode = await images.clone(join(dir, '_tpl_ubuntu.img'), join(dir, 'w1.img'));
    expect(mode).toBe('copy');
    expect(readFileSync(join(dir, 'w1.img')).equals(readFileSync(join(dir, '_tpl_ubuntu.img')))).toBe(true);
    expect(statSync(join(dir, 'w1.img')).size).toBe(64 * MiB);
    expect(allocated(join(dir, 'w1.img'))).toBeLessThan(16 * MiB);
    expect(readdirSync(dir).sort()).toEqual(['_tpl_ubuntu.img', 'w1.img']);
  });

  it('never clones over an existing file', async () => {
    writeFileSync(join(dir, 'taken.img'), 'mine');
    await expect(images.clone(join(dir, '_tpl_ubuntu.img'), join(dir, 'taken.img'))).rejects.toMatchObject({ code: 'file_exists' });
    expect(readFileSync(join(dir, 'taken.img'), 'utf8')).toBe('mine');
    expect(readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('makes blank disks sparse, never over an existing file', async () => {
    await images.createSparse(join(dir, 'blank.img'), 40 * 1024 ** 3);
    expect(statSync(join(dir, 'blank.img')).size).toBe(40 * 1024 ** 3);
    expect(allocated(join(dir, 'blank.img'))).toBe(0);
    await expect(images.createSparse(join(dir, 'blank.img'), MiB)).rejects.toMatchObject({ code: 'file_exists' });
  });

  it('resolves request names inside DISK_DIR only', () => {
    const outside = mkdtempSync(join(tmpdir(), 'ironlens-outside-'));
    try {
      symlinkSync(outside, join(dir, 'escape'));
      symlinkSync(join(outside, 'x.img'), join(dir, 'link-out.img'));
      writeFileSync(join(outside, 'x.img'), '');
      expect(images.resolve('w1.img')).toBe(join(images.dir, 'w1.img'));
      for (const bad of ['../x.img', '/etc/passwd', 'escape/x.img', 'link-out.img']) {
        expect(() => images.resolve(bad), bad).toThrow(expect.objectContaining({ status: 400 }));
      }
      mkdirSync(join(dir, 'sub'));
      expect(() => images.resolve('sub/x.img')).toThrow(expect.objectContaining({ code: 'filename_invalid' }));
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

describe('DiskImages on XFS with reflink (loop mount)', () => {
  let work: string;
  let xfs: LoopXfs | undefined;
  let whyNot = '';

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'ironlens-xfs-'));
    try {
      xfs = await mountLoopXfs(work, '512M');
    } catch (err) {
      whyNot = (err as Error).message;
    }
  });
  afterAll(async () => {
    await xfs?.unmount();
    rmSync(work, { recursive: true, force: true });
  });

  it('clones a master by reflink, sharing its extents', async () => {
    // No silent pass: without the mount this test fails and says why.
    expect(whyNot, `cannot mount a loop XFS here: ${whyNot}`).toBe('');
    const images = new DiskImages(xfs!.mountpoint);
    expect(await images.fsType()).toBe('xfs');
    const master = join(images.dir, '_tpl_debian.img');
    await makeMaster(master);
    const clone = join(images.dir, 'worker-01.debian.img');
    expect(await images.clone(master, clone)).toBe('reflink');
    expect(readFileSync(clone).equals(readFileSync(master))).toBe(true);
    const frag = await exec(['filefrag', '-v', clone]);
    const extents = frag.stdout.split('\n').filter((l) => /^\s*\d+:/.test(l));
    expect(extents.length).toBeGreaterThan(0);
    for (const e of extents) expect(e).toMatch(/shared/);
  });
});
