import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

let f: MetalFixture;
const AUTH = { authorization: 'Bearer t0ken' };
const inject = (method: string, url: string, payload?: unknown) =>
  f.app.inject({ method: method as 'GET', url, payload: payload as object, headers: AUTH });
const report = (mac: string, extra = '') => f.app.inject({ url: `/devices/report?mac=${mac}${extra}` });
const hosts = () => readFileSync(f.config.dnsmasqHostsFile, 'utf8');

beforeEach(async () => {
  f = await newMetalFixture({ IPXE_CP_TOKEN: 't0ken' });
});
afterEach(async () => {
  await f.close();
});

describe('auth (§1.3)', () => {
  it('leaves /healthz, /boot-vars and /devices/report open and guards everything else', async () => {
    expect((await f.app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await f.app.inject({ url: '/boot-vars?hostname=x' })).statusCode).toBe(200);
    expect((await report('000c29b98b2d')).statusCode).toBe(200);
    for (const url of ['/workers', '/devices', '/operations', '/settings/auto-register']) {
      expect((await f.app.inject({ url })).statusCode).toBe(401);
      expect((await inject('GET', url)).statusCode).toBe(200);
    }
  });
});

describe('device report and auto-register (§5.1, §16.6)', () => {
  it('pools an unknown MAC with its normalised fingerprint while auto-register is on', async () => {
    const r = await report('000C29B98B2D', '&uuid=4c4c&manufacturer=ASUSTeK%20COMPUTER%20INC.&mem-total=0x8000&mem-speed=5600&chip=RTL8125&mem-type=DDR5&busid=0110ec8125&cpumodel=Intel');
    expect(r.statusCode).toBe(200);
    expect(r.body).toBe('#!ipxe\n');
    const d = (await inject('GET', '/devices/00:0c:29:b9:8b:2d')).json();
    expect(d).toMatchObject({ mac: '00:0c:29:b9:8b:2d', state: 'pooled', source: 'ipxe', uuid: '4c4c', bound_worker_id: null });
    expect(d.fingerprint).toMatchObject({ manufacturer: 'ASUSTeK COMPUTER INC.', mem_total: 32768, mem_speed: 5600, chip: 'RTL8125', mem_type: 'DDR5', busid: '0110ec8125' });
    const ops = (await inject('GET', '/operations?mac=000c29b98b2d')).json();
    expect(ops.entries.map((e: { op: string }) => e.op)).toEqual(['device.register']);
  });

  it('ignores unknown MACs once auto-register is switched off, and the switch persists', async () => {
    expect((await inject('PUT', '/settings/auto-register', { enabled: false })).json()).toEqual({ enabled: false });
    await report('00-0c-29-b9-8b-2e');
    expect((await inject('GET', '/devices/00:0c:29:b9:8b:2e')).statusCode).toBe(404);
    expect((await inject('GET', '/settings/auto-register')).json()).toEqual({ enabled: false });
    const ops = (await inject('GET', '/operations')).json();
    expect(ops.entries.at(-1)).toMatchObject({ op: 'settings.auto_register', enabled: false });
  });

  it('never revives a revoked device', async () => {
    await report('000c29b98b2d');
    expect((await inject('DELETE', '/devices/000c29b98b2d')).json().state).toBe('revoked');
    await report('000c29b98b2d', '&serial=NEW');
    const d = (await inject('GET', '/devices/000c29b98b2d')).json();
    expect(d.state).toBe('revoked');
    expect(d.fingerprint.serial).toBeUndefined();
    expect((await inject('POST', '/devices', { mac: '000c29b98b2d' })).statusCode).toBe(409);
  });

  it('treats an all-zero SMBIOS UUID as not set', async () => {
    await report('000c29b98b2d', '&uuid=00000000-0000-0000-0000-000000000000');
    expect((await inject('GET', '/devices/000c29b98b2d')).json().uuid).toBeNull();
    await report('000c29b98b2d', '&uuid=4c4c4544-0042-3510-8052-b4c04f4e4d32');
    await report('000c29b98b2d', '&uuid=FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF');
    expect((await inject('GET', '/devices/000c29b98b2d')).json().uuid).toBe('4c4c4544-0042-3510-8052-b4c04f4e4d32');
  });

  it('keeps the firmware the machine booted with (pcbios or efi) and ignores any other value', async () => {
    await report('000c29b98b2d', '&platform=pcbios');
    expect((await inject('GET', '/devices/000c29b98b2d')).json().fingerprint.platform).toBe('pcbios');
    // The same machine switched to UEFI: the next report says so at once.
    await report('000c29b98b2d', '&platform=efi');
    expect((await inject('GET', '/devices/000c29b98b2d')).json().fingerprint.platform).toBe('efi');
    for (const bad of ['linux', 'EFI', 'efi%0aset%20x', '']) {
      await report('000c29b98b2d', `&platform=${bad}`);
      expect((await inject('GET', '/devices/000c29b98b2d')).json().fingerprint.platform, bad).toBe('efi');
    }
    await report('000c29b98b2e', '&platform=uefi');
    expect((await inject('GET', '/devices/000c29b98b2e')).json().fingerprint).not.toHaveProperty('platform');
  });

  it('refuses a report without a valid MAC', async () => {
    expect((await f.app.inject({ url: '/devices/report?mac=zz' })).statusCode).toBe(400);
    expect((await f.app.inject({ url: '/devices/report' })).statusCode).toBe(422);
  });
});

