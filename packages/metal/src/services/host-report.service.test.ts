/**
 * HostReportService's rules on their own (issue 32: each survived every test when removed),
 * over the real store and repositories, with a clock the test moves and a CHAP lookup the test
 * sets: the signature a worker with a CHAP account must send, the timestamp window (300 s
 * behind, 30 s ahead) and the replay bound a future stamp must not move (issue 29, finding 6),
 * and an unchanged report that writes nothing.
 */
import { type ChapCredential, OperationsLog, partOf } from '@ironlens/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeviceRepository } from '../repositories/device.repository';
import { type HostReportRecord, HostReportRepository } from '../repositories/host-report.repository';
import type { MetalDb } from '../repositories/tables';
import { WorkerRepository } from '../repositories/worker.repository';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { type HostReportRefusal, type HostReportRequest, HostReportService, REPORT_MAX_AGE_S, REPORT_MAX_FUTURE_S, signReport } from './host-report.service';

const MAC = '52:54:00:32:01:01';
const SECRET = 'Chap-Secret-32-1x';

/** Counts the writes of host reports. */
class CountingReports extends HostReportRepository {
  puts = 0;
  override async put(db: MetalDb, rec: HostReportRecord): Promise<void> {
    this.puts++;
    return super.put(db, rec);
  }
}

let f: MetalFixture;
let nowMs: number;
let account: ChapCredential | null;
let reports: CountingReports;
let service: HostReportService;
const refusals: HostReportRefusal[] = [];

const body = (kernel = '6.1.0-28-amd64') => ({
  mac: MAC,
  hostname: 'w1',
  addresses: [{ interface: 'eth0', mac: MAC, ipv4: ['192.0.2.5'], ipv6: [] }],
  ssh_host_keys: [{ algorithm: 'ssh-ed25519', fingerprint: `SHA256:${'A'.repeat(43)}` }],
  os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' },
  kernel,
  hardware: { cpu_model: 'x', cpus: 1, memory_bytes: 1, disks: [], nics: [], accelerators: [] },
});

/** A report stamped `ts` (unix seconds), signed with `secret` unless it is null. */
function request(ts: number, opts: { secret?: string | null; kernel?: string } = {}): HostReportRequest {
  const b = body(opts.kernel);
  const raw = Buffer.from(JSON.stringify(b));
  const secret = opts.secret === undefined ? SECRET : opts.secret;
  return { body: b, raw, timestamp: String(ts), signature: secret === null ? undefined : signReport(secret, String(ts), raw) };
}

const nowS = () => Math.floor(nowMs / 1000);
const send = (req: HostReportRequest) => service.report(req, { client: '192.0.2.9' });
const hostOps = async () => (await f.services.operations({ limit: 100000 })).entries.filter((e) => e.op === 'host.report');

beforeEach(async () => {
  nowMs = Date.parse('2026-07-01T12:00:00Z');
  account = { user: 'il-w1', password: SECRET };
  refusals.length = 0;
  f = await newMetalFixture({}, { now: () => nowMs });
  await f.services.devices.register({ mac: MAC }, {});
  await f.services.workers.create({ worker_id: 'w1', mac: MAC }, {});
  reports = new CountingReports();
  service = new HostReportService(
    f.store,
    new WorkerRepository(),
    new DeviceRepository(),
    { get: async () => account },
    reports,
    new OperationsLog(partOf(f.store)),
    { accepted: () => {}, refused: (r) => refusals.push(r), bootDuration: () => {} },
    { now: () => nowMs },
  );
});
afterEach(async () => {
  await f.close();
});

