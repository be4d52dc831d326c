import { AppError, type ChangeFeed, type OperationsLog } from '@ironlens/core';
import type { DhcpHost, DhcpHostsFile, DnsmasqReloader } from '../adapters/dnsmasq.adapter';
import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalStore } from '../repositories/tables';
import type { RenderGuard } from './render-guard.service';

/** The change-feed topic by which a replica asks the elected writer to render the hosts file. */
export const DHCP_TOPIC = 'metal.dhcp';

/** What the hosts-file renders tell the metrics. */
export interface DhcpHostsObserver {
  /** The file was written with `lines` records. */
  written(lines: number): void;
  writeFailed(): void;
  reloaded(): void;
  reloadFailed(): void;
}

const NO_OBSERVER: DhcpHostsObserver = { written: () => {}, writeFailed: () => {}, reloaded: () => {}, reloadFailed: () => {} };

/**
 * Keeps `dhcp-hosts.conf` equal to the store: render from the bound devices, write
 * atomically, reload dnsmasq. Calls are coalesced: a sync that has not started yet is
 * shared by every caller that arrives before it starts, and it renders whatever the
 * store holds at that moment, so the file always ends equal to the last commit.
 * Records outside the MAC or hostname grammar are left out of the file and reported to the
 * render guard. The first sync of the process first removes the temporary files an
 * interrupted write (`kill -9`) left beside the file.
 *
 * Several replicas: one process per dnsmasq host writes the file, the elected writer
 * (`MetalReplication`, a PostgreSQL advisory lock). On the others `sync()` writes nothing and
 * publishes `metal.dhcp` on the change feed; the writer renders on that notice, so its file
 * follows every replica's commits. Alone (SQLite), this process is the writer.
 */
export class DhcpHostsService {
  private tail: Promise<void> = Promise.resolve();
  private queued: { run: Promise<void>; force: boolean } | null = null;
  private tempsChecked = false;
  /**
   * True until a render wrote the file and dnsmasq took it: at the start, after a failed
   * write or reload, and when this process becomes the writer. While it holds, a render never
   * skips, so a failed reload is tried again by the next sync.
   */
  private dirty = true;
  private isWriter: boolean;
  private readonly writerWatchers = new Set<(writer: boolean) => void>();

  constructor(
    private readonly store: MetalStore,
    private readonly devices: DeviceRepository,
    private readonly file: DhcpHostsFile,
    private readonly reloader: DnsmasqReloader,
    private readonly ops: OperationsLog,
    private readonly guard: RenderGuard,
    private readonly observer: DhcpHostsObserver = NO_OBSERVER,
    /** Where a non-writer tells the writer to render. Default: nobody, and this process writes. */
    private readonly changes: Pick<ChangeFeed, 'publish' | 'shared'> | null = null,
  ) {
    this.isWriter = !changes?.shared;
  }

  get path(): string {
    return this.file.path;
  }

  /** True when this process writes the file (alone, or elected among the replicas of its group). */
  get writer(): boolean {
    return this.isWriter;
  }

  /** Set by the election: a new writer should `sync()` at once (the file may be behind). */
  setWriter(writer: boolean): void {
    const changed = writer !== this.isWriter;
    this.isWriter = writer;
    if (writer) this.dirty = true;
    if (changed) for (const w of this.writerWatchers) w(writer);
  }

  /** `fn` is told each time this process becomes or stops being the writer (the boot services run dnsmasq only on the writer). Returns the unsubscribe. */
  onWriterChange(fn: (writer: boolean) => void): () => void {
    this.writerWatchers.add(fn);
    return () => this.writerWatchers.delete(fn);
  }

  /**
   * Brings the file and dnsmasq in line with the store after a ledger write (`LedgerWriter`
   * calls it after every one): renders, writes and reloads when the file differs from the
   * store or the last render did not finish; otherwise writes and reloads nothing.
   * Throws `dnsmasq_write_failed` or `dnsmasq_reload_failed`.
   * Not the writer: only asks the writer to do the same (it reports its own failures).
   */
  sync(): Promise<void> {
    // Every replica tells the others: each dnsmasq host's writer renders its own file.
    this.changes?.publish(DHCP_TOPIC);
    if (!this.isWriter) return Promise.resolve();
    return this.render({ ifStale: true });
  }

  /**
   * This process's own render (the writer's; also the change feed's `metal.dhcp` handler and
   * the election), telling nobody. Coalesced as described on the class. `ifStale`: skip the
   * write and the reload when the file already holds what the store says and the last render
   * finished. Default is `false` (always render).
   */
  render(opts: { ifStale?: boolean } = {}): Promise<void> {
    if (!this.isWriter) return Promise.resolve();
    const force = opts.ifStale !== true;
    if (this.queued) {
      // A forced render joining a queued "if stale" one makes it forced (it has not started).
      if (force) this.queued.force = true;
      return this.queued.run;
    }
    const entry: { run: Promise<void>; force: boolean } = { run: Promise.resolve(), force };
    entry.run = this.tail
      .catch(() => {})
      .then(() => {
        this.queued = null;
        return this.renderNow(entry.force);
      });
    this.queued = entry;
    this.tail = entry.run;
    return entry.run;
  }

  /**
   * The writer's periodic check (replicas): renders when the file is not what the store says,
   * e.g. after a change whose notice was lost (its sender died between commit and notify), or
   * when the last render did not finish (a failed reload). Answers whether it rendered.
   */
  async renderIfStale(): Promise<boolean> {
    if (!this.isWriter) return false;
    const entries = await this.devices.dhcpHosts(this.store.db);
    if (!this.dirty && (await this.file.holds(entries))) return false;
    await this.render();
    return true;
  }

  private async renderNow(force: boolean): Promise<void> {
    if (!this.tempsChecked) {
      this.tempsChecked = true;
      await this.file.removeStaleTemps().catch(() => []);
    }
    const entries = await this.devices.dhcpHosts(this.store.db);
    if (!force && !this.dirty && (await this.file.holds(entries).catch(() => false))) return;
    this.dirty = true;
    try {
      const refused = await this.file.write(entries);
      this.observer.written(entries.length - refused.length);
      await this.guard.refused('dhcp-hosts', refused);
    } catch (err) {
      this.observer.writeFailed();
      throw new AppError('dnsmasq_write_failed', `writing ${this.file.path} failed: ${(err as Error).message}`);
    }
    try {
      await this.reloader.reload();
      this.dirty = false;
      this.observer.reloaded();
    } catch (err) {
      this.observer.reloadFailed();
      const reason = (err as Error).message;
      await this.ops.append({ op: 'dnsmasq.reload', status: 'failed', method: this.reloader.describe, error: reason }).catch(() => {});
      throw new AppError('dnsmasq_reload_failed', `dnsmasq reload failed via ${this.reloader.describe}: ${reason}; ${this.file.path} was written`);
    }
  }

  /** What dnsmasq's file says now (for `/workers/{id}/status`). */
  read(): Promise<DhcpHost[]> {
    return this.file.read();
  }
}
