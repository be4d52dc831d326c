import { sql } from 'kysely';
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
];

type Db = Store['db'];

const now = () => new Date().toISOString();

interface JobRow {
  seq: number;
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
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

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
    cancelRequested: Number(r.cancel_requested) === 1,
    createdAt: r.created_at,
    startedAt: r.started_at ?? null,
    finishedAt: r.finished_at ?? null,
    updatedAt: r.updated_at,
  };
}

/** The only SQL for jobs. */
export class JobsRepository {
  constructor(private readonly store: Store) {}

  private get db(): Db {
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
    return r ? toJob(r as JobRow) : undefined;
  }

  /** Newest first. */
  async list(q: { kind?: string; subject?: string; statuses?: readonly JobStatus[]; limit?: number } = {}): Promise<Job[]> {
    let query = this.db.selectFrom('jobs').selectAll().orderBy('seq', 'desc');
    if (q.kind !== undefined) query = query.where('kind', '=', q.kind);
    if (q.subject !== undefined) query = query.where('subject', '=', q.subject);
    if (q.statuses) query = query.where('status', 'in', [...q.statuses]);
    if (q.limit !== undefined) query = query.limit(q.limit);
    return (await query.execute()).map((r) => toJob(r as JobRow));
  }

  async count(q: { kind?: string; status?: JobStatus } = {}): Promise<number> {
    let query = this.db.selectFrom('jobs').select(sql<number>`count(*)`.as('n'));
    if (q.kind !== undefined) query = query.where('kind', '=', q.kind);
    if (q.status !== undefined) query = query.where('status', '=', q.status);
    const r = await query.executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /** Writes the given fields. A finishing status also releases the job's exclusive slot. */
  async update(id: string, patch: JobPatch): Promise<void> {
    const values: Record<string, unknown> = { updated_at: now() };
    if (patch.status !== undefined) {
      values.status = patch.status;
      if (isFinished(patch.status)) values.active_key = null;
    }
    if (patch.stage !== undefined) values.stage = patch.stage;
    if (patch.percent !== undefined) values.percent = patch.percent;
    if (patch.message !== undefined) values.message = patch.message;
    if (patch.log !== undefined) values.log = patch.log.join('\n');
    if (patch.result !== undefined) values.result = patch.result === null ? null : JSON.stringify(patch.result);
    if (patch.error !== undefined) values.error = patch.error;
    if (patch.startedAt !== undefined) values.started_at = patch.startedAt;
    if (patch.finishedAt !== undefined) values.finished_at = patch.finishedAt;
    await this.db.updateTable('jobs').set(values).where('id', '=', id).execute();
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
      .set({ status: 'failed', error, message: error, active_key: null, finished_at: ts, updated_at: ts })
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
        victims.map((v) => (v as Pick<JobRow, 'seq'>).seq),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
