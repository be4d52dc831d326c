import { Counter, type CounterConfiguration, collectDefaultMetrics, Gauge, type GaugeConfiguration, Histogram, type HistogramConfiguration, Registry } from 'prom-client';
import type { JobObserver } from '../jobs/job.runner';
import { HttpTally } from './http-tally';
import type { JobStatus, JobsRepository } from '../jobs/job.repository';
import type { StoreQuery } from '../store/query-log';

export type { Counter, Gauge, Histogram };

export interface MetricsOptions {
  /** Also export Node's process metrics (`process_*`, `nodejs_*`: CPU, memory, event loop lag, GC). Default is `true`. */
  processMetrics?: boolean;
}

/** Latency buckets of HTTP requests, in seconds: a cached `/boot-vars` answer takes well under a millisecond. */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Latency buckets of store queries, in seconds. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Duration buckets of jobs, in seconds: a pre-pull takes seconds, a Kubespray run an hour. */
const JOB_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400];

/** Store operations kept as label values; anything else (DDL, raw SQL) is `other`. */
const STORE_OPERATIONS = new Set(['select', 'insert', 'update', 'delete']);

let processRegistry: Registry | undefined;

/**
 * Node's process metrics belong to the process, not to one app: they are collected once (one
 * event-loop monitor, one GC observer, which prom-client never stops) and shown by every
 * `Metrics` that asks for them, however many apps a test process builds.
 */
function processMetricsRegistry(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * The Prometheus metrics of one process: one prom-client `Registry` (never the global default
 * one, so several apps built in one process — tests — keep apart), the metrics core itself
 * records (HTTP, store, jobs), and factories for the metrics of other packages.
 *
 * Label values are bounded by construction: route patterns (never a raw URL), status codes,
 * job kinds and outcomes, store operations. Identifiers a client sends (MACs, tokens, query
 * strings) never become labels.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly process: Registry | undefined;
  /** The HTTP requests of every listener: tallied here, not by prom-client (per request, no label hashing). */
  private readonly http = new HttpTally(HTTP_BUCKETS);
  private readonly storeDuration: Histogram<'operation'>;
  private readonly storeErrors: Counter<'operation'>;
  private readonly jobsFinished: Counter<'kind' | 'outcome'>;
  private readonly jobDuration: Histogram<'kind' | 'outcome'>;
  private readonly jobsRunning: Gauge<'kind'>;
  private readonly authFailures: Counter<'listener' | 'outcome'>;

  constructor(opts: MetricsOptions = {}) {
    this.process = opts.processMetrics === false ? undefined : processMetricsRegistry();
    this.http.register(this.registry, {
      requests: { name: 'ironlens_http_requests_total', help: 'HTTP requests answered, by listener, method, route pattern and status code.' },
      duration: { name: 'ironlens_http_request_duration_seconds', help: 'Time to answer an HTTP request, by listener, method, route pattern and status code.' },
    });
    this.storeDuration = this.histogram({
      name: 'ironlens_store_query_duration_seconds',
      help: 'Time of one store query (SQLite or PostgreSQL), by operation: select, insert, update, delete, other.',
      labelNames: ['operation'],
      buckets: STORE_BUCKETS,
    });
    this.storeErrors = this.counter({
      name: 'ironlens_store_query_errors_total',
      help: 'Store queries that failed (constraint violations included), by operation.',
      labelNames: ['operation'],
    });
    this.jobsFinished = this.counter({
      name: 'ironlens_jobs_finished_total',
      help: 'Jobs run by this process that finished, by kind and outcome (success, failed, cancelled).',
      labelNames: ['kind', 'outcome'],
    });
    this.jobDuration = this.histogram({
      name: 'ironlens_job_duration_seconds',
      help: 'Time from a job’s start to its end in this process, by kind and outcome.',
      labelNames: ['kind', 'outcome'],
      buckets: JOB_BUCKETS,
    });
    this.jobsRunning = this.gauge({
      name: 'ironlens_jobs_running',
      help: 'Jobs running in this process now, by kind.',
      labelNames: ['kind'],
    });
    this.authFailures = this.counter({
      name: 'ironlens_auth_failures_total',
      help: 'Requests refused for their bearer token, by listener and outcome: invalid (401), limited (429 from a source over the failed-auth limit).',
      labelNames: ['listener', 'outcome'],
    });
  }

  /** The content type of `text()`: Prometheus' text exposition format 0.0.4. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in the text exposition format; gauges read from the store are collected now. */
  async text(): Promise<string> {
    const own = await this.registry.metrics();
    return this.process ? `${await this.process.metrics()}${own}` : own;
  }

  /**
   * `ironlens_jobs{kind,state}`: every job in the store, whichever replica runs it, by kind and
   * state (queued, running, success, failed, cancelled), read at scrape time.
   */
  collectJobsFrom(jobs: Pick<JobsRepository, 'countByKindAndStatus'>): void {
    this.gauge({
      name: 'ironlens_jobs',
      help: 'Jobs in the store (every replica’s), by kind and state, read from the store.',
      labelNames: ['kind', 'state'],
      async collect() {
        this.reset();
        const rows = await jobs.countByKindAndStatus().catch(() => null);
        for (const r of rows ?? []) this.set({ kind: r.kind, state: r.status }, r.n);
      },
    });
  }

  counter<L extends string>(config: CounterConfiguration<L>): Counter<L> {
    return new Counter({ ...config, registers: [this.registry] });
  }

  gauge<L extends string>(config: GaugeConfiguration<L>): Gauge<L> {
    return new Gauge({ ...config, registers: [this.registry] });
  }

  histogram<L extends string>(config: HistogramConfiguration<L>): Histogram<L> {
    return new Histogram({ ...config, registers: [this.registry] });
  }

  /** Records one answered request; `route` is the route pattern (`/devices/:mac`), never the URL. */
  httpRequest(listener: string, method: string, route: string, status: number, seconds: number): void {
    this.http.record(listener, method, route, status, seconds);
  }

  /** One request refused for its token (`invalid`: 401) or for its source's failures (`limited`: 429). */
  authFailure(listener: string, outcome: 'invalid' | 'limited'): void {
    this.authFailures.inc({ listener, outcome });
  }

  /** For `StoreOptions.onQuery`. */
  readonly storeQuery = (q: StoreQuery): void => {
    const operation = STORE_OPERATIONS.has(q.operation) ? q.operation : 'other';
    this.storeDuration.observe({ operation }, q.durationMs / 1000);
    if (q.failed) this.storeErrors.inc({ operation });
  };

  /** For `JobRunnerOptions.observer`. */
  readonly jobs: JobObserver = {
    started: (kind: string) => this.jobsRunning.inc({ kind }),
    finished: (kind: string, outcome: JobStatus, seconds: number, started: boolean) => {
      if (started) this.jobsRunning.dec({ kind });
      this.jobsFinished.inc({ kind, outcome });
      this.jobDuration.observe({ kind, outcome }, seconds);
    },
  };
}