describe('device pool (§16.1–16.5)', () => {
  it('registers manually (201), refuses duplicates (409), filters by state', async () => {
    const r = await inject('POST', '/devices', { mac: '00:0c:29:00:00:01', serial: 'S1' });
    expect(r.statusCode).toBe(201);
    expect(r.json()).toMatchObject({ state: 'pooled', source: 'manual', fingerprint: { serial: 'S1' } });
    expect((await inject('POST', '/devices', { mac: '000c29000001' })).statusCode).toBe(409);
    expect((await inject('POST', '/devices', { mac: 'nope' })).statusCode).toBe(400);
    expect((await inject('GET', '/devices?state=pooled')).json()).toHaveLength(1);
    expect((await inject('GET', '/devices?state=bound')).json()).toHaveLength(0);
  });

  it('imports a list: created, skipped and failed', async () => {
    await inject('POST', '/devices', { mac: '00:0c:29:00:00:01' });
    await inject('POST', '/devices', { mac: '00:0c:29:00:00:09' });
    await inject('DELETE', '/devices/00:0c:29:00:00:09');
    const r = (await inject('POST', '/devices/import', { entries: [{ mac: '00:0c:29:00:00:01' }, { mac: '00:0c:29:00:00:02' }, { mac: 'bad' }, { mac: '00:0c:29:00:00:09' }] })).json();
    expect(r.created).toEqual(['00:0c:29:00:00:02']);
    expect(r.skipped.map((s: { mac: string }) => s.mac)).toEqual(['00:0c:29:00:00:01']);
    expect(r.failed.map((s: { mac: string }) => s.mac)).toEqual(['bad', '00:0c:29:00:00:09']);
  });

  it('refuses to revoke a bound device', async () => {
    await inject('POST', '/devices', { mac: '00:0c:29:00:00:01' });
    await inject('POST', '/workers', { worker_id: 'w1', mac: '00:0c:29:00:00:01' });
    expect((await inject('DELETE', '/devices/00:0c:29:00:00:01')).statusCode).toBe(409);
  });
});

