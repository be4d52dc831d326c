import { AsyncLocalStorage } from 'node:async_hooks';
import { lockLedger, type MetalStore, type MetalTrx } from '../repositories/tables';

/** What a ledger write leaves behind it: the caches and the files that follow the ledger. */
export interface LedgerFollowers {
  /** The `/boot-vars` cache (`BootVarsService.invalidate`). */
  invalidate(): void;
  /** `dhcp-hosts.conf` and dnsmasq (`DhcpHostsService.sync`); writes nothing when they already follow. */
  sync(): Promise<void>;
}

/**
 * The one write path of the ledger (workers, disks, devices). `write(fn)` runs `fn` in one
 * transaction under the ledger's lock ({@link lockLedger}) and then, success or failure,
 * clears the `/boot-vars` cache and brings `dhcp-hosts.conf` and dnsmasq in line with the
 * store. A write that failed half-way through a longer operation (a worker's devices unbound,
 * then its agent refuses the target delete) therefore never leaves dnsmasq serving a binding
 * the ledger no longer holds.
 *
 * `batch(fn)` defers the follow-up of every write made inside it to its own end (one dnsmasq
 * reload for a batch, seed §11.1), again success or failure.
 *
 * Failure: the write's own error is thrown, never hidden by a failed sync (whose failure the
 * hosts-file service records, and whose next sync tries again). Success: a failed sync is
 * the answer (`dnsmasq_write_failed`, `dnsmasq_reload_failed`), as the seed says.
 */
export class LedgerWriter {
  /** The batch the current call runs in (per async context: concurrent requests never share one). */
  private readonly inBatch = new AsyncLocalStorage<{ wrote: boolean }>();

  constructor(
    private readonly store: MetalStore,
    private readonly followers: LedgerFollowers,
  ) {}

  /** One transaction under the ledger lock, then the follow-up (or, inside `batch`, at its end). */
  async write<T>(fn: (trx: MetalTrx) => Promise<T>): Promise<T> {
    const run = () =>
      this.store.transaction(async (trx) => {
        await lockLedger(trx);
        return fn(trx);
      });
    const batch = this.inBatch.getStore();
    if (batch) {
      batch.wrote = true;
      return run();
    }
    return this.settled(run);
  }

  /** Runs `fn`, which may call `write` any number of times; the follow-up runs once, at its end. */
  async batch<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inBatch.getStore()) return fn();
    const batch = { wrote: false };
    return this.settled(() => this.inBatch.run(batch, fn), () => batch.wrote);
  }

  private async settled<T>(fn: () => Promise<T>, wrote: () => boolean = () => true): Promise<T> {
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      if (wrote()) await this.follow().catch(() => {});
      throw err;
    }
    if (wrote()) await this.follow();
    return result;
  }

  private async follow(): Promise<void> {
    this.followers.invalidate();
    await this.followers.sync();
  }
}
