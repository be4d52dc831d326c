/**
 * Rollouts, image history and drift (issue 31): request and answer shapes, in TypeBox, in the
 * same style as `schemas.ts` (which re-exports this module, so `@ironlens/metal/api` has them).
 * Imports TypeBox and core's TypeBox helpers, nothing else.
 */
import { OrNull, StringEnum } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';

// ---- rollouts ---------------------------------------------------------------------------------

/** The worker ids a rollout names (at most 10,000). */
const WorkerIdList = Type.Array(Type.String({ maxLength: 63 }), { minItems: 1, maxItems: 10_000 });

/** Which workers a selector picks: every condition given must hold (AND). */
export const rolloutSelectorSchema = Type.Object(
  {
    prefix: Type.Optional(Type.String({ maxLength: 63, description: 'worker ids starting with this' })),
    cluster_id: Type.Optional(Type.String({ maxLength: 64, description: 'workers that joined this cluster (cluster_id of the worker view)' })),
    master: Type.Optional(Type.String({ maxLength: 200, description: 'workers whose default disk was cloned from this master' })),
  },
  { additionalProperties: false },
);
export type RolloutSelector = Static<typeof rolloutSelectorSchema>;

/** `POST /rollouts`. */
export const rolloutCreateBody = Type.Object(
  {
    workers: Type.Optional(WorkerIdList),
    selector: Type.Optional(rolloutSelectorSchema),
    master: Type.String({ maxLength: 200, description: 'the new master image, by its name on the agent (as disk creation takes it, e.g. `_tpl_debian_12.img`)' }),
    max_unavailable: Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.String({ pattern: '^([1-9][0-9]{0,4}|[1-9][0-9]?%|100%)$', description: 'a count, or a percent of the workers (`10%`)' })], {
      description: 'workers taken out of service at once: a count (`1`) or a percent of the rollout (`10%`, rounded down, at least 1)',
    }),
    boot_timeout_s: Type.Optional(Type.Integer({ minimum: 10, maximum: 86_400, default: 900, description: 'from the power-cycle to the host report from the new image (and node Ready)' })),
    drain_timeout_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, default: 600, description: 'how long the drain may take (evictions refused by a PodDisruptionBudget are retried until then)' })),
    pool_leave_s: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, default: 10, description: 'after a model server left its InferencePool, how long before it is evicted' })),
  },
  { additionalProperties: false },
);
export type RolloutCreateRequest = Static<typeof rolloutCreateBody>;

export const ROLLOUT_STATES = ['running', 'pausing', 'paused', 'aborting', 'aborted', 'succeeded'] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

export const ROLLOUT_PHASES = ['queued', 'draining', 'cloning', 'rebooting', 'proving', 'readmitting', 'done', 'rolling_back', 'rolled_back', 'rollback_failed'] as const;
export type RolloutPhase = (typeof ROLLOUT_PHASES)[number];

/** A disk as a rollout shows it (the worker's old or new system disk). */
export const rolloutDiskSchema = Type.Object({ agent: Type.String(), iqn: Type.String(), master: OrNull(Type.String()) });
export type RolloutDisk = Static<typeof rolloutDiskSchema>;

/** One step of one worker, as it happened. */
export const rolloutStepSchema = Type.Object({
  at: Type.String(),
  step: Type.String(),
  status: StringEnum(['started', 'ok', 'failed', 'waiting'] as const),
  detail: OrNull(Type.String()),
});
export type RolloutStep = Static<typeof rolloutStepSchema>;

export const rolloutWorkerSchema = Type.Object({
  worker_id: Type.String(),
  batch: Type.Integer({ description: 'index of its batch, from 0' }),
  phase: StringEnum(ROLLOUT_PHASES),
  reason: OrNull(Type.String({ description: 'why it was rolled back (or why its rollback failed)' })),
  node: OrNull(Type.Object({ cluster_id: Type.String(), name: Type.String() }, { description: 'the Kubernetes node it is, when it is one of a registered cluster' })),
  old_disk: OrNull(rolloutDiskSchema),
  new_disk: OrNull(rolloutDiskSchema),
  power: StringEnum(['bmc', 'manual'] as const, { description: 'bmc: power-cycled through its BMC; manual: it has none, the rollout waits for someone to reboot it' }),
  started_at: OrNull(Type.String()),
  finished_at: OrNull(Type.String()),
  steps: Type.Array(rolloutStepSchema),
});
export type RolloutWorkerView = Static<typeof rolloutWorkerSchema>;

export const rolloutBatchSchema = Type.Object({
  index: Type.Integer(),
  state: StringEnum(['pending', 'running', 'done', 'failed'] as const),
  workers: Type.Array(Type.String()),
});
export type RolloutBatchView = Static<typeof rolloutBatchSchema>;

