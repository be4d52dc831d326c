import { mkdtempSync, rmSync } from 'node:fs';
import { truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeTcpPort, type RunningTgtd, startTgtd, unusedControlPort } from '../testing/tgtd';
import { describeIscsiTargetsContract } from './iscsi-targets.contract';
import { parseTgtadmShow, TgtadmTargets } from './tgtadm.adapter';

describeIscsiTargetsContract('TgtadmTargets against a real tgtd', async () => {
  const tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `127.0.0.1:${await freeTcpPort()}` });
  return { targets: tgtd.targets, close: () => tgtd.stop() };
});

describe('TgtadmTargets seen by an iSCSI initiator', () => {
  let tgtd: RunningTgtd;
  let dir: string;
  let portal: string;
  const IQN = 'iqn.2026-07.com.controller:initiator-check';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ironlens-tgtadm-'));
    portal = `127.0.0.1:${await freeTcpPort()}`;
    tgtd = await startTgtd({ controlPort: unusedControlPort(), portal });
  });
  afterAll(async () => {
    await tgtd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('exports a disk LUN whose size the initiator reads back', async () => {
    const img = join(dir, 'disk.img');
    await writeFile(img, '');
    await truncate(img, 96 * 1024 * 1024);
    await tgtd.targets.createDisk(IQN, img);
    const ls = await exec(['iscsi-ls', '-s', `iscsi://${portal}`]);
    expect(ls.stdout).toContain(`Target:${IQN}`);
    const cap = await exec(['iscsi-readcapacity16', `iscsi://${portal}/${IQN}/1`]);
    expect(cap.stdout).toMatch(/Total size:\s*100663296/);
  });

  it('exports a CD LUN as a read-only MMC device', async () => {
    const iso = join(dir, 'media.iso');
    await writeFile(iso, Buffer.alloc(2 * 1024 * 1024));
    await tgtd.targets.createCd(`${IQN}.iso`, iso);
    const ls = await exec(['iscsi-ls', '-s', `iscsi://${portal}`]);
    expect(ls.stdout).toMatch(new RegExp(`Target:${IQN.replaceAll('.', '\\.')}\\.iso[\\s\\S]*?Lun:1\\s+Type:MMC`));
    const show = await exec(['tgtadm', '-C', String(tgtd.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show']);
    const block = show.stdout.slice(show.stdout.indexOf(`${IQN}.iso`));
    expect(block).toMatch(/Type: cd\/dvd[\s\S]*?Readonly: Yes/);
  });

  it('reuses the lowest free tid after a delete', async () => {
    const before = await tgtd.targets.list();
    const first = before.find((t) => t.iqn === IQN)!;
    await tgtd.targets.delete(IQN);
    const img = join(dir, 'again.img');
    await writeFile(img, Buffer.alloc(1024 * 1024));
    await tgtd.targets.createDisk(`${IQN}-again`, img);
    const again = (await tgtd.targets.list()).find((t) => t.iqn === `${IQN}-again`);
    expect(again?.tid).toBe(first.tid);
  });

  it('answers backend_failed when tgtd is not there', async () => {
    const absent = new TgtadmTargets({ controlPort: unusedControlPort() });
    await expect(absent.list()).rejects.toMatchObject({ code: 'backend_failed' });
  });
});

describe('startTgtd', () => {
  it('refuses a portal whose port is taken instead of starting a tgtd without it', async () => {
    const { createServer } = await import('node:net');
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    const control = unusedControlPort();
    try {
      await expect(startTgtd({ controlPort: control, portal: `127.0.0.1:${port}` })).rejects.toThrow(/cannot be bound/);
      const r = await exec(['tgtadm', '-C', String(control), '--mode', 'system', '--op', 'show'], { allowFailure: true });
      expect(r.code).not.toBe(0);
    } finally {
      srv.close();
    }
  });
});

describe('parseTgtadmShow', () => {
  it('reads targets, tids and backing stores and leaves out the controller LUN', () => {
    const text = `Target 1: iqn.2026-07.com.controller:worker-01.ubuntu
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
    LUN information:
        LUN: 0
            Type: controller
            Backing store type: null
            Backing store path: None
            Backing store flags: 
        LUN: 1
            Type: disk
            Size: 67 MB, Block size: 512
            Backing store type: rdwr
            Backing store path: /home/iscsi_img/worker-01.ubuntu.img
            Backing store flags: 
    Account information:
    ACL information:
        ALL
Target 3: iqn.2026-07.com.controller:win.iso
    System information:
    LUN information:
        LUN: 0
            Type: controller
            Backing store path: None
        LUN: 1
            Type: cd/dvd
            Backing store path: /home/iscsi_img/Win11.iso
    Account information:
    ACL information:
        ALL
`;
    expect(parseTgtadmShow(text)).toEqual([
      { iqn: 'iqn.2026-07.com.controller:worker-01.ubuntu', tid: 1, luns: [{ lun: 1, backing: '/home/iscsi_img/worker-01.ubuntu.img', cd: false }] },
      { iqn: 'iqn.2026-07.com.controller:win.iso', tid: 3, luns: [{ lun: 1, backing: '/home/iscsi_img/Win11.iso', cd: true }] },
    ]);
    expect(parseTgtadmShow('')).toEqual([]);
  });
});
