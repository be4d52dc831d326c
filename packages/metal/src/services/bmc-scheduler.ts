import { AppError, sleep } from '@ironlens/core';

/** What a BMC call is for: a power action (an operator's) goes before a status read (anyone's). */
export type BmcCallKind = 'action' | 'read';

export interface BmcSchedulerOptions {
  /** Calls in flight at once over every BMC host (`IRONLENS_BMC_CONCURRENCY`). */
  limit: number;
  /** Least time between two power-ons (`IRONLENS_BMC_STAGGER_MS`). Default is `0`. */
  staggerMs?: number;
  /** Status reads that may wait for one BMC host; one more is refused (`bmc_busy`). Default is `4`. */
  maxReadsPerHost?: number;
  /** Status reads that may wait over every host. Default is `64`. */
  maxReads?: number;
  /** Actions that may wait over every host (a batch takes up to 1000). Default is `4096`. */
  maxActions?: number;
  now?: () => number;
}

interface Task {
  host: string;
  kind: BmcCallKind;
  start: () => void;
}

/**
 * Spaces out calls to BMCs (issue 21; issue 29 finding 4): calls to one BMC host run one after
 * another, at most `limit` run at once over every host, and power-ons are started at least
 * `staggerMs` apart, so a rack power-cycle neither crushes the BMCs nor draws every machine's
 * inrush current at once.
 *
 * A waiting action always goes before a waiting status read, for its host and for a free slot
 * of the global limit (each kind in the order it was asked): status reads, which any viewer can
 * ask for, can hold an action back by at most the one call already running on that host. The
 * waiting reads are bounded per host and overall, and so are the waiting actions: one more is
 * refused at once with 503 `bmc_busy` instead of queueing without end. In-process: each
 * replica spaces its own calls.
 */
export class BmcScheduler {
  private active = 0;
  /** Waiting tasks in the order they were asked. */
  private readonly waiting: Task[] = [];
  /** Hosts with a call running. */
  private readonly busy = new Set<string>();
  private readonly readsPerHost = new Map<string, number>();
  private waitingReads = 0;
  private waitingActions = 0;
  private nextPowerOnAt = 0;
  private readonly o: Required<BmcSchedulerOptions>;

  constructor(opts: BmcSchedulerOptions) {
    this.o = { staggerMs: 0, maxReadsPerHost: 4, maxReads: 64, maxActions: 4096, now: Date.now, ...opts, limit: Math.max(1, opts.limit) };
  }

  /** Calls in flight now (for tests and metrics). */
  get inFlight(): number {
    return this.active;
  }

  /** Calls waiting now, by kind (for tests and metrics). */
  get queued(): { actions: number; reads: number } {
    return { actions: this.waitingActions, reads: this.waitingReads };
  }

  /**
   * Runs `fn` in turn for `host`, inside the global limit; `kind` decides who goes first (see
   * the class). `fn` gets `beforePowerOn`, to await just before it sends a power-on: it returns
   * when the stagger lets the next one go. Throws 503 `bmc_busy` when too many calls of that
   * kind already wait.
   */
  async run<T>(host: string, kind: BmcCallKind, fn: (beforePowerOn: () => Promise<void>) => Promise<T>): Promise<T> {
    this.admit(host, kind);
    await new Promise<void>((start) => {
      this.waiting.push({ host, kind, start });
      this.dispatch();
    });
    try {
      return await fn(() => this.staggerTurn());
    } finally {
      this.active--;
      this.busy.delete(host);
      this.dispatch();
    }
  }

  private admit(host: string, kind: BmcCallKind): void {
    if (kind === 'action') {
      if (this.waitingActions >= this.o.maxActions) throw busy(`${this.waitingActions} power actions are already waiting for BMCs`);
      this.waitingActions++;
      return;
    }
    const here = this.readsPerHost.get(host) ?? 0;
    if (here >= this.o.maxReadsPerHost) throw busy(`${here} status reads are already waiting for this BMC host`);
    if (this.waitingReads >= this.o.maxReads) throw busy(`${this.waitingReads} status reads are already waiting for BMCs`);
    this.readsPerHost.set(host, here + 1);
    this.waitingReads++;
  }

  /** Starts waiting tasks while slots are free: the first action of an idle host, else its first read. */
  private dispatch(): void {
    while (this.active < this.o.limit) {
      const i = this.next();
      if (i < 0) return;
      const [t] = this.waiting.splice(i, 1);
      if (t.kind === 'action') this.waitingActions--;
      else {
        this.waitingReads--;
        const left = (this.readsPerHost.get(t.host) ?? 1) - 1;
        if (left > 0) this.readsPerHost.set(t.host, left);
        else this.readsPerHost.delete(t.host);
      }
      this.active++;
      this.busy.add(t.host);
      t.start();
    }
  }

  private next(): number {
    let read = -1;
    for (let i = 0; i < this.waiting.length; i++) {
      const t = this.waiting[i];
      if (this.busy.has(t.host)) continue;
      if (t.kind === 'action') return i;
      if (read < 0) read = i;
    }
    return read;
  }

  private async staggerTurn(): Promise<void> {
    if (this.o.staggerMs <= 0) return;
    const at = Math.max(this.o.now(), this.nextPowerOnAt);
    this.nextPowerOnAt = at + this.o.staggerMs;
    const wait = at - this.o.now();
    if (wait > 0) await sleep(wait);
  }
}

const busy = (why: string) => new AppError('bmc_busy', `too many BMC calls are waiting (${why}); try again shortly`, { code: 'bmc_busy' });
