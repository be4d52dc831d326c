import { randomBytes } from 'node:crypto';
import { AppError, currentActor, echo, type ErrorCode, isFinished, type JobContext, type JobRunner, type OperationsLog, runAsActor } from '@ironlens/core';
import type { ClusterNodes } from '../adapters/cluster-nodes';
import type { ImageHistoryEntry, RolloutCreateRequest, RolloutList, RolloutResumeRequest, RolloutSummary, RolloutView, RolloutWorkerView } from '../api/rollout.schemas';
import { isFileName, requireWorkerId } from '../domain/identifiers';
import type { Disk, WorkerRecord } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import type { HostReportRepository } from '../repositories/host-report.repository';
import { FINAL_PHASES, type RolloutRecord, type RolloutRepository, type RolloutWorkerRecord } from '../repositories/rollout.repository';
import type { MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import type { HostReportService } from './host-report.service';
import type { LedgerWriter } from './ledger-writer.service';
import type { PowerService } from './power.service';
import { wakeKeys, WorkerRollout, type WorkerRolloutDeps } from './rollout.worker';
import type { StorageService } from './storage.service';
import type { Wakeups } from './wakeups';

/** A rollout error of the catalog, its code in the answer too (`{"detail", "code"}`, as the power routes answer). */
function rolloutError(code: ErrorCode, message: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError(code, message, { code, ...extra });
}

/** The job kind of a rollout's runs on the shared runner. */
export const ROLLOUT_JOB = 'metal.rollout';

/** The message a rollout gets when the process stopped while it ran. */
export const ROLLOUT_INTERRUPTED = 'interrupted: the process stopped while the rollout ran; resume it (workers go on from the step they reached) or abort it';

/** What the rollout metrics are told. */
export interface RolloutObserver {
  worker(outcome: 'done' | 'rolled_back' | 'rollback_failed', seconds: number): void;
  rollout(outcome: 'succeeded' | 'aborted' | 'paused', seconds: number): void;
}

export interface RolloutServiceDeps extends Omit<WorkerRolloutDeps, 'finished'> {
  runner: JobRunner;
  observer?: RolloutObserver;
}

/** The default disk of a worker: its `default_os` disk, else its first. */
export function defaultDisk(w: WorkerRecord): Disk | undefined {
  return (w.default_os && w.disks.find((d) => d.os === w.default_os)) || w.disks[0];
}

/**
 * The batch size for `max_unavailable`: a count (at most the number of workers), or a percent of
 * the workers rounded down, at least 1.
 */
export function batchSize(maxUnavailable: number | string, total: number): number {
  if (total <= 0) return 0;
  const text = String(maxUnavailable).trim();
  const pct = /^(\d{1,3})%$/.exec(text);
  if (pct) {
    const p = Number(pct[1]);
    if (p < 1 || p > 100) throw rolloutError('rollout_invalid', `max_unavailable must be 1% to 100%, not ${echo(maxUnavailable)}`);
    return Math.max(1, Math.floor((total * p) / 100));
  }
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1) throw rolloutError('rollout_invalid', `max_unavailable must be a count (1 or more) or a percent (10%), not ${echo(maxUnavailable)}`);
  return Math.min(Number(text), total);
}

/**
 * Rollouts (issue 31): a new master rolled across running workers, batch by batch, as a durable
 * job on the shared runner (kind `metal.rollout`). The rollout's own rows hold every worker's
 * phase and what was made for it, so a run that stops (a restart, a pause) is resumed where it
 * stopped; a run is one job, and a rollout may take several (resume). Pause and abort are asked
 * through the store (`requested`), so whichever replica runs it sees them; this process also
 * wakes its own run at once.
 *
 * Batches: the workers in the order given (a selector: by worker id), `batch_size` at a time;
 * each worker of a batch goes through {@link WorkerRollout} at the same time (the BMC scheduler
 * spaces the power-ons), and the next batch starts only when every worker of this one is done.
 * A worker that failed was rolled back; at the end of its batch the rollout pauses with its
 * reason. Abort rolls back the workers of the batch in flight (and any left half-way by an
 * interrupted run) and stops; workers already done keep the new image.
 */
export class RolloutService {
  private readonly controls = new Map<string, AbortController>();

  constructor(private readonly d: RolloutServiceDeps) {}

  private get db() {
    return this.d.store.db;
  }

  /** The runner the rollouts' runs are jobs of. */
  get jobRunner(): JobRunner {
    return this.d.runner;
  }

  // ---- the API ----------------------------------------------------------------------------------

