/**
 * Work run on a timer, never overlapping itself (issue 19: the bootstrap janitor, the CHAP
 * reconciler and the replicas' hosts-file backstop each wrote this): every `everyMs` the task
 * runs unless its last run is still going, in which case that tick is skipped. `run()` is the
 * same guarded call, for a caller that wants a round now (a test, a start-up pass). A failed
 * run is told to `onError` and the timer goes on. The timer never keeps the process alive.
 */
export class Periodic<T> {
  private timer?: NodeJS.Timeout;
  private running: Promise<T> | undefined;

  constructor(
    private readonly task: () => Promise<T>,
    /** `0` or less: never on a timer (`run()` still works). */
    private readonly everyMs: number,
    /** Told about a run that threw. Default: nothing. */
    private readonly onError: (err: Error) => void = () => {},
  ) {}

  /** Starts the timer (once; a second call does nothing). */
  start(): this {
    if (this.everyMs <= 0 || this.timer) return this;
    this.timer = setInterval(() => {
      this.run().catch((err: Error) => this.onError(err));
    }, this.everyMs);
    this.timer.unref();
    return this;
  }

  /** Runs the task now, unless a run is in progress: then answers `undefined` without running it. */
  async run(): Promise<T | undefined> {
    if (this.running) return undefined;
    this.running = this.task();
    try {
      return await this.running;
    } finally {
      this.running = undefined;
    }
  }

  get started(): boolean {
    return this.timer !== undefined;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
