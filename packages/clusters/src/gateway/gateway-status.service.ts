import type { Kube, KubeObjectRef } from '../adapters/kube.adapter';
import type { Condition, GatewayOperationView, GatewayStatusList, GatewayStatusView } from '../api/gateway';
import type { ClusterAccess } from '../registry/cluster-access';
import type { ClusterRepository, ClusterRow } from '../registry/cluster.repository';
import type { GatewayRepository, GatewayStateRow } from './gateway.repository';
import { authzPath, gatewayClassName, IPP_NAME, PROVIDERS } from './gateway.render';
import { type GatewaySettings, PORT_UNKNOWN } from './gateway.settings';

/**
 * The workers ironlens booted that joined a cluster (issue 24): the address each reported and the
 * node name the bootstrap's inventory gives it. `wiring.ts` makes it from the bootstrap's
 * `WorkerDirectory`; the gateway's public URL prefers such a node.
 */
export interface JoinedWorkers {
  joined(clusterId: string): Promise<Array<{ address: string; nodeName: string }>>;
}

/**
 * The status of a registration's shared gateway, read from its objects' own conditions (Lens'
 * `GatewayStatusCluster` shape with ironlens' details), for one cluster or all.
 */
export class GatewayStatusService {
  constructor(
    private readonly access: ClusterAccess,
    private readonly clusters: ClusterRepository,
    private readonly repo: GatewayRepository,
    private readonly runner: Pick<import('@ironlens/core').JobRunner, 'repository'>,
    private readonly settings: GatewaySettings,
    private readonly workers: JoinedWorkers | null = null,
  ) {}

  private get db() {
    return this.access.db;
  }

  async status(clusterId: string): Promise<GatewayStatusView> {
    const row = await this.access.record(clusterId);
    return this.statusOf(row);
  }

  /** The same status for a record already read (the cluster's overview shows it). */
  statusOfRecord(row: ClusterRow): Promise<GatewayStatusView> {
    return this.statusOf(row);
  }

  async allStatus(): Promise<GatewayStatusList> {
    const rows = await this.clusters.list(this.db, { includeDrafts: false });
    return { clusters: await Promise.all(rows.map((r) => this.statusOf(r))) };
  }

  private async lastOperation(row: ClusterRow, state: GatewayStateRow | null): Promise<GatewayOperationView | null> {
    if (!state?.jobId) return null;
    const job = await this.runner.repository.get(state.jobId);
    const status = state.state === 'running' ? 'running' : state.state === 'success' ? 'succeeded' : 'failed';
    return {
      id: state.jobId,
      kind: 'reconcile-gateway',
      status,
      clusterId: row.id,
      message: state.error ?? job?.message ?? '',
      detailJson: job ? { stage: job.stage ?? null, percent: job.percent ?? null, hookError: state.hookError } : null,
      createdByUserId: null,
      createdAt: state.startedAt ?? job?.createdAt ?? new Date().toISOString(),
      finishedAt: state.finishedAt,
    };
  }