  async create(req: RolloutCreateRequest): Promise<RolloutView> {
    const master = typeof req.master === 'string' ? req.master.trim() : '';
    if (!isFileName(master)) throw rolloutError('rollout_invalid', `master must be a master image's file name on the agent, not ${echo(req.master)}`);
    const picked = await this.pick(req);
    const candidates = picked.filter((w) => defaultDisk(w)?.source.name !== master);
    if (candidates.length === 0) throw rolloutError('rollout_nothing_to_do', `every worker picked (${picked.length}) already boots ${master}`);
    const bindings = await this.d.devices.bindings(this.db);
    const unready = candidates.filter((w) => !defaultDisk(w) || !bindings.get(w.worker_id));
    if (unready.length) {
      const w = unready[0];
      throw rolloutError('rollout_worker_unready', `worker ${w.worker_id} has ${defaultDisk(w) ? 'no bound device' : 'no system disk'}: a rollout replaces the system disk of a bound worker${unready.length > 1 ? ` (and ${unready.length - 1} more)` : ''}`, {
        workers: unready.slice(0, 50).map((x) => x.worker_id),
      });
    }
    await this.requireMaster(master, candidates);
    const size = batchSize(req.max_unavailable, candidates.length);
    const now = new Date(this.d.now()).toISOString();
    const id = `ro-${randomBytes(6).toString('hex')}`;
    const options = { boot_timeout_s: req.boot_timeout_s ?? 900, drain_timeout_s: req.drain_timeout_s ?? 600, pool_leave_s: req.pool_leave_s ?? 10 };
    const actor = currentActor();
    await this.d.store.transaction(async (trx) => {
      const held = await this.d.repo.heldBy(
        trx,
        candidates.map((w) => w.worker_id),
      );
      if (held.size) {
        const [w, r] = [...held][0];
        throw rolloutError('rollout_worker_busy', `worker ${w} is in rollout ${r}${held.size > 1 ? ` (and ${held.size - 1} more workers are in one)` : ''}`, { rollout_id: r });
      }
      await this.d.repo.insert(
        trx,
        { id, state: 'running', reason: null, master, max_unavailable: String(req.max_unavailable), batch_size: size, options, current_batch: 0, requested: null, job_id: null, actor, created_at: now, updated_at: now, finished_at: null },
        candidates.map((w, i) => ({ worker_id: w.worker_id, batch: Math.floor(i / size), position: i })),
      );
      await this.d.ops.append({ op: 'rollout.create', rollout_id: id, master, workers: candidates.length, batch_size: size, max_unavailable: String(req.max_unavailable), ...options }, trx);
    });
    await this.startRun(id);
    return this.get(id);
  }

  /** The workers a request names: its ids (in its order), or what the selector picks (by id). */
  private async pick(req: RolloutCreateRequest): Promise<WorkerRecord[]> {
    if (!!req.workers === !!req.selector) throw rolloutError('rollout_invalid', 'give either workers (a list of worker ids) or selector, not both nor neither');
    const all = await this.d.workers.list(this.db);
    if (req.workers) {
      const byId = new Map(all.map((w) => [w.worker_id, w]));
      const seen = new Set<string>();
      const out: WorkerRecord[] = [];
      for (const raw of req.workers) {
        const id = requireWorkerId(raw);
        if (seen.has(id)) continue;
        seen.add(id);
        const w = byId.get(id);
        if (!w) throw rolloutError('worker_not_found', `worker not found: ${id}`);
        out.push(w);
      }
      return out;
    }
    const sel = req.selector ?? {};
    if (sel.prefix === undefined && sel.cluster_id === undefined && sel.master === undefined) throw rolloutError('rollout_invalid', 'the selector needs at least one of prefix, cluster_id, master');
    const clusters = sel.cluster_id !== undefined ? await this.d.hosts.clusters(this.db) : new Map<string, string>();
    const out = all.filter(
      (w) =>
        (sel.prefix === undefined || w.worker_id.startsWith(sel.prefix.trim().toLowerCase())) &&
        (sel.cluster_id === undefined || clusters.get(w.worker_id) === sel.cluster_id) &&
        (sel.master === undefined || defaultDisk(w)?.source.name === sel.master),
    );
    if (out.length === 0) throw rolloutError('rollout_nothing_to_do', 'the selector picks no worker');
    return out;
  }

  /** The master must be on the agent of each worker's disk (the new disk is cloned beside the old one). */
  private async requireMaster(master: string, workers: WorkerRecord[]): Promise<void> {
    const byAgent = new Map<string, string[]>();
    for (const w of workers) {
      const agent = defaultDisk(w)!.agent;
      byAgent.set(agent, [...(byAgent.get(agent) ?? []), w.worker_id]);
    }
    for (const [agent, ids] of byAgent) {
      const names = await this.d.storage.mastersOn(agent);
      if (!names.includes(master)) {
        throw rolloutError('rollout_master_missing', `master ${master} is not on agent ${agent} (which holds the disks of ${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}); GET /masters lists what each agent has`, { agent });
      }
    }
  }

