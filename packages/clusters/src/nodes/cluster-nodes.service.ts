import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { Kube } from '../adapters/kube.adapter';

/**
 * The nodes of registered clusters as a rollout of the boot control plane needs them (issue 31):
 * which node a worker is, cordon, drain through the eviction API, Ready, uncordon. The boot control
 * plane (metal) defines this port (`ClusterNodes`) and `ironlens serve` hands it this
 * implementation; clusters never imports metal, so the shapes are repeated here, and the compiler
 * checks them against metal's where serve wires the two.
 */
export interface NodeRef {
  cluster_id: string;
  name: string;
}

export interface NodeLookup {
  worker_id: string;
  hostname: string;
  cluster_id: string | null;
  addresses: string[];
}

export interface DrainOptions {
  timeoutMs: number;
  poolLeaveMs: number;
  signal?: AbortSignal;
  log?: (line: string) => void;
}

export type DrainResult = { ok: true; evicted: string[]; left_pool: string[] } | { ok: false; reason: string; blocked_by: string | null };

/** The registered clusters, and a connection to one (its kubeconfig and proxy settings). */
export interface NodeClusters {
  ids(): Promise<string[]>;
  kube(id: string): Promise<Kube>;
}

export interface ClusterNodesOptions {
  /** Between two rounds of evictions a budget refused, and two looks at the pods still terminating. Default is `2000` ms. */
  retryMs?: number;
  /** Default is `Date.now`. */
  now?: () => number;
}

