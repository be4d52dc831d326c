import { lockInTransaction, type OperationsLog } from '@ironlens/core';
import type { PowerRecord, PowerRepository } from '../repositories/bmc.repository';
import type { MetalStore } from '../repositories/tables';

/** What a machine that boots from the network asks ironlens, in the order boot.ipxe asks it. */
export type BootSighting = 'report' | 'boot_vars';

export interface BootProofObserver {
  confirmed(): void;
  missed(): void;
}

export type WarnFn = (message: string) => void;

/**
 * Proof of boot (issue 21): after a power action with `boot: "network"`, the device's
 * `device_power` row is `pending` until that MAC's device report and `/boot-vars` request both
 * came (then `booted`), or until its deadline (`IRONLENS_BOOT_CONFIRM_TIMEOUT_MS`, then
 * `no_network_boot`, naming what was missing).
 *
 * The hot paths (`/boot-vars`, `/devices/report`) only look a MAC up in an in-memory set of
 * pending MACs ({@link seen}); the store is written only for a MAC in that set. The set is
 * filled by this process' own actions and, while anything is pending, re-read from the store
 * at every sweep, so another replica's pending boot is seen within one sweep period; the sweep
 * also ends the pending rows whose deadline passed (an UPDATE … WHERE result = 'pending', so
 * two replicas end a row once).
 */
export class BootProofService {
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly sweepMs: number;
  private stopped = false;
  /** Told when a MAC's proof of boot completed (issue 31: a rollout waiting for it wakes). */
  onBooted?: (mac: string) => void;

  constructor(
    private readonly store: MetalStore,
    private readonly power: PowerRepository,
    private readonly ops: OperationsLog,
    private readonly timeoutMs: number,
    private readonly observer?: BootProofObserver,
    private readonly warn: WarnFn = (m) => process.stderr.write(`${m}\n`),
    private readonly now: () => number = Date.now,
  ) {
    this.sweepMs = Math.min(5_000, Math.max(100, Math.floor(timeoutMs / 20)));
  }

  get deadlineMs(): number {
    return this.timeoutMs;
  }

  /** Watches `mac` from now on (its row was just written `pending`). */
  watch(mac: string): void {
    this.pending.add(mac);
    this.schedule();
  }

  /** Stops watching `mac` (its action failed at the BMC, or the row was replaced). */
  forget(mac: string): void {
    this.pending.delete(mac);
  }

  /** Reads the pending rows left by an earlier run (or another replica) and starts sweeping. */
  async resume(): Promise<void> {
    await this.sweep();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sweep()
        .catch((e) => this.warn(`ironlens: proof-of-boot sweep failed: ${(e as Error).message}`))
        .finally(() => {
          if (this.pending.size) this.schedule();
        });
    }, this.sweepMs);
    this.timer.unref();
  }

  /**
   * From the hot paths: `mac` asked for its report or its boot variables. Cheap when nothing is
   * pending for it (a set lookup); otherwise the sighting is written in the background.
   */
  seen(mac: string | null | undefined, what: BootSighting): void {
    if (!mac || !this.pending.has(mac)) return;
    void this.record(mac, what, new Date(this.now()).toISOString()).catch((e) => this.warn(`ironlens: recording a network boot of ${mac} failed: ${(e as Error).message}`));
  }

  /** Writes a sighting; the row becomes `booted` once both came. Exposed for tests of the race with the deadline. */
  async record(mac: string, what: BootSighting, at: string): Promise<PowerRecord | null> {
    const out = await this.store.transaction(async (trx) => {
      // The device report and /boot-vars come milliseconds apart: on PostgreSQL their two
      // transactions would each read the row without the other's sighting, and the second write
      // would lose the first (the proof then never completes). One at a time per MAC.
      await lockInTransaction(trx, `ironlens.metal.power:${mac}`);
      const r = await this.power.get(trx, mac);
      if (r?.result !== 'pending' || at < r.requested_at) return null;
      const next: PowerRecord = {
        ...r,
        report_seen_at: what === 'report' ? (r.report_seen_at ?? at) : r.report_seen_at,
        boot_vars_seen_at: what === 'boot_vars' ? (r.boot_vars_seen_at ?? at) : r.boot_vars_seen_at,
        network_boot_seen_at: r.network_boot_seen_at ?? at,
      };
      if (next.report_seen_at && next.boot_vars_seen_at) {
        next.result = 'booted';
        next.detail = `booted from the network: device report at ${next.report_seen_at}, /boot-vars at ${next.boot_vars_seen_at}`;
        next.deadline_ms = null;
      } else {
        next.detail = what === 'report' ? `device report at ${at}; waiting for /boot-vars` : `/boot-vars at ${at}; waiting for the device report`;
      }
      await this.power.update(trx, mac, next);
      if (next.result === 'booted') {
        await this.ops.append({ op: 'power.boot.confirmed', mac, action: r.action, requested_at: r.requested_at, report_at: next.report_seen_at, boot_vars_at: next.boot_vars_seen_at }, trx);
      }
      return next;
    });
    if (out?.result === 'booted') {
      this.pending.delete(mac);
      this.observer?.confirmed();
      this.onBooted?.(mac);
    }
    return out;
  }

  /** Ends the pending rows whose deadline passed, and re-reads which MACs are pending. */
  async sweep(): Promise<void> {
    const now = this.now();
    const missed: string[] = [];
    await this.store.transaction(async (trx) => {
      for (const r of await this.power.pending(trx)) {
        if (r.deadline_ms === null || r.deadline_ms > now) continue;
        const secs = Math.round(this.timeoutMs / 1000);
        let detail: string;
        if (!r.report_seen_at && !r.boot_vars_seen_at) detail = `the BMC accepted the ${r.action}, but no DHCP/iPXE request from this MAC came within ${secs} s (no device report, no /boot-vars)`;
        else if (!r.boot_vars_seen_at) detail = `the device report came at ${r.report_seen_at}, but no /boot-vars request followed within ${secs} s`;
        else detail = `/boot-vars was asked at ${r.boot_vars_seen_at}, but no device report came within ${secs} s`;
        await this.power.update(trx, r.mac, { result: 'no_network_boot', detail, deadline_ms: null });
        await this.ops.append({ op: 'power.boot.missed', mac: r.mac, action: r.action, requested_at: r.requested_at, detail }, trx);
        missed.push(r.mac);
      }
    });
    for (const mac of missed) {
      this.pending.delete(mac);
      this.observer?.missed();
    }
    const still = await this.power.pending(this.store.db);
    for (const r of still) this.pending.add(r.mac);
    for (const mac of [...this.pending]) if (!still.some((r) => r.mac === mac)) this.pending.delete(mac);
    if (this.pending.size) this.schedule();
  }
}
