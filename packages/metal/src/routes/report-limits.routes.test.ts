/**
 * `/devices/report` stays open, but bounded (issue 13): a per-source rate limit on new
 * registrations, a cap on pooled devices, and an optional registration window. A refused
 * report is answered the reboot loop, never an error page, and counted in the operations log.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeviceRepository } from '../repositories/device.repository';
import { ReportMemory } from '../services/report-memory.service';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

let f: MetalFixture | undefined;
let clock = 1_800_000_000_000;
const now = () => clock;
const AUTH = { authorization: 'Bearer t0ken' };
const inject = (method: string, url: string, payload?: unknown) => f!.app.inject({ method: method as 'GET', url, payload: payload as object, headers: AUTH });
const report = (mac: string, from = '10.0.0.1') => f!.app.inject({ url: `/devices/report?mac=${mac}&manufacturer=QEMU`, remoteAddress: from });
const mac = (i: number) => `52:54:00:00:01:${i.toString(16).padStart(2, '0')}`;
const pooled = async () => ((await inject('GET', '/devices?state=pooled')).json() as { mac: string }[]).map((d) => d.mac);
const limited = async () => ((await inject('GET', '/operations')).json().entries as Array<{ op: string; [k: string]: unknown }>).filter((e) => e.op === 'device.report.limited');
const REBOOT = (m: string) => `#!ipxe\n# boot vars for ${m}\nset menu-default reboot\nset menu-timeout 1\n`;

/** Calls of the repository's `methods` from now on, counted together. */
function repositoryCalls(...methods: Array<'get' | 'getMany' | 'update' | 'touch'>) {
  const spies = methods.map((m) => vi.spyOn(DeviceRepository.prototype, m));
  return { get count() { return spies.reduce((n, s) => n + s.mock.calls.length, 0); } };
}
/** Every write of a device row: one device's update, or a flush's last_seen of many. */
const deviceWrites = () => repositoryCalls('update', 'touch');
/** Every read of device rows, one device's or many. */
const deviceReads = () => repositoryCalls('get', 'getMany');

async function fixture(env: Record<string, string>) {
  clock = 1_800_000_000_000;
  f = await newMetalFixture({ IPXE_CP_TOKEN: 't0ken', ...env }, { now });
}
afterEach(async () => {
  vi.restoreAllMocks();
  await f?.close();
  f = undefined;
});

describe('per-source rate limit on registrations', () => {
  it('answers the reboot loop past the limit, counts it, and lets other sources and known machines through', async () => {
    await fixture({ IRONLENS_REPORT_REGISTER_PER_MINUTE: '3' });
    for (let i = 1; i <= 3; i++) expect((await report(mac(i))).body).toBe('#!ipxe\n');
    for (let i = 4; i <= 6; i++) {
      const r = await report(mac(i));
      expect(r.statusCode).toBe(200);
      expect(r.headers['content-type']).toMatch(/^text\/plain/);
      expect(r.body).toBe(REBOOT(mac(i)));
    }
    expect(await pooled()).toEqual([mac(1), mac(2), mac(3)]);
    // One entry per minute and source: the first refusal; the next ones are counted into the next entry.
    expect(await limited()).toEqual([expect.objectContaining({ reason: 'rate', refused: 1, client: '10.0.0.1', status: 'refused' })]);
    clock += 61_000;
    expect((await report(mac(7))).body).toBe('#!ipxe\n'); // a minute refilled the bucket
    for (let i = 8; i <= 10; i++) await report(mac(i));
    expect((await report(mac(11))).body).toBe(REBOOT(mac(11)));
    expect((await limited()).map((e) => e.refused)).toEqual([1, 3]);
    // Another source is not limited by this one; a known machine's report never is.
    expect((await report(mac(20), '10.0.0.2')).body).toBe('#!ipxe\n');
    for (let i = 0; i < 20; i++) expect((await report(mac(1))).body).toBe('#!ipxe\n');
  });

  it('is off with 0', async () => {
    await fixture({ IRONLENS_REPORT_REGISTER_PER_MINUTE: '0' });
    for (let i = 1; i <= 150; i++) expect((await report(mac(i))).body).toBe('#!ipxe\n');
    expect(await pooled()).toHaveLength(150);
  });

  it('defaults to 120 a minute per source', async () => {
    await fixture({});
    for (let i = 1; i <= 120; i++) expect((await report(mac(i))).body, String(i)).toBe('#!ipxe\n');
    expect((await report(mac(121))).body).toBe(REBOOT(mac(121)));
  });
});

