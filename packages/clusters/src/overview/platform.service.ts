import { AppError, type OperationsLog } from '@ironlens/core';
import type { V1Node } from '@kubernetes/client-node';
import type { StackProfile } from '../shared/profile';
import { type ClusterAccess, clusterFailure, onCluster } from '../registry/cluster-access';
import type { ClusterService } from '../registry/cluster.service';
import { type CordonResult, type CordonResults, type KubernetesVersionCheck, type ModelSecrets, PLANNING_RESOURCES, type PlanningDiscovery, type PlanningResource } from '../api/clusters';

export type { CordonResult, KubernetesVersionCheck } from '../api/clusters';

// Planning discovery's allow-list (the only reads a session may ask for; anything else, a body
// of another service included, answers `{result: null}`) is part of the API: the route's
// `resource` enum is generated from it (`../api/clusters`).
export { PLANNING_RESOURCES, type PlanningResource } from '../api/clusters';

/** The kind of each allow-listed answer (`version` is a VersionInfo, which has no `kind`). */
export const PLANNING_KINDS: Record<PlanningResource, string | null> = {
  version: null,
  nodes: 'NodeList',
  deviceclasses: 'DeviceClassList',
  resourceslices: 'ResourceSliceList',
  runtimeclasses: 'RuntimeClassList',
};


const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

export function isControlPlane(n: V1Node): boolean {
  const labels = n.metadata?.labels ?? {};
  return CONTROL_PLANE_LABELS.some((l) => l in labels);
}

/** `v1.32.0` / `1.32` → [1, 32]. */
function majorMinor(v: string): [number, number] {
  const m = /^v?(\d+)\.(\d+)/.exec(v.trim());
  if (!m) throw new Error(`not a version: ${v}`);
  return [Number(m[1]), Number(m[2])];
}

/**
 * The small live reads and writes: Kubernetes version check, planning discovery, cordon and
 * uncordon, model-secret listing.
 */
export class PlatformService {
  constructor(
    private readonly access: ClusterAccess,
    private readonly clusters: ClusterService,
    private readonly ops: OperationsLog,
    private readonly profile: StackProfile,
  ) {}

  /** Always 200: an unreachable cluster is `{reachable: false, error}`. */
  async kubernetesVersion(clusterId: string): Promise<KubernetesVersionCheck> {
    const row = await this.access.record(clusterId);
    const min = this.profile.min_k8s_version;
    try {
      const v = await this.access.kube(row).version();
      const major = Number.parseInt(v.major, 10);
      const minor = Number.parseInt(v.minor, 10);
      const [gMajor, gMinor] = Number.isFinite(major) && Number.isFinite(minor) ? [major, minor] : majorMinor(v.gitVersion);
      const [minMajor, minMinor] = majorMinor(min);
      const supported = gMajor > minMajor || (gMajor === minMajor && gMinor >= minMinor);
      return { reachable: true, version: `${gMajor}.${gMinor}`, min_k8s_version: min, supported };
    } catch (e) {
      const mapped = clusterFailure(e);
      return { reachable: false, error: mapped instanceof Error ? mapped.message : String(mapped), min_k8s_version: min };
    }
  }

  /** One allow-listed read for an active session; `{result: null}` when it fails. */
  async planningDiscovery(sessionId: string, resource: string): Promise<PlanningDiscovery> {
    if (!Object.hasOwn(PLANNING_RESOURCES, resource)) {
      throw new AppError('invalid_planning_resource', `resource must be one of ${Object.keys(PLANNING_RESOURCES).join(', ')}`);
    }
    const { row } = await this.clusters.activeSession(sessionId);
    const key = resource as PlanningResource;
    try {
      const kube = this.access.kube(row);
      if (key === 'version') return { result: await kube.version() };
      // The adapter checks the kind, the size and the depth: another service's JSON, a body too
      // deep to render back, or anything not a list of objects is `{result: null}`.
      const result = await kube.getJson<{ kind?: unknown; items?: unknown; [k: string]: unknown }>(PLANNING_RESOURCES[key], PLANNING_KINDS[key] ?? undefined);
      return { result: Array.isArray(result.items) || result.items === undefined ? result : null };
    } catch {
      return { result: null };
    }
  }

  /** Cordon or uncordon nodes: one result per name; control-plane nodes are refused and left as they are. */
  async setSchedulable(clusterId: string, names: string[], cordon: boolean): Promise<CordonResults> {
    const row = await this.access.record(clusterId);
    const kube = this.access.kube(row);
    const unique = [...new Set(names)];
    const nodes = await onCluster(() => kube.listNodes());
    const byName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
    const items = await Promise.all(
      unique.map(async (name): Promise<CordonResult> => {
        const node = byName.get(name);
        if (!node) return { name, ok: false, schedulingDisabled: null, error: 'node not found' };
        if (isControlPlane(node)) return { name, ok: false, schedulingDisabled: !!node.spec?.unschedulable, error: 'control-plane nodes are not cordoned or uncordoned here' };
        try {
          const after = await kube.setUnschedulable(name, cordon);
          return { name, ok: true, schedulingDisabled: !!after.spec?.unschedulable, error: null };
        } catch (e) {
          const mapped = clusterFailure(e);
          return { name, ok: false, schedulingDisabled: !!node.spec?.unschedulable, error: mapped instanceof Error ? mapped.message : String(mapped) };
        }
      }),
    );
    await this.ops.append({ op: cordon ? 'cluster.nodes.cordon' : 'cluster.nodes.uncordon', status: 'ok', cluster_id: clusterId, nodes: items.filter((i) => i.ok).map((i) => i.name) });
    return { items };
  }

  /**
   * Secrets holding a model-access token (`HF_TOKEN` key), by namespace and name only.
   * `hostManagedAvailable`: the cluster's recorded HF token secret exists.
   */
  async modelSecrets(clusterId: string): Promise<ModelSecrets> {
    const row = await this.access.record(clusterId);
    const secrets = await onCluster(() => this.access.kube(row).listSecrets());
    const rec = row.hfTokenSecret;
    const items = secrets
      .filter((s) => s.data && Object.hasOwn(s.data, 'HF_TOKEN'))
      .map((s) => {
        const namespace = s.metadata?.namespace ?? '';
        const name = s.metadata?.name ?? '';
        return { namespace, name, hostManaged: !!rec && rec.namespace === namespace && rec.name === name };
      })
      .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
    return { hostManagedAvailable: items.some((i) => i.hostManaged), items };
  }
}