  async list(): Promise<RolloutList> {
    const rows = await Promise.all((await this.d.repo.list(this.db)).map((r) => this.settle(r)));
    const counts = await this.d.repo.phaseCounts(
      this.db,
      rows.map((r) => r.id),
    );
    return { rollouts: rows.map((r) => summary(r, counts.get(r.id) ?? new Map())) };
  }

  async get(id: string): Promise<RolloutView> {
    const r = await this.settle(await this.require(id));
    const workers = await this.d.repo.workers(this.db, r.id);
    const phases = new Map<string, number>();
    for (const w of workers) phases.set(w.phase, (phases.get(w.phase) ?? 0) + 1);
    const batches: RolloutView['batches'] = [];
    for (const w of workers) {
      const b = batches[w.batch] ?? { index: w.batch, state: 'pending' as const, workers: [] };
      b.workers.push(w.worker_id);
      batches[w.batch] = b;
    }
    for (const b of batches) {
      const ws = workers.filter((w) => w.batch === b.index);
      if (ws.every((w) => w.phase === 'done')) b.state = 'done';
      else if (ws.some((w) => w.phase === 'rolled_back' || w.phase === 'rollback_failed') && ws.every((w) => FINAL_PHASES.includes(w.phase))) b.state = 'failed';
      else if (ws.some((w) => w.phase !== 'queued')) b.state = 'running';
    }
    return { ...summary(r, phases), batches, workers: workers.map(workerView) };
  }

  private async require(id: string): Promise<RolloutRecord> {
    const r = typeof id === 'string' && id.length <= 64 ? await this.d.repo.get(this.db, id) : null;
    if (!r) throw rolloutError('rollout_not_found', `rollout not found: ${echo(id)}`);
    return r;
  }

  /**
   * A rollout the store says runs, whose job is over (its process stopped; another replica's
   * sweep failed the job), is paused as interrupted, and can be resumed.
   */
  private async settle(r: RolloutRecord, atStart = false): Promise<RolloutRecord> {
    if (!['running', 'pausing', 'aborting'].includes(r.state)) return r;
    // No job yet: a run is being started (create, resume); at start, one that never got its job.
    if (!r.job_id && !atStart) return r;
    const job = r.job_id ? await this.d.runner.repository.get(r.job_id) : undefined;
    if (job && !isFinished(job.status)) return r;
    const reason = r.state === 'aborting' ? `${ROLLOUT_INTERRUPTED} (it was being aborted: abort it again)` : ROLLOUT_INTERRUPTED;
    await this.d.store.transaction(async (trx) => {
      await this.d.repo.update(trx, r.id, { state: 'paused', reason, requested: null });
      await this.d.ops.append({ op: 'rollout.interrupted', status: 'failed', rollout_id: r.id, job_id: r.job_id, detail: job?.error ?? 'no job' }, trx);
    });
    return { ...r, state: 'paused', reason, requested: null };
  }

  /**
   * At start: the runner's jobs of rollouts left running by a stopped process are failed as
   * interrupted (alone on SQLite: all of them; replicas: those whose lease ran out), and those
   * rollouts are paused as interrupted, to be resumed.
   */
  async start(): Promise<void> {
    await this.d.runner.recover(ROLLOUT_JOB);
    await this.recover();
  }

  /** Rollouts whose run is over without having ended them are paused as interrupted. */
  async recover(): Promise<number> {
    let n = 0;
    for (const r of await this.d.repo.inStates(this.db, ['running', 'pausing', 'aborting'])) {
      const after = await this.settle(r, true);
      if (after.state !== r.state) n++;
    }
    return n;
  }

  async pause(id: string): Promise<RolloutView> {
    const r = await this.settle(await this.require(id));
    if (r.state !== 'running') throw rolloutError('rollout_state_invalid', `rollout ${r.id} is ${r.state}: only a running rollout can be paused`, { state: r.state });
    await this.d.store.transaction(async (trx) => {
      await this.d.repo.update(trx, r.id, { state: 'pausing', requested: 'pause' });
      await this.d.ops.append({ op: 'rollout.pause', rollout_id: r.id, batch: r.current_batch }, trx);
    });
    this.d.wakeups.notify(wakeKeys.rollout(r.id));
    return this.get(r.id);
  }

