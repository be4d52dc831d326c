import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { installTargetcliStandIn, type TargetcliStandIn } from '../testing/targetcli-stand-in';
import { describeIscsiTargetsContract } from './iscsi-targets.contract';
import { parseTargetcliLs, storageObjectName, TargetcliTargets } from './targetcli.adapter';

// LIO needs configfs, which this machine lacks: these tests run the adapter against a
// stand-in targetcli put first on PATH, which records every argv.
const savedPath = process.env.PATH;
const work: string[] = [];
function standIn(): TargetcliStandIn {
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-targetcli-'));
  work.push(dir);
  const s = installTargetcliStandIn(dir);
  process.env.PATH = `${s.binDir}:${savedPath}`;
  return s;
}
afterAll(() => {
  process.env.PATH = savedPath;
  for (const d of work) rmSync(d, { recursive: true, force: true });
});

describeIscsiTargetsContract('TargetcliTargets against the targetcli stand-in', async () => {
  standIn();
  return { targets: new TargetcliTargets(), close: async () => {} };
});

describe('TargetcliTargets command lines', () => {
  const IQN = 'iqn.2026-07.com.controller:worker-01.ubuntu';
  let s: TargetcliStandIn;
  let dir: string;
  let targets: TargetcliTargets;

  beforeAll(() => {
    s = standIn();
    dir = mkdtempSync(join(tmpdir(), 'ironlens-lio-img-'));
    work.push(dir);
    targets = new TargetcliTargets();
  });
  beforeEach(() => {
    delete process.env.TARGETCLI_STANDIN_FAIL;
    s.clearCalls();
  });

  it('creates a disk as fileio backstore, target, LUN, demo-mode ACL attributes, then saveconfig', async () => {
    const img = join(dir, 'worker-01.ubuntu.img');
    writeFileSync(img, Buffer.alloc(4096));
    await targets.createDisk(IQN, img);
    expect(s.calls()).toEqual([
      ['/iscsi', 'ls'],
      ['/backstores/fileio', 'create', 'name=worker-01.ubuntu', `file_or_dev=${img}`],
      ['/iscsi', 'create', IQN],
      [`/iscsi/${IQN}/tpg1/luns`, 'create', '/backstores/fileio/worker-01.ubuntu'],
      [`/iscsi/${IQN}/tpg1`, 'set', 'attribute', 'authentication=0', 'generate_node_acls=1', 'cache_dynamic_acls=1', 'demo_mode_write_protect=0'],
      ['/iscsi', 'ls'],
      ['saveconfig'],
    ]);
    expect(await targets.list()).toEqual([{ iqn: IQN, luns: [{ lun: 0, backing: img, cd: false }], acl: ['ALL'] }]);
  });

  it('restricts a disk to one initiator: demo mode off, a node ACL mapping LUN 0 read-write', async () => {
    const iqn = 'iqn.2026-07.com.controller:worker-03.ubuntu';
    const initiator = 'iqn.2026-07.com.controller:worker-03';
    const img = join(dir, 'worker-03.ubuntu.img');
    writeFileSync(img, Buffer.alloc(4096));
    await targets.createDisk(iqn, img, { initiator });
    expect(s.calls()).toEqual([
      ['/iscsi', 'ls'],
      ['/backstores/fileio', 'create', 'name=worker-03.ubuntu', `file_or_dev=${img}`],
      ['/iscsi', 'create', iqn],
      [`/iscsi/${iqn}/tpg1/luns`, 'create', '/backstores/fileio/worker-03.ubuntu'],
      [`/iscsi/${iqn}/tpg1`, 'set', 'attribute', 'authentication=0', 'generate_node_acls=0'],
      [`/iscsi/${iqn}/tpg1/acls`, 'create', initiator, 'add_mapped_luns=false'],
      [`/iscsi/${iqn}/tpg1/acls/${initiator}`, 'create', '0', '0'],
      ['/iscsi', 'ls'],
      ['saveconfig'],
    ]);
    const t = s.state().targets[iqn];
    expect(t.attributes.generate_node_acls).toBe('0');
    expect(t.acls).toEqual({ [initiator]: [{ mapped_lun: 0, tpg_lun: 0, write_protect: false }] });
    expect((await targets.list()).find((x) => x.iqn === iqn)).toEqual({ iqn, luns: [{ lun: 0, backing: img, cd: false }], acl: [initiator] });
  });

  it('restricts a CD to one initiator with a write-protected mapped LUN', async () => {
    const iqn = 'iqn.2026-07.com.controller:worker-03.windows.iso';
    const initiator = 'iqn.2026-07.com.controller:worker-03';
    const iso = join(dir, 'install.iso');
    writeFileSync(iso, Buffer.alloc(4096));
    await targets.createCd(iqn, iso, { initiator });
    expect(s.calls()).toContainEqual([`/iscsi/${iqn}/tpg1/acls/${initiator}`, 'create', '0', '0', 'write_protect=1']);
    expect(s.calls()).not.toContainEqual(expect.arrayContaining(['generate_node_acls=1']));
    expect(s.state().targets[iqn].acls[initiator]).toEqual([{ mapped_lun: 0, tpg_lun: 0, write_protect: true }]);
  });

  it('binds a CHAP account: TPG authentication on, the node ACL auth set and read back', async () => {
    const iqn = 'iqn.2026-07.com.controller:worker-05.ubuntu';
    const initiator = 'iqn.2026-07.com.controller:worker-05';
    const chap = { user: 'il-worker-05', password: 'Zq3xW8pLm2Rt7Kv4' };
    const img = join(dir, 'worker-05.ubuntu.img');
    writeFileSync(img, Buffer.alloc(4096));
    await targets.createDisk(iqn, img, { initiator, chap });
    expect(s.calls()).toEqual([
      ['/iscsi', 'ls'],
      ['/backstores/fileio', 'create', 'name=worker-05.ubuntu', `file_or_dev=${img}`],
      ['/iscsi', 'create', iqn],
      [`/iscsi/${iqn}/tpg1/luns`, 'create', '/backstores/fileio/worker-05.ubuntu'],
      [`/iscsi/${iqn}/tpg1`, 'set', 'attribute', 'authentication=1', 'generate_node_acls=0'],
      [`/iscsi/${iqn}/tpg1/acls`, 'create', initiator, 'add_mapped_luns=false'],
      [`/iscsi/${iqn}/tpg1/acls/${initiator}`, 'create', '0', '0'],
      [`/iscsi/${iqn}/tpg1/acls/${initiator}`, 'set', 'auth', `userid=${chap.user}`, `password=${chap.password}`],
      [`/iscsi/${iqn}/tpg1/acls/${initiator}`, 'get', 'auth', 'userid'],
      ['/iscsi', 'ls'],
      ['saveconfig'],
    ]);
    expect(s.state().targets[iqn].auth).toEqual({ [initiator]: { userid: chap.user, password: chap.password } });
  });

  it('rolls back a CHAP target whose auth cannot be set, with no secret in the error', async () => {
    const iqn = 'iqn.2026-07.com.controller:worker-06.ubuntu';
    const initiator = 'iqn.2026-07.com.controller:worker-06';
    const img = join(dir, 'worker-06.ubuntu.img');
    writeFileSync(img, Buffer.alloc(4096));
    process.env.TARGETCLI_STANDIN_FAIL = 'set auth';
    const err = await targets.createDisk(iqn, img, { initiator, chap: { user: 'il-worker-06', password: 'Secret6Secret66' } }).catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'backend_failed' });
    expect((err as Error).message).toContain('password=<redacted>');
    expect((err as Error).message).not.toContain('Secret6Secret66');
    expect(s.state().targets[iqn]).toBeUndefined();
    expect(s.calls()).toContainEqual(['/iscsi', 'delete', iqn]);
  });

  it('refuses CHAP without an initiator before any targetcli call', async () => {
    const img = join(dir, 'w-bad.img');
    writeFileSync(img, Buffer.alloc(4096));
    await expect(targets.createDisk('iqn.2026-07.com.controller:w-bad', img, { chap: { user: 'il-w', password: 'goodSecret0001' } })).rejects.toMatchObject({ code: 'chap_invalid' });
    expect(s.calls()).toEqual([]);
  });

  it('rolls back a restricted target whose ACL cannot be made', async () => {
    const iqn = 'iqn.2026-07.com.controller:w4';
    const img = join(dir, 'w4.img');
    writeFileSync(img, Buffer.alloc(4096));
    process.env.TARGETCLI_STANDIN_FAIL = 'tpg1/acls create';
    await expect(targets.createDisk(iqn, img, { initiator: 'iqn.2026-07.com.controller:w4' })).rejects.toMatchObject({ code: 'backend_failed' });
    expect(s.calls().slice(-2)).toEqual([
      ['/iscsi', 'delete', iqn],
      ['/backstores/fileio', 'delete', 'w4'],
    ]);
    expect(s.calls()).not.toContainEqual(['saveconfig']);
    expect(s.state().targets[iqn]).toBeUndefined();
  });

  it('creates a CD as a write-protected target', async () => {
    const iso = join(dir, 'Win11.iso');
    writeFileSync(iso, Buffer.alloc(4096));
    await targets.createCd(`${IQN}.iso`, iso);
    expect(s.calls()).toContainEqual([
      `/iscsi/${IQN}.iso/tpg1`,
      'set',
      'attribute',
      'authentication=0',
      'generate_node_acls=1',
      'cache_dynamic_acls=1',
      'demo_mode_write_protect=1',
    ]);
    expect(s.state().targets[`${IQN}.iso`].attributes.demo_mode_write_protect).toBe('1');
  });

  it('deletes the target, then its storage object, then saves', async () => {
    await targets.delete(IQN);
    expect(s.calls()).toEqual([['/iscsi', 'ls'], ['/iscsi', 'delete', IQN], ['/backstores/fileio', 'delete', 'worker-01.ubuntu'], ['saveconfig']]);
    expect(s.state().backstores['worker-01.ubuntu']).toBeUndefined();
  });

  it('rolls back the target and the storage object when the LUN cannot be made', async () => {
    const img = join(dir, 'w2.img');
    writeFileSync(img, Buffer.alloc(4096));
    process.env.TARGETCLI_STANDIN_FAIL = 'tpg1/luns create';
    const iqn = 'iqn.2026-07.com.controller:w2';
    await expect(targets.createDisk(iqn, img)).rejects.toMatchObject({ code: 'backend_failed' });
    const calls = s.calls();
    expect(calls.slice(-2)).toEqual([
      ['/iscsi', 'delete', iqn],
      ['/backstores/fileio', 'delete', 'w2'],
    ]);
    expect(calls).not.toContainEqual(['saveconfig']);
    expect(s.state().targets[iqn]).toBeUndefined();
    expect(s.state().backstores.w2).toBeUndefined();
  });

  it('names storage objects after the IQN suffix', () => {
    expect(storageObjectName('iqn.2026-07.com.controller:worker-01.ubuntu')).toBe('worker-01.ubuntu');
    expect(storageObjectName('iqn.2026-07.com.controller:a:b')).toBe('a_b');
  });
});