describe('workers and binding (§7, §16.7–16.8)', () => {
  it('creates a worker bound to a pooled device, renders dhcp-hosts.conf and reloads dnsmasq', async () => {
    await report('000c29b98b2d');
    const r = await inject('POST', '/workers', { worker_id: 'Worker-01', mac: '00:0C:29:B9:8B:2D' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ worker_id: 'worker-01', hostname: 'worker-01', arch: 'x86_64', state: 'registered', disks: [], cd: null, mac: '00:0c:29:b9:8b:2d', readiness: 'partial' });
    expect(hosts()).toBe('00:0c:29:b9:8b:2d,worker-01,infinite\n');
    expect(f.reloader.count).toBe(1);
    expect((await inject('GET', '/devices/000c29b98b2d')).json()).toMatchObject({ state: 'bound', bound_worker_id: 'worker-01' });
  });

  it('refuses a MAC that is not pooled (409) and creates nothing', async () => {
    const r = await inject('POST', '/workers', { worker_id: 'w1', mac: '00:0c:29:b9:8b:2d' });
    expect(r.statusCode).toBe(409);
    expect((await inject('GET', '/workers/w1')).statusCode).toBe(404);
  });

  it('validates ids, hostnames, boot blocks and rejects duplicates', async () => {
    expect((await inject('POST', '/workers', { worker_id: 'bad id' })).statusCode).toBe(400);
    expect((await inject('POST', '/workers', { worker_id: 'w1', boot: { menu_default: 'windowz' } })).statusCode).toBe(400);
    expect((await inject('POST', '/workers', { worker_id: 'w1', boot: { menu_timeout: -1 } })).statusCode).toBe(400);
    expect((await inject('POST', '/workers', {})).statusCode).toBe(422);
    expect((await inject('POST', '/workers', { worker_id: 'w1', boot: { menu_default: 'EXIT', menu_timeout: 0 } })).json().boot).toEqual({ menu_default: 'exit', menu_timeout: 0 });
    expect((await inject('POST', '/workers', { worker_id: 'w1' })).statusCode).toBe(409);
    expect((await inject('POST', '/workers', { worker_id: 'w2', hostname: 'w1' })).statusCode).toBe(409);
  });

  it('binds, refuses a second bind without force, re-binds atomically with force, unbinds', async () => {
    await report('000c29000001');
    await report('000c29000002');
    await inject('POST', '/workers', { worker_id: 'w1' });
    await inject('POST', '/workers', { worker_id: 'w2' });
    expect((await inject('POST', '/devices/000c29000001/bind?worker_id=w1')).json()).toMatchObject({ state: 'bound', bound_worker_id: 'w1' });
    expect((await inject('POST', '/devices/000c29000001/bind?worker_id=w1')).statusCode).toBe(200); // idempotent
    expect((await inject('POST', '/devices/000c29000001/bind?worker_id=w2')).statusCode).toBe(409);
    expect((await inject('POST', '/devices/000c29000002/bind?worker_id=w1')).statusCode).toBe(409);
    expect((await inject('POST', '/devices/000c29000002/bind?worker_id=w1&force=true')).json().bound_worker_id).toBe('w1');
    expect((await inject('GET', '/devices/000c29000001')).json()).toMatchObject({ state: 'pooled', bound_worker_id: null });
    expect(hosts()).toBe('00:0c:29:00:00:02,w1,infinite\n');
    const binds = (await inject('GET', '/operations?mac=00:0c:29:00:00:02')).json().entries;
    expect(binds.at(-1)).toMatchObject({ op: 'device.bind', worker_id: 'w1', old_device_mac: '00:0c:29:00:00:01' });
    expect((await inject('DELETE', '/devices/000c29000002/bind')).json().state).toBe('pooled');
    expect((await inject('DELETE', '/devices/000c29000002/bind')).statusCode).toBe(409);
    expect(hosts()).toBe('');
    expect((await inject('POST', '/devices/000c29000099/bind?worker_id=w1')).statusCode).toBe(404);
    expect((await inject('POST', '/devices/000c29000001/bind?worker_id=nope')).statusCode).toBe(404);
  });

  it('answers 500 and says the file was written when dnsmasq cannot be reloaded', async () => {
    await report('000c29000001');
    await inject('POST', '/workers', { worker_id: 'w1' });
    f.reloader.failWith = 'no such container';
    const r = await inject('POST', '/devices/000c29000001/bind?worker_id=w1');
    expect(r.statusCode).toBe(500);
    expect(r.json().detail).toContain(f.config.dnsmasqHostsFile);
    expect(hosts()).toBe('00:0c:29:00:00:01,w1,infinite\n');
  });

  it('changes a worker MAC (§7.5) with changed:false when it is the same', async () => {
    await report('000c29000001');
    await report('000c29000002');
    await inject('POST', '/workers', { worker_id: 'w1', mac: '000c29000001' });
    const same = (await inject('PUT', '/workers/w1/mac', { mac: '00:0c:29:00:00:01' })).json();
    expect(same.changed).toBe(false);
    const before = f.reloader.count;
    const moved = (await inject('PUT', '/workers/w1/mac', { mac: '00:0c:29:00:00:02' })).json();
    expect(moved).toMatchObject({ changed: true, mac: '00:0c:29:00:00:02' });
    expect(f.reloader.count).toBe(before + 1);
    expect((await inject('GET', '/devices/000c29000001')).json().state).toBe('pooled');
    const ops = (await inject('GET', '/operations')).json().entries.map((e: { op: string }) => e.op);
    expect(ops.slice(-3)).toEqual(['device.bind', 'device.unbind', 'worker.mac.update']);
    expect((await inject('PUT', '/workers/w1/mac', { mac: 'xx' })).statusCode).toBe(400);
    expect((await inject('PUT', '/workers/w1/mac', { mac: '00:0c:29:00:00:77' })).statusCode).toBe(409);
    expect((await inject('PUT', '/workers/nope/mac', { mac: '00:0c:29:00:00:01' })).statusCode).toBe(404);
  });

  it('sets and clears the default boot configuration (§7.3)', async () => {
    await inject('POST', '/workers', { worker_id: 'w1' });
    expect((await inject('PUT', '/workers/w1/default-os', {})).statusCode).toBe(400);
    expect((await inject('PUT', '/workers/w1/default-os', { os: 'ubuntu' })).statusCode).toBe(409);
    expect((await inject('PUT', '/workers/w1/default-os', { os: 'plan9' })).statusCode).toBe(400);
    expect((await inject('PUT', '/workers/w1/default-os', { menu_default: 'nope' })).statusCode).toBe(400);
    expect((await inject('PUT', '/workers/w1/default-os', { menu_timeout: -5 })).statusCode).toBe(400);
    const set = (await inject('PUT', '/workers/w1/default-os', { menu_default: 'Menu-Install', menu_timeout: 3000 })).json();
    expect(set.boot).toEqual({ menu_default: 'menu-install', menu_timeout: 3000 });
    const cleared = (await inject('PUT', '/workers/w1/default-os', { menu_default: null, menu_timeout: null })).json();
    expect(cleared.boot).toBeUndefined();
    expect((await inject('PUT', '/workers/nope/default-os', { menu_timeout: 1 })).statusCode).toBe(404);
  });

  it('creates workers in batch with zero-padded ids, idempotently (§7.6)', async () => {
    await report('000c29000001');
    const r = (await inject('POST', '/workers/batch', { count: 3, name_prefix: 'node-', macs: ['000c29000001', '000c29000002', 'junk'] })).json();
    expect(r.succeeded).toEqual([{ worker_id: 'node-01', hostname: 'node-01', mac: '00:0c:29:00:00:01' }]);
    expect(r.failed.map((x: { worker_id: string }) => x.worker_id)).toEqual(['node-02', 'node-03']);
    const again = (await inject('POST', '/workers/batch', { count: 3, name_prefix: 'node-' })).json();
    expect(again.skipped.map((x: { worker_id: string }) => x.worker_id)).toEqual(['node-01']);
    expect(again.succeeded).toHaveLength(2);
    const hundred = (await inject('POST', '/workers/batch', { count: 100, name_prefix: 'r-' })).json();
    expect(hundred.succeeded[0].worker_id).toBe('r-001');
    expect(hundred.succeeded[99].worker_id).toBe('r-100');
    expect((await inject('POST', '/workers/batch', { count: 0 })).statusCode).toBe(422);
    expect((await inject('POST', '/workers/batch', { count: 101 })).statusCode).toBe(422);
    expect((await inject('POST', '/workers/batch', {})).statusCode).toBe(422);
    expect((await inject('POST', '/workers/batch', { count: 2, macs: ['000c29000001'] })).statusCode).toBe(400);
    expect((await inject('POST', '/workers/batch', { count: 2, name_prefix: '' })).statusCode).toBe(400);
    expect((await inject('POST', '/workers/batch', { count: 2, name_prefix: 'bad prefix ' })).statusCode).toBe(400);
  });

  it('deletes workers: devices back to the pool, one reload per batch (§11)', async () => {
    for (const m of ['01', '02', '03']) await report(`000c290000${m}`);
    await inject('POST', '/workers/batch', { count: 3, macs: ['000c29000001', '000c29000002', '000c29000003'] });
    const one = (await inject('DELETE', '/workers/worker-01')).json();
    expect(one).toEqual({ deleted: 'worker-01', delete_disk: false, dnsmasq_removed: true });
    expect((await inject('GET', '/devices/000c29000001')).json()).toMatchObject({ state: 'pooled', bound_worker_id: null });
    const before = f.reloader.count;
    const batch = (await inject('POST', '/workers/delete/batch', { worker_ids: ['worker-02', 'worker-03', 'worker-09'] })).json();
    expect(batch.succeeded).toEqual([
      { worker_id: 'worker-02', hostname: 'worker-02' },
      { worker_id: 'worker-03', hostname: 'worker-03' },
    ]);
    expect(batch.failed).toEqual([{ worker_id: 'worker-09', error: 'worker not found: worker-09' }]);
    expect(f.reloader.count).toBe(before + 1);
    expect(hosts()).toBe('');
    expect((await inject('DELETE', '/workers/worker-01')).statusCode).toBe(404);
  });
});

