import { randomBytes } from 'node:crypto';
import { type Env, envInt } from '../config/env';
import { AppError } from '../errors';
import { replicaId, replicaIdFromEnv } from '../store/replica';
import { isFinished, type Job, type JobsRepository, type JobStatus } from './job.repository';
import { Periodic } from '../timing/periodic';

/** Thrown (or used as the abort reason) when a job stops because cancellation was asked. */
export class JobCancelledError extends Error {
  constructor(message = 'cancelled by request') {
    super(message);
    this.name = 'JobCancelledError';
  }
}

/** The handle a running job uses to report and to notice cancellation. */
export interface JobContext {
  readonly id: string;
  /** Aborted when cancellation is requested (or the runner stops); pass it to commands. */
  readonly signal: AbortSignal;
  /** Sets the current stage (and percent, when given); also written to the log. */
  stage(text: string, percent?: number): void;
  /** Sets the percent only. */
  progress(percent: number): void;
  /** Appends one line to the job's bounded log tail. */
  log(line: string): void;
  /** True once cancellation was requested. */
  readonly cancelRequested: boolean;
  /** Throws `JobCancelledError` when cancellation was requested: call it between stages. */
  throwIfCancelled(): void;
  /** Writes pending stage/log updates now. */
  flush(): Promise<void>;
}

export interface JobOutcome {
  result?: unknown;
  message?: string | null;
}

export type JobHandler = (ctx: JobContext) => Promise<JobOutcome | undefined>;

export interface StartJob {
  kind: string;
  subject?: string | null;
  input?: unknown;
  /** One queued/running job per (kind, subject); a second start fails with `job_conflict`. Default is `false`. */
  exclusive?: boolean;
  /** The job's message while it runs. Default is `null`. */
  message?: string | null;
}

export interface JobRunnerOptions {
  /** Jobs kept per kind; the oldest finished ones are deleted beyond it. Default is `200` for every kind. */
  retention?: Record<string, number>;
  /** Retention for kinds not listed in `retention`. Default is `200`. */
  defaultRetention?: number;
  /** Lines kept in a job's log tail. Default is `200`. */
  logTailLines?: number;
  /** Longest line kept in the log; longer ones are cut. Default is `2000` characters. */
  logLineMax?: number;
  /** Delay that batches log writes to the store. Default is `150` ms. */
  flushDelayMs?: number;
  /** How often a running job re-reads its cancel flag (a cancel may arrive through another process). Default is `2000` ms; `0` turns it off. */
  cancelPollMs?: number;
  /** Message of a job that failed because its process stopped. */
  interruptedMessage?: string;
  /** Message of a cancelled job. Default is `cancelled by request`. */
  cancelledMessage?: string;
  /** Who this runner is in `jobs.owner`. Default is the process's {@link replicaId}. */
  owner?: string;
  /**
   * Other processes run jobs on the same database (replicas on PostgreSQL): `recover()` then
   * fails only jobs whose lease ran out, and a sweep keeps doing so every `sweepMs`. Default is
   * the repository's `shared` (true on PostgreSQL, false on SQLite, where `recover()` fails
   * every job left active, as no other process can be running it).
   */
  shared?: boolean;
  /** How long a claim holds without a heartbeat (`IRONLENS_JOB_LEASE_MS`). Default is `15000` ms. */
  leaseMs?: number;
  /** How often the leases of the jobs running here are extended (`IRONLENS_JOB_HEARTBEAT_MS`). Default is `5000` ms. */
  heartbeatMs?: number;
  /** Shared mode: how often expired leases are looked for. Default is `heartbeatMs`. */
  sweepMs?: number;
  /** Told when a job starts running and when it ends (the job metrics). Default: nothing. */
  observer?: JobObserver;
}

/**
 * The lease settings of every runner of `ironlens serve`: `IRONLENS_JOB_LEASE_MS` (default
 * `15000`) and `IRONLENS_JOB_HEARTBEAT_MS` (default `5000`; must be shorter than the lease). A
 * job of a replica that died is failed as interrupted by another within lease + heartbeat.
 * `IRONLENS_REPLICA_ID`, when set, is the runners' owner name (default: {@link replicaId}).
 */