  async resume(id: string, req: RolloutResumeRequest = {}): Promise<RolloutView> {
    const r = await this.settle(await this.require(id));
    if (r.state !== 'paused') throw rolloutError('rollout_state_invalid', `rollout ${r.id} is ${r.state}: only a paused rollout can be resumed`, { state: r.state });
    const retry = req.retry_failed !== false;
    await this.d.store.transaction(async (trx) => {
      const workers = await this.d.repo.workers(trx, r.id);
      const again = retry ? workers.filter((w) => w.phase === 'rolled_back' && w.batch <= (r.current_batch ?? 0)).map((w) => w.worker_id) : [];
      await this.d.repo.requeue(trx, r.id, again);
      await this.d.repo.update(trx, r.id, { state: 'running', reason: null, requested: null, job_id: null });
      await this.d.ops.append({ op: 'rollout.resume', rollout_id: r.id, batch: r.current_batch, retried: again }, trx);
    });
    await this.startRun(r.id);
    return this.get(r.id);
  }

  async abort(id: string): Promise<RolloutView> {
    const r = await this.settle(await this.require(id));
    if (!['running', 'pausing', 'paused'].includes(r.state)) throw rolloutError('rollout_state_invalid', `rollout ${r.id} is ${r.state}: it cannot be aborted`, { state: r.state });
    await this.d.store.transaction(async (trx) => {
      await this.d.repo.update(trx, r.id, { state: 'aborting', requested: 'abort', ...(r.state === 'paused' ? { job_id: null } : {}) });
      await this.d.ops.append({ op: 'rollout.abort', rollout_id: r.id, batch: r.current_batch }, trx);
    });
    this.controls.get(r.id)?.abort(new Error('aborted'));
    this.d.wakeups.notify(wakeKeys.rollout(r.id));
    // A paused rollout has no run: one is started to roll back what a stopped run left half-way.
    if (r.state === 'paused') await this.startRun(r.id);
    return this.get(r.id);
  }

  /** A worker's image history, newest first (`GET /workers/{id}`). */
  images(workerId: string): Promise<ImageHistoryEntry[]> {
    return this.d.repo.images(this.db, workerId);
  }

  // ---- the run ----------------------------------------------------------------------------------

  private async startRun(id: string): Promise<void> {
    const actor = currentActor();
    const job = await this.d.runner.start({ kind: ROLLOUT_JOB, subject: id, exclusive: true, message: `rollout ${id}` }, (ctx) => runAsActor(actor, () => this.run(id, ctx)));
    await this.d.repo.update(this.db, id, { job_id: job.id });
  }

  /** Waits until the run in this process ends (tests, the benchmark). */
  async settled(id: string): Promise<RolloutView> {
    const r = await this.require(id);
    if (r.job_id) await this.d.runner.wait(r.job_id);
    return this.get(id);
  }

