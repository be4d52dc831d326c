import type { Selectable } from 'kysely';
import type { ImageHistoryEntry, RolloutPhase, RolloutState, RolloutStep } from '../api/rollout.schemas';
import type { Disk } from '../domain/types';
import type { MetalDb, RolloutsTable, RolloutWorkersTable, WorkerImagesTable } from './tables';

/** A rollout's timeouts, kept as JSON (`options`). */
export interface RolloutOptions {
  boot_timeout_s: number;
  drain_timeout_s: number;
  pool_leave_s: number;
}

export interface RolloutRecord {
  seq: number;
  id: string;
  state: RolloutState;
  reason: string | null;
  master: string;
  max_unavailable: string;
  batch_size: number;
  options: RolloutOptions;
  current_batch: number | null;
  requested: 'pause' | 'abort' | null;
  job_id: string | null;
  actor: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

/** What the rollout made and learnt for one worker, so a resumed run goes on where the last stopped. */
export interface RolloutWorkerState {
  /** The bound device when the worker started. */
  mac: string | null;
  /** Power through its BMC, or a reboot by hand (no BMC). */
  power: 'bmc' | 'manual';
  /** The Kubernetes node it is (looked up once, at the drain); `null`: none. */
  node: { cluster_id: string; name: string } | null;
  /** The node was cordoned before the rollout: it stays cordoned after. */
  was_unschedulable: boolean;
  /** The rollout cordoned the node (so its rollback uncordons it). */
  cordoned: boolean;
  /** The system disk before (the rollback). */
  old_disk: Disk | null;
  /** The new system disk: planned (its IQN and file fixed) before it is made, so a retry removes a half-made one. */
  new_disk: Disk | null;
  new_disk_made: boolean;
  /** The ledger's default disk is the new one. */
  switched: boolean;
  /** When the power-cycle into the new image (or the rollback's) was asked. */
  power_at: string | null;
  rollback_power_at: string | null;
  /** The rollback must reboot the worker (the new disk had been switched in when it began). */
  rollback_reboot: boolean;
  /**
   * The timestamp (`report_ts`) of the worker's last accepted host report when the power-cycle
   * was asked: only a later report can prove the boot (accepted timestamps only grow).
   */
  report_ts_before: number | null;
  rollback_report_ts_before: number | null;
}

export const EMPTY_WORKER_STATE: RolloutWorkerState = {
  mac: null,
  power: 'manual',
  node: null,
  was_unschedulable: false,
  cordoned: false,
  old_disk: null,
  new_disk: null,
  new_disk_made: false,
  switched: false,
  power_at: null,
  rollback_power_at: null,
  rollback_reboot: false,
  report_ts_before: null,
  rollback_report_ts_before: null,
};

export interface RolloutWorkerRecord {
  rollout_id: string;
  worker_id: string;
  batch: number;
  position: number;
  phase: RolloutPhase;
  reason: string | null;
  state: RolloutWorkerState;
  steps: RolloutStep[];
  started_at: string | null;
  finished_at: string | null;
}

/** Phases a worker does not leave: it is done, or back on its old image (or its rollback failed). */
export const FINAL_PHASES: readonly RolloutPhase[] = ['done', 'rolled_back', 'rollback_failed'];
/** Rollout states in which a rollout holds its workers (another rollout may not take them). */
export const ACTIVE_ROLLOUT_STATES: readonly RolloutState[] = ['running', 'pausing', 'paused', 'aborting'];
/** Steps kept per worker (the oldest go first). */
const MAX_STEPS = 60;

const toRollout = (r: Selectable<RolloutsTable>): RolloutRecord => ({
  seq: Number(r.seq),
  id: r.id,
  state: r.state as RolloutState,
  reason: r.reason,
  master: r.master,
  max_unavailable: r.max_unavailable,
  batch_size: Number(r.batch_size),
  options: JSON.parse(r.options) as RolloutOptions,
  current_batch: r.current_batch === null ? null : Number(r.current_batch),
  requested: (r.requested as RolloutRecord['requested']) ?? null,
  job_id: r.job_id,
  actor: r.actor,
  created_at: r.created_at,
  updated_at: r.updated_at,
  finished_at: r.finished_at,
});

const toWorker = (r: RolloutWorkersTable): RolloutWorkerRecord => ({
  rollout_id: r.rollout_id,
  worker_id: r.worker_id,
  batch: Number(r.batch),
  position: Number(r.position),
  phase: r.phase as RolloutPhase,
  reason: r.reason,
  state: { ...EMPTY_WORKER_STATE, ...(JSON.parse(r.state) as Partial<RolloutWorkerState>) },
  steps: JSON.parse(r.steps) as RolloutStep[],
  started_at: r.started_at,
  finished_at: r.finished_at,
});

const toImage = (r: Selectable<WorkerImagesTable>): ImageHistoryEntry => ({
  at: r.at,
  actor: r.actor,
  master: r.master,
  os: r.os,
  agent: r.agent,
  iqn: r.iqn,
  rollout_id: r.rollout_id,
  outcome: r.outcome as ImageHistoryEntry['outcome'],
  detail: r.detail,
});

/** The only SQL of rollouts, their workers and the workers' image history (issue 31). */
export class RolloutRepository {
  async insert(db: MetalDb, r: Omit<RolloutRecord, 'seq'>, workers: Array<Pick<RolloutWorkerRecord, 'worker_id' | 'batch' | 'position'>>): Promise<RolloutRecord> {
    await db
      .insertInto('rollouts')
      .values({
        id: r.id,
        state: r.state,
        reason: r.reason,
        master: r.master,
        max_unavailable: r.max_unavailable,
        batch_size: r.batch_size,
        options: JSON.stringify(r.options),
        current_batch: r.current_batch,
        requested: r.requested,
        job_id: r.job_id,
        actor: r.actor,
        created_at: r.created_at,
        updated_at: r.updated_at,
        finished_at: r.finished_at,
      })
      .execute();
    // Inserted in chunks: a 10,000-worker rollout stays under every dialect's parameter limit.
    for (let i = 0; i < workers.length; i += 500) {
      await db
        .insertInto('rollout_workers')
        .values(
          workers.slice(i, i + 500).map((w) => ({
            rollout_id: r.id,
            worker_id: w.worker_id,
            batch: w.batch,
            position: w.position,
            phase: 'queued',
            reason: null,
            state: JSON.stringify(EMPTY_WORKER_STATE),
            steps: '[]',
            started_at: null,
            finished_at: null,
          })),
        )
        .execute();
    }
    return (await this.get(db, r.id))!;
  }