export function jobLeaseFromEnv(env: Env): Pick<JobRunnerOptions, 'leaseMs' | 'heartbeatMs' | 'owner'> {
  const leaseMs = envInt(env, 'IRONLENS_JOB_LEASE_MS', 15_000, 100);
  const heartbeatMs = envInt(env, 'IRONLENS_JOB_HEARTBEAT_MS', 5000, 50);
  if (heartbeatMs >= leaseMs) throw new Error('IRONLENS_JOB_HEARTBEAT_MS must be shorter than IRONLENS_JOB_LEASE_MS');
  return { leaseMs, heartbeatMs, owner: replicaIdFromEnv(env) };
}

/** What a runner tells the metrics about its jobs. */
export interface JobObserver {
  /** A job of this runner started running. */
  started(kind: string): void;
  /** A job of this runner ended: `seconds` since it was picked up; `started` is false for one cancelled before it ran. */
  finished(kind: string, outcome: JobStatus, seconds: number, started: boolean): void;
}

const NO_OBSERVER: JobObserver = { started: () => {}, finished: () => {} };

export const INTERRUPTED_MESSAGE = 'interrupted: the process stopped while the job was running';

interface Running {
  job: Job;
  controller: AbortController;
  done: Promise<void>;
  state: { stage: string | null; percent: number | null; log: string[] };
  dirty: boolean;
  timer?: NodeJS.Timeout;
  chain: Promise<void>;
  cancelRequested: boolean;
  /** Another replica declared the job interrupted (its lease ran out): nothing more is written. */
  lost: boolean;
}

/**
 * Runs long work as persisted jobs: status, stage, percent, a bounded log tail, result
 * and error land in the store; cancellation aborts the job's signal (which kills its
 * commands); a job left running by a previous process is marked failed by `recover()`.
 *
 * Several replicas on one database: a job is created owned by the runner that starts it,
 * with a lease (`leaseMs`), and claimed by a conditional UPDATE before its handler runs, so
 * exactly one replica runs it. The owner extends the leases of its jobs every `heartbeatMs`;
 * a replica that dies stops doing so, and any other replica's sweep (every `sweepMs`) fails
 * its jobs as interrupted once their lease ran out: within `leaseMs + sweepMs`. A runner
 * whose lease was taken from it (a stall longer than the lease) aborts the job and writes
 * nothing more.
 */
export class JobRunner {
  private readonly running = new Map<string, Running>();
  private readonly opts: Required<Omit<JobRunnerOptions, 'retention' | 'shared' | 'sweepMs' | 'observer'>> & { retention: Record<string, number>; shared: boolean; sweepMs: number };
  private readonly observer: JobObserver;
  /** While jobs run here: asks the store whether one was cancelled (by another replica's request). */
  private readonly cancelPoll: Periodic<void>;
  /** While jobs run here: extends their leases. */
  private readonly heartbeats: Periodic<void>;
  /** Shared mode, once `recover()` ran: fails other replicas' jobs whose lease ran out. */
  private readonly sweeps: Periodic<number>;
  /** The kinds `recover()` was called for (what the sweep covers); null: every kind. */
  private sweepKinds: Set<string> | null = new Set();

  constructor(
    private readonly repo: JobsRepository,
    opts: JobRunnerOptions = {},
  ) {
    this.opts = {
      retention: opts.retention ?? {},
      defaultRetention: opts.defaultRetention ?? 200,
      logTailLines: opts.logTailLines ?? 200,
      logLineMax: opts.logLineMax ?? 2000,
      flushDelayMs: opts.flushDelayMs ?? 150,
      cancelPollMs: opts.cancelPollMs ?? 2000,
      interruptedMessage: opts.interruptedMessage ?? INTERRUPTED_MESSAGE,
      cancelledMessage: opts.cancelledMessage ?? 'cancelled by request',
      owner: opts.owner ?? replicaId(),
      shared: opts.shared ?? repo.shared,
      leaseMs: opts.leaseMs ?? 15_000,
      heartbeatMs: opts.heartbeatMs ?? 5000,
      sweepMs: opts.sweepMs ?? opts.heartbeatMs ?? 5000,
    };
    this.observer = opts.observer ?? NO_OBSERVER;
    if (!(this.opts.heartbeatMs > 0 && this.opts.leaseMs > this.opts.heartbeatMs)) throw new Error('the job lease must be longer than the heartbeat');
    // Each on a timer that never overlaps itself: a slow store delays a round, never doubles it.
    this.cancelPoll = new Periodic(() => this.pollCancels(), this.opts.cancelPollMs);
    this.heartbeats = new Periodic(() => this.heartbeat(), this.opts.heartbeatMs);
    this.sweeps = new Periodic(() => this.sweep(), this.opts.sweepMs);
  }

