import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { AppError, type ErrorCode, isoSeconds, type OperationsLog } from '@ironlens/core';
import type { BootTimeline, HostReportAnswer, HostReportBody, HostView } from '../api/schemas';
import { isIqn, normalizeMac } from '../domain/identifiers';
import type { DeviceRepository } from '../repositories/device.repository';
import type { HostReportRecord, HostReportRepository } from '../repositories/host-report.repository';
import { lockLedger, type MetalDb, type MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import type { ChapLookup } from './boot-vars.service';
import type { RequestContext } from './settings.service';

/** A report older than this is a replay. */
export const REPORT_MAX_AGE_S = 300;
/**
 * A report stamped further ahead of the control plane's clock than this is refused too (issue
 * 29, finding 6): a stamp far in the future, once accepted, would hold every genuine report back
 * until the clock caught up with it.
 */
export const REPORT_MAX_FUTURE_S = 30;
/** Events older than this before the host report are not part of the same boot. */
const BOOT_WINDOW_MS = 30 * 60_000;
const MAX_TRACKED = 50_000;

/** Why a report was refused (the operations log's `reason`, the metric's `outcome`). */
export type HostReportRefusal = 'invalid' | 'unknown' | 'signature' | 'replay';

export interface HostReportObserver {
  accepted(): void;
  refused(reason: HostReportRefusal): void;
  /** A new boot's timeline, from the first to the last event, in seconds. */
  bootDuration(seconds: number): void;
}

const NO_OBSERVER: HostReportObserver = { accepted: () => {}, refused: () => {}, bootDuration: () => {} };

export interface HostReportRequest {
  body: HostReportBody;
  /** The body's bytes as received: what the signature covers. */
  raw: Buffer;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** `POST /hosts/report`'s answer (the API's schema). */
export type { HostReportAnswer };

interface Tally {
  count: number;
  loggedAt: number;
}

/** `v1=<64 hex>`: HMAC-SHA256(key = the worker's CHAP secret, message = `<timestamp>.<raw body>`). */
export function signReport(secret: string, timestamp: string, raw: Buffer): string {
  return `v1=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.`).update(raw).digest('hex')}`;
}

/**
 * `POST /hosts/report` (issue 24): the host reporter in a booted worker tells who it is. The
 * claim is the boot NIC's MAC and the worker's hostname, decided as `/boot-vars` decides (the
 * hostname names the worker, the MAC must be its bound device). With a CHAP account (the
 * secret only the bound MAC received from `/boot-vars`, in the iBFT since), a valid
 * signature over the timestamp and the raw body is required, and a timestamp more than 300 s
 * behind, more than 30 s ahead, or not newer than the last accepted one is a replay. A report
 * that says nothing new writes nothing. Refusals are counted and written to
 * the operations log at most once a minute per reason and source (with the count since).
 */
/**
 * The sessions' `first_seen_at` of these targets, as their agents tell them (`GET /luns`):
 * every login the agents remember, in any order. Wired to the agents' clients.
 */
export type LoginLookup = (targets: Array<{ agent: string; iqn: string }>) => Promise<string[]>;

/** How long a host report waits for the agents' sessions. */
const LOGIN_LOOKUP_MS = 2_000;

export class HostReportService {
  private readonly bootVarsAt = new Map<string, number>();
  /**
   * Per worker, the stamps of accepted reports the stored bound does not cover (stamped ahead of
   * the clock, so the bound stopped short of them): a replay of one is refused although its stamp
   * is above the bound. Kept until the age limit refuses them anyway.
   */
  private readonly acceptedAhead = new Map<string, number[]>();
  private readonly tallies = new Map<string, Tally>();
  private readonly now: () => number;
  private readonly logins: LoginLookup | undefined;
  /** Told when a worker's report was accepted (issue 31: a rollout waiting for it wakes). */
  onAccepted?: (workerId: string) => void;

  constructor(
    private readonly store: MetalStore,
    private readonly workers: WorkerRepository,
    private readonly devices: DeviceRepository,
    private readonly chap: ChapLookup,
    private readonly reports: HostReportRepository,
    private readonly ops: OperationsLog,
    private readonly observer: HostReportObserver = NO_OBSERVER,
    opts: { now?: () => number; logins?: LoginLookup } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.logins = opts.logins;
  }

  private get db(): MetalDb {
    return this.store.db;
  }

  /** When this replica last answered `/boot-vars` to the worker's bound device (epoch ms), if it did. */
  lastBootVars(workerId: string): number | undefined {
    return this.bootVarsAt.get(workerId);
  }

  /** True when a report of `workerId` stamped `ts` was accepted here and is still within the age limit. */
  private wasAccepted(workerId: string, ts: number, nowS: number): boolean {
    const stamps = this.acceptedAhead.get(workerId);
    if (!stamps) return false;
    const live = stamps.filter((s) => nowS - s <= REPORT_MAX_AGE_S);
    if (live.length) this.acceptedAhead.set(workerId, live);
    else this.acceptedAhead.delete(workerId);
    return live.includes(ts);
  }

  /** Remembers an accepted stamp the stored bound (`bound`) does not cover. */
  private noteAccepted(workerId: string, ts: number, bound: number): void {
    if (ts <= bound) return;
    if (!this.acceptedAhead.has(workerId) && this.acceptedAhead.size >= MAX_TRACKED) this.acceptedAhead.clear();
    const stamps = this.acceptedAhead.get(workerId) ?? [];
    // A reporter sends a few reports a boot; 64 stamps ahead of the clock within five minutes is far more.
    stamps.push(ts);
    this.acceptedAhead.set(workerId, stamps.slice(-64));
  }

  /** `/boot-vars` answered the worker's bound device (this replica): the timeline's `boot_vars_at`. */
  noteBootVars(workerId: string): void {
    if (this.bootVarsAt.size >= MAX_TRACKED) this.bootVarsAt.clear();
    this.bootVarsAt.set(workerId, this.now());
  }

  async report(req: HostReportRequest, ctx: RequestContext): Promise<HostReportAnswer> {
    const client = ctx.client ?? null;
    const mac = normalizeMac(req.body.mac);
    const refuse = async (reason: HostReportRefusal, code: ErrorCode, message: string): Promise<never> => {
      this.observer.refused(reason);
      await this.logRefusal(reason, mac, client);
      throw new AppError(code, message, { code });
    };
    const ts = req.timestamp?.trim() ?? '';
    if (!/^[0-9]{1,12}$/.test(ts)) return refuse('invalid', 'host_report_invalid', 'X-Ironlens-Timestamp must be unix seconds');
    let host: Omit<HostView, 'reported_at'>;
    try {
      host = checkedHost(req.body);
    } catch (err) {
      return refuse('invalid', 'host_report_invalid', (err as Error).message);
    }
    const hostname = req.body.hostname.trim().toLowerCase();
    const worker = mac && hostname ? await this.workers.findByHostname(this.db, hostname) : null;
    const device = worker && mac ? await this.devices.get(this.db, mac) : null;
    if (!worker || !device || device.state !== 'bound' || device.bound_worker_id !== worker.worker_id) {
      return refuse('unknown', 'host_report_refused', "the report does not come from a worker's bound device and hostname");
    }
    // An account that cannot be opened (another key, a damaged row) never downgrades to "no CHAP".
    const account = await this.chap.get(this.db, worker.worker_id).catch(() => 'unreadable' as const);
    if (account === 'unreadable') return refuse('signature', 'host_report_signature_invalid', "the worker's CHAP account cannot be read here");
    if (account) {
      const expected = Buffer.from(signReport(account.password, ts, req.raw));
      const given = Buffer.from(req.signature?.trim() ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return refuse('signature', 'host_report_signature_invalid', 'the signature is missing or wrong');
      }
    }
    const nowMs = this.now();
    const nowS = Math.floor(nowMs / 1000);
    const tsNum = Number(ts);
    if (nowS - tsNum > REPORT_MAX_AGE_S) return refuse('replay', 'host_report_replayed', `the timestamp is more than ${REPORT_MAX_AGE_S} s behind the control plane clock`);
    if (tsNum - nowS > REPORT_MAX_FUTURE_S) return refuse('replay', 'host_report_replayed', `the timestamp is more than ${REPORT_MAX_FUTURE_S} s ahead of the control plane clock`);
    // The replay bound (the stored report_ts) does not follow a stamp ahead of this clock: a
    // stamp a little in the future (allowed skew) must not hold the genuine reporter's next
    // report back. It still grows with each accepted report (by a second where the stamp is
    // ahead), so "accepted after" stays a comparison of report_ts (a rollout's proof).
    const boundAfter = (prev: HostReportRecord | null) => Math.min(tsNum, Math.max(nowS, (prev?.report_ts ?? 0) + 1));

    const reportedAt = isoSeconds(new Date(nowMs));
    const known = await this.reports.get(this.db, worker.worker_id);
    if (known && tsNum <= known.report_ts) return refuse('replay', 'host_report_replayed', 'the timestamp is not newer than the last accepted report');
    if (this.wasAccepted(worker.worker_id, tsNum, nowS)) return refuse('replay', 'host_report_replayed', 'a report with this timestamp was accepted already');
    const starts = this.boot(known, device.last_seen, worker.worker_id, nowMs).newBoot;
    // Nothing new (same device, same values, same boot): the store and the operations log are
    // left alone, as for an unchanged /devices/report. The bound stays: a replay of this report
    // could only say again what is stored.
    if (known && !starts && known.mac === device.mac && sameHost(known.host, host)) {
      this.noteAccepted(worker.worker_id, tsNum, known.report_ts);
      this.observer.accepted();
      this.onAccepted?.(worker.worker_id);
      return { worker_id: worker.worker_id, accepted: true, changed: false };
    }
    // The agent's first login at or after this boot's /boot-vars answer: asked before the
    // transaction, best effort, under a short deadline; never a reason to refuse the report.
    // Asked only when the report starts a boot: a report within the boot keeps its timeline (a
    // report landing in between only makes the last one newer, so never a new boot by itself).
    const loginMs = starts ? await this.firstLogin(worker.worker_id, nowMs) : null;
    const outcome = await this.store.transaction(async (trx) => {
      await lockLedger(trx);
      const prev = await this.reports.get(trx, worker.worker_id);
      if (prev && tsNum <= prev.report_ts) return 'replay' as const;
      const { boot, newBoot } = this.timeline(prev, device.last_seen, worker.worker_id, nowMs, loginMs);
      const changed = !prev || !sameHost(prev.host, host);
      const rec: HostReportRecord = { worker_id: worker.worker_id, mac: device.mac, host: { ...host, reported_at: reportedAt }, report_ts: boundAfter(prev), boot };
      await this.reports.put(trx, rec);
      await this.ops.append({ op: 'host.report', status: 'ok', mac: device.mac, worker_id: worker.worker_id, client, changed, new_boot: newBoot, boot_seconds: boot.seconds }, trx);
      return { changed, newBoot, seconds: boot.seconds, bound: rec.report_ts };
    });
    if (outcome === 'replay') return refuse('replay', 'host_report_replayed', 'the timestamp is not newer than the last accepted report');
    this.noteAccepted(worker.worker_id, tsNum, outcome.bound);
    this.observer.accepted();
    this.onAccepted?.(worker.worker_id);
    if (outcome.newBoot && outcome.seconds !== null) this.observer.bootDuration(outcome.seconds);
    return { worker_id: worker.worker_id, accepted: true, changed: outcome.changed };
  }

  /** This boot's report and `/boot-vars` times (within the window), and whether the report starts a new boot after `prev`. */
  private boot(prev: HostReportRecord | null, lastSeen: string | null, workerId: string, nowMs: number): { reportMs: number | null; bootVarsMs: number | null; newBoot: boolean } {
    const inWindow = (ms: number | null) => (ms !== null && Number.isFinite(ms) && ms <= nowMs && nowMs - ms <= BOOT_WINDOW_MS ? ms : null);
    const reportMs = inWindow(lastSeen ? Date.parse(lastSeen) : null);
    const bootVarsMs = inWindow(this.bootVarsAt.get(workerId) ?? null);
    const prevMs = prev?.boot.host_report_at ? Date.parse(prev.boot.host_report_at) : null;
    const after = (ms: number | null) => ms !== null && (prevMs === null || ms > prevMs);
    return { reportMs, bootVarsMs, newBoot: !prev || after(reportMs) || after(bootVarsMs) };
  }

  /**
   * The boot's timeline. A report after a newer device report or `/boot-vars` answer than the
   * last accepted report starts a new boot; a report without one (something changed on the
   * running host) keeps the boot's timeline.
   */
  private timeline(prev: HostReportRecord | null, lastSeen: string | null, workerId: string, nowMs: number, loginMs: number | null): { boot: BootTimeline; newBoot: boolean } {
    const { reportMs, bootVarsMs, newBoot } = this.boot(prev, lastSeen, workerId, nowMs);
    if (!newBoot && prev) return { boot: prev.boot, newBoot };
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    // A login counts only between this boot's /boot-vars answer and this report.
    const login = bootVarsMs !== null && loginMs !== null && loginMs >= bootVarsMs && loginMs <= nowMs ? loginMs : null;
    const events = [reportMs, bootVarsMs, nowMs].filter((x): x is number => x !== null);
    const seconds = events.length > 1 ? Math.round(Math.max(...events) - Math.min(...events)) / 1000 : null;
    return { boot: { report_at: iso(reportMs), boot_vars_at: iso(bootVarsMs), iscsi_login_at: iso(login), host_report_at: iso(nowMs), seconds }, newBoot };
  }

  /** The first login the worker's agents saw at or after its last `/boot-vars` answer (ms), or null. */
  private async firstLogin(workerId: string, nowMs: number): Promise<number | null> {
    const since = this.bootVarsAt.get(workerId);
    if (!this.logins || since === undefined || nowMs - since > BOOT_WINDOW_MS) return null;
    let timer: NodeJS.Timeout | undefined;
    try {
      const w = await this.workers.get(this.db, workerId);
      if (!w || w.disks.length === 0) return null;
      const deadline = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), LOGIN_LOOKUP_MS);
      });
      const at = await Promise.race([this.logins(w.disks.map((d) => ({ agent: d.agent, iqn: d.iqn }))), deadline]);
      const times = (at ?? []).map((t) => Date.parse(t)).filter((ms) => Number.isFinite(ms) && ms >= since && ms <= nowMs);
      return times.length ? Math.min(...times) : null;
    } catch {
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A worker as the bootstrap by worker needs it (clusters' `WorkerDirectory`): null when unknown. */
  async directoryEntry(workerId: string): Promise<{ workerId: string; address: string | null; hostKeys: Array<{ algorithm: string; fingerprint: string }> } | null> {
    const w = await this.workers.get(this.db, workerId);
    if (!w) return null;
    const rec = await this.reports.get(this.db, w.worker_id);
    if (!rec) return { workerId: w.worker_id, address: null, hostKeys: [] };
    return { workerId: w.worker_id, address: primaryAddress(rec.host, rec.mac), hostKeys: rec.host.ssh_host_keys };
  }

  /** The workers that joined this cluster, as the directory shows them (the gateway's URL prefers their reported address). */
  async joinedTo(clusterId: string): Promise<Array<{ workerId: string; address: string | null; hostKeys: Array<{ algorithm: string; fingerprint: string }> }>> {
    const ids = await this.reports.workersOfCluster(this.db, clusterId);
    const out = [];
    for (const id of ids) {
      const e = await this.directoryEntry(id);
      if (e) out.push(e);
    }
    return out;
  }

  /**
   * The workers that joined this cluster with the accelerators their host report lists (issue 28:
   * clusters' `WorkerInventory`, shown beside their nodes and compared with what the nodes offer).
   */
  async inventoryOf(clusterId: string): Promise<Array<{ workerId: string; address: string | null; accelerators: Array<{ vendor: string; model: string; pciId: string | null; count: number }> }>> {
    const out = [];
    for (const id of await this.reports.workersOfCluster(this.db, clusterId)) {
      const rec = await this.reports.get(this.db, id);
      if (!rec) continue;
      out.push({
        workerId: id,
        address: primaryAddress(rec.host, rec.mac),
        accelerators: rec.host.hardware.accelerators.map((a) => ({ vendor: a.vendor, model: a.model, pciId: a.pci_id ?? null, count: a.count })),
      });
    }
    return out;
  }

  /** A bootstrap by worker registered these workers' cluster: each worker's view shows it. */
  async joinCluster(workerIds: string[], clusterId: string): Promise<void> {
    const at = isoSeconds(new Date(this.now()));
    await this.store.transaction(async (trx) => {
      for (const id of workerIds) {
        if (!(await this.workers.get(trx, id))) continue;
        await this.reports.setCluster(trx, id, clusterId, at);
        await this.ops.append({ op: 'worker.cluster.join', status: 'ok', worker_id: id, cluster_id: clusterId }, trx);
      }
    });
  }

  private async logRefusal(reason: HostReportRefusal, mac: string | null, client: string | null): Promise<void> {
    const key = `${reason} ${client ?? ''}`;
    const now = this.now();
    let t = this.tallies.get(key);
    if (!t) {
      if (this.tallies.size >= MAX_TRACKED) this.tallies.clear();
      t = { count: 0, loggedAt: 0 };
      this.tallies.set(key, t);
    }
    t.count++;
    if (now - t.loggedAt < 60_000) return;
    const count = t.count;
    t.count = 0;
    t.loggedAt = now;
    await this.ops.append({ op: 'host.report', status: 'refused', reason, mac, client, count }).catch(() => {});
  }
}

/** The stored view says what `host` says (its time aside). */
function sameHost(stored: HostView, host: Omit<HostView, 'reported_at'>): boolean {
  const { reported_at: _, ...rest } = stored;
  return JSON.stringify(rest) === JSON.stringify(host);
}

/** The booted disk's IQN passes the grammar every IQN of the ledger passes. */
function checkedIqn(iqn: string): string {
  if (!isIqn(iqn)) throw new Error(`boot_disk.iqn: ${JSON.stringify(String(iqn).slice(0, 80))} is not an iSCSI name`);
  return iqn;
}

const macOrEmpty = (m: string) => (m === '' ? '' : (normalizeMac(m) ?? ''));

function ipOf(family: 4 | 6, a: string, where: string): string {
  if (isIP(a) !== family) throw new Error(`${where}: ${JSON.stringify(a.slice(0, 45))} is not an IPv${family} address`);
  return a.toLowerCase();
}

/**
 * The report as stored and shown: the schema has checked every value's grammar and size; this
 * checks what a pattern cannot (an address of the right family, a MAC's own form) and
 * normalises MACs. The field order is the view's.
 */
export function checkedHost(b: HostReportBody): Omit<HostView, 'reported_at'> {
  return {
    addresses: b.addresses.map((a) => ({
      interface: a.interface,
      mac: macOrEmpty(a.mac),
      ipv4: a.ipv4.map((x) => ipOf(4, x, `addresses.${a.interface}.ipv4`)),
      ipv6: a.ipv6.map((x) => ipOf(6, x, `addresses.${a.interface}.ipv6`)),
    })),
    ssh_host_keys: b.ssh_host_keys.map((k) => ({ algorithm: k.algorithm, fingerprint: k.fingerprint })),
    os: { id: b.os.id, version_id: b.os.version_id, pretty_name: b.os.pretty_name },
    kernel: b.kernel,
    hardware: {
      cpu_model: b.hardware.cpu_model,
      cpus: b.hardware.cpus,
      memory_bytes: b.hardware.memory_bytes,
      disks: b.hardware.disks.map((d) => ({ name: d.name, size_bytes: d.size_bytes, model: d.model ?? '' })),
      nics: b.hardware.nics.map((n) => ({ name: n.name, mac: macOrEmpty(n.mac), speed_mbps: n.speed_mbps ?? null, driver: n.driver ?? '' })),
      accelerators: b.hardware.accelerators.map((x) => ({ vendor: x.vendor, model: x.model, ...(x.pci_id ? { pci_id: x.pci_id } : {}), count: x.count, memory_bytes: x.memory_bytes ?? null })),
    },
    // issue 31: the image and the disk it booted (reporters of older masters send neither)
    image: b.image ? { master: b.image.master, build: b.image.build } : null,
    boot_disk: b.boot_disk ? { iqn: checkedIqn(b.boot_disk.iqn) } : null,
  };
}

/** The address ironlens uses to reach a reported host: the boot NIC's first IPv4, else any IPv4, else any IPv6. */
export function primaryAddress(host: Pick<HostView, 'addresses'>, bootMac: string | null): string | null {
  const boot = bootMac ? host.addresses.find((a) => a.mac === bootMac) : undefined;
  if (boot?.ipv4[0]) return boot.ipv4[0];
  for (const a of host.addresses) if (a.ipv4[0]) return a.ipv4[0];
  if (boot?.ipv6[0]) return boot.ipv6[0];
  for (const a of host.addresses) if (a.ipv6[0]) return a.ipv6[0];
  return null;
}