describe('cap on pooled devices', () => {
  it('registers nothing while the pool is full, and again once a device leaves it', async () => {
    await fixture({ IRONLENS_REPORT_MAX_POOLED: '2' });
    expect((await report(mac(1), '10.0.0.1')).body).toBe('#!ipxe\n');
    expect((await report(mac(2), '10.0.0.2')).body).toBe('#!ipxe\n');
    expect((await report(mac(3), '10.0.0.3')).body).toBe(REBOOT(mac(3)));
    expect(await pooled()).toEqual([mac(1), mac(2)]);
    expect(await limited()).toEqual([expect.objectContaining({ reason: 'pool_full', refused: 1, pooled: 2, max_pooled: 2, client: '10.0.0.3' })]);
    expect((await inject('POST', '/workers', { worker_id: 'w1', mac: mac(1) })).statusCode).toBe(200);
    expect((await report(mac(3), '10.0.0.3')).body).toBe('#!ipxe\n');
    expect(await pooled()).toEqual([mac(2), mac(3)]);
  });
});

describe('registration window', () => {
  it('closes auto-register by itself after the window, and reopens it when turned on again', async () => {
    await fixture({ IRONLENS_AUTO_REGISTER_WINDOW_MINUTES: '10' });
    expect((await inject('GET', '/settings/auto-register')).json()).toEqual({ enabled: true, closes_at: '2027-01-15T08:10:00+00:00' });
    clock += 9 * 60_000;
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    clock += 60_000;
    expect((await report(mac(2))).body).toBe('#!ipxe\n');
    expect(await pooled()).toEqual([mac(1)]);
    expect((await inject('GET', '/settings/auto-register')).json()).toEqual({ enabled: false });
    const closed = ((await inject('GET', '/operations')).json().entries as Array<{ op: string; reason?: string; enabled?: boolean }>).filter((e) => e.op === 'settings.auto_register');
    expect(closed).toEqual([expect.objectContaining({ enabled: false, old_enabled: true, reason: 'window_closed' })]);
    const put = await inject('PUT', '/settings/auto-register', { enabled: true });
    expect(put.json()).toEqual({ enabled: true, closes_at: '2027-01-15T08:20:00+00:00' });
    expect((await report(mac(2))).body).toBe('#!ipxe\n');
    expect(await pooled()).toEqual([mac(1), mac(2)]);
  });

  it('is off by default: auto-register stays on', async () => {
    await fixture({});
    clock += 365 * 24 * 3600_000;
    expect((await inject('GET', '/settings/auto-register')).json()).toEqual({ enabled: true });
  });
});

