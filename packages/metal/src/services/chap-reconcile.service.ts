import type { DhcpHostsService } from './dhcp-hosts.service';
import type { StorageService } from './storage.service';

/**
 * CHAP on: an agent whose tgtd restarted gets back the CHAP-bound targets it cannot rebuild by
 * itself (it keeps no secret) without anyone calling `POST /agents/<id>/luns/scan`: every
 * `everyMs` (`IRONLENS_ISCSI_CHAP_RECONCILE_MS`) {@link StorageService.reconcileChap} runs. With
 * replicas, only the hosts-file writer of the group does it, so one replica scans, not all.
 */
export class ChapReconciler {
  private timer?: NodeJS.Timeout;
  private busy = false;

  constructor(
    private readonly storage: Pick<StorageService, 'reconcileChap'>,
    private readonly dhcp: Pick<DhcpHostsService, 'writer'>,
    private readonly everyMs: number,
    private readonly log: (msg: string) => void = () => {},
  ) {}

  start(): this {
    if (this.everyMs <= 0 || this.timer) return this;
    this.timer = setInterval(() => void this.round(), this.everyMs);
    this.timer.unref();
    return this;
  }

  /** One round (also for tests). Answers the agents that were re-scanned. */
  async round(): Promise<string[]> {
    if (this.busy || !this.dhcp.writer) return [];
    this.busy = true;
    try {
      const scanned = await this.storage.reconcileChap();
      for (const id of scanned) this.log(`agent ${id} had lost CHAP targets (its iSCSI target restarted?): re-sent the accounts`);
      return scanned;
    } catch (err) {
      this.log(`warning: CHAP reconcile failed: ${(err as Error).message}`);
      return [];
    } finally {
      this.busy = false;
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