describe('batch bind (§16.9–16.10)', () => {
  it('previews without writing and binds with one device.bind per success', async () => {
    await report('000c29000001', '&serial=ABC');
    await report('000c29000002');
    await inject('POST', '/workers/batch', { count: 3 });
    const pairs = [
      { mac: '000c29000001', worker_id: 'worker-01', serial: 'XYZ' },
      { mac: '000c29000002', worker_id: 'worker-02' },
      { mac: '000c29000003', worker_id: 'worker-03' },
      { mac: 'bad', worker_id: 'worker-03' },
    ];
    const p = (await inject('POST', '/devices/bind/batch/preview', { pairs })).json();
    expect(p.summary).toEqual({ total: 4, ok: 2, conflict: 0, not_found: 2 });
    expect(p.matched[0].fingerprint_mismatch).toEqual({ fields: ['serial'] });
    expect(p.matched[1].fingerprint_mismatch).toBeNull();
    expect((await inject('GET', '/devices?state=bound')).json()).toHaveLength(0);
    const r = (await inject('POST', '/devices/bind/batch', { pairs })).json();
    expect(r.succeeded).toHaveLength(2);
    expect(r.failed).toHaveLength(2);
    const again = (await inject('POST', '/devices/bind/batch', { pairs: pairs.slice(0, 2) })).json();
    expect(again.skipped).toHaveLength(2);
    const ops = (await inject('GET', '/operations')).json().entries.map((e: { op: string }) => e.op);
    expect(ops.filter((o: string) => o === 'device.bind')).toHaveLength(2);
    expect(ops.filter((o: string) => o === 'device.bind.batch')).toHaveLength(2);
    expect(hosts()).toBe('00:0c:29:00:00:01,worker-01,infinite\n00:0c:29:00:00:02,worker-02,infinite\n');
    expect((await inject('POST', '/devices/bind/batch/preview', { mode: 'sequential', macs: ['a'], worker_ids: [] })).statusCode).toBe(400);
  });
});

