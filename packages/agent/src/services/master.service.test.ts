import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@ironlens/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { DiskImages } from '../adapters/disk-images.adapter';
import { MasterCatalog } from './master.service';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-masters-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('MasterCatalog', () => {
  it('lists only _tpl_ files, with integer mtime, from a cache the timer refreshes', async () => {
    writeFileSync(join(dir, '_tpl_ubuntu_2204.img'), Buffer.alloc(4096));
    utimesSync(join(dir, '_tpl_ubuntu_2204.img'), 1785643200.7, 1785643200.7);
    writeFileSync(join(dir, 'worker-01.ubuntu.img'), '');
    writeFileSync(join(dir, '.hidden_tpl_.img'), '');
    const catalog = new MasterCatalog(new DiskImages(dir));
    expect(await catalog.list()).toEqual([{ name: '_tpl_ubuntu_2204.img', size: 4096, mtime: 1785643200 }]);

    writeFileSync(join(dir, '_tpl_debian_12.img'), '');
    expect((await catalog.list()).map((m) => m.name)).toEqual(['_tpl_ubuntu_2204.img']);
    catalog.start(50);
    try {
      // The rescan every 50 ms finds it (a loaded machine may take longer than a few periods).
      await waitFor('the rescan to list the new master', async () => (await catalog.list()).map((m) => m.name), (names) => names.length === 2);
      expect((await catalog.list()).map((m) => m.name)).toEqual(['_tpl_debian_12.img', '_tpl_ubuntu_2204.img']);
    } finally {
      catalog.stop();
    }
  });
});
