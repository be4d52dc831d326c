/**
 * Clone benchmark: how long DiskImages.clone takes for a small master and a big sparse
 * one, by reflink on a loop-mounted XFS and by the copy fallback on the work directory's
 * own file system (ext4 here). Root only (loop mount).
 *
 *   npx tsx packages/agent/bench/clone-bench.ts
 *
 * Masters: 10 MiB of data; 10 GiB sparse with 64 MiB of data spread in four 16 MiB runs.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { type CloneMode, DiskImages } from '../src/adapters/disk-images.adapter';
import { mountLoopXfs } from '../src/testing/xfs-loop';

async function makeMasters(dir: string): Promise<{ small: string; big: string }> {
  const small = join(dir, '_tpl_small.img');
  const big = join(dir, '_tpl_big.img');
  await exec(['dd', 'if=/dev/urandom', `of=${small}`, 'bs=1M', 'count=10', 'status=none']);
  await exec(['truncate', '-s', '10G', big]);
  for (const gib of [0, 3, 6, 9]) {
    await exec(['dd', 'if=/dev/urandom', `of=${big}`, 'bs=1M', 'count=16', `seek=${gib * 1024}`, 'conv=notrunc', 'status=none']);
  }
  await exec(['sync']);
  return { small, big };
}

async function timeClone(images: DiskImages, src: string, dst: string): Promise<{ seconds: number; mode: CloneMode }> {
  const t0 = process.hrtime.bigint();
  const mode = await images.clone(src, dst);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { seconds, mode };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'ironlens-clone-bench-'));
  const xfs = await mountLoopXfs(work, '24G').catch((err: Error) => {
    rmSync(work, { recursive: true, force: true });
    throw new Error(`cannot mount a loop XFS: ${err.message}`);
  });
  try {
    const plain = join(work, 'plain');
    mkdirSync(plain);
    const rows: string[][] = [];
    for (const [label, dir] of [
      ['xfs (reflink)', xfs.mountpoint],
      [`${await new DiskImages(plain).fsType()} (copy)`, plain],
    ] as const) {
      const images = new DiskImages(dir);
      const { small, big } = await makeMasters(images.dir);
      const a = await timeClone(images, small, join(images.dir, 'small-clone.img'));
      const b = await timeClone(images, big, join(images.dir, 'big-clone.img'));
      rows.push([label, `${a.seconds.toFixed(3)} s (${a.mode})`, `${b.seconds.toFixed(3)} s (${b.mode})`]);
    }
    const header = ['file system', '10 MiB master', '10 GiB sparse master, 64 MiB data'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
    console.log(line(header));
    for (const r of rows) console.log(line(r));
  } finally {
    await xfs.unmount();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