/** A Kubernetes object name (DNS-1123 subdomain): what may reach a path or a message from a cluster's answer. */
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const MIRROR = 'kubernetes.io/config.mirror';
/** The InferencePool API versions, newest first (Gateway API Inference Extension: v1, then the alpha). */
const POOL_APIS = ['/apis/inference.networking.k8s.io/v1', '/apis/inference.networking.x-k8s.io/v1alpha2'];

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const stringMap = (v: unknown): Record<string, string> => (isRecord(v) ? Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string')) : {});

/** A LabelSelector as a cluster answered it, keeping only well-formed parts. */
function selectorOf(v: unknown): Selector | null {
  if (!isRecord(v)) return null;
  const exprs = Array.isArray(v.matchExpressions)
    ? v.matchExpressions
        .filter(isRecord)
        .filter((e) => typeof e.key === 'string' && typeof e.operator === 'string')
        .map((e) => ({ key: e.key as string, operator: e.operator as string, values: Array.isArray(e.values) ? e.values.filter((x): x is string => typeof x === 'string') : [] }))
    : [];
  return { matchLabels: stringMap(v.matchLabels), matchExpressions: exprs };
}

/** Whether labels match a LabelSelector (an empty selector matches everything, as Kubernetes reads it for a PDB). */
export function selectorMatches(sel: Selector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const v = labels[e.key];
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(v))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(v)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

const selectorKeys = (sel: Selector | null): string[] => (sel ? [...Object.keys(sel.matchLabels ?? {}), ...(sel.matchExpressions ?? []).map((e) => e.key)] : []);

function podRef(p: V1Pod): { namespace: string; name: string; uid: string; labels: Record<string, string> } | null {
  const namespace = p.metadata?.namespace ?? '';
  const name = p.metadata?.name ?? '';
  if (!NAME.test(namespace) || !NAME.test(name)) return null;
  return { namespace, name, uid: String(p.metadata?.uid ?? ''), labels: stringMap(p.metadata?.labels) };
}

/** Pods a drain leaves: DaemonSet pods (their controller puts them back at once), mirror pods (the kubelet's own), and finished ones. */
function staysOnNode(p: V1Pod): boolean {
  if ((p.metadata?.ownerReferences ?? []).some((o) => o.controller && o.kind === 'DaemonSet')) return true;
  if (isRecord(p.metadata?.annotations) && Object.hasOwn(p.metadata.annotations, MIRROR)) return true;
  return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * `ClusterNodes` over the clusters registered in the cluster manager (issue 31).
 *
 * - **find**: the worker's own cluster when it joined one (`cluster_id`) and it is still
 *   registered, else every registered cluster: a node named like the worker's hostname or id, else
 *   a node with one of the worker's reported addresses (Kubespray names nodes after addresses).
 * - **drain**: every pod of the node but DaemonSet, mirror and finished pods; a pod an
 *   InferencePool selects first leaves the pool (the pool's selector labels are removed from it,
 *   except those its controller or a PodDisruptionBudget selects it by, so it is neither orphaned
 *   nor unprotected), and keeps running `poolLeaveMs` so the endpoint picker stops sending it
 *   requests; then each pod is evicted through the eviction API, a refusal (429: a budget) retried
 *   every `retryMs` until the timeout, when the drain fails "blocked by PDB <namespace>/<name>"
 *   and the pods that stay get their pool labels back; last, it waits until the evicted pods are gone.
 */
export class KubeClusterNodes {
  private readonly retryMs: number;
  private readonly now: () => number;

  constructor(
    private readonly clusters: NodeClusters,
    opts: ClusterNodesOptions = {},
  ) {
    this.retryMs = opts.retryMs ?? 2000;
    this.now = opts.now ?? Date.now;
  }

  async find(w: NodeLookup): Promise<NodeRef | null> {
    const ids = await this.clusters.ids();
    const own = w.cluster_id && ids.includes(w.cluster_id) ? [w.cluster_id] : ids;
    for (const id of own) {
      let kube: Kube;
      let nodes: V1Node[] | undefined;
      try {
        kube = await this.clusters.kube(id);
        for (const name of new Set([w.hostname, w.worker_id])) {
          if (NAME.test(name) && (await kube.getNode(name))) return { cluster_id: id, name };
        }
        if (w.addresses.length) nodes = await kube.listNodes();
      } catch (e) {
        // The worker's own cluster must answer (a node that cannot be drained is not rebooted); another may not.
        if (own.length === 1 && w.cluster_id === id) throw e;
        continue;
      }
      const hit = nodes?.find((n) => (n.status?.addresses ?? []).some((a) => typeof a.address === 'string' && w.addresses.includes(a.address)));
      const name = hit?.metadata?.name;
      if (name && NAME.test(name)) return { cluster_id: id, name };
    }
    return null;
  }

  async cordon(node: NodeRef): Promise<{ was_unschedulable: boolean }> {
    const kube = await this.clusters.kube(node.cluster_id);
    const n = await kube.getNode(node.name);
    if (!n) throw new Error(`node ${node.name} is gone from cluster ${node.cluster_id}`);
    const was = n.spec?.unschedulable === true;
    if (!was) await kube.setUnschedulable(node.name, true);
    return { was_unschedulable: was };
  }

  async uncordon(node: NodeRef): Promise<void> {
    await (await this.clusters.kube(node.cluster_id)).setUnschedulable(node.name, false);
  }

  async ready(node: NodeRef): Promise<boolean> {
    const n = await (await this.clusters.kube(node.cluster_id)).getNode(node.name);
    return !!n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  }

  async drain(node: NodeRef, opts: DrainOptions): Promise<DrainResult> {
    const kube = await this.clusters.kube(node.cluster_id);
    const deadline = this.now() + opts.timeoutMs;
    const log = opts.log ?? (() => {});
    const onNode = async () => (await kube.listPods({ fieldSelector: `spec.nodeName=${node.name}` })).filter((p) => !staysOnNode(p) && !p.metadata?.deletionTimestamp);
    const pods = (await onNode()).map(podRef).filter((p): p is NonNullable<typeof p> => !!p);
    const pdbs = new Map<string, Array<{ name: string; selector: Selector | null }>>();
    const budgetsOf = async (ns: string) => {
      let list = pdbs.get(ns);
      if (!list) {
        const r = await kube.getJson<{ items?: unknown }>(`/apis/policy/v1/namespaces/${encodeURIComponent(ns)}/poddisruptionbudgets`, 'PodDisruptionBudgetList');
        list = (Array.isArray(r.items) ? r.items : [])
          .filter(isRecord)
          .map((b) => ({ name: String(isRecord(b.metadata) ? b.metadata.name : ''), selector: selectorOf(isRecord(b.spec) ? b.spec.selector : null) }))
          .filter((b) => NAME.test(b.name));
        pdbs.set(ns, list);
      }
      return list;
    };

    // 1. Model servers leave their InferencePool first.
    const leftPool: string[] = [];
    /** The pool labels each pod gave up, put back when the drain fails and the pod stays. */
    const removed = new Map<string, Record<string, string>>();
    for (const p of pods) {
      const pools = await this.poolSelectors(kube, p.namespace);
      const matching = pools.filter((sel) => Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => p.labels[k] === v));
      if (!matching.length) continue;
      const kept = new Set([...(await this.ownerSelectorKeys(kube, p.namespace, p.name)), ...(await budgetsOf(p.namespace)).filter((b) => b.selector && selectorMatches(b.selector, p.labels)).flatMap((b) => selectorKeys(b.selector))]);
      const drop = [...new Set(matching.flatMap((sel) => Object.keys(sel)))].filter((k) => !kept.has(k));
      if (!drop.length) {
        log(`${p.namespace}/${p.name} is selected by an InferencePool only through labels its controller or budget needs: evicted without leaving the pool first`);
        continue;
      }
      await kube.patchPodLabels(p.namespace, p.name, Object.fromEntries(drop.map((k) => [k, null])));
      removed.set(`${p.namespace}/${p.name}`, Object.fromEntries(drop.map((k) => [k, p.labels[k]])));
      leftPool.push(`${p.namespace}/${p.name}`);
      log(`${p.namespace}/${p.name} left its InferencePool (label ${drop.join(', ')} removed)`);
    }
    if (leftPool.length && opts.poolLeaveMs > 0) await sleep(opts.poolLeaveMs, opts.signal);

    // 2. Evictions, a budget's refusal retried until the timeout.
    const evicted: string[] = [];
    let pending = pods;
    while (pending.length) {
      const refused: typeof pods = [];
      let blockedBy: string | null = null;
      let message = '';
      for (const p of pending) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        const r = await kube.evictPod(p.namespace, p.name);
        if (r.outcome === 'refused') {
          refused.push(p);
          const budget = (await budgetsOf(p.namespace)).find((b) => b.selector && selectorMatches(b.selector, p.labels));
          blockedBy ??= budget ? `${p.namespace}/${budget.name}` : null;
          message ||= r.message;
        } else {
          evicted.push(`${p.namespace}/${p.name}`);
          log(`evicted ${p.namespace}/${p.name}${r.outcome === 'gone' ? ' (it was gone)' : ''}`);
        }
      }
      pending = refused;
      if (!pending.length) break;
      if (this.now() >= deadline) {
        const which = pending.map((p) => `${p.namespace}/${p.name}`).join(', ');
        // The pods that stay go back into their pool.
        for (const p of pending) {
          const labels = removed.get(`${p.namespace}/${p.name}`);
          if (labels) await kube.patchPodLabels(p.namespace, p.name, labels).catch(() => log(`${p.namespace}/${p.name} could not be put back into its InferencePool`));
        }
        return {
          ok: false,
          reason: `${blockedBy ? `blocked by PDB ${blockedBy}` : 'evictions refused'}: ${which} could not be evicted from ${node.name} within ${Math.round(opts.timeoutMs / 1000)} s (${message.slice(0, 200)})`,
          blocked_by: blockedBy,
        };
      }
      await sleep(Math.min(this.retryMs, Math.max(0, deadline - this.now())), opts.signal);
    }

    // 3. The evicted pods are gone (their grace periods ended).
    const uids = new Set(pods.map((p) => p.uid));
    for (;;) {
      const left = (await kube.listPods({ fieldSelector: `spec.nodeName=${node.name}` })).filter((p) => uids.has(String(p.metadata?.uid ?? '')));
      if (!left.length) break;
      if (this.now() >= deadline) {
        return { ok: false, reason: `evicted pods still terminating on ${node.name} after ${Math.round(opts.timeoutMs / 1000)} s: ${left.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ')}`, blocked_by: null };
      }
      await sleep(Math.min(this.retryMs, Math.max(0, deadline - this.now())), opts.signal);
    }
    return { ok: true, evicted, left_pool: leftPool };
  }

  /** The `matchLabels` of every InferencePool of a namespace (v1, else the alpha), none when the API is not served. */
  private async poolSelectors(kube: Kube, ns: string): Promise<Array<Record<string, string>>> {
    for (const api of POOL_APIS) {
      let r: { items?: unknown };
      try {
        r = await kube.getJson<{ items?: unknown }>(`${api}/namespaces/${encodeURIComponent(ns)}/inferencepools`, 'InferencePoolList');
      } catch {
        continue; // not served (404), or not this version
      }
      return (Array.isArray(r.items) ? r.items : []).filter(isRecord).map((p) => {
        const spec = isRecord(p.spec) ? p.spec : {};
        // v1: selector is {matchLabels}; v1alpha2: selector is the label map itself.
        const sel = isRecord(spec.selector) && isRecord(spec.selector.matchLabels) ? spec.selector.matchLabels : spec.selector;
        return stringMap(sel);
      });
    }
    return [];
  }

  /** The label keys the pod's controller (a ReplicaSet, StatefulSet…) selects it by. */
  private async ownerSelectorKeys(kube: Kube, ns: string, pod: string): Promise<string[]> {
    const p = (await kube.listPods({ namespace: ns, fieldSelector: `metadata.name=${pod}` }))[0];
    const owner = p?.metadata?.ownerReferences?.find((o) => o.controller);
    if (!owner || !NAME.test(owner.name) || !/^[A-Za-z0-9]+$/.test(owner.kind) || !/^[a-z0-9.\-/]+$/.test(owner.apiVersion)) return [];
    const o = await kube.getObject(owner.apiVersion, owner.kind, owner.name, ns).catch(() => null);
    return selectorKeys(selectorOf(isRecord(o?.spec) ? (o.spec as Record<string, unknown>).selector : null));
  }
}
