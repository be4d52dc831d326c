import { AppError, clip, echo, isoSeconds, isUniqueViolation, type OperationInput, type OperationsLog, unsafeTextReason } from '@ironlens/core';
import type { BatchBindRequest, BatchBindResult, BatchMode, BatchPreview, DeviceDeclaration, DeviceImportResult } from '../api/schemas';
import { isPlatform, normalizeMac, parseIntLoose, requireMac, requireWorkerId } from '../domain/identifiers';
import { type BmcCredentials, type BmcInput, checkBmcInput, type LastPower } from '../domain/power';
import type { Device, DeviceState, Fingerprint } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import { lockLedger, type MetalDb, type MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import type { BootVarsService } from './boot-vars.service';
import { renderBootVarsScript } from './boot-vars.service';
import type { LedgerWriter } from './ledger-writer.service';
import type { ReportGuard, ReportRefusal } from './report-guard.service';
import type { RequestContext, SettingsService } from './settings.service';
import { type KnownDevice, ReportMemory } from './report-memory.service';

export type { BatchBindRequest, BatchMode, DeviceDeclaration };

/** What the device pool asks of the power side (issue 21). */
export interface DevicePowerHooks {
  lastPower(mac: string): Promise<LastPower | null>;
  lastPowers(): Promise<Map<string, LastPower>>;
  /** A BMC declared with a device, checked as `PUT /devices/{mac}/bmc` checks it (grammar, address policy). */
  checkBmc(input: BmcInput): BmcCredentials;
  putBmcInTrx(db: MetalDb, mac: string, c: BmcCredentials): Promise<void>;
  /** The device report of `mac` came (a sighting of a network boot). */
  sighting(mac: string): void;
}

export interface BindOutcome {
  device: Device;
  changed: boolean;
  old_worker_id: string | null;
  old_device_mac: string | null;
}


/** What a report did, and the iPXE script that answers it. */
export interface ReportOutcome {
  result: 'updated' | 'registered' | 'ignored' | 'limited';
  script: string;
}

/** The answer to a report that was let in: a valid, empty iPXE script. */
export const REPORT_OK_SCRIPT = '#!ipxe\n';

type PairOutcome =
  | { kind: 'ok'; mac: string; worker_id: string; device: Device; worker_state: string; fingerprint_mismatch: { fields: string[] } | null }
  | { kind: 'invalid_mac'; mac: unknown; worker_id: string; reason: string }
  | { kind: 'not_in_pool' | 'revoked' | 'duplicate' | 'already_bound' | 'device_bound' | 'worker_missing' | 'worker_bound'; mac: string; worker_id: string; reason: string };

const REPORT_STRINGS = ['manufacturer', 'product', 'serial', 'cpumodel', 'mem-type', 'chip', 'busid'] as const;
const DECLARED = ['manufacturer', 'product', 'serial', 'uuid'] as const;

/** Fingerprints are declarations, compared loosely (iPXE turns `+` into a space, etc.). */
const loose = (s: unknown) =>
  String(s ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();

const clean = (s: unknown): string | null => {
  if (typeof s !== 'string') return null;
  const t = s.trim();
  return t === '' ? null : t.slice(0, 256);
};

/**
 * Text a machine's firmware or a declaration gives (fingerprint fields, UUID) enters only
 * without control or bidirectional formatting characters (issue 29, finding 8): an SMBIOS
 * string with `ESC ]0;…` would reach a terminal through `ironlens devices show`.
 */
function checkDeviceText(fields: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(fields)) {
    const why = unsafeTextReason(v);
    if (why) throw new AppError('device_text_invalid', `${k} ${why}`, { field: k });
  }
}

/** SMBIOS UUIDs of all zeros or all ones are "not set" (qemu, cheap boards), not identities. */
const cleanUuid = (s: unknown): string | null => {
  const t = clean(s);
  if (!t) return null;
  const hex = t.replace(/-/g, '').toLowerCase();
  return /^(0+|f+)$/.test(hex) ? null : t;
};

/**
 * The device pool (seed §16): registration, reports, revocation and the one-to-one
 * device ↔ worker binding. Every change is one ledger write (`LedgerWriter`) with its audit
 * entries; the writer then clears the `/boot-vars` cache and brings `dhcp-hosts.conf` and
 * dnsmasq in line. A report (`report`) is the exception: it is no binding change, and the hot
 * path of a boot storm, so it writes only what it changes and forgets only its own device.
 */
export class DeviceService {
  constructor(
    private readonly store: MetalStore,
    private readonly devices: DeviceRepository,
    private readonly workers: WorkerRepository,
    private readonly settings: SettingsService,
    private readonly ledger: LedgerWriter,
    private readonly bootVars: BootVarsService,
    private readonly ops: OperationsLog,
    private readonly reportGuard: ReportGuard,
    private readonly limits: { maxPooled: number; autoBootTimeout: number; /** See `MetalConfig.reportLastSeenSeconds`. Default is `60`. */ lastSeenSeconds?: number },
    /** Where the power side (issue 21) plugs in: `last_power` on the device view, the report as a sighting of a network boot, BMCs declared with devices. Default: none. */
    private readonly power?: DevicePowerHooks,
    private readonly now: () => number = Date.now,
  ) {
    this.memory = new ReportMemory(store, devices, (limits.lastSeenSeconds ?? 60) * 1000);
  }

  /** Known devices' reports, answered without the store; their last_seen written after the answer. */
  private readonly memory: ReportMemory;

  /** Resolves when the last_seen writes of the reports answered so far are done (tests, reads). */
  settled(): Promise<void> {
    return this.memory.settled();
  }

  /** `last_power` on the device (issue 21), only where a power action was recorded: the seed's shape is unchanged otherwise. */
  private async withPower(list: Device[]): Promise<Device[]> {
    if (!this.power || list.length === 0) return list;
    const all = list.length === 1 ? new Map([[list[0].mac, await this.power.lastPower(list[0].mac)]]) : await this.power.lastPowers();
    return list.map((d) => {
      const lp = all.get(d.mac);
      return lp ? { ...d, last_power: lp } : d;
    });
  }

  private get db(): MetalDb {
    return this.store.db;
  }

  private async requireDevice(db: MetalDb, mac: string): Promise<Device> {
    const d = await this.devices.get(db, mac);
    if (!d) throw new AppError('device_not_found', `device not found: ${mac}`);
    return d;
  }

  async list(state?: string): Promise<Device[]> {
    const s = state && state !== 'all' ? state : undefined;
    if (s && !['pooled', 'bound', 'revoked'].includes(s)) throw new AppError('request_invalid', `invalid state filter: ${echo(state)}; use all, pooled, bound or revoked`);
    await this.memory.settled();
    return this.withPower(await this.devices.list(this.db, s as DeviceState | undefined));
  }

  async get(macInput: string): Promise<Device> {
    const mac = requireMac(macInput);
    await this.memory.settled();
    return (await this.withPower([await this.requireDevice(this.db, mac)]))[0];
  }

  private newDevice(decl: DeviceDeclaration, mac: string, source: Device['source'], fingerprint: Fingerprint = {}): Device {
    checkDeviceText({ uuid: decl.uuid, manufacturer: decl.manufacturer, product: decl.product, serial: decl.serial });
    const fp: Fingerprint = { ...fingerprint };
    for (const k of ['manufacturer', 'product', 'serial'] as const) {
      const v = clean(decl[k]);
      if (v) fp[k] = v;
    }
    return {
      mac,
      uuid: cleanUuid(decl.uuid),
      state: 'pooled',
      bound_worker_id: null,
      key_hash: null,
      source,
      fingerprint: fp,
      first_seen: source === 'ipxe' ? isoSeconds() : null,
      last_seen: source === 'ipxe' ? isoSeconds() : null,
    };
  }

  private checkBmc(input: BmcInput): BmcCredentials {
    return this.power ? this.power.checkBmc(input) : checkBmcInput(input);
  }

  /** §16.3: manual registration. 409 when the MAC exists, revoked ones included. */
  async register(decl: DeviceDeclaration, ctx: RequestContext): Promise<Device> {
    const mac = requireMac(decl.mac);
    const device = this.newDevice(decl, mac, 'manual');
    // Checked before anything is written: a bad BMC refuses the whole declaration.
    const bmc = decl.bmc !== undefined && decl.bmc !== null ? this.checkBmc(decl.bmc as BmcInput) : null;
    await this.ledger.write(async (trx) => {
      const existing = await this.devices.get(trx, mac);
      if (existing?.state === 'revoked') throw new AppError('device_revoked', `device is revoked and cannot be registered again: ${mac}`);
      if (existing) throw new AppError('device_exists', `device already exists: ${mac}`);
      await this.devices.insert(trx, device).catch((err) => {
        throw isUniqueViolation(err) ? new AppError('device_exists', `device already exists: ${mac}`) : err;
      });
      if (bmc) await this.power?.putBmcInTrx(trx, mac, bmc);
      await this.ops.append({ op: 'device.register', mac, source: 'manual', client: ctx.client, ...(bmc ? { bmc_driver: bmc.driver } : {}) }, trx);
    });
    return device;
  }

  /** §16.4: bulk import; each entry independent. */
  async import(entries: DeviceDeclaration[], ctx: RequestContext): Promise<DeviceImportResult> {
    const created: string[] = [];
    const skipped: Array<{ mac: string; reason: string }> = [];
    const failed: Array<{ mac: unknown; error: string }> = [];
    await this.ledger.write(async (trx) => {
      const db = trx;
      const seen = new Set<string>();
      for (const e of entries) {
        const mac = normalizeMac(e?.mac);
        if (!mac) {
          failed.push({ mac: typeof e?.mac === 'string' ? clip(e.mac) : (e?.mac ?? null), error: `invalid MAC address: ${echo(e?.mac ?? null)}` });
          continue;
        }
        const existing = seen.has(mac) ? ({ state: 'pooled' } as Device) : await this.devices.get(db, mac);
        if (existing?.state === 'revoked') {
          failed.push({ mac, error: `device is revoked: ${mac}` });
          continue;
        }
        if (existing) {
          skipped.push({ mac, reason: `device already exists (${existing.state})` });
          continue;
        }
        let bmc: BmcCredentials | null = null;
        if (e.bmc !== undefined && e.bmc !== null) {
          try {
            bmc = this.checkBmc(e.bmc as BmcInput);
          } catch (err) {
            failed.push({ mac, error: (err as Error).message });
            continue;
          }
        }
        let device: Device;
        try {
          device = this.newDevice(e, mac, 'manual');
        } catch (err) {
          failed.push({ mac, error: (err as Error).message });
          continue;
        }
        await this.devices.insert(db, device);
        if (bmc) await this.power?.putBmcInTrx(db, mac, bmc);
        seen.add(mac);
        created.push(mac);
      }
      const audit: OperationInput[] = created.map((mac) => ({ op: 'device.register', mac, source: 'manual', via: 'import', client: ctx.client }));
      audit.push({ op: 'device.import', created: created.length, skipped: skipped.length, failed: failed.length, client: ctx.client });
      await this.ops.append(audit, trx);
    });
    return { created, skipped, failed };
  }

  /** §16.5: pooled → revoked; the record stays for the audit trail. */
  async revoke(macInput: string, ctx: RequestContext): Promise<Device> {
    const mac = requireMac(macInput);
    const out = await this.ledger.write(async (trx) => {
      const db = trx;
      const d = await this.requireDevice(db, mac);
      if (d.state === 'revoked') throw new AppError('device_revoked', `device already revoked: ${mac}`);
      if (d.state === 'bound') throw new AppError('device_bound', `device is bound to ${d.bound_worker_id}; unbind it first: ${mac}`);
      await this.devices.update(db, mac, { state: 'revoked' });
      this.memory.forget(mac);
      await this.ops.append({ op: 'device.revoke', mac, client: ctx.client }, trx);
      return { ...d, state: 'revoked' as const };
    });
    return out;
  }

  /**
   * §16.6: iPXE's report. Known device: non-empty fields overwrite the fingerprint,
   * last_seen moves. Revoked: ignored. Unknown: pooled only while auto-register is on.
   * A registration over the source's rate or into a full pool is refused: the machine is
   * answered the reboot loop (`set menu-default reboot`, as a pooled machine is), never an
   * error page, and the refusal is counted in the operations log.
   */
  report(q: Record<string, unknown>, ctx: RequestContext, words?: string): ReportOutcome | Promise<ReportOutcome> {
    // The same words as an unchanged report of a device still remembered so: the same answer,
    // in the same tick, nothing parsed again (ReportMemory.recall).
    const hit = words === undefined || typeof q.mac !== 'string' ? undefined : this.memory.recall(q.mac, words);
    if (hit) return this.unchanged(hit.mac, hit.k, this.now());
    return this.reportInFull(q, ctx, words);
  }

  private async reportInFull(q: Record<string, unknown>, ctx: RequestContext, words: string | undefined): Promise<ReportOutcome> {
    const mac = requireMac(q.mac);
    checkDeviceText(Object.fromEntries(['uuid', ...REPORT_STRINGS, 'mem-total', 'mem-speed'].map((k) => [k, q[k]])));
    const fp: Fingerprint = {};
    for (const k of REPORT_STRINGS) {
      const v = clean(q[k]);
      if (v) (fp as Record<string, unknown>)[k.replace('-', '_')] = v;
    }
    const memTotal = parseIntLoose(q['mem-total']);
    const memSpeed = parseIntLoose(q['mem-speed']);
    if (memTotal !== null) fp.mem_total = memTotal;
    if (memSpeed !== null) fp.mem_speed = memSpeed;
    // The firmware the machine booted with this time (iPXE's ${platform}); anything else is not kept.
    if (isPlatform(q.platform)) fp.platform = q.platform;
    const uuid = cleanUuid(q.uuid);
    const at = new Date(this.now());
    const now = isoSeconds(at);
    // A known device that says nothing new is answered from memory: its answer does not depend
    // on the store, and its last_seen is written after the answer (ReportMemory).
    const memo = this.memory.get(mac);
    if (memo && !ReportMemory.says(memo, fp, uuid)) return this.unchanged(mac, memo, at.getTime(), q.mac, words);
    const known = await this.devices.get(this.db, mac);
    if (known?.state === 'revoked') {
      this.memory.forget(mac);
      return { result: 'ignored', script: REPORT_OK_SCRIPT };
    }
    if (known?.first_seen && !ReportMemory.says(known, fp, uuid)) return this.unchanged(mac, this.memory.remember(mac, known), at.getTime(), q.mac, words);
    const autoRegister = await this.settings.getAutoRegister();
    const out: { written?: { fingerprint: Fingerprint; uuid: string | null; last_seen: string } } = {};
    const result = await this.store.transaction(async (trx) => {
      const db = trx;
      let d = await this.devices.get(db, mac);
      if (!d && autoRegister) {
        // A registration is decided under the ledger lock, as every insert is: a concurrent
        // report of the same MAC, or the pool filling up meanwhile, must be seen.
        await lockLedger(trx);
        d = await this.devices.get(db, mac);
      }
      if (d?.state === 'revoked') return 'ignored' as const;
      if (d) {
        const next = { fingerprint: { ...d.fingerprint, ...fp }, uuid: uuid ?? d.uuid, first_seen: d.first_seen ?? now, last_seen: now };
        await this.devices.update(db, mac, next);
        out.written = next;
        return 'updated' as const;
      }
      if (!autoRegister) return 'ignored' as const;
      if (!this.reportGuard.admitRegistration(ctx.client)) return { refused: 'rate' as ReportRefusal, detail: {} };
      if (this.limits.maxPooled > 0) {
        const pooled = await this.devices.countPooled(db);
        if (pooled >= this.limits.maxPooled) return { refused: 'pool_full' as ReportRefusal, detail: { pooled, max_pooled: this.limits.maxPooled } };
      }
      await this.devices.insert(db, { mac, uuid, state: 'pooled', bound_worker_id: null, key_hash: null, source: 'ipxe', fingerprint: fp, first_seen: now, last_seen: now });
      out.written = { fingerprint: fp, uuid, last_seen: now };
      await this.ops.append({ op: 'device.register', mac, source: 'ipxe', client: ctx.client }, trx);
      return 'registered' as const;
    });
    if (typeof result === 'object') {
      await this.reportGuard.refused(result.refused, ctx.client, result.detail);
      return { result: 'limited', script: renderBootVarsScript({ vars: { menu_default: 'reboot', menu_timeout: this.limits.autoBootTimeout }, subject: mac }) };
    }
    if (out.written) this.memory.remember(mac, out.written);
    if (result === 'registered') this.bootVars.forgetDevice(mac);
    if (result === 'updated') this.power?.sighting(mac);
    return { result, script: REPORT_OK_SCRIPT };
  }

  /**
   * A known device said nothing new: last_seen later, the sighting now. Still a sighting: a
   * machine that boots again within the last_seen interval (a rollout's rollback, a quick second
   * cycle) is seen by the proof of boot all the same.
   */
  private unchanged(mac: string, memo: KnownDevice, atMs: number, spelled?: unknown, words?: string): ReportOutcome {
    this.memory.note(typeof spelled === 'string' ? spelled : undefined, words, mac, memo);
    this.memory.seen(mac, memo, atMs);
    this.power?.sighting(mac);
    return { result: 'updated', script: REPORT_OK_SCRIPT };
  }

  /**
   * The binding rule, inside a caller's transaction. Without `force`: a bound device or
   * a bound worker is a 409. With `force`: the worker's other device goes back to the
   * pool and the device moves. Same device, same worker: no change.
   */
  async bindInTrx(db: MetalDb, mac: string, workerId: string, force: boolean): Promise<BindOutcome> {
    const d = await this.requireDevice(db, mac);
    const w = await this.workers.get(db, workerId);
    if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
    if (d.state === 'revoked') throw new AppError('device_revoked', `device is revoked: ${mac}`);
    if (d.state === 'bound' && d.bound_worker_id === workerId) return { device: d, changed: false, old_worker_id: null, old_device_mac: null };
    if (d.state === 'bound' && !force) throw new AppError('device_bound', `device already bound to ${d.bound_worker_id}: ${mac}`);
    const current = await this.devices.boundTo(db, workerId);
    if (current && !force) throw new AppError('worker_bound', `worker ${workerId} is already bound to ${current.mac}`);
    if (current) await this.devices.update(db, current.mac, { state: 'pooled', bound_worker_id: null });
    try {
      await this.devices.update(db, mac, { state: 'bound', bound_worker_id: workerId });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('worker_bound', `worker ${workerId} is already bound`);
      throw err;
    }
    return {
      device: { ...d, state: 'bound', bound_worker_id: workerId },
      changed: true,
      old_worker_id: d.state === 'bound' ? d.bound_worker_id : null,
      old_device_mac: current?.mac ?? null,
    };
  }

  /** §16.7: bind (or atomically re-bind with force). */
  async bind(macInput: string, workerIdInput: string, force: boolean, ctx: RequestContext): Promise<Device> {
    const mac = requireMac(macInput);
    const workerId = requireWorkerId(workerIdInput);
    const outcome = await this.ledger.write(async (trx) => {
      const o = await this.bindInTrx(trx, mac, workerId, force);
      if (o.changed) {
        const audit: OperationInput[] = [{ op: 'device.bind', mac, worker_id: workerId, force, old_worker_id: o.old_worker_id, old_device_mac: o.old_device_mac, client: ctx.client }];
        if (o.old_device_mac) audit.push({ op: 'device.unbind', mac: o.old_device_mac, worker_id: workerId, reason: 'rebind', client: ctx.client });
        await this.ops.append(audit, trx);
      }
      return o;
    });
    return outcome.device;
  }

  /** §16.8: unbind; the device goes back to the pool, the worker keeps its disks. */
  async unbind(macInput: string, ctx: RequestContext): Promise<Device> {
    const mac = requireMac(macInput);
    const device = await this.ledger.write(async (trx) => {
      const db = trx;
      const d = await this.requireDevice(db, mac);
      if (d.state !== 'bound') throw new AppError('device_not_bound', `device is not bound: ${mac}`);
      await this.devices.update(db, mac, { state: 'pooled', bound_worker_id: null });
      await this.ops.append({ op: 'device.unbind', mac, worker_id: d.bound_worker_id, client: ctx.client }, trx);
      return { ...d, state: 'pooled' as const, bound_worker_id: null };
    });
    return device;
  }

  private pairsOf(req: BatchBindRequest): Array<DeviceDeclaration & { worker_id: string }> {
    const mode = req.mode ?? 'manifest';
    if (mode === 'sequential') {
      const macs = req.macs ?? [];
      const ids = req.worker_ids ?? [];
      if (macs.length !== ids.length) throw new AppError('batch_invalid', `macs (${macs.length}) and worker_ids (${ids.length}) must have the same length`);
      return macs.map((mac, i) => ({ mac, worker_id: ids[i] }));
    }
    if (mode !== 'manifest') throw new AppError('batch_invalid', `invalid mode: ${echo(mode)}; use manifest or sequential`);
    return req.pairs ?? [];
  }

  private mismatch(d: Device, p: DeviceDeclaration): { fields: string[] } | null {
    const fields: string[] = [];
    for (const k of DECLARED) {
      const declared = k === 'uuid' ? cleanUuid(p[k]) : clean(p[k]);
      const reported = k === 'uuid' ? d.uuid : (d.fingerprint[k] as string | null | undefined);
      if (declared && reported && loose(declared) !== loose(reported)) fields.push(k);
    }
    return fields.length ? { fields } : null;
  }

  /**
   * Classifies one manifest pair against the ledger as it stands (shared by the preview
   * and the execution, which sort the same outcomes into their own buckets).
   * `dupMac`/`dupWorker` say whether the manifest repeats the pair's MAC or worker.
   */
  private async classify(db: MetalDb, p: DeviceDeclaration & { worker_id: string }, dupMac: boolean, dupWorker: boolean): Promise<PairOutcome> {
    const mac = normalizeMac(p?.mac);
    const worker_id = typeof p?.worker_id === 'string' ? clip(p.worker_id.trim().toLowerCase()) : '';
    if (!mac) return { kind: 'invalid_mac', mac: typeof p?.mac === 'string' ? clip(p.mac) : (p?.mac ?? null), worker_id, reason: 'invalid MAC address' };
    const d = await this.devices.get(db, mac);
    if (!d) return { kind: 'not_in_pool', mac, worker_id, reason: 'device not in pool' };
    if (d.state === 'revoked') return { kind: 'revoked', mac, worker_id, reason: 'device revoked' };
    if (dupMac) return { kind: 'duplicate', mac, worker_id, reason: 'duplicate MAC in manifest' };
    if (dupWorker) return { kind: 'duplicate', mac, worker_id, reason: 'duplicate worker_id in manifest' };
    if (d.state === 'bound') {
      const same = d.bound_worker_id === worker_id;
      return { kind: same ? 'already_bound' : 'device_bound', mac, worker_id, reason: same ? 'already bound to this worker' : `device already bound to ${d.bound_worker_id}` };
    }
    const w = worker_id ? await this.workers.get(db, worker_id) : null;
    if (!w) return { kind: 'worker_missing', mac, worker_id, reason: `worker not found: ${worker_id}` };
    const other = await this.devices.boundTo(db, worker_id);
    if (other) return { kind: 'worker_bound', mac, worker_id, reason: `worker already bound to ${other.mac}` };
    return { kind: 'ok', mac, worker_id, device: d, worker_state: w.state, fingerprint_mismatch: this.mismatch(d, p) };
  }

  /** §16.9: classify a manifest without writing anything. */
  async previewBatch(req: BatchBindRequest): Promise<BatchPreview> {
    const pairs = this.pairsOf(req);
    const matched: BatchPreview['matched'] = [];
    const conflicts: BatchPreview['conflicts'] = [];
    const not_found: BatchPreview['not_found'] = [];
    const count = (key: (p: (typeof pairs)[number]) => string | null) => {
      const m = new Map<string, number>();
      for (const p of pairs) {
        const k = key(p);
        if (k) m.set(k, (m.get(k) ?? 0) + 1);
      }
      return m;
    };
    const macs = count((p) => normalizeMac(p?.mac));
    const workers = count((p) => (typeof p?.worker_id === 'string' ? p.worker_id.trim().toLowerCase() : null));
    for (const p of pairs) {
      const mac = normalizeMac(p?.mac);
      const wid = typeof p?.worker_id === 'string' ? p.worker_id.trim().toLowerCase() : '';
      const o = await this.classify(this.db, p, !!mac && (macs.get(mac) ?? 0) > 1, (workers.get(wid) ?? 0) > 1);
      if (o.kind === 'ok') {
        matched.push({ mac: o.mac, worker_id: o.worker_id, device_state: o.device.state, worker_state: o.worker_state, fingerprint_mismatch: o.fingerprint_mismatch });
      } else if (o.kind === 'invalid_mac' || o.kind === 'not_in_pool' || o.kind === 'revoked') {
        not_found.push({ mac: o.mac, worker_id: o.worker_id, reason: o.reason });
      } else {
        conflicts.push({ mac: o.mac, worker_id: o.worker_id, reason: o.reason });
      }
    }
    return {
      matched,
      conflicts,
      not_found,
      summary: { total: pairs.length, ok: matched.length, conflict: conflicts.length, not_found: not_found.length },
    };
  }

  /** §16.10: bind a manifest; each item independent, idempotent on re-run. */
  async bindBatch(req: BatchBindRequest, ctx: RequestContext): Promise<BatchBindResult> {
    const pairs = this.pairsOf(req);
    const succeeded: BatchBindResult['succeeded'] = [];
    const skipped: BatchBindResult['skipped'] = [];
    const failed: BatchBindResult['failed'] = [];
    await this.ledger.write(async (trx) => {
      const db = trx;
      const seen = new Set<string>();
      const audit: OperationInput[] = [];
      for (const p of pairs) {
        const mac = normalizeMac(p?.mac);
        // The ledger evolves as pairs are bound, so a later repeat of a worker sees it bound.
        const o = await this.classify(db, p, !!mac && seen.has(mac), false);
        if (mac) seen.add(mac);
        if (o.kind === 'ok') {
          await this.devices.update(db, o.mac, { state: 'bound', bound_worker_id: o.worker_id });
          succeeded.push(o.fingerprint_mismatch ? { mac: o.mac, worker_id: o.worker_id, fingerprint_mismatch: o.fingerprint_mismatch } : { mac: o.mac, worker_id: o.worker_id });
          audit.push({ op: 'device.bind', mac: o.mac, worker_id: o.worker_id, via: 'batch', client: ctx.client });
        } else if (o.kind === 'invalid_mac' || o.kind === 'not_in_pool' || o.kind === 'revoked' || o.kind === 'worker_missing') {
          failed.push({ mac: o.mac, worker_id: o.worker_id, error: o.reason });
        } else {
          skipped.push({ mac: o.mac, worker_id: o.worker_id, reason: o.reason });
        }
      }
      audit.push({ op: 'device.bind.batch', succeeded: succeeded.length, skipped: skipped.length, failed: failed.length, client: ctx.client });
      await this.ops.append(audit, trx);
    });
    return { succeeded, skipped, failed };
  }
}
