import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics } from '@ironlens/core';
import { freeTcpPort, parsePrometheusText, sampleValue, waitFor } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAgent } from '../src/testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../src/testing/fixture';
import { CountingFront, fakeSystems, type RunningSushy, startSushy } from './bmc.harness';
import { killAllSync } from './netboot.harness';

/**
 * Power through Redfish (issue 21) against the real OpenStack Redfish emulator
 * (`sushy-emulator --fake`, sushy-tools from PyPI): its fake systems change `PowerState` (after
 * the 1–11 s delay the fake driver gives every power change, as hardware does), keep the boot
 * override, and check HTTP Basic credentials against its auth file. A counting front on 50
 * loopback addresses passes the requests on and measures how many are in flight at once.
 */

const SYSTEMS = fakeSystems(50);
/** Three more systems of the emulator, reached directly (not through the counting front): the metrics test's own. */
const METRIC_SYSTEMS = fakeSystems(53).slice(50);
const TOKEN = 'power-test-token';
const auth = { authorization: `Bearer ${TOKEN}` };

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

describe('power through Redfish, against sushy-emulator --fake', () => {
  let work: string;
  let emu: RunningSushy;
  let front: CountingFront;
  let fx: MetalFixture;
  const metrics = new Metrics({ processMetrics: false });
  const hosts = SYSTEMS.map((_, i) => `127.0.21.${i + 1}`);
  const urlOf = (i: number) => `http://${hosts[i]}:${front.port}/redfish/v1/Systems/${SYSTEMS[i].uuid}`;
  const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => fx.app.inject({ method, url, headers: auth, payload: payload as object });
  /** Declares system `i` with its BMC; one declared by an earlier test stays as it is (each test may also run alone). */
  const declare = async (i: number, bmc: Record<string, unknown> = {}) => {
    const r = await api('POST', '/devices', { mac: SYSTEMS[i].mac, bmc: { driver: 'redfish', url: urlOf(i), username: emu.username, password: emu.password, ...bmc } });
    if (r.statusCode === 409 && r.json().detail.includes('already exists')) return;
    expect(r.statusCode, r.body).toBe(201);
  };
  const powerState = async (i: number) => (await emu.system(SYSTEMS[i].uuid)).PowerState;

  beforeAll(async () => {
    process.on('exit', killAllSync);
    work = mkdtempSync(join(tmpdir(), `ironlens-power-redfish-${process.pid}-`));
    emu = await startSushy(join(work, 'emulator'), [...SYSTEMS, ...METRIC_SYSTEMS]);
    front = new CountingFront(emu.port, { etags: true });
    await front.start(hosts);
    fx = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN, IRONLENS_BMC_CONCURRENCY: '8', IRONLENS_BOOT_CONFIRM_TIMEOUT_MS: '1500', IRONLENS_BMC_TIMEOUT_MS: '10000' }, { metrics });
  }, 60_000);

  afterAll(async () => {
    fx?.services.power.stop();
    await fx?.close();
    await front?.stop();
    await emu?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('keeps a BMC per device and shows it without the password', async () => {
    await declare(0);
    const got = await api('GET', `/devices/${SYSTEMS[0].mac}/bmc`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({ driver: 'redfish', url: urlOf(0), verify_tls: true, username: 'admin', password_set: true });
    expect(got.body).not.toContain(emu.password);
    // An update without a password keeps the stored one (the console never shows it again).
    const upd = await api('PUT', `/devices/${SYSTEMS[0].mac}/bmc`, { driver: 'redfish', url: urlOf(0), username: emu.username, verify_tls: true });
    expect(upd.statusCode, upd.body).toBe(200);
    expect(upd.json().password_set).toBe(true);
    const bad = await api('PUT', `/devices/${SYSTEMS[0].mac}/bmc`, { driver: 'redfish', url: 'ftp://x/redfish/v1/Systems/1', username: 'a', password: 'b' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('bmc_invalid');
  });

  it('powers on, off and cycles: the emulator’s PowerState follows', async () => {
    await declare(0);
    const mac = SYSTEMS[0].mac;
    expect(await powerState(0)).toBe('Off');
    const on = await api('POST', `/devices/${mac}/power`, { action: 'on' });
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json()).toMatchObject({ mac, action: 'on', boot: null, last_power: { action: 'on', bmc_ok: true, result: null } });
    await waitFor('PowerState On in the emulator', () => powerState(0), (s) => s === 'On', 20_000, 250);
    const off = await api('POST', `/devices/${mac}/power`, { action: 'off' });
    expect(off.statusCode, off.body).toBe(200);
    await waitFor('PowerState Off in the emulator', () => powerState(0), (s) => s === 'Off', 20_000, 250);
    const state = await api('GET', `/devices/${mac}/power`);
    expect(state.statusCode).toBe(200);
    expect(['on', 'off']).toContain(state.json().state);
    // Cycle of a machine that is off powers it on (ResetType On), as Ironic's reboot does.
    const cycle = await api('POST', `/devices/${mac}/power`, { action: 'cycle' });
    expect(cycle.statusCode, cycle.body).toBe(200);
    await waitFor('PowerState On after the cycle', () => powerState(0), (s) => s === 'On', 20_000, 250);
    const resets = front.seen.filter((r) => r.method === 'POST' && r.path.endsWith('/Actions/ComputerSystem.Reset')).map((r) => JSON.parse(r.body).ResetType);
    expect(resets).toEqual(['On', 'ForceOff', 'On']);
  }, 90_000);

  it('boot: "network" leaves Pxe in the emulator, sent Once with the ETag; the report and /boot-vars prove the boot', async () => {
    await declare(1);
    const mac = SYSTEMS[1].mac;
    const r = await api('POST', `/devices/${mac}/power`, { action: 'on', boot: 'network' });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().last_power).toMatchObject({ action: 'on', boot: 'network', bmc_ok: true, result: 'pending', network_boot_seen_at: null });
    const sys = await emu.system(SYSTEMS[1].uuid);
    expect((sys.Boot as Record<string, unknown>).BootSourceOverrideTarget).toBe('Pxe');
    const patch = front.seen.find((s) => s.method === 'PATCH' && s.path.endsWith(SYSTEMS[1].uuid));
    expect(JSON.parse(patch?.body ?? '{}')).toEqual({ Boot: { BootSourceOverrideTarget: 'Pxe', BootSourceOverrideEnabled: 'Once' } });
    const lastGet = front.seen.filter((s) => s.method === 'GET' && s.path.endsWith(SYSTEMS[1].uuid) && s.at <= (patch?.at ?? 0)).length;
    expect(lastGet).toBeGreaterThan(0);
    expect(patch?.headers['if-match']).toMatch(/^W\/"\d+"$/);
    // What a machine that boots from the network asks, in boot.ipxe's order.
    expect((await fx.app.inject({ method: 'GET', url: `/devices/report?mac=${mac}` })).statusCode).toBe(200);
    const mid = await api('GET', `/devices/${mac}`);
    expect(mid.json().last_power.result).toBe('pending');
    expect(mid.json().last_power.network_boot_seen_at).not.toBeNull();
    expect((await fx.app.inject({ method: 'GET', url: `/boot-vars?mac=${mac}` })).statusCode).toBe(200);
    const dev = await waitFor('last_power booted', async () => (await api('GET', `/devices/${mac}`)).json(), (d) => d.last_power?.result === 'booted', 5_000);
    expect(dev.last_power.detail).toContain('booted from the network');
    const ops = (await api('GET', `/operations?mac=${mac}`)).json().entries as Array<{ op: string }>;
    expect(ops.map((o) => o.op)).toEqual(expect.arrayContaining(['device.register', 'power.action', 'power.boot.confirmed']));
  }, 60_000);

  it('an accepted action with no network boot after IRONLENS_BOOT_CONFIRM_TIMEOUT_MS is no_network_boot, naming what was missing', async () => {
    await declare(2);
    const mac = SYSTEMS[2].mac;
    const r = await api('POST', `/devices/${mac}/power`, { action: 'cycle', boot: 'network' });
    expect(r.statusCode, r.body).toBe(200);
    const dev = await waitFor('no_network_boot', async () => (await api('GET', `/devices/${mac}`)).json(), (d) => d.last_power?.result === 'no_network_boot', 10_000, 100);
    expect(dev.last_power).toMatchObject({ bmc_ok: true, network_boot_seen_at: null });
    expect(dev.last_power.detail).toContain('no DHCP/iPXE request from this MAC came');
    const ops = (await api('GET', `/operations?mac=${mac}`)).json().entries as Array<{ op: string }>;
    expect(ops.map((o) => o.op)).toContain('power.boot.missed');
  }, 30_000);

  it('a wrong password is bmc_auth_failed (the emulator’s auth file), recorded without the password', async () => {
    await declare(3, { password: 'not-the-password' });
    const r = await api('POST', `/devices/${SYSTEMS[3].mac}/power`, { action: 'on' });
    expect(r.statusCode).toBe(502);
    expect(r.json().code).toBe('bmc_auth_failed');
    const dev = (await api('GET', `/devices/${SYSTEMS[3].mac}`)).json();
    expect(dev.last_power).toMatchObject({ bmc_ok: false });
    const ops = await api('GET', `/operations?mac=${SYSTEMS[3].mac}`);
    expect(ops.body).toContain('bmc_auth_failed');
    expect(ops.body).not.toContain('not-the-password');
  });

  it('refuses a revoked device (409) and a device without a BMC (409 bmc_not_configured)', async () => {
    const mac = '52:54:00:21:ff:01';
    expect((await api('POST', '/devices', { mac })).statusCode).toBe(201);
    const none = await api('POST', `/devices/${mac}/power`, { action: 'on' });
    expect(none.statusCode).toBe(409);
    expect(none.json().code).toBe('bmc_not_configured');
    expect((await api('PUT', `/devices/${mac}/bmc`, { driver: 'redfish', url: urlOf(4), username: emu.username, password: emu.password })).statusCode).toBe(200);
    expect((await api('DELETE', `/devices/${mac}`)).statusCode).toBe(200);
    const revoked = await api('POST', `/devices/${mac}/power`, { action: 'on' });
    expect(revoked.statusCode).toBe(409);
    expect(revoked.json().code).toBe('power_device_revoked');
  });

  it('50 devices on one emulator: one result each, never more than IRONLENS_BMC_CONCURRENCY in flight, one at a time per BMC host', async () => {
    for (let i = 5; i < 50; i++) await declare(i);
    // Ten more devices behind one BMC host: their calls must not overlap.
    const shared = Array.from({ length: 10 }, (_, i) => `52:54:00:21:ee:${(i + 1).toString(16).padStart(2, '0')}`);
    for (let i = 0; i < shared.length; i++) {
      const r = await api('POST', '/devices', { mac: shared[i], bmc: { driver: 'redfish', url: `http://${hosts[5]}:${front.port}/redfish/v1/Systems/${SYSTEMS[5 + i].uuid}`, username: emu.username, password: emu.password } });
      expect(r.statusCode).toBe(201);
    }
    front.maxInFlight = 0;
    front.maxPerHost.clear();
    const macs = [...SYSTEMS.slice(5).map((s) => s.mac), 'not-a-mac'];
    const t0 = Date.now();
    const r = await api('POST', '/devices/power', { macs, action: 'off' });
    const ms = Date.now() - t0;
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json() as { succeeded: Array<{ mac: string }>; failed: Array<{ mac: unknown; code: string }> };
    expect(body.succeeded.map((s) => s.mac)).toEqual(SYSTEMS.slice(5).map((s) => s.mac));
    expect(body.failed).toEqual([expect.objectContaining({ mac: 'not-a-mac', code: 'mac_invalid' })]);
    console.log(`[power] 45 Redfish power-offs: ${ms} ms, at most ${front.maxInFlight} requests in flight at the emulator (limit 8)`);
    expect(front.maxInFlight).toBeLessThanOrEqual(8);
    expect(front.maxInFlight).toBeGreaterThan(1);
    front.maxInFlight = 0;
    front.maxPerHost.clear();
    const one = await api('POST', '/devices/power', { macs: shared, action: 'off' });
    expect(one.json().succeeded).toHaveLength(10);
    console.log(`[power] 10 devices behind one BMC host: at most ${front.maxPerHost.get(hosts[5])} request(s) in flight there`);
    expect(front.maxPerHost.get(hosts[5])).toBe(1);
  }, 120_000);

  it('keeps the BMC password out of every answer, the operations log and the data dir', async () => {
    const everything = [(await api('GET', '/devices')).body, (await api('GET', '/operations?limit=100000')).body];
    for (const t of everything) expect(t).not.toContain(emu.password);
    for (const f of filesUnder(fx.dir)) expect(readFileSync(f).includes(Buffer.from(emu.password)), f).toBe(false);
  });

  it('a bind with ?reboot=true power-cycles the device into a one-time network boot; without a BMC it changes nothing', async () => {
    await declare(4);
    const mac = SYSTEMS[4].mac;
    expect((await api('POST', '/workers', { worker_id: 'w-reboot' })).statusCode).toBe(200);
    const r = await api('POST', `/devices/${mac}/bind?worker_id=w-reboot&reboot=true`);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({ mac, state: 'bound', bound_worker_id: 'w-reboot', last_power: { action: 'cycle', boot: 'network', bmc_ok: true, result: 'pending' } });
    expect(((await emu.system(SYSTEMS[4].uuid)).Boot as Record<string, unknown>).BootSourceOverrideTarget).toBe('Pxe');
    // A device without a BMC: 409 before anything changes.
    const bare = '52:54:00:21:ff:02';
    expect((await api('POST', '/devices', { mac: bare })).statusCode).toBe(201);
    expect((await api('POST', '/workers', { worker_id: 'w-bare' })).statusCode).toBe(200);
    const refused = await api('POST', `/devices/${bare}/bind?worker_id=w-bare&reboot=true`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('bmc_not_configured');
    expect((await api('GET', `/devices/${bare}`)).json().state).toBe('pooled');
  });

  it('a new disk with reboot: true power-cycles the worker’s bound device into it', async () => {
    const agent = await new FakeAgent().start();
    try {
      expect((await api('POST', '/agents', { id: 'ag-reboot', base_url: agent.url, role: { disk: true } })).statusCode).toBe(201);
      const before = front.seen.filter((x) => x.method === 'POST' && x.path.includes(SYSTEMS[4].uuid)).length;
      const r = await api('POST', '/workers/w-reboot/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G', reboot: true });
      expect(r.statusCode, r.body).toBe(200);
      expect(r.json()).toMatchObject({ worker_id: 'w-reboot', last_power: { action: 'cycle', boot: 'network', bmc_ok: true } });
      expect(r.json().disks).toHaveLength(1);
      expect(front.seen.filter((x) => x.method === 'POST' && x.path.includes(SYSTEMS[4].uuid)).length).toBe(before + 1);
    } finally {
      await agent.stop();
    }
  });

  it('counts BMC latency and failures, and boots confirmed and missed, with no MAC or host in the labels', async () => {
    // Counted as what this test adds, so it passes alone and after the others (whose proofs of
    // boot still pending end first: they would count as missed meanwhile).
    await waitFor('no proof of boot pending', async () => ((await api('GET', '/devices')).json() as Array<{ last_power?: { result: string | null } }>).filter((d) => d.last_power?.result === 'pending').length, (n) => n === 0, 10_000, 100);
    const read = async () => parsePrometheusText(await metrics.text());
    const value = (samples: ReturnType<typeof parsePrometheusText>, name: string, labels: Record<string, string>) => sampleValue(samples, name, labels) ?? 0;
    const before = await read();
    const [ok, wrong, missed] = METRIC_SYSTEMS;
    const urlOfSystem = (s: { uuid: string }) => `${emu.base}/redfish/v1/Systems/${s.uuid}`;
    const closed = await freeTcpPort();
    for (const [s, url, password] of [
      [ok, urlOfSystem(ok), emu.password],
      [wrong, urlOfSystem(wrong), 'not-the-password'],
      [missed, `http://127.0.0.1:${closed}/redfish/v1/Systems/${missed.uuid}`, emu.password],
    ] as const) {
      expect((await api('POST', '/devices', { mac: s.mac, bmc: { driver: 'redfish', url, username: emu.username, password } })).statusCode).toBe(201);
    }
    // One action that works and is proven (report and /boot-vars), one refused, one unreachable.
    expect((await api('POST', `/devices/${ok.mac}/power`, { action: 'on', boot: 'network' })).statusCode).toBe(200);
    expect((await fx.app.inject({ url: `/devices/report?mac=${ok.mac}` })).statusCode).toBe(200);
    expect((await fx.app.inject({ url: `/boot-vars?mac=${ok.mac}` })).statusCode).toBe(200);
    await waitFor('the boot proven', async () => (await api('GET', `/devices/${ok.mac}`)).json().last_power?.result, (r) => r === 'booted', 5_000, 50);
    expect((await api('POST', `/devices/${wrong.mac}/power`, { action: 'on' })).json().code).toBe('bmc_auth_failed');
    expect((await api('POST', `/devices/${missed.mac}/power`, { action: 'on' })).json().code).toBe('bmc_unreachable');
    // One accepted action whose machine never asks: missed at IRONLENS_BOOT_CONFIRM_TIMEOUT_MS.
    await api('PUT', `/devices/${missed.mac}/bmc`, { driver: 'redfish', url: urlOfSystem(missed), username: emu.username });
    expect((await api('POST', `/devices/${missed.mac}/power`, { action: 'cycle', boot: 'network' })).statusCode).toBe(200);
    await waitFor('the boot missed', async () => (await api('GET', `/devices/${missed.mac}`)).json().last_power?.result, (r) => r === 'no_network_boot', 10_000, 100);
    const after = await read();
    const delta = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    expect(delta('ironlens_bmc_call_duration_seconds_count', { driver: 'redfish', op: 'on', outcome: 'ok' })).toBe(1);
    expect(delta('ironlens_bmc_failures_total', { driver: 'redfish', code: 'bmc_auth_failed' })).toBe(1);
    expect(delta('ironlens_bmc_failures_total', { driver: 'redfish', code: 'bmc_unreachable' })).toBe(1);
    expect(delta('ironlens_power_boots_total', { result: 'booted' })).toBe(1);
    expect(delta('ironlens_power_boots_total', { result: 'no_network_boot' })).toBe(1);
    const text = await metrics.text();
    for (const s of [...SYSTEMS, ...METRIC_SYSTEMS]) expect(text).not.toContain(s.mac);
    expect(text).not.toContain('127.0.21.');
  }, 60_000);

  it('a stopped emulator is bmc_unreachable, quickly', async () => {
    await declare(0);
    const direct = `${emu.base}/redfish/v1/Systems/${SYSTEMS[0].uuid}`;
    expect((await api('PUT', `/devices/${SYSTEMS[0].mac}/bmc`, { driver: 'redfish', url: direct, username: emu.username })).statusCode).toBe(200);
    await emu.stop();
    const t0 = Date.now();
    const r = await api('POST', `/devices/${SYSTEMS[0].mac}/power`, { action: 'on' });
    const ms = Date.now() - t0;
    expect(r.statusCode).toBe(502);
    expect(r.json().code).toBe('bmc_unreachable');
    console.log(`[power] stopped emulator answered bmc_unreachable in ${ms} ms`);
    expect(ms).toBeLessThan(3_000);
  });

});

describe('Redfish over HTTPS (the emulator’s TLS option)', () => {
  let work: string;
  let emu: RunningSushy;
  let fx: MetalFixture;
  const sys = fakeSystems(1)[0];

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), `ironlens-power-tls-${process.pid}-`));
    emu = await startSushy(join(work, 'emulator'), [sys], { tls: true });
    fx = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN });
  }, 60_000);

  afterAll(async () => {
    fx?.services.power.stop();
    await fx?.close();
    await emu?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('refuses a self-signed certificate with verify_tls (bmc_unreachable), accepts it with verify_tls: false', async () => {
    const url = `${emu.base}/redfish/v1/Systems/${sys.uuid}`;
    const put = (verify_tls: boolean) => fx.app.inject({ method: 'PUT', url: `/devices/${sys.mac}/bmc`, headers: auth, payload: { driver: 'redfish', url, username: emu.username, password: emu.password, verify_tls } });
    expect((await fx.app.inject({ method: 'POST', url: '/devices', headers: auth, payload: { mac: sys.mac } })).statusCode).toBe(201);
    expect((await put(true)).statusCode).toBe(200);
    const refused = await fx.app.inject({ method: 'GET', url: `/devices/${sys.mac}/power`, headers: auth });
    expect(refused.statusCode).toBe(502);
    expect(refused.json().code).toBe('bmc_unreachable');
    expect(refused.json().detail).toContain('verify_tls');
    expect((await put(false)).statusCode).toBe(200);
    const ok = await fx.app.inject({ method: 'GET', url: `/devices/${sys.mac}/power`, headers: auth });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().state).toBe('off');
  });
});
