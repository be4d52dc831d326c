import type { ClusterNodes, DrainOptions, DrainResult, NodeLookup, NodeRef } from '../adapters/cluster-nodes';

/** One node of a {@link FakeClusterNodes}. */
export interface FakeNode {
  cluster_id: string;
  name: string;
  addresses: string[];
  unschedulable: boolean;
  ready: boolean;
  /** Pods on it (`namespace/name`); a drain empties the list. */
  pods: string[];
  /** A PodDisruptionBudget (`namespace/name`) that refuses every eviction from this node. */
  blockedBy: string | null;
}

/**
 * A stand-in for the clusters workers are nodes of (the `ClusterNodes` port the cluster manager
 * implements over the eviction API; its own tests run against a real API server): nodes with a
 * cordon flag, a Ready flag and pods, a PodDisruptionBudget that blocks a node's drain, and a
 * log of every call in order (`cordon n1`, `drain n1`, `uncordon n1`). `gate`, when set, is
 * awaited at the start of each drain (a test holds it and lets it go when it chooses).
 */
export class FakeClusterNodes implements ClusterNodes {
  readonly nodes = new Map<string, FakeNode>();
  readonly calls: string[] = [];
  gate: ((node: string) => Promise<void>) | null = null;

  add(name: string, opts: Partial<Omit<FakeNode, 'name'>> = {}): FakeNode {
    const n: FakeNode = { cluster_id: opts.cluster_id ?? 'c1', name, addresses: opts.addresses ?? [], unschedulable: opts.unschedulable ?? false, ready: opts.ready ?? true, pods: opts.pods ?? [], blockedBy: opts.blockedBy ?? null };
    this.nodes.set(name, n);
    return n;
  }

  private node(ref: NodeRef): FakeNode {
    const n = this.nodes.get(ref.name);
    if (!n || n.cluster_id !== ref.cluster_id) throw new Error(`no node ${ref.name} in cluster ${ref.cluster_id}`);
    return n;
  }

  async find(w: NodeLookup): Promise<NodeRef | null> {
    for (const n of this.nodes.values()) {
      if (w.cluster_id && n.cluster_id !== w.cluster_id) continue;
      if (n.name === w.hostname || n.name === w.worker_id || n.addresses.some((a) => w.addresses.includes(a))) return { cluster_id: n.cluster_id, name: n.name };
    }
    return null;
  }

  async cordon(ref: NodeRef): Promise<{ was_unschedulable: boolean }> {
    this.calls.push(`cordon ${ref.name}`);
    const n = this.node(ref);
    const was = n.unschedulable;
    n.unschedulable = true;
    return { was_unschedulable: was };
  }

  async drain(ref: NodeRef, opts: DrainOptions): Promise<DrainResult> {
    this.calls.push(`drain ${ref.name}`);
    if (this.gate) await this.gate(ref.name);
    if (opts.signal?.aborted) throw opts.signal.reason;
    const n = this.node(ref);
    if (n.blockedBy) return { ok: false, reason: `blocked by PDB ${n.blockedBy}: an eviction from ${ref.name} was refused for ${Math.round(opts.timeoutMs / 1000)} s`, blocked_by: n.blockedBy };
    const evicted = n.pods;
    n.pods = [];
    return { ok: true, evicted, left_pool: [] };
  }

  async ready(ref: NodeRef): Promise<boolean> {
    return this.node(ref).ready;
  }

  async uncordon(ref: NodeRef): Promise<void> {
    this.calls.push(`uncordon ${ref.name}`);
    this.node(ref).unschedulable = false;
  }
}
