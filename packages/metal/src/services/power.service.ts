import { AppError, clip, echo, isAppError, type OperationsLog } from '@ironlens/core';
import type { BmcConnector } from '../adapters/bmc';
import type { BatchPowerResult, BmcDeleted, PowerAnswer, PowerStateView } from '../api/schemas';
import { normalizeMac, requireMac, requireWorkerId } from '../domain/identifiers';
import { type BmcCredentials, type BmcInput, type BmcView, bmcHostKey, bmcView, checkBmcInput, type LastPower, POWER_ACTIONS, type PowerAction, type PowerState, powersOn } from '../domain/power';
import { type BmcRepository, lastPowerOf, type PowerRecord, type PowerRepository } from '../repositories/bmc.repository';
import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalDb, MetalStore } from '../repositories/tables';
import type { BmcScheduler } from './bmc-scheduler';
import type { BootProofService } from './boot-proof.service';
import type { RequestContext } from './settings.service';

export interface PowerRequest {
  action: PowerAction;
  boot?: 'network' | null;
}

export type { BatchPowerResult, PowerAnswer, PowerStateView };

/** BMC latency and failures, for the process' metrics. */
export interface BmcCallObserver {
  call(driver: string, op: string, seconds: number, code: string | null): void;
}

/** The most MACs one `POST /devices/power` takes. */
export const MAX_BATCH = 1000;

/**
 * Power control of the pool's machines through their BMCs (issue 21): a BMC per device (sealed
 * password), the power state (read from the BMC, cached `IRONLENS_BMC_STATE_CACHE_MS`), power
 * actions one by one or in batches (spaced by {@link BmcScheduler}), and the proof that the
 * machine then booted from the network ({@link BootProofService}). Every action and outcome is
 * in the operations log; the password never is, nor in an answer or an error.
 */
export class PowerService {
  private readonly stateCache = new Map<string, { view: PowerStateView; at: number }>();

  constructor(
    private readonly store: MetalStore,
    private readonly devices: DeviceRepository,
    private readonly bmcs: BmcRepository,
    private readonly power: PowerRepository,
    private readonly ops: OperationsLog,
    private readonly connect: BmcConnector,
    private readonly scheduler: BmcScheduler,
    readonly proof: BootProofService,
    private readonly opts: { stateCacheMs: number; now?: () => number },
    private readonly observer?: BmcCallObserver,
  ) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  private async requireDevice(db: MetalDb, mac: string) {
    const d = await this.devices.get(db, mac);
    if (!d) throw new AppError('device_not_found', `device not found: ${mac}`);
    return d;
  }

  // ---- the BMC record ----------------------------------------------------------------------

  async getBmc(macInput: string): Promise<BmcView> {
    const mac = requireMac(macInput);
    await this.requireDevice(this.store.db, mac);
    const b = await this.bmcs.get(this.store.db, mac);
    if (!b) throw new AppError('bmc_not_configured', `device ${mac} has no BMC configured`, { code: 'bmc_not_configured' });
    return bmcView(b.credentials, b.updated_at);
  }

  /** Sets (or replaces) a device's BMC. A request without a password keeps the stored one (same driver). */
  async putBmc(macInput: string, input: BmcInput, ctx: RequestContext): Promise<BmcView> {
    const mac = requireMac(macInput);
    const out = await this.store.transaction(async (trx) => {
      await this.requireDevice(trx, mac);
      const before = await this.bmcs.get(trx, mac);
      const c = checkBmcInput(input, before ? { driver: before.credentials.driver, password: before.credentials.password } : null);
      const at = await this.bmcs.put(trx, mac, c);
      await this.ops.append({ op: before ? 'device.bmc.update' : 'device.bmc.set', mac, ...auditOf(c), password_changed: input.password !== undefined && input.password !== null, client: ctx.client }, trx);
      return bmcView(c, at);
    });
    this.stateCache.delete(mac);
    return out;
  }

  /** Inside a caller's transaction (`POST /devices`, the import): the BMC declared with the device. */
  async putBmcInTrx(db: MetalDb, mac: string, c: BmcCredentials): Promise<void> {
    await this.bmcs.put(db, mac, c);
  }

  async deleteBmc(macInput: string, ctx: RequestContext): Promise<BmcDeleted> {
    const mac = requireMac(macInput);
    await this.store.transaction(async (trx) => {
      await this.requireDevice(trx, mac);
      if (!(await this.bmcs.remove(trx, mac))) throw new AppError('bmc_not_configured', `device ${mac} has no BMC configured`, { code: 'bmc_not_configured' });
      await this.ops.append({ op: 'device.bmc.delete', mac, client: ctx.client }, trx);
    });
    this.stateCache.delete(mac);
    return { mac, deleted: true };
  }

  // ---- power -------------------------------------------------------------------------------