  private async run(id: string, ctx: JobContext): Promise<{ message: string }> {
    const control = new AbortController();
    this.controls.set(id, control);
    const t0 = this.d.now();
    // The store is where a pause or an abort asked on another replica arrives.
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const r = await this.d.repo.get(this.db, id).catch(() => null);
        if (r?.requested === 'abort') control.abort(new Error('aborted'));
        await this.d.wakeups.wait([wakeKeys.rollout(id)], this.d.pollMs, ctx.signal).catch(() => {});
        if (ctx.signal.aborted) return;
      }
    })();
    try {
      const r = await this.require(id);
      const workers = await this.d.repo.workers(this.db, id);
      const last = Math.max(...workers.map((w) => w.batch));
      if (r.requested === 'abort' || r.state === 'aborting') return await this.finishAbort(r, workers, ctx);
      for (let b = r.current_batch ?? 0; b <= last; b++) {
        const now = await this.require(id);
        if (now.requested === 'pause') {
          await this.stopAs(now, 'paused', `paused by request before batch ${b}`, t0);
          return { message: `paused before batch ${b}` };
        }
        if (now.requested === 'abort') return await this.finishAbort(now, await this.d.repo.workers(this.db, id), ctx);
        if (now.current_batch !== b) await this.d.repo.update(this.db, id, { current_batch: b });
        ctx.stage(`batch ${b + 1} of ${last + 1}`, Math.round((b / (last + 1)) * 100));
        const batch = (await this.d.repo.workers(this.db, id)).filter((w) => w.batch === b);
        // The workers this run takes: one a resume left rolled back (retry_failed: false) is not its failure.
        const taken = batch.filter((w) => !FINAL_PHASES.includes(w.phase));
        await Promise.all(taken.map((w) => this.worker(now, w, control.signal, ctx.signal)));
        if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('stopped');
        const after = await this.require(id);
        if (control.signal.aborted || after.requested === 'abort') return await this.finishAbort(after, await this.d.repo.workers(this.db, id), ctx);
        const ids = new Set(taken.map((w) => w.worker_id));
        const failed = (await this.d.repo.workers(this.db, id)).filter((w) => ids.has(w.worker_id) && (w.phase === 'rolled_back' || w.phase === 'rollback_failed'));
        if (failed.length) {
          const reason = `batch ${b + 1}: ${failed.map((w) => `${w.worker_id} ${w.phase === 'rollback_failed' ? 'could not be rolled back' : 'was rolled back'}: ${w.reason}`).join('; ')}`;
          await this.stopAs(after, 'paused', reason, t0);
          return { message: reason };
        }
      }
      const end = await this.require(id);
      await this.stopAs(end, 'succeeded', null, t0);
      return { message: `${workers.length} workers on ${r.master}` };
    } finally {
      watching = false;
      this.d.wakeups.notify(wakeKeys.rollout(id));
      await watch;
      this.controls.delete(id);
    }
  }

  private worker(r: RolloutRecord, w: RolloutWorkerRecord, abort: AbortSignal, stop: AbortSignal): Promise<void> {
    const deps: WorkerRolloutDeps = { ...this.d, finished: (o, s) => this.d.observer?.worker(o, s) };
    return new WorkerRollout(deps, r, w, abort, stop).run();
  }

  /** Abort: every worker that is not queued nor final (the batch in flight, or left half-way) is rolled back. */
  private async finishAbort(r: RolloutRecord, workers: RolloutWorkerRecord[], ctx: JobContext): Promise<{ message: string }> {
    const t0 = Date.parse(r.created_at);
    const aborted = new AbortController();
    aborted.abort(new Error('aborted'));
    const inFlight = workers.filter((w) => w.phase !== 'queued' && !FINAL_PHASES.includes(w.phase));
    ctx.stage(`aborting: rolling back ${inFlight.length} worker(s)`);
    await Promise.all(inFlight.map((w) => this.worker(r, w, aborted.signal, ctx.signal)));
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('stopped');
    await this.stopAs(await this.require(r.id), 'aborted', `aborted by ${currentActor()}`, t0);
    return { message: 'aborted' };
  }

  private async stopAs(r: RolloutRecord, state: 'paused' | 'succeeded' | 'aborted', reason: string | null, t0: number): Promise<void> {
    const finished = state === 'paused' ? null : new Date(this.d.now()).toISOString();
    await this.d.store.transaction(async (trx) => {
      await this.d.repo.update(trx, r.id, { state, reason, requested: null, ...(finished ? { finished_at: finished } : {}) });
      await this.d.ops.append({ op: `rollout.${state}`, status: state === 'succeeded' ? 'ok' : state, rollout_id: r.id, batch: r.current_batch, reason }, trx);
    });
    const total = state === 'paused' ? (this.d.now() - t0) / 1000 : (this.d.now() - Date.parse(r.created_at)) / 1000;
    this.d.observer?.rollout(state, total);
  }
}

function summary(r: RolloutRecord, phases: Map<string, number>): RolloutSummary {
  const n = (p: string) => phases.get(p) ?? 0;
  const total = [...phases.values()].reduce((a, b) => a + b, 0);
  return {
    id: r.id,
    state: r.state,
    reason: r.reason,
    master: r.master,
    max_unavailable: r.max_unavailable,
    batch_size: r.batch_size,
    boot_timeout_s: r.options.boot_timeout_s,
    drain_timeout_s: r.options.drain_timeout_s,
    pool_leave_s: r.options.pool_leave_s,
    current_batch: r.current_batch,
    counts: { total, done: n('done'), rolled_back: n('rolled_back') + n('rollback_failed'), queued: n('queued'), in_flight: total - n('done') - n('rolled_back') - n('rollback_failed') - n('queued') },
    job_id: r.job_id,
    actor: r.actor,
    created_at: r.created_at,
    updated_at: r.updated_at,
    finished_at: r.finished_at,
  };
}

function workerView(w: RolloutWorkerRecord): RolloutWorkerView {
  const disk = (d: Disk | null) => (d ? { agent: d.agent, iqn: d.iqn, master: d.source.name ?? null } : null);
  return {
    worker_id: w.worker_id,
    batch: w.batch,
    phase: w.phase,
    reason: w.reason,
    node: w.state.node,
    old_disk: disk(w.state.old_disk),
    new_disk: disk(w.state.new_disk),
    power: w.state.power,
    started_at: w.started_at,
    finished_at: w.finished_at,
    steps: w.steps,
  };
}