  async get(db: MetalDb, id: string): Promise<RolloutRecord | null> {
    const r = await db.selectFrom('rollouts').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toRollout(r) : null;
  }

  /** Newest first. */
  async list(db: MetalDb, limit = 200): Promise<RolloutRecord[]> {
    const rows = await db.selectFrom('rollouts').selectAll().orderBy('seq', 'desc').limit(limit).execute();
    return rows.map(toRollout);
  }

  async inStates(db: MetalDb, states: readonly RolloutState[]): Promise<RolloutRecord[]> {
    const rows = await db.selectFrom('rollouts').selectAll().where('state', 'in', [...states]).orderBy('seq').execute();
    return rows.map(toRollout);
  }

  async update(db: MetalDb, id: string, patch: Partial<Pick<RolloutRecord, 'state' | 'reason' | 'current_batch' | 'requested' | 'job_id' | 'finished_at'>>): Promise<void> {
    await db
      .updateTable('rollouts')
      .set({ ...patch, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .execute();
  }

  async workers(db: MetalDb, rolloutId: string): Promise<RolloutWorkerRecord[]> {
    const rows = await db.selectFrom('rollout_workers').selectAll().where('rollout_id', '=', rolloutId).orderBy('position').execute();
    return rows.map(toWorker);
  }

  async worker(db: MetalDb, rolloutId: string, workerId: string): Promise<RolloutWorkerRecord | null> {
    const r = await db.selectFrom('rollout_workers').selectAll().where('rollout_id', '=', rolloutId).where('worker_id', '=', workerId).executeTakeFirst();
    return r ? toWorker(r) : null;
  }

  /** Counts of each phase per rollout (the list's `counts`), for these rollouts. */
  async phaseCounts(db: MetalDb, ids: string[]): Promise<Map<string, Map<string, number>>> {
    const out = new Map<string, Map<string, number>>();
    if (ids.length === 0) return out;
    const rows = await db
      .selectFrom('rollout_workers')
      .select((eb) => ['rollout_id', 'phase', eb.fn.countAll<number>().as('n')])
      .where('rollout_id', 'in', ids)
      .groupBy(['rollout_id', 'phase'])
      .execute();
    for (const r of rows) {
      const m = out.get(r.rollout_id) ?? new Map<string, number>();
      m.set(r.phase, Number(r.n));
      out.set(r.rollout_id, m);
    }
    return out;
  }

  /** The workers of these ids that an active rollout holds, with that rollout's id. */
  async heldBy(db: MetalDb, workerIds: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (let i = 0; i < workerIds.length; i += 500) {
      const rows = await db
        .selectFrom('rollout_workers')
        .innerJoin('rollouts', 'rollouts.id', 'rollout_workers.rollout_id')
        .select(['rollout_workers.worker_id as worker_id', 'rollouts.id as rollout_id'])
        .where('rollout_workers.worker_id', 'in', workerIds.slice(i, i + 500))
        .where('rollouts.state', 'in', [...ACTIVE_ROLLOUT_STATES])
        .execute();
      for (const r of rows) out.set(r.worker_id, r.rollout_id);
    }
    return out;
  }

  /** Writes a worker's phase, state and steps; a new step is appended (the oldest dropped past 60). */
  async putWorker(db: MetalDb, w: RolloutWorkerRecord, step?: RolloutStep): Promise<void> {
    if (step) {
      w.steps.push(step);
      if (w.steps.length > MAX_STEPS) w.steps.splice(0, w.steps.length - MAX_STEPS);
    }
    await db
      .updateTable('rollout_workers')
      .set({ phase: w.phase, reason: w.reason, state: JSON.stringify(w.state), steps: JSON.stringify(w.steps), started_at: w.started_at, finished_at: w.finished_at })
      .where('rollout_id', '=', w.rollout_id)
      .where('worker_id', '=', w.worker_id)
      .execute();
  }

  /** Puts workers back in the queue (resume with `retry_failed`): phase `queued`, state cleared, steps kept. */
  async requeue(db: MetalDb, rolloutId: string, workerIds: string[]): Promise<void> {
    if (workerIds.length === 0) return;
    await db
      .updateTable('rollout_workers')
      .set({ phase: 'queued', reason: null, state: JSON.stringify(EMPTY_WORKER_STATE), finished_at: null })
      .where('rollout_id', '=', rolloutId)
      .where('worker_id', 'in', workerIds)
      .execute();
  }

  // ---- image history ----------------------------------------------------------------------------

  async addImage(db: MetalDb, workerId: string, e: ImageHistoryEntry): Promise<void> {
    await db.insertInto('worker_images').values({ worker_id: workerId, ...e }).execute();
  }

  /** Newest first. */
  async images(db: MetalDb, workerId: string, limit = 100): Promise<ImageHistoryEntry[]> {
    const rows = await db.selectFrom('worker_images').selectAll().where('worker_id', '=', workerId).orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toImage);
  }

  /** A deleted worker's history goes with it (a new worker of that id starts afresh). */
  async deleteImages(db: MetalDb, workerId?: string): Promise<void> {
    let q = db.deleteFrom('worker_images');
    if (workerId !== undefined) q = q.where('worker_id', '=', workerId);
    await q.execute();
  }
}