describe('/boot-vars (§5)', () => {
  const vars = async (q: string) => (await f.app.inject({ url: `/boot-vars?${q}&format=json` })).json();

  it('sends a pooled device into the reboot loop and gives nothing to unknown or revoked MACs', async () => {
    await report('000c29000001');
    expect(await vars('mac=000c29000001')).toEqual({ menu_default: 'reboot', menu_timeout: 1 });
    expect(await vars('mac=000c29000099')).toEqual({});
    await inject('DELETE', '/devices/000c29000001');
    expect(await vars('mac=000c29000001')).toEqual({});
    const text = (await f.app.inject({ url: '/boot-vars?mac=000c29000099' })).body;
    expect(text).toBe('#!ipxe\n# no per-worker boot vars found\n');
  });

  it('projects a bound worker by hostname or MAC, and refuses a MAC not bound to that hostname', async () => {
    await report('000c29000001');
    await report('000c29000002');
    await inject('POST', '/workers', { worker_id: 'worker-01', mac: '000c29000001' });
    await inject('POST', '/workers', { worker_id: 'worker-02', mac: '000c29000002' });
    expect(await vars('hostname=worker-01&mac=00:0c:29:00:00:01')).toEqual({ menu_default: 'reboot', menu_timeout: 1 });
    expect(await vars('mac=00-0c-29-00-00-01')).toEqual({ menu_default: 'reboot', menu_timeout: 1 });
    expect(await vars('hostname=worker-01&mac=000c29000002')).toEqual({});
    expect(await vars('hostname=worker-01&mac=000c29000099')).toEqual({});
    expect(await vars('hostname=worker-01')).toEqual({ menu_default: 'reboot', menu_timeout: 1 });
    await inject('PUT', '/workers/worker-01/default-os', { menu_default: 'exit' });
    expect(await vars('hostname=worker-01')).toEqual({ menu_default: 'exit', menu_timeout: 5000 });
    await inject('PUT', '/workers/worker-01/default-os', { menu_timeout: 0 });
    expect(await vars('hostname=worker-01')).toEqual({ menu_default: 'exit', menu_timeout: 0 });
    const text = (await f.app.inject({ url: '/boot-vars?hostname=worker-01&mac=000c29000001' })).body;
    expect(text).toBe('#!ipxe\n# boot vars for worker-01\nset menu-default exit\nset menu-timeout 0\n');
  });

  it('never writes: an unknown MAC asking for vars is not pooled', async () => {
    await vars('mac=000c29000042');
    expect((await inject('GET', '/devices')).json()).toHaveLength(0);
    expect((await inject('GET', '/operations')).json().entries).toHaveLength(0);
  });
});

