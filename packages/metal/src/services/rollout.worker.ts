import { AppError, currentActor, type OperationsLog } from '@ironlens/core';
import type { ClusterNodes, NodeRef } from '../adapters/cluster-nodes';
import type { RolloutPhase, RolloutStep } from '../api/rollout.schemas';
import type { Disk, WorkerRecord } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import type { HostReportRepository } from '../repositories/host-report.repository';
import type { RolloutRecord, RolloutRepository, RolloutWorkerRecord } from '../repositories/rollout.repository';
import type { MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import type { HostReportService } from './host-report.service';
import type { LedgerWriter } from './ledger-writer.service';
import type { PowerService } from './power.service';
import type { StorageService } from './storage.service';
import type { Wakeups } from './wakeups';

/** A step of a worker failed: the worker is rolled back, the rollout pauses with `message`. */
export class StepFailed extends Error {
  constructor(
    readonly step: string,
    message: string,
  ) {
    super(message);
    this.name = 'StepFailed';
  }
}

/** What one worker's rollout needs (hand-wired by `RolloutService`). */
export interface WorkerRolloutDeps {
  store: MetalStore;
  repo: RolloutRepository;
  workers: WorkerRepository;
  devices: DeviceRepository;
  hosts: HostReportRepository;
  hostReports: HostReportService;
  ledger: LedgerWriter;
  storage: StorageService;
  power: PowerService;
  nodes: ClusterNodes;
  ops: OperationsLog;
  wakeups: Wakeups;
  /** How often a wait re-reads the store when no wake-up came (another replica saw the event). */
  pollMs: number;
  now: () => number;
  /** One worker's rollout ended (the metrics). */
  finished?: (outcome: 'done' | 'rolled_back' | 'rollback_failed', seconds: number) => void;
}

/** Keys of {@link Wakeups} the waits listen to. */
export const wakeKeys = {
  boot: (mac: string) => `boot:${mac}`,
  report: (workerId: string) => `report:${workerId}`,
  bootVars: (workerId: string) => `bootvars:${workerId}`,
  rollout: (id: string) => `rollout:${id}`,
};

/**
 * One worker through one rollout (issue 31), as a sequence of phases each persisted before the
 * next begins, so a run that stops (a restart, a pause) is resumed from the phase it reached:
 *
 *   queued → draining (cordon, evict) → cloning (the new disk beside the old one, then the
 *   ledger's disk switched in one transaction) → rebooting (power-cycle with a one-time network
 *   boot, or a wait for a manual reboot) → proving (the proof of boot, the host report from the
 *   new image, the node Ready) → readmitting (uncordon, the old disk removed) → done.
 *
 * A step that fails rolls the worker back: the old disk as the ledger's disk again, a
 * power-cycle and its proof when the new disk had been switched in, the new disk removed, the
 * node uncordoned. The old disk is removed only once the worker is proven on the new image.
 */
export class WorkerRollout {
  private readonly d: WorkerRolloutDeps;

  constructor(
    deps: WorkerRolloutDeps,
    private readonly rollout: RolloutRecord,
    private readonly w: RolloutWorkerRecord,
    /** Aborted when the rollout is aborted: the worker is rolled back. */
    private readonly abort: AbortSignal,
    /** Aborted when the process stops: the worker is left as it is, for a resume. */
    private readonly stop: AbortSignal,
  ) {
    this.d = deps;
    this.signal = AbortSignal.any([abort, stop]);
  }

  /** What the waits listen to: abort or stop going forward, only stop during a rollback. */
  private signal: AbortSignal;

  private stopping(): boolean {
    return this.stop.aborted;
  }

  private get db() {
    return this.d.store.db;
  }

  private ctx() {
    return { client: `rollout ${this.rollout.id}` };
  }

  /** Persists the phase (and state), appends a step, and writes the operations log entry of a step's end. */
  private async mark(phase: RolloutPhase, step?: Omit<RolloutStep, 'at'>, reason?: string | null): Promise<void> {
    this.w.phase = phase;
    if (reason !== undefined) this.w.reason = reason;
    const at = new Date(this.d.now()).toISOString();
    const entry = step ? { at, ...step } : undefined;
    await this.d.store.transaction(async (trx) => {
      await this.d.repo.putWorker(trx, this.w, entry);
      if (entry && entry.status !== 'started') {
        await this.d.ops.append({ op: 'rollout.step', status: entry.status, worker_id: this.w.worker_id, rollout_id: this.rollout.id, step: entry.step, detail: entry.detail }, trx);
      }
    });
  }

  private async save(): Promise<void> {
    await this.d.repo.putWorker(this.db, this.w);
  }

  private check(): void {
    if (this.signal.aborted) throw this.signal.reason ?? new Error('aborted');
  }

  private async worker(): Promise<WorkerRecord> {
    const w = await this.d.workers.get(this.db, this.w.worker_id);
    if (!w) throw new StepFailed('start', `worker ${this.w.worker_id} no longer exists`);
    return w;
  }

  /** Runs the worker from the phase it reached to `done`, or rolls it back. Throws only when the process stops. */
  async run(): Promise<void> {
    const t0 = this.d.now();
    try {
      if (this.w.phase === 'rolling_back') {
        await this.rollback(this.w.reason ?? 'rolled back');
        return;
      }
      await this.forward();
      this.d.finished?.('done', (this.d.now() - t0) / 1000);
    } catch (err) {
      if (this.stopping()) throw err;
      const reason = this.abort.aborted ? `aborted by ${currentActor()}` : err instanceof StepFailed || err instanceof AppError ? err.message : `internal error: ${(err as Error).message}`;
      const step = err instanceof StepFailed ? err.step : this.w.phase;
      if (!this.abort.aborted) await this.mark(this.w.phase, { step, status: 'failed', detail: reason });
      await this.rollback(reason);
    }
  }

  private async forward(): Promise<void> {
    const st = this.w.state;
    if (this.w.phase === 'queued') {
      const w = await this.worker();
      const disk = (w.default_os && w.disks.find((d) => d.os === w.default_os)) || w.disks[0];
      if (!disk) throw new StepFailed('start', `worker ${w.worker_id} has no system disk`);
      const device = await this.d.devices.boundTo(this.db, w.worker_id);
      if (!device) throw new StepFailed('start', `worker ${w.worker_id} has no bound device`);
      st.old_disk = disk;
      st.mac = device.mac;
      st.power = (await this.d.power.canPower(device.mac)) ? 'bmc' : 'manual';
      this.w.started_at = new Date(this.d.now()).toISOString();
      await this.mark('draining', { step: 'start', status: 'ok', detail: `from ${disk.iqn} (${disk.source.name ?? disk.source.type}); power: ${st.power === 'bmc' ? 'its BMC' : 'no BMC, a manual reboot'}` });
    }
    if (this.w.phase === 'draining') await this.drain();
    if (this.w.phase === 'cloning') await this.clone();
    if (this.w.phase === 'rebooting') await this.reboot('new');
    if (this.w.phase === 'proving') {
      await this.prove('new');
      await this.mark('readmitting', { step: 'prove', status: 'ok', detail: `booted ${this.rollout.master} from ${st.new_disk?.iqn}` });
    }
    if (this.w.phase === 'readmitting') await this.readmit();
  }

  private async drain(): Promise<void> {
    const st = this.w.state;
    const w = await this.worker();
    const report = await this.d.hosts.get(this.db, w.worker_id);
    const cluster = (await this.d.hosts.clusters(this.db)).get(w.worker_id) ?? null;
    const addresses = report ? report.host.addresses.flatMap((a) => [...a.ipv4, ...a.ipv6]) : [];
    const node = await this.d.nodes.find({ worker_id: w.worker_id, hostname: w.hostname, cluster_id: cluster, addresses });
    st.node = node;
    if (!node) {
      await this.mark('cloning', { step: 'drain', status: 'ok', detail: 'not a node of a registered cluster: nothing to drain' });
      return;
    }
    await this.mark('draining', { step: 'drain', status: 'started', detail: `node ${node.name} of cluster ${node.cluster_id}` });
    if (!st.cordoned) {
      const c = await this.d.nodes.cordon(node);
      st.was_unschedulable = c.was_unschedulable;
      st.cordoned = true;
      await this.save();
    }
    this.check();
    const r = await this.d.nodes.drain(node, {
      timeoutMs: this.rollout.options.drain_timeout_s * 1000,
      poolLeaveMs: this.rollout.options.pool_leave_s * 1000,
      signal: this.signal,
    });
    this.check();
    if (!r.ok) throw new StepFailed('drain', r.reason);
    const left = r.left_pool.length ? `; left their InferencePool first: ${r.left_pool.join(', ')}` : '';
    await this.mark('cloning', { step: 'drain', status: 'ok', detail: `node ${node.name} cordoned; evicted ${r.evicted.length ? r.evicted.join(', ') : 'nothing'}${left}` });
  }

  private async clone(): Promise<void> {
    const st = this.w.state;
    const w = await this.worker();
    const old = st.old_disk;
    if (!old) throw new StepFailed('clone', 'no old disk recorded');
    if (!st.switched) {
      if (!st.new_disk) {
        st.new_disk = await this.d.storage.planBeside(w, old, this.rollout.master, `r${this.rollout.seq}`);
        await this.save();
      }
      this.check();
      if (!st.new_disk_made) {
        st.new_disk = await this.d.storage.makePlanned(w, st.new_disk, this.ctx());
        st.new_disk_made = true;
        await this.save();
      }
      this.check();
      await this.switchTo(st.new_disk, old, 'new');
    }
    await this.mark('rebooting', { step: 'clone', status: 'ok', detail: `${st.new_disk?.iqn} cloned from ${this.rollout.master}; the worker's ${old.os} disk is the new one, ${old.iqn} kept` });
  }

  /** The ledger's disk of that OS becomes `to` (one transaction, with the rollout's own state), boot-vars and dnsmasq follow. */
  private async switchTo(to: Disk, from: Disk, which: 'new' | 'old'): Promise<void> {
    const st = this.w.state;
    await this.d.ledger.write(async (trx) => {
      const cur = await this.d.workers.get(trx, this.w.worker_id);
      if (!cur) throw new StepFailed('switch', `worker ${this.w.worker_id} no longer exists`);
      const now = cur.disks.find((x) => x.os === to.os);
      if (now && now.iqn !== from.iqn && now.iqn !== to.iqn) throw new StepFailed('switch', `the worker's ${to.os} disk changed during the rollout (${now.iqn})`);
      await this.d.workers.removeDisk(trx, this.w.worker_id, to.os);
      await this.d.workers.addDisk(trx, this.w.worker_id, to);
      st.switched = which === 'new';
      await this.d.repo.putWorker(trx, this.w);
      await this.d.ops.append({ op: 'rollout.switch', worker_id: this.w.worker_id, rollout_id: this.rollout.id, os: to.os, from: from.iqn, to: to.iqn, image: which }, trx);
    });
  }

  /** Power-cycle with a one-time network boot through the BMC, or the note that someone must reboot it. */
  private async reboot(which: 'new' | 'rollback'): Promise<void> {
    const st = this.w.state;
    const at = new Date(this.d.now()).toISOString();
    const before = (await this.d.hosts.get(this.db, this.w.worker_id))?.report_ts ?? 0;
    if (which === 'new') st.report_ts_before = before;
    else st.rollback_report_ts_before = before;
    await this.save();
    let detail: string;
    let requested = at;
    if (st.power === 'bmc' && st.mac) {
      try {
        const a = await this.d.power.act(st.mac, { action: 'cycle', boot: 'network' }, this.ctx());
        requested = a.last_power.requested_at;
      } catch (err) {
        throw new StepFailed('reboot', `the power-cycle through the BMC failed: ${(err as Error).message}`);
      }
      detail = `power-cycled ${st.mac} through its BMC with a one-time network boot`;
    } else {
      detail = `no BMC: waiting for ${st.mac ?? 'the machine'} to be rebooted by hand (from the network)`;
    }
    if (which === 'new') st.power_at = requested;
    else st.rollback_power_at = requested;
    const next: RolloutPhase = which === 'new' ? 'proving' : 'rolling_back';
    await this.mark(next, { step: which === 'new' ? 'reboot' : 'rollback.reboot', status: st.power === 'bmc' ? 'ok' : 'waiting', detail });
  }

  /**
   * Waits for the proof that the worker runs `which` image: the proof of boot of the power-cycle
   * (BMC), then a host report after that boot whose image is the expected master and whose boot
   * disk is the expected IQN, then (a node) the node Ready. Fails at once on a refused proof of
   * boot, on a report of another image after the network boot, or when the machine comes back
   * to the network boot without reporting (the image did not boot); otherwise at the timeout.
   */
  private async prove(which: 'new' | 'old'): Promise<void> {
    const st = this.w.state;
    const disk = which === 'new' ? st.new_disk : st.old_disk;
    const master = which === 'new' ? this.rollout.master : (st.old_disk?.source.name ?? null);
    const poweredAt = which === 'new' ? st.power_at : st.rollback_power_at;
    if (!disk || !poweredAt) throw new StepFailed('prove', 'nothing to prove (no disk or no power-cycle recorded)');
    const step = which === 'new' ? 'prove' : 'rollback.prove';
    const timeoutS = this.rollout.options.boot_timeout_s;
    const deadline = this.d.now() + timeoutS * 1000;
    const keys = [wakeKeys.report(this.w.worker_id), wakeKeys.bootVars(this.w.worker_id), ...(st.mac ? [wakeKeys.boot(st.mac)] : [])];
    let waiting = 'the proof of boot';
    let announced = '';
    for (;;) {
      this.check();
      let bootSeen: string | null = poweredAt;
      let bootVarsSeen: string | null = null;
      if (st.power === 'bmc' && st.mac) {
        const lp = await this.d.power.powerRecord(st.mac);
        if (!lp || lp.requested_at !== poweredAt) throw new StepFailed(step, `another power action replaced the rollout's (${lp ? `${lp.action} at ${lp.requested_at}` : 'none recorded'})`);
        if (lp.result === 'no_network_boot') throw new StepFailed(step, `no network boot: ${lp.detail ?? ''}`.trim());
        bootSeen = lp.result === 'booted' ? lp.network_boot_seen_at : null;
        bootVarsSeen = lp.boot_vars_seen_at;
      }
      if (bootSeen) {
        waiting = `the host report from ${master ?? 'the image'} on ${disk.iqn}`;
        const rep = await this.d.hosts.get(this.db, this.w.worker_id);
        // A report accepted after the power-cycle was asked (its timestamp is newer than the last
        // one then: accepted timestamps only grow), in or after the second of the network boot.
        const before = (which === 'new' ? st.report_ts_before : st.rollback_report_ts_before) ?? 0;
        const host = rep && rep.report_ts > before && Date.parse(rep.host.reported_at) >= Math.floor(Date.parse(bootSeen) / 1000) * 1000 ? rep.host : null;
        // Manual reboots: the old system may still report until someone reboots it; only a report that proves counts.
        const strict = st.power === 'bmc';
        if (host) {
          const image = host.image ?? null;
          const bootDisk = host.boot_disk?.iqn ?? null;
          const wrongImage = which === 'new' ? !image || image.master !== master : !!(image && master && image.master !== master);
          const wrongDisk = !!bootDisk && bootDisk !== disk.iqn;
          if (!wrongImage && !wrongDisk) {
            if (!st.node) return;
            waiting = `node ${st.node.name} Ready`;
            if (await this.d.nodes.ready(st.node)) return;
          } else if (strict) {
            if (wrongDisk) throw new StepFailed(step, `the worker booted from ${bootDisk}, not ${disk.iqn}`);
            throw new StepFailed(step, image ? `the worker runs ${image.master} (build ${image.build}), not ${master}` : `the host report carries no image identity (/etc/ironlens-master), so it cannot prove ${master}: a master made by \`ironlens master build\` has it`);
          }
        } else if (bootVarsSeen) {
          // A second /boot-vars from the machine after this boot's: it went back to the network boot without reporting.
          const again = this.d.hostReports.lastBootVars(this.w.worker_id);
          if (again !== undefined && again > Date.parse(bootVarsSeen) + 1000) {
            throw new StepFailed(step, `the machine came back to the network boot at ${new Date(again).toISOString()} without a host report: ${master ?? 'the image'} on ${disk.iqn} did not boot`);
          }
        }
      }
      if (this.d.now() > deadline) throw new StepFailed(step, `no proof within ${timeoutS} s: still waiting for ${waiting}`);
      if (waiting !== announced) {
        announced = waiting;
        await this.mark(this.w.phase, { step, status: 'waiting', detail: `waiting for ${waiting}` });
      }
      await this.d.wakeups.wait(keys, this.d.pollMs, this.signal);
    }
  }

  private async readmit(): Promise<void> {
    const st = this.w.state;
    if (st.node && st.cordoned && !st.was_unschedulable) await this.d.nodes.uncordon(st.node);
    let cleanup = '';
    if (st.old_disk) {
      // Proven on the new image: the old disk, kept until now for the rollback, goes.
      cleanup = await this.d.storage.dropDisk(this.w.worker_id, st.old_disk, this.ctx()).then(
        (o) => `; old disk ${st.old_disk?.iqn} removed${o === 'missing' ? ' (it was already gone)' : ''}`,
        (e) => `; the old disk ${st.old_disk?.iqn} could not be removed (${(e as Error).message}): remove it by hand`,
      );
    }
    this.w.finished_at = new Date(this.d.now()).toISOString();
    await this.history('rolled_out', st.new_disk, cleanup ? cleanup.slice(2) : null);
    await this.mark('done', { step: 'readmit', status: 'ok', detail: `${st.node ? (st.was_unschedulable ? `node ${st.node.name} left cordoned (it was before)` : `node ${st.node.name} uncordoned`) : 'not a node'}${cleanup}` }, null);
  }

  private async history(outcome: 'rolled_out' | 'rolled_back' | 'rollback_failed', disk: Disk | null, detail: string | null): Promise<void> {
    const d = disk ?? this.w.state.old_disk;
    if (!d) return;
    await this.d.repo.addImage(this.db, this.w.worker_id, {
      at: new Date(this.d.now()).toISOString(),
      actor: currentActor(),
      master: outcome === 'rolled_out' ? this.rollout.master : (d.source.name ?? null),
      os: d.os,
      agent: d.agent,
      iqn: d.iqn,
      rollout_id: this.rollout.id,
      outcome,
      detail: detail ?? (outcome === 'rolled_out' ? null : `${this.rollout.master}: ${this.w.reason ?? ''}`),
    });
  }

  /**
   * Back to the old image: the old disk as the ledger's disk, a power-cycle and its proof (only
   * when the new disk had been switched in), the new disk removed, the node uncordoned. A
   * rollback that fails leaves the worker `rollback_failed` with both reasons.
   */
  private async rollback(reason: string): Promise<void> {
    const st = this.w.state;
    const t0 = this.d.now();
    // A rollback finishes even when the rollout is being aborted; only a stopping process ends it.
    this.signal = this.stop;
    try {
      if (this.w.phase !== 'rolling_back') {
        // Decided once and kept: a rollback resumed after a restart still knows a reboot is due.
        st.rollback_reboot = st.switched;
        await this.mark('rolling_back', { step: 'rollback', status: 'started', detail: reason }, reason);
      }
      const old = st.old_disk;
      if (old && st.new_disk && (st.switched || (await this.diskIs(st.new_disk.iqn)))) await this.switchTo(old, st.new_disk, 'old');
      if (old && st.rollback_reboot) {
        if (!st.rollback_power_at) await this.reboot('rollback');
        await this.prove('old');
      }
      if (st.new_disk && st.new_disk_made) {
        await this.d.storage.dropDisk(this.w.worker_id, st.new_disk, this.ctx()).catch(() => 'left');
        st.new_disk_made = false;
      }
      if (st.node && st.cordoned && !st.was_unschedulable) await this.d.nodes.uncordon(st.node);
      st.cordoned = false;
      this.w.finished_at = new Date(this.d.now()).toISOString();
      await this.history('rolled_back', old, null);
      await this.mark('rolled_back', { step: 'rollback', status: 'ok', detail: `back on ${old?.iqn ?? 'its old disk'}${old?.source.name ? ` (${old.source.name})` : ''}${st.rollback_reboot ? ', proven' : ''}` }, reason);
      this.d.finished?.('rolled_back', (this.d.now() - t0) / 1000);
    } catch (err) {
      if (this.stopping()) throw err;
      const why = `${reason}; the rollback failed too: ${(err as Error).message}`;
      this.w.finished_at = new Date(this.d.now()).toISOString();
      await this.history('rollback_failed', st.old_disk, why);
      await this.mark('rollback_failed', { step: 'rollback', status: 'failed', detail: (err as Error).message }, why);
      this.d.finished?.('rollback_failed', (this.d.now() - t0) / 1000);
    }
  }

  /** The ledger's disk of the worker for that OS is this IQN now. */
  private async diskIs(iqn: string): Promise<boolean> {
    const w = await this.d.workers.get(this.db, this.w.worker_id);
    return !!w?.disks.some((x) => x.iqn === iqn);
  }
}

export type { NodeRef };