  /** Who this runner is in `jobs.owner`. */
  get owner(): string {
    return this.opts.owner;
  }

  private leaseUntil(): string {
    return new Date(Date.now() + this.opts.leaseMs).toISOString();
  }

  get repository(): JobsRepository {
    return this.repo;
  }

  /**
   * Marks jobs of a previous process that never finished as failed (interrupted). Call once at
   * start. Alone on the database (SQLite): every queued or running job of `kind` (or of every
   * kind). Shared: only those whose lease ran out, and from now on a periodic sweep does the same.
   */
  async recover(kind?: string): Promise<number> {
    if (!this.opts.shared) return this.repo.markInterrupted(this.opts.interruptedMessage, kind);
    if (kind === undefined) this.sweepKinds = null;
    else this.sweepKinds?.add(kind);
    this.sweeps.start();
    return this.repo.failExpired(this.opts.interruptedMessage, kind === undefined ? undefined : [kind]);
  }

  /** Shared mode: fails the jobs (of the recovered kinds) whose lease ran out. Returns how many. */
  sweep(): Promise<number> {
    return this.repo.failExpired(this.opts.interruptedMessage, this.sweepKinds ? [...this.sweepKinds] : undefined);
  }

  /** Extends the leases of the jobs running here; a job whose lease was taken is aborted. */
  async heartbeat(): Promise<void> {
    const runs = [...this.running.values()].filter((r) => !r.lost);
    if (runs.length === 0) return;
    let held: Set<string>;
    try {
      held = new Set(await this.repo.renew(this.opts.owner, runs.map((r) => r.job.id), this.leaseUntil()));
    } catch {
      return; // the store is unreachable: the lease runs on; the next beat tries again
    }
    for (const r of runs) {
      if (held.has(r.job.id) || !this.running.has(r.job.id)) continue;
      r.lost = true;
      r.controller.abort(new Error(this.opts.interruptedMessage));
    }
  }

