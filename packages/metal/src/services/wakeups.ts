/**
 * In-process wake-ups for work that waits on the world (issue 31): the rollout waits for a
 * worker's proof of boot, its host report and its `/boot-vars` request. Whoever sees one of those
 * calls `notify(key)`; a waiter wakes at once instead of at its next poll. A waiter always polls
 * too (`ms`), because the event may reach another replica.
 */
export class Wakeups {
  private readonly waiters = new Map<string, Set<() => void>>();

  notify(key: string): void {
    const set = this.waiters.get(key);
    if (!set) return;
    this.waiters.delete(key);
    for (const wake of set) wake();
  }

  /** Resolves on the first `notify` of one of `keys`, or after `ms`; rejects with the signal's reason when it aborts. */
  wait(keys: readonly string[], ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        for (const k of keys) this.waiters.get(k)?.delete(done);
        resolve();
      };
      const onAbort = () => {
        done();
        reject(signal?.reason);
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      for (const k of keys) {
        const set = this.waiters.get(k) ?? new Set();
        set.add(done);
        this.waiters.set(k, set);
      }
    });
  }
}
