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
  private queued: Promise<void> | null = null;
  private tempsChecked = false;
  private isWriter: boolean;

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
    this.isWriter = writer;
  }

  /**
   * Renders, writes, reloads. Throws `dnsmasq_write_failed` or `dnsmasq_reload_failed`.
   * Not the writer: only asks the writer to render (it reports its own failures).
   */
  sync(): Promise<void> {
    // Every replica tells the others: each dnsmasq host's writer renders its own file.
    this.changes?.publish(DHCP_TOPIC);
    if (!this.isWriter) return Promise.resolve();
    return this.render();
  }

  /**
   * This process's own render (the writer's; also the change feed's `metal.dhcp` handler and
   * the election), telling nobody. Coalesced as described on the class.
   */
  render(): Promise<void> {
    if (!this.isWriter) return Promise.resolve();
    if (this.queued) return this.queued;
    const run = this.tail
      .catch(() => {})
      .then(() => {
        this.queued = null;
        return this.renderNow();
      });
    this.queued = run;
    this.tail = run;
    return run;
  }

  /**
   * The writer's periodic check (replicas): renders when the file is not what the store says,
   * e.g. after a change whose notice was lost (its sender died between commit and notify).
   * Answers whether it rendered.
   */
  async renderIfStale(): Promise<boolean> {
    if (!this.isWriter) return false;
    const entries = await this.devices.dhcpHosts(this.store.db);
    if (await this.file.holds(entries)) return false;
    await this.render();
    return true;
  }

  private async renderNow(): Promise<void> {
    if (!this.tempsChecked) {
      this.tempsChecked = true;
      await this.file.removeStaleTemps().catch(() => []);
    }
    const entries = await this.devices.dhcpHosts(this.store.db);
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
