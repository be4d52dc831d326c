import { AppError, type OperationsLog } from '@ironlens/core';
import type { DhcpHost, DhcpHostsFile, DnsmasqReloader } from '../adapters/dnsmasq.adapter';
import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalStore } from '../repositories/tables';
import type { RenderGuard } from './render-guard.service';

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
 */
export class DhcpHostsService {
  private tail: Promise<void> = Promise.resolve();
  private queued: Promise<void> | null = null;
  private tempsChecked = false;

  constructor(
    private readonly store: MetalStore,
    private readonly devices: DeviceRepository,
    private readonly file: DhcpHostsFile,
    private readonly reloader: DnsmasqReloader,
    private readonly ops: OperationsLog,
    private readonly guard: RenderGuard,
    private readonly observer: DhcpHostsObserver = NO_OBSERVER,
  ) {}

  get path(): string {
    return this.file.path;
  }

  /** Renders, writes, reloads. Throws `dnsmasq_write_failed` or `dnsmasq_reload_failed`. */
  sync(): Promise<void> {
    if (this.queued) return this.queued;
    const run = this.tail
      .catch(() => {})
      .then(() => {
        this.queued = null;
        return this.render();
      });
    this.queued = run;
    this.tail = run;
    return run;
  }

  private async render(): Promise<void> {
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