describe('parseTargetcliLs', () => {
  it('reads targets and their LUN backing files from targetcli-fb output, old and new', () => {
    const text = `o- iscsi .............................................................................. [Targets: 2]
  o- iqn.2026-07.com.controller:worker-01.ubuntu .......................................... [TPGs: 1]
  | o- tpg1 ................................................................. [gen-acls, no-auth]
  |   o- acls ........................................................................ [ACLs: 0]
  |   o- luns ........................................................................ [LUNs: 1]
  |   | o- lun0 .. [fileio/worker-01.ubuntu (/home/iscsi_img/worker-01.ubuntu.img) write-back (default_tg_pt_gp)]
  |   o- portals .................................................................. [Portals: 1]
  |     o- 0.0.0.0:3260 ................................................................... [OK]
  o- iqn.2026-07.com.controller:old ....................................................... [TPGs: 1]
    o- tpg1 .......................................................................... [enabled]
      o- luns ........................................................................ [LUNs: 1]
        o- lun0 ............................................. [fileio/old (/home/iscsi_img/old.img)]
`;
    expect(parseTargetcliLs(text)).toEqual([
      {
        iqn: 'iqn.2026-07.com.controller:worker-01.ubuntu',
        luns: [{ lun: 0, storageObject: 'fileio/worker-01.ubuntu', backing: '/home/iscsi_img/worker-01.ubuntu.img' }],
        acl: ['ALL'],
      },
      { iqn: 'iqn.2026-07.com.controller:old', luns: [{ lun: 0, storageObject: 'fileio/old', backing: '/home/iscsi_img/old.img' }], acl: [] },
    ]);
  });

  it('reads node ACLs (current and older summaries) and demo mode from the TPG line', () => {
    const text = `o- iscsi .............................................................................. [Targets: 2]
  o- iqn.2026-07.com.controller:worker-02.ubuntu .......................................... [TPGs: 1]
  | o- tpg1 .............................................................. [no-gen-acls, no-auth]
  |   o- acls ........................................................................ [ACLs: 2]
  |   | o- iqn.2026-07.com.controller:worker-02 ............................... [Mapped LUNs: 1]
  |   | | o- mapped_lun0 ............................... [lun0 fileio/worker-02.ubuntu (rw)]
  |   | o- iqn.1994-05.com.redhat:abc ............................ [1-way auth, Mapped LUNs: 1]
  |   |   o- mapped_lun0 ............................... [lun0 fileio/worker-02.ubuntu (rw)]
  |   o- luns ........................................................................ [LUNs: 1]
  |   | o- lun0 .. [fileio/worker-02.ubuntu (/home/iscsi_img/worker-02.ubuntu.img) write-back (default_tg_pt_gp)]
  |   o- portals .................................................................. [Portals: 1]
  |     o- 0.0.0.0:3260 ................................................................... [OK]
  o- iqn.2026-07.com.controller:older ..................................................... [TPGs: 1]
    o- tpg1 .......................................................................... [enabled]
      o- acls ........................................................................ [1 ACL]
      | o- iqn.2026-07.com.controller:host ................................... [1 Mapped LUN]
      |   o- mapped_lun0 ................................................ [lun0 (ro)]
      o- luns ........................................................................ [1 LUN]
        o- lun0 ......................................... [fileio/older (/home/iscsi_img/older.iso)]
`;
    const parsed = parseTargetcliLs(text);
    expect(parsed.map((t) => t.acl)).toEqual([['iqn.2026-07.com.controller:worker-02', 'iqn.1994-05.com.redhat:abc'], ['iqn.2026-07.com.controller:host']]);
    expect(parsed.map((t) => t.luns.map((l) => l.backing))).toEqual([['/home/iscsi_img/worker-02.ubuntu.img'], ['/home/iscsi_img/older.iso']]);
  });
});
