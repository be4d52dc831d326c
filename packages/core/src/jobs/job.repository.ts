import { type Generated, type Selectable, sql, type Updateable } from 'kysely';
import { currentActor } from '../actor';
import { AppError } from '../errors';
import { autoIncrementId, isUniqueViolation, type NamedMigration, type Store } from '../store';

/** `queued` → `running` → one of `success`, `failed`, `cancelled`. */
export type JobStatus = 'queued' | 'running' | 'success' | 'failed' | 'cancelled';

export const ACTIVE_STATUSES: readonly JobStatus[] = ['queued', 'running'];
export const FINISHED_STATUSES: readonly JobStatus[] = ['success', 'failed', 'cancelled'];

export function isFinished(status: JobStatus): boolean {
  return FINISHED_STATUSES.includes(status);
}

/** One persisted job. Timestamps are ISO 8601 UTC with milliseconds. */
export interface Job {
  id: string;
  /** What the job does, namespaced by its subsystem (`kind.create_cluster`, `clusters.kubespray`). */
  kind: string;
  /** What it acts on (a cluster name…), or null. */
  subject: string | null;
  status: JobStatus;
  stage: string | null;
  /** 0–100, or null when the job does not report progress. */
  percent: number | null;
  message: string | null;
  /** The last lines of the job's output (bounded). */
  log: string[];
  input: unknown;
  result: unknown;
  error: string | null;
  /** Who started it: the request's token name, `ironlens` for ironlens itself (null: before issue 20). */
  actor: string | null;
  cancelRequested: boolean;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
}

export interface NewJob {
  id: string;
  kind: string;
  subject?: string | null;
  input?: unknown;
  message?: string | null;
  /**
   * At most one queued or running job per (kind, subject): a second insert fails with
   * `job_conflict`. Enforced by a unique index, so it holds across processes. Default is `false`.
   */
  exclusive?: boolean;
  /** The replica that will run it (see {@link JobsRepository.claim}). Default is `null` (nobody yet). */
  owner?: string | null;
  /** Until when the owner's lease holds (ISO 8601). Default is `null`: expired. */
  leaseUntil?: string | null;
  /** Who starts it. Default: the actor of the request being handled ({@link currentActor}). */
  actor?: string;
}

/** Who runs an active job and until when its lease holds; null fields: nobody / expired. */
export interface JobLease {
  owner: string | null;
  leaseUntil: string | null;
}

export interface JobPatch {
  status?: JobStatus;
  stage?: string | null;
  percent?: number | null;
  message?: string | null;
  log?: string[];
  result?: unknown;
  error?: string | null;
  startedAt?: string | null;
  finishedAt?: string | null;
}