const rolloutFields = {
  id: Type.String(),
  state: StringEnum(ROLLOUT_STATES),
  reason: OrNull(Type.String({ description: 'why it paused or stopped' })),
  master: Type.String(),
  max_unavailable: Type.String({ description: 'as asked: a count or a percent' }),
  batch_size: Type.Integer(),
  boot_timeout_s: Type.Integer(),
  drain_timeout_s: Type.Integer(),
  pool_leave_s: Type.Integer(),
  current_batch: OrNull(Type.Integer()),
  counts: Type.Object({ total: Type.Integer(), done: Type.Integer(), rolled_back: Type.Integer(), in_flight: Type.Integer(), queued: Type.Integer() }),
  job_id: OrNull(Type.String({ description: 'the job running it now (or last)' })),
  actor: OrNull(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  finished_at: OrNull(Type.String()),
};

/** A rollout in a list: without its workers' steps. */
export const rolloutSummarySchema = Type.Object(rolloutFields);
export type RolloutSummary = Static<typeof rolloutSummarySchema>;

/** `GET /rollouts/{id}`: the rollout, its batches and each worker's steps. */
export const rolloutSchema = Type.Object({ ...rolloutFields, batches: Type.Array(rolloutBatchSchema), workers: Type.Array(rolloutWorkerSchema) });
export type RolloutView = Static<typeof rolloutSchema>;

export const rolloutListSchema = Type.Object({ rollouts: Type.Array(rolloutSummarySchema) });
export type RolloutList = Static<typeof rolloutListSchema>;

export const rolloutParams = Type.Object({ rollout_id: Type.String({ maxLength: 64 }) });

/** `POST /rollouts/{id}/resume`. */
export const rolloutResumeBody = Type.Object(
  { retry_failed: Type.Optional(Type.Boolean({ default: true, description: 'workers the pause left rolled back are tried again (false: they keep their old image, and the rollout goes on)' })) },
  { additionalProperties: false },
);
export type RolloutResumeRequest = Static<typeof rolloutResumeBody>;

// ---- image history ----------------------------------------------------------------------------

export const IMAGE_OUTCOMES = ['created', 'rolled_out', 'rolled_back', 'rollback_failed'] as const;

/** One entry of a worker's image history: which master its system disk came from, when, by whom, and how it ended. */
export const imageHistoryEntrySchema = Type.Object({
  at: Type.String(),
  actor: OrNull(Type.String()),
  master: OrNull(Type.String()),
  os: Type.String(),
  agent: Type.String(),
  iqn: Type.String(),
  rollout_id: OrNull(Type.String()),
  outcome: StringEnum(IMAGE_OUTCOMES),
  detail: OrNull(Type.String()),
});
export type ImageHistoryEntry = Static<typeof imageHistoryEntrySchema>;

// ---- drift ------------------------------------------------------------------------------------

export const DRIFT_KINDS = ['hosts_file_missing', 'hosts_file_mismatch', 'target_missing', 'agent_unreachable', 'booted_other_disk', 'image_mismatch'] as const;
export type DriftKind = (typeof DRIFT_KINDS)[number];

/** One thing out of step between the ledger and reality. */
export const driftItemSchema = Type.Object({
  kind: StringEnum(DRIFT_KINDS),
  detail: Type.String(),
  expected: OrNull(Type.String()),
  actual: OrNull(Type.String()),
  fixable: Type.Boolean({ description: 'reconcile fixes it (what ironlens owns: the hosts file, the targets of the ledger); otherwise what the operator can do is in detail' }),
});
export type DriftItem = Static<typeof driftItemSchema>;

export const workerDriftSchema = Type.Object({ worker_id: Type.String(), drift: Type.Array(driftItemSchema) });
export type WorkerDrift = Static<typeof workerDriftSchema>;

/** `GET /drift`: the workers with something out of step. */
export const fleetDriftSchema = Type.Object({ checked_at: Type.String(), workers_checked: Type.Integer(), workers: Type.Array(workerDriftSchema) });
export type FleetDrift = Static<typeof fleetDriftSchema>;

/** `POST /workers/{id}/reconcile`, `POST /drift/reconcile`: what was done, and what is left. */
export const reconcileResultSchema = Type.Object({
  actions: Type.Array(Type.Object({ action: StringEnum(['hosts_file_rendered', 'agent_scanned'] as const), target: Type.String(), ok: Type.Boolean(), detail: OrNull(Type.String()) })),
  remaining: Type.Array(workerDriftSchema),
});
export type ReconcileResult = Static<typeof reconcileResultSchema>;
