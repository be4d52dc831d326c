import type { Job } from '@ironlens/core';
import type { Kube } from '../adapters/kube.adapter';
import type { GatewayKeyCreated, GatewayKeyList, GatewayStatusList, GatewayStatusView } from '../api/gateway';
import type { ClusterRow } from '../registry/cluster.repository';
import type { GatewayAuthorizer } from './gateway-authz.service';
import type { GatewayKeys } from './gateway-keys.service';
import type { GatewayReconciler } from './gateway-reconcile.service';
import type { GatewayStatusService } from './gateway-status.service';
import type { GatewaySettings } from './gateway.settings';

/**
 * The shared inference gateway of a registration (issue 22), one entry point over its parts: the
 * reconcile job ({@link GatewayReconciler}), the status from the objects' conditions
 * ({@link GatewayStatusService}), the hook's access keys ({@link GatewayKeys}) and the hook's
 * decision ({@link GatewayAuthorizer}). The routes, the registration (changed, stop, cleanup) and
 * the overview (statusOfRecord) call it; `ironlens serve` gives it the console's bound port.
 */
export class GatewayService {
  constructor(
    readonly settings: GatewaySettings,
    readonly reconciler: GatewayReconciler,
    readonly statuses: GatewayStatusService,
    readonly keys: GatewayKeys,
    readonly authorizer: GatewayAuthorizer,
  ) {}

  /** See {@link GatewaySettings.useConsolePort}. */
  useConsolePort(port: number): void {
    this.settings.useConsolePort(port);
  }

  authzPort(): number | null {
    return this.settings.authzPort();
  }

  changed(row: ClusterRow): Promise<Job | null> {
    return this.reconciler.changed(row);
  }

  reconcile(clusterId: string): Promise<Job> {
    return this.reconciler.reconcile(clusterId);
  }

  job(clusterId: string, jobId: string): Promise<Job> {
    return this.reconciler.job(clusterId, jobId);
  }

  cancel(clusterId: string, jobId: string): Promise<Job> {
    return this.reconciler.cancel(clusterId, jobId);
  }

  stop(clusterId: string): Promise<void> {
    return this.reconciler.stop(clusterId);
  }

  cleanup(kube: Kube, row: ClusterRow): Promise<string[]> {
    return this.reconciler.cleanup(kube, row);
  }

  status(clusterId: string): Promise<GatewayStatusView> {
    return this.statuses.status(clusterId);
  }

  statusOfRecord(row: ClusterRow): Promise<GatewayStatusView> {
    return this.statuses.statusOfRecord(row);
  }

  allStatus(): Promise<GatewayStatusList> {
    return this.statuses.allStatus();
  }

  createKey(clusterId: string, name: unknown): Promise<GatewayKeyCreated> {
    return this.keys.createKey(clusterId, name);
  }

  listKeys(clusterId: string): Promise<GatewayKeyList> {
    return this.keys.listKeys(clusterId);
  }

  deleteKey(clusterId: string, name: string): Promise<void> {
    return this.keys.deleteKey(clusterId, name);
  }

  authorize(clusterId: string, authorization: string | undefined, source: string): Promise<{ headers: Record<string, string> }> {
    return this.authorizer.authorize(clusterId, authorization, source);
  }
}
