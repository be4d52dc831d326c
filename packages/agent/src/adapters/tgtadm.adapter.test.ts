import { mkdtempSync, rmSync } from 'node:fs';
import { truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeTcpPort, type RunningTgtd, startTgtd, unusedControlPort } from '../testing/tgtd';
import { describeIscsiTargetsContract } from './iscsi-targets.contract';
import { parseTgtadmAccounts, parseTgtadmShow, TgtadmTargets } from './tgtadm.adapter';

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

  it('admits only the named initiator to a restricted disk: others neither see nor read it', async () => {
    const iqn = 'iqn.2026-07.com.controller:worker-07.ubuntu';
    const allowed = 'iqn.2026-07.com.controller:worker-07';
    const img = join(dir, 'acl.img');
    await writeFile(img, '');
    await truncate(img, 32 * 1024 * 1024);
    await tgtd.targets.createDisk(iqn, img, { initiator: allowed });
    expect((await tgtd.targets.list()).find((t) => t.iqn === iqn)?.acl).toEqual([allowed]);

    const seen = await exec(['iscsi-ls', '-s', '-i', allowed, `iscsi://${portal}`]);
    expect(seen.stdout).toContain(`Target:${iqn}`);
    const cap = await exec(['iscsi-readcapacity16', '-i', allowed, `iscsi://${portal}/${iqn}/1`]);
    expect(cap.stdout).toMatch(/Total size:\s*33554432/);
    const inq = await exec(['iscsi-inq', '-i', allowed, `iscsi://${portal}/${iqn}/1`]);
    expect(inq.code).toBe(0);

    for (const other of ['iqn.2026-07.com.controller:worker-08', 'iqn.2026-07.com.controller:worker-07.ubuntu', 'iqn.1993-08.org.debian:01:abcdef']) {
      const ls = await exec(['iscsi-ls', '-s', '-i', other, `iscsi://${portal}`]);
      expect(ls.stdout, other).not.toContain(iqn);
      for (const tool of ['iscsi-readcapacity16', 'iscsi-inq']) {
        const r = await exec([tool, '-i', other, `iscsi://${portal}/${iqn}/1`], { allowFailure: true });
        expect(r.code, `${tool} as ${other}`).not.toBe(0);
        expect(r.stdout, `${tool} as ${other}`).not.toMatch(/Total size|Vendor/);
      }
    }
    // The open disk made earlier stays open to any name.
    const open = await exec(['iscsi-ls', '-s', '-i', 'iqn.2026-07.com.controller:worker-08', `iscsi://${portal}`]);
    expect(open.stdout).toContain(`Target:${IQN}.iso`);
  });

  it('makes a restricted CD read-only for its initiator and invisible to others', async () => {
    const iqn = 'iqn.2026-07.com.controller:worker-07.windows.iso';
    const allowed = 'iqn.2026-07.com.controller:worker-07';
    const iso = join(dir, 'acl.iso');
    await writeFile(iso, Buffer.alloc(2 * 1024 * 1024));
    await tgtd.targets.createCd(iqn, iso, { initiator: allowed });
    const listed = (await tgtd.targets.list()).find((t) => t.iqn === iqn);
    expect(listed?.acl).toEqual([allowed]);
    expect(listed?.luns).toEqual([expect.objectContaining({ cd: true })]);
    expect((await exec(['iscsi-ls', '-s', '-i', allowed, `iscsi://${portal}`])).stdout).toMatch(/worker-07\.windows\.iso[\s\S]*?Lun:1\s+Type:MMC/);
    expect((await exec(['iscsi-ls', '-s', '-i', `${allowed}x`, `iscsi://${portal}`])).stdout).not.toContain(iqn);
  });

  it('binds a CHAP account to a restricted disk: the initiator logs in only with its secret', async () => {
    const iqn = 'iqn.2026-07.com.controller:worker-09.ubuntu';
    const allowed = 'iqn.2026-07.com.controller:worker-09';
    const chap = { user: 'il-worker-09', password: 'Zq3xW8pLm2Rt7Kv4' };
    const img = join(dir, 'chap.img');
    await writeFile(img, '');
    await truncate(img, 16 * 1024 * 1024);
    await tgtd.targets.createDisk(iqn, img, { initiator: allowed, chap });
    const listed = (await tgtd.targets.list()).find((t) => t.iqn === iqn);
    expect(listed).toMatchObject({ acl: [allowed], accounts: [chap.user] });
    const accounts = await exec(['tgtadm', '-C', String(tgtd.controlPort), '--lld', 'iscsi', '--mode', 'account', '--op', 'show']);
    expect(parseTgtadmAccounts(accounts.stdout)).toContain(chap.user);

    const url = (cred: string) => `iscsi://${cred}${portal}/${iqn}/1`;
    const ok = await exec(['iscsi-readcapacity16', '-i', allowed, url(`${chap.user}%${chap.password}@`)]);
    expect(ok.stdout).toMatch(/Total size:\s*16777216/);
    // The initiator's name alone (what /boot-vars?hostname= shows) no longer reads the disk,
    // nor does a wrong secret, nor the right secret under another initiator name.
    for (const [who, cred] of [
      [allowed, ''],
      [allowed, `${chap.user}%Zq3xW8pLm2Rt7Kv5@`],
      [allowed, `il-worker-08%${chap.password}@`],
      ['iqn.2026-07.com.controller:worker-08', `${chap.user}%${chap.password}@`],
    ]) {
      const r = await exec(['iscsi-readcapacity16', '-i', who, url(cred)], { allowFailure: true });
      expect(r.code, `${who} with ${cred || 'no credential'}`).not.toBe(0);
      expect(r.stdout).not.toMatch(/Total size/);
    }
    const refused = await exec(['iscsi-readcapacity16', '-i', allowed, url('')], { allowFailure: true });
    expect(refused.stderr + refused.stdout).toMatch(/Authentication failure/);
  });

  it("shares a worker's account between its targets, takes a new secret everywhere, and drops the account with its last target", async () => {
    const allowed = 'iqn.2026-07.com.controller:worker-10';
    const one = 'iqn.2026-07.com.controller:worker-10.ubuntu';
    const two = 'iqn.2026-07.com.controller:worker-10.windows.iso';
    const img = join(dir, 'chap-share.img');
    const iso = join(dir, 'chap-share.iso');
    await writeFile(img, Buffer.alloc(1024 * 1024));
    await writeFile(iso, Buffer.alloc(1024 * 1024));
    await tgtd.targets.createDisk(one, img, { initiator: allowed, chap: { user: 'il-worker-10', password: 'firstSecret0001' } });
    // The same user with a new secret: tgtd has no password update, so the account is replaced and bound again to both.
    await tgtd.targets.createCd(two, iso, { initiator: allowed, chap: { user: 'il-worker-10', password: 'secondSecret002' } });
    const both = (await tgtd.targets.list()).filter((t) => t.iqn === one || t.iqn === two);
    expect(both.map((t) => t.accounts)).toEqual([['il-worker-10'], ['il-worker-10']]);
    const read = (secret: string) => exec(['iscsi-readcapacity16', '-i', allowed, `iscsi://il-worker-10%${secret}@${portal}/${one}/1`], { allowFailure: true });
    expect((await read('secondSecret002')).code).toBe(0);
    expect((await read('firstSecret0001')).code).not.toBe(0);

    const users = async () => parseTgtadmAccounts((await exec(['tgtadm', '-C', String(tgtd.controlPort), '--lld', 'iscsi', '--mode', 'account', '--op', 'show'])).stdout);
    await tgtd.targets.delete(two);
    expect(await users()).toContain('il-worker-10');
    await tgtd.targets.delete(one);
    expect(await users()).not.toContain('il-worker-10');
  });

  it('refuses CHAP without an initiator or with a secret outside its grammar, before any tgtadm call', async () => {
    const img = join(dir, 'chap-bad.img');
    await writeFile(img, Buffer.alloc(1024 * 1024));
    const before = await tgtd.targets.list();
    for (const opts of [
      { chap: { user: 'il-w', password: 'goodSecret0001' } },
      { initiator: 'iqn.2026-07.com.controller:w', chap: { user: 'il-w', password: 'bad secret; x' } },
      { initiator: 'iqn.2026-07.com.controller:w', chap: { user: 'il w', password: 'goodSecret0001' } },
    ]) {
      await expect(tgtd.targets.createDisk('iqn.2026-07.com.controller:w.bad', img, opts)).rejects.toMatchObject({ code: 'chap_invalid' });
    }
    expect(await tgtd.targets.list()).toEqual(before);
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
      { iqn: 'iqn.2026-07.com.controller:worker-01.ubuntu', tid: 1, luns: [{ lun: 1, backing: '/home/iscsi_img/worker-01.ubuntu.img', cd: false }], acl: ['ALL'], accounts: [], sessions: [] },
      { iqn: 'iqn.2026-07.com.controller:win.iso', tid: 3, luns: [{ lun: 1, backing: '/home/iscsi_img/Win11.iso', cd: true }], acl: ['ALL'], accounts: [], sessions: [] },
    ]);
    expect(parseTgtadmShow('')).toEqual([]);
  });

  it('reads the ACL section: initiator names, addresses, none', () => {
    const text = `Target 1: iqn.2026-07.com.controller:worker-01.ubuntu
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
        I_T nexus: 4
            Initiator: iqn.2026-07.com.controller:worker-01 alias: none
            Connection: 0
                IP Address: 192.168.213.50
    LUN information:
        LUN: 0
            Type: controller
            Backing store path: None
        LUN: 1
            Type: disk
            Backing store path: /d/worker-01.ubuntu.img
    Account information:
        chapuser
        mutual (outgoing)
    ACL information:
        iqn.2026-07.com.controller:worker-01
Target 2: iqn.2026-07.com.controller:two
    LUN information:
        LUN: 1
            Type: disk
            Backing store path: /d/two.img
    Account information:
    ACL information:
        192.168.0.0/24
        iqn.2026-07.com.controller:a
        iqn.2026-07.com.controller:b
Target 3: iqn.2026-07.com.controller:unbound
    LUN information:
    Account information:
    ACL information:
`;
    const parsed = parseTgtadmShow(text);
    expect(parsed.map((t) => t.acl)).toEqual([
      ['iqn.2026-07.com.controller:worker-01'],
      ['192.168.0.0/24', 'iqn.2026-07.com.controller:a', 'iqn.2026-07.com.controller:b'],
      [],
    ]);
    expect(parsed[0].luns).toEqual([{ lun: 1, backing: '/d/worker-01.ubuntu.img', cd: false }]);
    // Incoming CHAP users only: an outgoing (mutual) account proves the target, not the initiator.
    expect(parsed.map((t) => t.accounts)).toEqual([['chapuser'], [], []]);
  });

  it("reads the logged-in sessions (I_T nexus): initiator, the first connection's address", () => {
    // tgtd 1.0.x prints each nexus as `I_T nexus: n`, `Initiator: <iqn> alias: <alias|none>`,
    // then per connection `Connection: c` and the transport's `IP Address: <addr>`.
    const text = `Target 1: iqn.2026-07.com.controller:worker-01.ubuntu
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
        I_T nexus: 4
            Initiator: iqn.2026-07.com.controller:worker-01 alias: none
            Connection: 0
                IP Address: 127.0.0.1
        I_T nexus: 7
            Initiator: iqn.2010-04.org.ipxe:52-54-00-12-34-56 alias: ipxe
            Connection: 1
                IP Address: ::1
            Connection: 2
                IP Address: 127.0.0.2
    LUN information:
        LUN: 0
            Type: controller
            Backing store path: None
        LUN: 1
            Type: disk
            Backing store path: /d/worker-01.ubuntu.img
    Account information:
    ACL information:
        ALL
Target 2: iqn.2026-07.com.controller:idle
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
        I_T nexus: 9
            Initiator: iqn.1993-08.org.debian:01:abc
    LUN information:
        LUN: 0
            Type: controller
            Backing store path: None
    Account information:
    ACL information:
        ALL
`;
    const parsed = parseTgtadmShow(text);
    expect(parsed.map((t) => t.sessions)).toEqual([
      [
        { nexus: 4, initiator: 'iqn.2026-07.com.controller:worker-01', address: '127.0.0.1' },
        { nexus: 7, initiator: 'iqn.2010-04.org.ipxe:52-54-00-12-34-56', address: '::1' },
      ],
      [{ nexus: 9, initiator: 'iqn.1993-08.org.debian:01:abc', address: null }],
    ]);
    // The nexus lines are no LUN: the disk is still the only LUN.
    expect(parsed[0].luns).toEqual([{ lun: 1, backing: '/d/worker-01.ubuntu.img', cd: false }]);
  });

  it('reads the account list', () => {
    expect(parseTgtadmAccounts('Account list:\n    il-worker-01\n    il-worker-02\n')).toEqual(['il-worker-01', 'il-worker-02']);
    expect(parseTgtadmAccounts('Account list:\n')).toEqual([]);
  });
});
