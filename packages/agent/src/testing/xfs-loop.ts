import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { exec } from '@ironlens/core';

export interface LoopXfs {
  /** Where the file system is mounted. */
  mountpoint: string;
  /** Unmounts (the loop device goes with it) and removes the image file. Safe to call twice. */
  unmount(): Promise<void>;
}

/**
 * Makes an XFS file system with reflink in a sparse file under `workDir` and loop-mounts
 * it (root only). Throws with the reason when that is impossible here (not root, no loop
 * devices, no mkfs.xfs), so a test can say why instead of passing silently.
 */
export async function mountLoopXfs(workDir: string, size = '1G'): Promise<LoopXfs> {
  if (process.getuid?.() !== 0) throw new Error('mounting a loop XFS needs root');
  const image = join(workDir, 'xfs.img');
  const mountpoint = join(workDir, 'xfs');
  mkdirSync(mountpoint, { recursive: true });
  await exec(['truncate', '-s', size, image]);
  await exec(['mkfs.xfs', '-q', '-f', '-m', 'reflink=1', image]);
  await exec(['mount', '-o', 'loop', image, mountpoint]);
  let mounted = true;
  return {
    mountpoint,
    async unmount() {
      if (mounted) {
        await exec(['umount', mountpoint]).catch(() => exec(['umount', '-l', mountpoint]));
        mounted = false;
      }
      rmSync(image, { force: true });
    },
  };
}