describe('HostReportService', () => {
  it('requires the signature of a worker with a CHAP account: a report without the header is refused, not taken as unsigned', async () => {
    await expect(send(request(nowS(), { secret: null }))).rejects.toMatchObject({ code: 'host_report_signature_invalid', status: 401 });
    await expect(send(request(nowS(), { secret: 'another-secret-1' }))).rejects.toMatchObject({ code: 'host_report_signature_invalid' });
    expect(reports.puts).toBe(0);
    expect(await send(request(nowS()))).toEqual({ worker_id: 'w1', accepted: true, changed: true });
    // Without an account, no signature is asked for.
    account = null;
    nowMs += 1000;
    expect((await send(request(nowS(), { secret: null, kernel: 'k2' }))).accepted).toBe(true);
  });

  it(`refuses a stamp more than ${REPORT_MAX_AGE_S} s behind or more than ${REPORT_MAX_FUTURE_S} s ahead of its clock`, async () => {
    for (const ts of [nowS() - REPORT_MAX_AGE_S - 1, nowS() + REPORT_MAX_FUTURE_S + 1, nowS() + 299]) {
      await expect(send(request(ts)), String(ts - nowS())).rejects.toMatchObject({ code: 'host_report_replayed', status: 401 });
    }
    expect(refusals).toEqual(['replay', 'replay', 'replay']);
    expect(reports.puts).toBe(0);
    expect((await send(request(nowS() + REPORT_MAX_FUTURE_S))).accepted).toBe(true);
  });

  it('a stamp ahead of its clock does not move the replay bound: the genuine reporter, a second later, is accepted', async () => {
    // Someone on the worker who read the iBFT secret signs a report 29 s ahead.
    expect((await send(request(nowS() + 29, { kernel: 'forged' }))).accepted).toBe(true);
    nowMs += 1000;
    const genuine = await send(request(nowS()));
    expect(genuine).toEqual({ worker_id: 'w1', accepted: true, changed: true });
    expect((await f.services.workers.get('w1')).host?.kernel).toBe('6.1.0-28-amd64');
    // The same report (same stamp) again is still a replay.
    await expect(send(request(nowS()))).rejects.toMatchObject({ code: 'host_report_replayed' });
  });

  it('the stored bound still grows with each accepted report when stamps run ahead (a rollout compares report_ts), at most a second at a time', async () => {
    const first = nowS();
    await send(request(first, { kernel: 'k1' }));
    const stored = async () => (await reports.get(f.store.db, 'w1'))?.report_ts;
    expect(await stored()).toBe(first);
    // Two reports in the same second, each stamped ahead (a reporter that bumps its stamp).
    await send(request(first + 5, { kernel: 'k2' }));
    expect(await stored()).toBe(first + 1);
    await send(request(first + 6, { kernel: 'k3' }));
    expect(await stored()).toBe(first + 2);
    // The genuine reporter, a few seconds later, is not held back by those stamps.
    nowMs += 3000;
    expect((await send(request(nowS(), { kernel: 'k4' }))).accepted).toBe(true);
    expect(await stored()).toBe(nowS());
  });

  it('a report stamped ahead of the clock, once accepted, cannot be replayed although its stamp is above the bound, nor revert a newer one', async () => {
    // The genuine reporter's clock runs 10 s ahead: its reports are accepted, the bound stays at the clock.
    const a = request(nowS() + 10, { kernel: 'k-a' });
    expect((await send(a)).accepted).toBe(true);
    // The same bytes again (an eavesdropper's replay), unchanged values: refused.
    await expect(send(a)).rejects.toMatchObject({ code: 'host_report_replayed', status: 401 });
    // A newer report changes the values; replaying the older one would put them back: refused.
    nowMs += 2000;
    expect((await send(request(nowS() + 10, { kernel: 'k-b' }))).changed).toBe(true);
    nowMs += 2000;
    await expect(send(a)).rejects.toMatchObject({ code: 'host_report_replayed' });
    expect((await f.services.workers.get('w1')).host?.kernel).toBe('k-b');
    expect(refusals).toEqual(['replay', 'replay']);
  });

  it('600 unchanged reports write nothing: one store write, one operations entry', async () => {
    expect((await send(request(nowS()))).changed).toBe(true);
    const before = await hostOps();
    const stored = (await f.services.workers.get('w1')).host;
    for (let i = 1; i <= 600; i++) {
      nowMs += 1000;
      expect((await send(request(nowS()))).changed).toBe(false);
    }
    expect(reports.puts).toBe(1);
    expect(await hostOps()).toHaveLength(before.length);
    expect((await f.services.workers.get('w1')).host).toEqual(stored);
    // A change is written (and logged) at once.
    nowMs += 1000;
    expect((await send(request(nowS(), { kernel: '6.1.0-29-amd64' }))).changed).toBe(true);
    expect(reports.puts).toBe(2);
    expect(await hostOps()).toHaveLength(before.length + 1);
  });

  it('a new boot is written even when the values did not change (its timeline)', async () => {
    expect((await send(request(nowS()))).changed).toBe(true);
    nowMs += 60_000;
    // The device report of the next boot, then its host report: same values, a new boot.
    expect((await f.app.inject({ url: `/devices/report?mac=${MAC}` })).statusCode).toBe(200);
    nowMs += 30_000;
    expect((await send(request(nowS()))).changed).toBe(false);
    expect(reports.puts).toBe(2);
    const ops = await hostOps();
    expect(ops[ops.length - 1]).toMatchObject({ status: 'ok', new_boot: true, changed: false });
  });
});
