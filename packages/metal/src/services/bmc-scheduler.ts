import { sleep } from '@ironlens/core';

/**
 * Spaces out calls to BMCs (issue 21): calls to one BMC host run one after another (in the
 * order they were asked), at most `limit` run at once over every host (`IRONLENS_BMC_CONCURRENCY`),
 * and power-ons are started at least `staggerMs` apart (`IRONLENS_BMC_STAGGER_MS`), so a rack
 * power-cycle neither crushes the BMCs nor draws every machine's inrush current at once.
 * In-process: each replica spaces its own calls.
 */
export class BmcScheduler {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly hosts = new Map<string, Promise<void>>();
  private nextPowerOnAt = 0;

  constructor(
    private readonly limit: number,
    private readonly staggerMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Calls in flight now (for tests and metrics). */
  get inFlight(): number {
    return this.active;
  }

  private acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }

  /**
   * Runs `fn` in turn for `host`, inside the global limit. `fn` gets `beforePowerOn`, to await
   * just before it sends a power-on: it returns when the stagger lets the next one go.
   */
  async run<T>(host: string, fn: (beforePowerOn: () => Promise<void>) => Promise<T>): Promise<T> {
    const before = this.hosts.get(host) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => {
      done = r;
    });
    const tail = before.then(() => mine);
    this.hosts.set(host, tail);
    await before;
    try {
      await this.acquire();
      try {
        return await fn(() => this.staggerTurn());
      } finally {
        this.release();
      }
    } finally {
      done();
      if (this.hosts.get(host) === tail) this.hosts.delete(host);
    }
  }

  private async staggerTurn(): Promise<void> {
    if (this.staggerMs <= 0) return;
    const at = Math.max(this.now(), this.nextPowerOnAt);
    this.nextPowerOnAt = at + this.staggerMs;
    const wait = at - this.now();
    if (wait > 0) await sleep(wait);
  }
}
