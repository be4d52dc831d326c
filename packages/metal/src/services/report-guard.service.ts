import type { OperationsLog } from '@ironlens/core';

/** Why a report was not let in. */
export type ReportRefusal = 'rate' | 'pool_full';

export interface ReportGuardOptions {
  /** New devices one source address may register per minute; 0 turns the limit off. */
  registerPerMinute: number;
  /** How often one kind of refusal is written to the operations log, at most. Default is 60 s. */
  logEveryMs?: number;
  /** Clock, for tests. Default is `Date.now`. */
  now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

interface Tally {
  count: number;
  loggedAt: number;
}

/** Tracked sources at most; beyond it, full (idle) buckets are forgotten first. */
const MAX_SOURCES = 50_000;

/**
 * `/devices/report` is open by design; this keeps a flood of invented MACs from filling the
 * pool. A token bucket per source address limits *registrations* (reports of unknown MACs):
 * a known machine's report is never limited, so a boot storm of bound machines (and the
 * loopback benchmark) is not throttled. Refusals are counted and written to the operations
 * log at most once a minute per reason and source (`device.report.limited`, with the count
 * since the last entry), so a flood cannot turn into a flood of log rows.
 */
export class ReportGuard {
  private readonly buckets = new Map<string, Bucket>();
  private readonly tallies = new Map<string, Tally>();
  private readonly now: () => number;
  private readonly logEveryMs: number;

  constructor(
    private readonly ops: OperationsLog,
    private readonly opts: ReportGuardOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.logEveryMs = opts.logEveryMs ?? 60_000;
  }

  /** Takes one registration from `client`'s bucket; false when it is empty. */
  admitRegistration(client: string | undefined): boolean {
    const rate = this.opts.registerPerMinute;
    if (rate <= 0) return true;
    const key = client ?? 'unknown';
    const now = this.now();
    let b = this.buckets.get(key);
    if (b) {
      b.tokens = Math.min(rate, b.tokens + ((now - b.at) * rate) / 60_000);
      b.at = now;
    } else {
      if (this.buckets.size >= MAX_SOURCES) this.prune(now, rate);
      b = { tokens: rate, at: now };
      this.buckets.set(key, b);
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Counts a refusal; writes `device.report.limited` when none was written for it in the last minute. */
  async refused(reason: ReportRefusal, client: string | undefined, detail: Record<string, unknown> = {}): Promise<void> {
    const key = `${reason} ${client ?? ''}`;
    const now = this.now();
    let t = this.tallies.get(key);
    if (!t) {
      if (this.tallies.size >= MAX_SOURCES) this.tallies.clear();
      t = { count: 0, loggedAt: Number.NEGATIVE_INFINITY };
      this.tallies.set(key, t);
    }
    t.count++;
    if (now - t.loggedAt < this.logEveryMs) return;
    const refused = t.count;
    t.count = 0;
    t.loggedAt = now;
    await this.ops.append({ op: 'device.report.limited', status: 'refused', reason, refused, client: client ?? null, ...detail });
  }

  private prune(now: number, rate: number): void {
    for (const [k, b] of this.buckets) if (b.tokens + ((now - b.at) * rate) / 60_000 >= rate) this.buckets.delete(k);
    if (this.buckets.size >= MAX_SOURCES) this.buckets.clear();
  }
}
