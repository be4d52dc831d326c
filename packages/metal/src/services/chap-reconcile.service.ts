import { Periodic } from '@ironlens/core';
import type { DhcpHostsService } from './dhcp-hosts.service';
import type { StorageService } from './storage.service';

/**
 * CHAP on: an agent whose tgtd restarted gets back the CHAP-bound targets it cannot rebuild by
 * itself (it keeps no secret) without anyone calling `POST /agents/<id>/luns/scan`: every
 * `everyMs` (`IRONLENS_ISCSI_CHAP_RECONCILE_MS`) {@link StorageService.reconcileChap} runs. With
 * replicas, only the hosts-file writer of the group does it, so one replica scans, not all.
 */
export class ChapReconciler {
  private readonly periodic: Periodic<string[]>;

  constructor(
    private readonly storage: Pick<StorageService, 'reconcileChap'>,
    private readonly dhcp: Pick<DhcpHostsService, 'writer'>,
    everyMs: number,
    private readonly log: (msg: string) => void = () => {},
  ) {
    this.periodic = new Periodic(() => this.once(), everyMs);
  }

  start(): this {
    this.periodic.start();
    return this;
  }

  /** One round (also for tests); none while one runs. Answers the agents that were re-scanned. */
  async round(): Promise<string[]> {
    return (await this.periodic.run()) ?? [];
  }

  private async once(): Promise<string[]> {
    if (!this.dhcp.writer) return [];
    try {
      const scanned = await this.storage.reconcileChap();
      for (const id of scanned) this.log(`agent ${id} had lost CHAP targets (its iSCSI target restarted?): re-sent the accounts`);
      return scanned;
    } catch (err) {
      this.log(`warning: CHAP reconcile failed: ${(err as Error).message}`);
      return [];
    }
  }

  stop(): void {
    this.periodic.stop();
  }
}