  /** Creates the job (queued), starts `handler` in the background, and returns the job row. */
  async start(spec: StartJob, handler: JobHandler): Promise<Job> {
    const id = randomBytes(16).toString('hex');
    const job = await this.repo.create({ id, kind: spec.kind, subject: spec.subject, input: spec.input, exclusive: spec.exclusive, message: spec.message, owner: this.opts.owner, leaseUntil: this.leaseUntil() });
    await this.repo.prune(spec.kind, this.opts.retention[spec.kind] ?? this.opts.defaultRetention);
    const controller = new AbortController();
    const run: Running = {
      job,
      controller,
      done: Promise.resolve(),
      state: { stage: null, percent: null, log: [] },
      dirty: false,
      chain: Promise.resolve(),
      cancelRequested: false,
      lost: false,
    };
    this.running.set(id, run);
    this.cancelPoll.start();
    this.heartbeats.start();
    run.done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.execute(run, handler));
    return job;
  }

  /** Resolves when the job, started by this runner, has finished; returns its final row. */
  async wait(id: string): Promise<Job | undefined> {
    await this.running.get(id)?.done;
    return this.repo.get(id);
  }

  /**
   * Requests cancellation: `job_not_found` when unknown, `job_finished` when it is over.
   * A job running here is aborted at once; its handler cleans up and it ends `cancelled`.
   */
  async cancel(id: string): Promise<Job> {
    const job = await this.repo.get(id);
    if (!job) throw new AppError('job_not_found', 'job not found');
    if (isFinished(job.status)) throw new AppError('job_finished', `job already finished (${job.status})`);
    const flagged = await this.repo.requestCancel(id);
    if (!flagged) throw new AppError('job_finished', 'job already finished');
    this.abortLocal(id);
    return (await this.repo.get(id))!;
  }

  /** True when the job runs in this process. */
  isRunningHere(id: string): boolean {
    return this.running.has(id);
  }

  /** Aborts every job running here and waits for them; they end failed as interrupted. */
  async stop(): Promise<void> {
    this.cancelPoll.stop();
    this.sweeps.stop();
    const all = [...this.running.values()];
    for (const r of all) r.controller.abort(new Error(this.opts.interruptedMessage));
    await Promise.all(all.map((r) => r.done));
  }

  private abortLocal(id: string): void {
    const run = this.running.get(id);
    if (!run || run.cancelRequested) return;
    run.cancelRequested = true;
    run.controller.abort(new JobCancelledError(this.opts.cancelledMessage));
  }

  /** Aborts the jobs running here whose cancellation was requested in the store; a failed read is tried at the next round. */
  private async pollCancels(): Promise<void> {
    const ids = [...this.running].filter(([, run]) => !run.cancelRequested).map(([id]) => id);
    await Promise.all(
      ids.map((id) =>
        this.repo.isCancelRequested(id).then(
          (yes) => yes && this.abortLocal(id),
          () => {},
        ),
      ),
    );
  }

  private context(run: Running): JobContext {
    const self = this;
    const tail = this.opts.logTailLines;
    const lineMax = this.opts.logLineMax;
    const pushLog = (line: string) => {
      const clean = line.length > lineMax ? `${line.slice(0, lineMax)}…` : line;
      run.state.log.push(clean);
      if (run.state.log.length > tail) run.state.log.splice(0, run.state.log.length - tail);
    };
    return {
      id: run.job.id,
      signal: run.controller.signal,
      stage(text, percent) {
        run.state.stage = text;
        if (percent !== undefined) run.state.percent = clampPercent(percent);
        pushLog(`==> ${text}`);
        self.schedule(run, true);
      },
      progress(percent) {
        run.state.percent = clampPercent(percent);
        self.schedule(run, true);
      },
      log(line) {
        pushLog(line);
        self.schedule(run, false);
      },
      get cancelRequested() {
        return run.cancelRequested;
      },
      throwIfCancelled() {
        if (run.cancelRequested) throw new JobCancelledError(self.opts.cancelledMessage);
        if (run.controller.signal.aborted) throw run.controller.signal.reason;
      },
      flush: () => this.flush(run),
    };
  }

  /** Batches writes: stage changes go out on the next tick, log lines after `flushDelayMs`. */
  private schedule(run: Running, soon: boolean): void {
    run.dirty = true;
    if (run.timer) {
      if (!soon) return;
      clearTimeout(run.timer);
    }
    run.timer = setTimeout(() => void this.flush(run), soon ? 0 : this.opts.flushDelayMs);
  }

  private flush(run: Running): Promise<void> {
    if (run.timer) clearTimeout(run.timer);
    run.timer = undefined;
    if (!run.dirty) return run.chain;
    run.dirty = false;
    const snapshot = { stage: run.state.stage, percent: run.state.percent, log: [...run.state.log] };
    run.chain = run.chain
      .then(() => (run.lost ? undefined : this.repo.update(run.job.id, snapshot, this.opts.owner)))
      .then(
        () => {},
        () => {},
      );
    return run.chain;
  }

  private async execute(run: Running, handler: JobHandler): Promise<void> {
    const id = run.job.id;
    let status: JobStatus = 'success';
    let outcome: JobOutcome | undefined;
    let error: string | null = null;
    const pickedUp = performance.now();
    let started = false;
    try {
      if (run.cancelRequested || (await this.repo.isCancelRequested(id))) {
        run.cancelRequested = true;
        throw new JobCancelledError(this.opts.cancelledMessage);
      }
      if (!(await this.repo.claim(id, this.opts.owner, this.leaseUntil()))) {
        // Another replica holds it, or declared it interrupted: not ours to run or to write.
        run.lost = true;
        throw new Error(this.opts.interruptedMessage);
      }
      started = true;
      this.observer.started(run.job.kind);
      outcome = (await handler(this.context(run))) ?? {};
    } catch (err) {
      if (run.cancelRequested || err instanceof JobCancelledError) {
        status = 'cancelled';
        error = this.opts.cancelledMessage;
      } else if (run.controller.signal.aborted) {
        status = 'failed';
        error = this.opts.interruptedMessage;
      } else {
        status = 'failed';
        error = err instanceof Error ? err.message : String(err);
      }
    }
    // Before the final write: whoever sees the job finished in the store sees it in the metrics.
    this.observer.finished(run.job.kind, status, (performance.now() - pickedUp) / 1000, started);
    await this.flush(run);
    try {
      if (!run.lost) {
        await this.repo.update(
          id,
          {
            status,
            finishedAt: new Date().toISOString(),
            ...(status === 'success'
              ? { result: outcome?.result ?? null, message: outcome?.message ?? null, percent: 100 }
              : { error, message: error }),
          },
          this.opts.owner,
        );
      }
    } finally {
      this.running.delete(id);
      if (this.running.size === 0) {
        this.cancelPoll.stop();
        this.heartbeats.stop();
      }
    }
  }
}

function clampPercent(p: number): number {
  return Math.max(0, Math.min(100, Math.round(p)));
}