describe('reports of known devices (issue 19: a read, not a write)', () => {
  const device = async (m: string) => (await inject('GET', `/devices/${m}`)).json() as { last_seen: string; fingerprint: Record<string, unknown> };

  it('writes nothing for an unchanged report younger than IRONLENS_REPORT_LAST_SEEN_SECONDS, and moves last_seen once it is older', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '60' });
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    const first = (await device(mac(1))).last_seen;
    const updates = deviceWrites();
    clock += 30_000;
    for (let i = 0; i < 5; i++) expect((await report(mac(1))).body).toBe('#!ipxe\n');
    expect(updates.count).toBe(0);
    expect((await device(mac(1))).last_seen).toBe(first);
    clock += 31_000;
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    await f!.services.devices.settled();
    expect(updates.count).toBe(1);
    expect((await device(mac(1))).last_seen).toBe(new Date(clock).toISOString().replace(/\.\d{3}Z$/, '+00:00'));
  });

  it('writes at once a report that changes the fingerprint', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '3600' });
    await report(mac(1));
    clock += 1_000;
    const r = await f!.app.inject({ url: `/devices/report?mac=${mac(1)}&manufacturer=QEMU&serial=S-42`, remoteAddress: '10.0.0.1' });
    expect(r.body).toBe('#!ipxe\n');
    expect((await device(mac(1))).fingerprint).toMatchObject({ manufacturer: 'QEMU', serial: 'S-42' });
  });

  it('writes every report with IRONLENS_REPORT_LAST_SEEN_SECONDS=0', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '0' });
    await report(mac(1));
    const updates = deviceWrites();
    await report(mac(1));
    await f!.services.devices.settled();
    await report(mac(1));
    await f!.services.devices.settled();
    expect(updates.count).toBe(2);
  });

  it('answers an unchanged report of a known device without touching the store; last_seen is written after the answer (issue 32, item 9)', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '60' });
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    await f!.services.devices.settled();
    const gets = deviceReads();
    const updates = deviceWrites();
    clock += 30_000;
    for (let i = 0; i < 20; i++) expect((await report(mac(1))).body).toBe('#!ipxe\n');
    expect(gets.count).toBe(0);
    expect(updates.count).toBe(0);
    // Past the interval the answer is the same, and last_seen follows in the background.
    clock += 31_000;
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    await f!.services.devices.settled();
    expect(updates.count).toBe(1);
    expect((await device(mac(1))).last_seen).toBe(new Date(clock).toISOString().replace(/\.\d{3}Z$/, '+00:00'));
  });

  it('takes what it remembers as a hint: a fingerprint changed elsewhere (another replica) is seen at the next write, then written from the next report', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '60' });
    await report(mac(1));
    await f!.services.devices.settled();
    // Another replica stores another fingerprint for the device.
    await new DeviceRepository().update(f!.store.db, mac(1), { fingerprint: { manufacturer: 'Other' } });
    clock += 61_000;
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    await f!.services.devices.settled();
    expect((await device(mac(1))).fingerprint).toEqual({ manufacturer: 'Other' });
    clock += 1_000;
    await report(mac(1));
    expect((await device(mac(1))).fingerprint).toEqual({ manufacturer: 'QEMU' });
  });

  it('knows a repeated report by its words: nothing is parsed or compared again, the answer and last_seen are the same (issue 32, item 9)', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '60' });
    await report(mac(1));
    await report(mac(1)); // unchanged: its words are remembered
    await f!.services.devices.settled();
    const says = vi.spyOn(ReportMemory, 'says');
    const updates = deviceWrites();
    clock += 30_000;
    for (let i = 0; i < 10; i++) expect((await report(mac(1))).body).toBe('#!ipxe\n');
    expect(says).not.toHaveBeenCalled();
    expect(updates.count).toBe(0);
    clock += 31_000;
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    await f!.services.devices.settled();
    expect((await device(mac(1))).last_seen).toBe(new Date(clock).toISOString().replace(/\.\d{3}Z$/, '+00:00'));
    // Other words for the same device take the full path.
    await f!.app.inject({ url: `/devices/report?mac=${mac(1)}&manufacturer=QEMU&serial=S-1`, remoteAddress: '10.0.0.1' });
    expect(says).toHaveBeenCalled();
  });

  it('keeps one text per device: a device reported under ever new words (an unknown parameter each time) does not grow the memory', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '60' });
    const words = (i: number) => `/devices/report?mac=${mac(1)}&manufacturer=QEMU&x=${i}`;
    await report(mac(1));
    for (let i = 0; i < 300; i++) expect((await f!.app.inject({ url: words(i), remoteAddress: '10.0.0.1' })).body).toBe('#!ipxe\n');
    const says = vi.spyOn(ReportMemory, 'says');
    // The latest words are known; any earlier ones were dropped when the next came.
    await f!.app.inject({ url: words(299), remoteAddress: '10.0.0.1' });
    expect(says).not.toHaveBeenCalled();
    await f!.app.inject({ url: words(0), remoteAddress: '10.0.0.1' });
    expect(says).toHaveBeenCalled();
  });

  it("writes a storm's last_seen in a few statements: one read and one write per 500 devices and second", async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '60', IRONLENS_REPORT_REGISTER_PER_MINUTE: '0', IRONLENS_REPORT_MAX_POOLED: '0' });
    const macs = Array.from({ length: 1200 }, (_, i) => `52:54:00:10:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`);
    for (const m of macs) await report(m);
    await f!.services.devices.settled();
    const touch = vi.spyOn(DeviceRepository.prototype, 'touch');
    const getMany = vi.spyOn(DeviceRepository.prototype, 'getMany');
    const update = vi.spyOn(DeviceRepository.prototype, 'update');
    clock += 61_000;
    await Promise.all(macs.map((m) => report(m)));
    await f!.services.devices.settled();
    expect(update).not.toHaveBeenCalled();
    // The reports may span more than one flush (one a second at most).
    const written = touch.mock.calls.map((c) => c[1].length);
    expect(written.reduce((a, b) => a + b, 0)).toBe(1200);
    expect(Math.max(...written)).toBeLessThanOrEqual(500);
    expect(touch.mock.calls.length).toBeLessThanOrEqual(12);
    expect(getMany.mock.calls.length).toBe(touch.mock.calls.length);
    const seen = new Date(clock).toISOString().replace(/\.\d{3}Z$/, '+00:00');
    const all = (await inject('GET', '/devices?state=pooled')).json() as Array<{ mac: string; last_seen: string }>;
    expect(all.filter((d) => d.last_seen === seen)).toHaveLength(1200);
  });

  it('recalls words only while the device is remembered so: revoked, or changed by other words, the same words take the full path again', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '0' });
    const words = `mac=${mac(1)}&manufacturer=QEMU`;
    await report(mac(1));
    expect((await f!.services.devices.report({ mac: mac(1), manufacturer: 'QEMU' }, {}, words)).result).toBe('updated');
    await f!.services.devices.settled();
    // A new serial, then the old words again: the fingerprint the old words say is written back.
    await f!.app.inject({ url: `/devices/report?mac=${mac(1)}&manufacturer=Other`, remoteAddress: '10.0.0.1' });
    expect((await device(mac(1))).fingerprint).toEqual({ manufacturer: 'Other' });
    await report(mac(1));
    expect((await device(mac(1))).fingerprint).toEqual({ manufacturer: 'QEMU' });
    await report(mac(1)); // remembered again
    await f!.services.devices.settled();
    expect((await inject('DELETE', `/devices/${mac(1)}`)).statusCode).toBe(200);
    const updates = deviceWrites();
    clock += 5_000;
    expect((await f!.services.devices.report({ mac: mac(1), manufacturer: 'QEMU' }, {}, words)).result).toBe('ignored');
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    await f!.services.devices.settled();
    expect(updates.count).toBe(0);
  });

  it('forgets a revoked device: its reports are ignored and write nothing', async () => {
    await fixture({ IRONLENS_REPORT_LAST_SEEN_SECONDS: '0' });
    await report(mac(1));
    await f!.services.devices.settled();
    expect((await inject('DELETE', `/devices/${mac(1)}`)).statusCode).toBe(200);
    const updates = deviceWrites();
    clock += 5_000;
    // The answer is the same #!ipxe; what the service made of it says ignored (no sighting), not updated.
    expect((await f!.services.devices.report({ mac: mac(1) }, {})).result).toBe('ignored');
    expect((await report(mac(1))).body).toBe('#!ipxe\n');
    await f!.services.devices.settled();
    expect(updates.count).toBe(0);
    expect((await device(mac(1))).last_seen).not.toBe(new Date(clock).toISOString().replace(/\.\d{3}Z$/, '+00:00'));
  });
});