  /** The BMC of a device that may be powered: it exists, is not revoked, and has a BMC. */
  private async target(mac: string): Promise<BmcCredentials> {
    const d = await this.requireDevice(this.store.db, mac);
    if (d.state === 'revoked') throw new AppError('power_device_revoked', `device is revoked: ${mac}; no power actions`, { code: 'power_device_revoked' });
    const b = await this.bmcs.get(this.store.db, mac);
    if (!b) throw new AppError('bmc_not_configured', `device ${mac} has no BMC configured`, { code: 'bmc_not_configured' });
    if (!b.credentials.password) throw new AppError('bmc_not_configured', `the BMC of ${mac} has no password (imported without one): PUT /devices/${mac}/bmc with it`, { code: 'bmc_not_configured' });
    return b.credentials;
  }

  /** Times one BMC call for the metrics. */
  private async timed<T>(c: BmcCredentials, op: string, fn: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      const v = await fn();
      this.observer?.call(c.driver, op, (performance.now() - t0) / 1000, null);
      return v;
    } catch (e) {
      this.observer?.call(c.driver, op, (performance.now() - t0) / 1000, isAppError(e) ? e.code : 'internal_error');
      throw e;
    }
  }

  async state(macInput: string): Promise<PowerStateView> {
    const mac = requireMac(macInput);
    const cached = this.stateCache.get(mac);
    if (cached && this.now() - cached.at < this.opts.stateCacheMs) return cached.view;
    const c = await this.target(mac);
    const bmc = this.connect(c);
    const state = await this.scheduler.run(bmcHostKey(c), () => this.timed(c, 'status', () => bmc.powerState()));
    const view = { state, checked_at: new Date(this.now()).toISOString() };
    this.stateCache.set(mac, { view, at: this.now() });
    return view;
  }

  /** `POST /devices/{mac}/power`. */
  async act(macInput: string, req: PowerRequest, ctx: RequestContext): Promise<PowerAnswer> {
    const mac = requireMac(macInput);
    const action = req.action;
    if (!POWER_ACTIONS.includes(action)) throw new AppError('request_invalid', `action must be one of ${POWER_ACTIONS.join(', ')}, not ${echo(action)}`);
    const boot = req.boot === 'network' ? 'network' : null;
    if (req.boot !== undefined && req.boot !== null && req.boot !== 'network') throw new AppError('request_invalid', `boot must be "network" or null, not ${echo(req.boot)}`);
    const c = await this.target(mac);
    const requested = new Date(this.now()).toISOString();
    const record: PowerRecord = {
      mac,
      action,
      boot,
      requested_at: requested,
      bmc_ok: false,
      report_seen_at: null,
      boot_vars_seen_at: null,
      network_boot_seen_at: null,
      result: boot ? 'pending' : null,
      detail: 'sent to the BMC',
      deadline_ms: boot ? this.now() + this.proof.deadlineMs : null,
    };
    // Pending before the BMC acts: a fast machine may ask for /boot-vars before the BMC answers.
    await this.power.put(this.store.db, record);
    if (boot) this.proof.watch(mac);
    else this.proof.forget(mac);
    const bmc = this.connect(c);
    let state: PowerState = 'unknown';
    try {
      state = await this.scheduler.run(bmcHostKey(c), async (beforePowerOn) => {
        if (boot) await this.timed(c, 'boot_network', () => bmc.setOneTimeNetworkBoot());
        if (powersOn(action)) await beforePowerOn();
        await this.timed(c, action, () => bmc.power(action));
        // The state read back; a BMC that acted but cannot say does not fail the action.
        return this.timed(c, 'status', () => bmc.powerState()).catch(() => 'unknown' as PowerState);
      });
    } catch (e) {
      const err = isAppError(e) ? e : new AppError('bmc_action_failed', `the BMC call failed: ${clip(String((e as Error).message), 200)}`, { code: 'bmc_action_failed' });
      this.proof.forget(mac);
      const failed: Partial<PowerRecord> = { bmc_ok: false, result: boot ? 'no_network_boot' : null, detail: `the BMC did not act: ${err.message}`, deadline_ms: null };
      await this.store.transaction(async (trx) => {
        await this.power.update(trx, mac, failed);
        await this.ops.append({ op: 'power.action', mac, action, boot, bmc_ok: false, error: err.code, detail: err.message, ...auditOf(c), client: ctx.client }, trx);
      });
      this.stateCache.delete(mac);
      throw err;
    }
    const detail = boot ? `the BMC accepted the ${action}; waiting for this MAC's device report and /boot-vars` : `the BMC accepted the ${action}`;
    const checked_at = new Date(this.now()).toISOString();
    await this.store.transaction(async (trx) => {
      // A sighting may already have come (and made the row booted): keep what it wrote.
      const now = await this.power.get(trx, mac);
      const patch: Partial<PowerRecord> = { bmc_ok: true };
      if (now?.result !== 'booted' && !now?.network_boot_seen_at) patch.detail = detail;
      await this.power.update(trx, mac, patch);
      await this.ops.append({ op: 'power.action', mac, action, boot, bmc_ok: true, state, ...auditOf(c), client: ctx.client }, trx);
    });
    this.stateCache.set(mac, { view: { state, checked_at }, at: this.now() });
    const row = await this.power.get(this.store.db, mac);
    return { mac, action, boot, state, checked_at, last_power: lastPowerOf(row ?? { ...record, bmc_ok: true, detail }) };
  }

  /** `POST /devices/power`: one result per MAC, each independent; the scheduler spaces them. */
  async batch(req: { macs: unknown[]; action: PowerAction; boot?: 'network' | null }, ctx: RequestContext): Promise<BatchPowerResult> {
    if (!Array.isArray(req.macs)) throw new AppError('batch_invalid', 'macs must be a list of MAC addresses');
    if (req.macs.length > MAX_BATCH) throw new AppError('batch_invalid', `at most ${MAX_BATCH} MACs in one batch, not ${req.macs.length}`);
    if (!POWER_ACTIONS.includes(req.action)) throw new AppError('request_invalid', `action must be one of ${POWER_ACTIONS.join(', ')}, not ${echo(req.action)}`);
    const out: BatchPowerResult = { succeeded: [], failed: [] };
    const seen = new Set<string>();
    const jobs: Array<Promise<void>> = [];
    for (const m of req.macs) {
      const mac = normalizeMac(m);
      if (!mac) {
        out.failed.push({ mac: typeof m === 'string' ? clip(m) : (m ?? null), status: 400, code: 'mac_invalid', detail: `invalid MAC address: ${echo(m ?? null)}` });
        continue;
      }
      if (seen.has(mac)) continue;
      seen.add(mac);
      jobs.push(
        this.act(mac, { action: req.action, boot: req.boot ?? null }, ctx).then(
          (a) => void out.succeeded.push(a),
          (e) => {
            const err = isAppError(e) ? e : new AppError('internal_error', 'internal error');
            out.failed.push({ mac, status: err.status, code: err.code, detail: err.message });
          },
        ),
      );
    }
    await Promise.all(jobs);
    await this.ops.append({ op: 'power.batch', action: req.action, boot: req.boot ?? null, succeeded: out.succeeded.length, failed: out.failed.length, client: ctx.client });
    const order = new Map([...seen].map((m, i) => [m, i]));
    out.succeeded.sort((a, b) => (order.get(a.mac) ?? 0) - (order.get(b.mac) ?? 0));
    return out;
  }

  /**
   * A change that ends with "now reboot the machine" (`?reboot=true` on a bind, `reboot: true` on
   * a new disk): checks first that the device can be powered (nothing changes otherwise), runs
   * `change`, then power-cycles it into a one-time network boot. A BMC that fails after the
   * change does not undo it: the answer carries `last_power` with `bmc_ok: false` and why.
   */
  async withReboot<T extends object>(macInput: string, ctx: RequestContext, change: () => Promise<T>): Promise<T & { last_power: LastPower }> {
    const mac = requireMac(macInput);
    await this.target(mac);
    const result = await change();
    try {
      const a = await this.act(mac, { action: 'cycle', boot: 'network' }, ctx);
      return { ...result, last_power: a.last_power };
    } catch (e) {
      if (!isAppError(e) || !e.code.startsWith('bmc_')) throw e;
      const row = await this.power.get(this.store.db, mac);
      if (!row) throw e;
      return { ...result, last_power: lastPowerOf(row) };
    }
  }

  /** Issue 31: whether the device can be powered through a BMC (one with a password, device not revoked). */
  async canPower(macInput: string): Promise<boolean> {
    return this.target(requireMac(macInput)).then(
      () => true,
      (e) => {
        if (isAppError(e) && (e.code === 'bmc_not_configured' || e.code === 'power_device_revoked')) return false;
        throw e;
      },
    );
  }

  /** The MAC bound to a worker, for a reboot after its new disk. */
  async boundMac(workerIdInput: string): Promise<string> {
    const workerId = requireWorkerId(workerIdInput);
    const d = await this.devices.boundTo(this.store.db, workerId);
    if (!d) throw new AppError('device_not_bound', `worker ${workerId} has no bound device to reboot`);
    return d.mac;
  }

  // ---- the device view ---------------------------------------------------------------------

  /** The device report of `mac` came: a sighting of a network boot. */
  sighting(mac: string): void {
    this.proof.seen(mac, 'report');
  }

  async lastPower(mac: string): Promise<LastPower | null> {
    const r = await this.power.get(this.store.db, mac);
    return r ? lastPowerOf(r) : null;
  }

  /** The device's last power action as stored, with both sightings of its proof of boot (issue 31). */
  powerRecord(mac: string): Promise<PowerRecord | null> {
    return this.power.get(this.store.db, mac);
  }

  async lastPowers(): Promise<Map<string, LastPower>> {
    const all = await this.power.all(this.store.db);
    return new Map([...all].map(([mac, r]) => [mac, lastPowerOf(r)]));
  }

  /** At start: pending proofs of boot left by an earlier run are watched again (or end). */
  resume(): Promise<void> {
    return this.proof.resume();
  }

  stop(): void {
    this.proof.stop();
  }
}

/** What the operations log keeps of a BMC: never the password. */
/** What the operations log (a viewer's read) says of a BMC: its driver, never its address or user (secrets' metadata). */
function auditOf(c: BmcCredentials): Record<string, unknown> {
  return { driver: c.driver };
}