export const jobsMigrations: NamedMigration[] = [
  {
    name: 'core-0002-jobs',
    async up(db) {
      await db.schema
        .createTable('jobs')
        .addColumn('seq', 'integer', autoIncrementId(db))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('subject', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('stage', 'text')
        .addColumn('percent', 'integer')
        .addColumn('message', 'text')
        .addColumn('log', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('input', 'text')
        .addColumn('result', 'text')
        .addColumn('error', 'text')
        .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
        // `[kind, subject]` (JSON) while an exclusive job is active, NULL otherwise: the unique
        // index lets one active job per subject exist (NULLs never collide, in SQLite or PostgreSQL).
        .addColumn('active_key', 'text', (c) => c.unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text')
        .addColumn('finished_at', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('jobs_kind_seq').on('jobs').columns(['kind', 'seq']).execute();
      await db.schema.createIndex('jobs_status').on('jobs').column('status').execute();
    },
  },
  {
    // Several replicas on one database: a job belongs to the replica that claimed it while
    // its lease (heartbeated by that replica) holds; a sweep fails the jobs whose lease ran out.
    name: 'core-0003-job-leases',
    async up(db) {
      await db.schema.alterTable('jobs').addColumn('owner', 'text').execute();
      await db.schema.alterTable('jobs').addColumn('lease_until', 'text').execute();
      await db.schema.createIndex('jobs_status_lease').on('jobs').columns(['status', 'lease_until']).execute();
    },
  },
  {
    // issue 20: who started the job (the request's token name, `ironlens` for ironlens itself).
    name: 'core-0011-actor-jobs',
    async up(db) {
      await db.schema.alterTable('jobs').addColumn('actor', 'text').execute();
    },
  },
];

const now = () => new Date().toISOString();

/** The `jobs` table as stored (`jobsMigrations`). */
export interface JobsTable {
  seq: Generated<number>;
  id: string;
  kind: string;
  subject: string | null;
  status: JobStatus;
  stage: string | null;
  percent: number | null;
  message: string | null;
  log: string;
  input: string | null;
  result: string | null;
  error: string | null;
  cancel_requested: number;
  active_key: string | null;
  owner: string | null;
  lease_until: string | null;
  actor: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}
/** The tables {@link JobsRepository} queries: a package's table interface adds them to its own. */
export interface JobsTables {
  jobs: JobsTable;
}

type JobRow = Selectable<JobsTable>;

function toJob(r: JobRow): Job {
  return {
    id: r.id,
    kind: r.kind,
    subject: r.subject ?? null,
    status: r.status,
    stage: r.stage ?? null,
    percent: r.percent ?? null,
    message: r.message ?? null,
    log: r.log ? String(r.log).split('\n') : [],
    input: r.input == null ? null : JSON.parse(r.input),
    result: r.result == null ? null : JSON.parse(r.result),
    error: r.error ?? null,
    actor: r.actor ?? null,
    cancelRequested: Number(r.cancel_requested) === 1,
    createdAt: r.created_at,
    startedAt: r.started_at ?? null,
    finishedAt: r.finished_at ?? null,
    updatedAt: r.updated_at,
  };
}

/** The only SQL for jobs. */
export class JobsRepository {
  constructor(private readonly store: Store<JobsTables>) {}

  /** True when other processes may run jobs on the same database (PostgreSQL): leases decide who runs what. */
  get shared(): boolean {
    return this.store.dialect === 'postgres';
  }

  private get db(): Store<JobsTables>['db'] {
    return this.store.db;
  }

  async create(job: NewJob): Promise<Job> {
    const ts = now();
    const subject = job.subject ?? null;
    try {
      await this.db
        .insertInto('jobs')
        .values({
          id: job.id,
          kind: job.kind,
          subject,
          status: 'queued',
          message: job.message ?? null,
          log: '',
          input: job.input === undefined ? null : JSON.stringify(job.input),
          cancel_requested: 0,
          active_key: job.exclusive ? JSON.stringify([job.kind, subject]) : null,
          owner: job.owner ?? null,
          lease_until: job.leaseUntil ?? null,
          actor: job.actor ?? currentActor(),
          created_at: ts,
          updated_at: ts,
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new AppError('job_conflict', `a ${job.kind} job for ${JSON.stringify(subject)} is already queued or running`);
      }
      throw err;
    }
    return (await this.get(job.id))!;
  }

  async get(id: string): Promise<Job | undefined> {
    const r = await this.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toJob(r) : undefined;
  }

  /** Newest first. */
  async list(q: { kind?: string; subject?: string; statuses?: readonly JobStatus[]; limit?: number } = {}): Promise<Job[]> {
    let query = this.db.selectFrom('jobs').selectAll().orderBy('seq', 'desc');
    if (q.kind !== undefined) query = query.where('kind', '=', q.kind);
    if (q.subject !== undefined) query = query.where('subject', '=', q.subject);
    if (q.statuses) query = query.where('status', 'in', [...q.statuses]);
    if (q.limit !== undefined) query = query.limit(q.limit);
    return (await query.execute()).map((r) => toJob(r));
  }

  /** Jobs in the store (every replica's), counted by kind and status. */
  async countByKindAndStatus(): Promise<Array<{ kind: string; status: JobStatus; n: number }>> {
    const rows = await this.db.selectFrom('jobs').select(['kind', 'status', sql<number>`count(*)`.as('n')]).groupBy(['kind', 'status']).execute();
    return rows.map((r) => ({ kind: r.kind, status: r.status as JobStatus, n: Number(r.n) }));
  }

  async count(q: { kind?: string; status?: JobStatus } = {}): Promise<number> {
    let query = this.db.selectFrom('jobs').select(sql<number>`count(*)`.as('n'));
    if (q.kind !== undefined) query = query.where('kind', '=', q.kind);
    if (q.status !== undefined) query = query.where('status', '=', q.status);
    const r = await query.executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /**
   * Writes the given fields. A finishing status also releases the job's exclusive slot. With
   * `owner`, only while the job is active and still that replica's (a job another replica
   * declared interrupted stays so). Returns whether a row changed.
   */
  async update(id: string, patch: JobPatch, owner?: string): Promise<boolean> {
    const values: Updateable<JobsTable> = { updated_at: now() };
    if (patch.status !== undefined) {
      values.status = patch.status;
      if (isFinished(patch.status)) {
        values.active_key = null;
        values.lease_until = null;
      }
    }
    if (patch.stage !== undefined) values.stage = patch.stage;
    if (patch.percent !== undefined) values.percent = patch.percent;
    if (patch.message !== undefined) values.message = patch.message;
    if (patch.log !== undefined) values.log = patch.log.join('\n');
    if (patch.result !== undefined) values.result = patch.result === null ? null : JSON.stringify(patch.result);
    if (patch.error !== undefined) values.error = patch.error;
    if (patch.startedAt !== undefined) values.started_at = patch.startedAt;
    if (patch.finishedAt !== undefined) values.finished_at = patch.finishedAt;
    let q = this.db.updateTable('jobs').set(values).where('id', '=', id);
    if (owner !== undefined) q = q.where('owner', '=', owner).where('status', 'in', [...ACTIVE_STATUSES]);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Who runs the job and until when (tests, diagnostics). */
  async lease(id: string): Promise<JobLease | undefined> {
    const r = await this.db.selectFrom('jobs').select(['owner', 'lease_until']).where('id', '=', id).executeTakeFirst();
    return r ? { owner: r.owner ?? null, leaseUntil: r.lease_until ?? null } : undefined;
  }

  /**
   * Takes a queued job for `owner` and marks it running, in one conditional UPDATE: only when
   * nobody holds it, `owner` already does, or the holder's lease ran out. Of replicas
   * claiming at once, exactly one gets `true`.
   */
  async claim(id: string, owner: string, leaseUntil: string): Promise<boolean> {
    const ts = now();
    const r = await this.db
      .updateTable('jobs')
      .set({ status: 'running', started_at: ts, owner, lease_until: leaseUntil, updated_at: ts })
      .where('id', '=', id)
      .where('status', '=', 'queued')
      .where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '=', owner), eb('lease_until', 'is', null), eb('lease_until', '<', ts)]))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * Extends the lease of `owner`'s active jobs among `ids`; returns the ids it still holds
   * (a job missing from the answer was finished or declared interrupted by another replica).
   */
  async renew(owner: string, ids: string[], leaseUntil: string): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .updateTable('jobs')
      .set({ lease_until: leaseUntil })
      .where('owner', '=', owner)
      .where('id', 'in', ids)
      .where('status', 'in', [...ACTIVE_STATUSES])
      .returning('id')
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Fails as `error` the active jobs whose lease ran out (or that never had one): their
   * replica stopped heartbeating. Live jobs of other replicas are not touched. Returns how
   * many were marked.
   */
  async failExpired(error: string, kinds?: readonly string[]): Promise<number> {
    const ts = now();
    let q = this.db
      .updateTable('jobs')
      .set({ status: 'failed', error, message: error, active_key: null, lease_until: null, finished_at: ts, updated_at: ts })
      .where('status', 'in', [...ACTIVE_STATUSES])
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', ts)]));
    if (kinds !== undefined) {
      if (kinds.length === 0) return 0;
      q = q.where('kind', 'in', [...kinds]);
    }
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Flags an active job for cancellation. False when it is unknown or already finished. */
  async requestCancel(id: string): Promise<boolean> {
    const r = await this.db
      .updateTable('jobs')
      .set({ cancel_requested: 1, updated_at: now() })
      .where('id', '=', id)
      .where('status', 'in', [...ACTIVE_STATUSES])
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async isCancelRequested(id: string): Promise<boolean> {
    const r = await this.db.selectFrom('jobs').select('cancel_requested').where('id', '=', id).executeTakeFirst();
    return Number(r?.cancel_requested ?? 0) === 1;
  }

  /**
   * Marks every queued or running job as failed: called at start, when no job of a
   * previous process can still be running. Returns how many were marked.
   */
  async markInterrupted(error: string, kind?: string): Promise<number> {
    const ts = now();
    let q = this.db
      .updateTable('jobs')
      .set({ status: 'failed', error, message: error, active_key: null, lease_until: null, finished_at: ts, updated_at: ts })
      .where('status', 'in', [...ACTIVE_STATUSES]);
    if (kind !== undefined) q = q.where('kind', '=', kind);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Deletes the oldest finished jobs of `kind` so that at most `keep` jobs of it remain. */
  async prune(kind: string, keep: number): Promise<number> {
    const total = await this.count({ kind });
    if (total <= keep) return 0;
    const victims = await this.db
      .selectFrom('jobs')
      .select('seq')
      .where('kind', '=', kind)
      .where('status', 'in', [...FINISHED_STATUSES])
      .orderBy('seq', 'asc')
      .limit(total - keep)
      .execute();
    if (victims.length === 0) return 0;
    const r = await this.db
      .deleteFrom('jobs')
      .where(
        'seq',
        'in',
        victims.map((v) => v.seq),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