  private async statusOf(row: ClusterRow): Promise<GatewayStatusView> {
    const i = this.settings.inputs(row);
    const state = await this.repo.state(this.db, row.id);
    const view: GatewayStatusView = {
      clusterId: row.id,
      clusterName: row.name,
      members: [],
      gatewayProvider: row.gatewayProvider,
      gatewayState: 'unknown',
      gatewayNamespace: row.gatewayNamespace,
      gatewayName: row.gatewayName,
      gatewayReady: null,
      gatewayAddress: null,
      gatewayPublicUrl: row.gatewayPublicUrl,
      gatewayPort: row.gatewayPort,
      gatewayNodeAddress: null,
      ippState: 'unknown',
      ippName: IPP_NAME,
      ippNamespace: row.gatewayNamespace,
      lastOperation: await this.lastOperation(row, state),
      gatewayClassName: i ? gatewayClassName(i) : null,
      gatewayClassConditions: [],
      gatewayConditions: [],
      ippReady: null,
      // Without a hook (no host, gke), or without its port, the cluster need not be read to say so.
      authz: { state: !i?.authzHost || i.provider === 'gke' ? 'disabled' : this.settings.hookPortUnknown(i) ? 'failed' : 'unknown', path: authzPath(row.id), endpoints: [], reason: i && this.settings.hookPortUnknown(i) ? PORT_UNKNOWN : (state?.hookError ?? null) },
      controlPlane: { state: 'unknown', deployments: [] },
      error: state?.error ?? null,
    };
    if (!i) {
      view.gatewayState = 'missing';
      view.ippState = 'missing';
      view.authz.state = 'disabled';
      view.controlPlane.state = 'none';
      return view;
    }
    let kube: Kube;
    try {
      kube = this.access.kube(row);
      const conds = (o: KubeObjectRef | null): Condition[] =>
        (((o?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[]).map((c) => ({
          type: String(c.type),
          status: String(c.status),
          reason: String(c.reason ?? ''),
          message: String(c.message ?? '').slice(0, 1000),
          ...(c.lastTransitionTime ? { lastTransitionTime: String(c.lastTransitionTime) } : {}),
        }));
      const GW = 'gateway.networking.k8s.io/v1';
      const [cls, gw, ipp, slice, deployments] = await Promise.all([
        kube.getObject(GW, 'GatewayClass', gatewayClassName(i)),
        kube.getObject(GW, 'Gateway', row.gatewayName, row.gatewayNamespace),
        kube.getObject('apps/v1', 'Deployment', IPP_NAME, row.gatewayNamespace),
        kube.getObject('discovery.k8s.io/v1', 'EndpointSlice', 'lens-authz-ironlens', row.gatewayNamespace),
        PROVIDERS[i.provider].controlPlaneNamespaces.length ? kube.listDeployments() : Promise.resolve([]),
      ]);
      view.gatewayClassConditions = conds(cls);
      view.gatewayConditions = conds(gw);
      view.gatewayState = gw ? 'installed' : 'missing';
      const programmed = view.gatewayConditions.find((c) => c.type === 'Programmed');
      view.gatewayReady = gw ? programmed?.status === 'True' : null;
      const addrs = ((gw?.status as { addresses?: Array<{ value?: string }> } | undefined)?.addresses ?? []).map((a) => String(a.value ?? '')).filter(Boolean);
      view.gatewayAddress = addrs[0] ?? null;
      view.ippState = ipp ? 'installed' : 'missing';
      const ippConds = conds(ipp);
      view.ippReady = ipp ? ippConds.some((c) => c.type === 'Available' && c.status === 'True') : null;
      const eps = ((slice as { endpoints?: Array<{ addresses?: string[] }> } | null)?.endpoints ?? []).flatMap((e) => e.addresses ?? []);
      view.authz.endpoints = eps.map(String);
      view.authz.state = !i.authzHost || i.provider === 'gke' ? 'disabled' : this.settings.hookPortUnknown(i) || state?.hookError ? 'failed' : slice ? 'ready' : 'missing';
      const ns = new Set(PROVIDERS[i.provider].controlPlaneNamespaces);
      // The control plane is what the provider's charts installed (Helm's label), not the proxies its controller creates there.
      const cp = deployments.filter((d) => ns.has(d.metadata?.namespace ?? '') && d.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'Helm');
      view.controlPlane.deployments = cp.map((d) => ({
        namespace: d.metadata?.namespace ?? '',
        name: d.metadata?.name ?? '',
        available: !!d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True'),
      }));
      view.controlPlane.state = ns.size === 0 ? 'none' : cp.length === 0 ? 'missing' : cp.every((d) => d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True')) ? 'ready' : 'progressing';
      if (row.gatewayPort !== null) {
        const [nodes, joined] = await Promise.all([kube.listNodes(), this.joinedWorkers(row.id, view)]);
        const readyNodes = nodes.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
        // A Ready node that is a worker ironlens booted and that joined this cluster (named from its
        // address by the bootstrap's inventory, or listing that address): the address it reported.
        const booted = joined.find((w) => readyNodes.some((n) => n.metadata?.name === w.nodeName || (n.status?.addresses ?? []).some((a) => a.address === w.address)));
        view.gatewayNodeAddress = booted?.address ?? readyNodes[0]?.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? null;
      }
    } catch (e) {
      view.error = `the cluster could not be read: ${(e as Error).message.slice(0, 300)}`;
    }
    if (!view.gatewayPublicUrl) {
      const host = view.gatewayAddress ?? view.gatewayNodeAddress;
      if (host && row.gatewayPort !== null) view.gatewayPublicUrl = `http://${host.includes(':') ? `[${host}]` : host}:${row.gatewayPort}/v1`;
      else if (view.gatewayAddress) view.gatewayPublicUrl = `http://${view.gatewayAddress}/v1`;
    }
    return view;
  }

  /**
   * The workers ironlens booted that joined this cluster; none when no directory is wired in. A
   * directory that fails gives none too, and says so in the view's `error`: the URL then falls
   * back to the first Ready node's address, which the user should know.
   */
  private async joinedWorkers(clusterId: string, view: GatewayStatusView): Promise<Array<{ address: string; nodeName: string }>> {
    if (!this.workers) return [];
    try {
      return await this.workers.joined(clusterId);
    } catch (e) {
      const note = `the booted workers that joined this cluster could not be read (${String((e as Error)?.message ?? e).slice(0, 300)}): gatewayNodeAddress is the first Ready node's, not a booted worker's`;
      view.error = view.error ? `${view.error}; ${note}` : note;
      return [];
    }
  }
}