describe('operations log (§12)', () => {
  it('pages with since/limit/next_cursor and records the client address, never the token', async () => {
    for (const m of ['01', '02', '03']) await report(`000c290000${m}`);
    const first = (await inject('GET', '/operations?limit=2')).json();
    expect(first.entries.map((e: { id: number }) => e.id)).toEqual([1, 2]);
    expect(first.next_cursor).toBe(2);
    const rest = (await inject('GET', `/operations?since=${first.next_cursor}`)).json();
    expect(rest.entries.map((e: { id: number }) => e.id)).toEqual([3]);
    expect(rest.entries[0]).toMatchObject({ op: 'device.register', status: 'ok', client: '127.0.0.1' });
    expect(rest.entries[0].ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    // Secrets that do reach the log's writer: an agent token (set, then rotated) and
    // credentials in an agent URL. The writer keeps `token_rotated`, a plain field.
    expect((await inject('POST', '/agents', { id: 'ag1', base_url: 'http://admin:s3cret-url@127.0.0.1:9', token: 's3cret-agent', role: { disk: true } })).statusCode).toBe(201);
    expect((await inject('PUT', '/agents/ag1', { base_url: 'http://admin:s3cret-url@127.0.0.1:9', token: 's3cret-rotated' })).statusCode).toBe(200);
    const all = JSON.stringify((await inject('GET', '/operations')).json());
    for (const secret of ['t0ken', 's3cret-agent', 's3cret-rotated', 's3cret-url']) expect(all).not.toContain(secret);
    expect(all).toContain('"token_rotated":true');
    expect(all).toContain('http://[redacted]@127.0.0.1:9');
  });
});
