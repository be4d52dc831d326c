/**
 * What a rollout needs from the Kubernetes clusters its workers are nodes of (issue 31). metal
 * never imports the cluster manager: `packages/clusters` implements this port over the clusters
 * registered there (their kubeconfigs, the eviction API), and `ironlens serve` wires it in.
 * Without it (a control plane with no cluster manager) no worker is a node: nothing is drained.
 */

/** A node of a registered cluster. */
export interface NodeRef {
  cluster_id: string;
  name: string;
}

/** What ironlens knows of a worker that can tell which node it is. */
export interface NodeLookup {
  worker_id: string;
  hostname: string;
  /** The cluster a bootstrap by worker registered it into (`cluster_id` of the worker view), or null. */
  cluster_id: string | null;
  /** The addresses of its last host report (a node's InternalIP is one of them). */
  addresses: string[];
}

export interface DrainOptions {
  /** Past it, an eviction still refused (by a PodDisruptionBudget) fails the drain. */
  timeoutMs: number;
  /** How long a model server that left its InferencePool keeps running before it is evicted. */
  poolLeaveMs: number;
  signal?: AbortSignal;
  /** Progress lines (evictions, waits), for the rollout's steps. */
  log?: (line: string) => void;
}

export type DrainResult =
  | { ok: true; evicted: string[]; left_pool: string[] }
  /** `blocked_by`: the PodDisruptionBudget (`namespace/name`) that refused an eviction until the timeout. */
  | { ok: false; reason: string; blocked_by: string | null };

export interface ClusterNodes {
  /** The node this worker is in a registered cluster, or null when it is none. */
  find(worker: NodeLookup): Promise<NodeRef | null>;
  /** Marks the node unschedulable; answers whether it already was. */
  cordon(node: NodeRef): Promise<{ was_unschedulable: boolean }>;
  /**
   * Evicts the node's pods through the eviction API (PodDisruptionBudgets respected; DaemonSet
   * and mirror pods stay); a pod behind an InferencePool leaves the pool first. Resolves when
   * the pods are gone, or with why not.
   */
  drain(node: NodeRef, opts: DrainOptions): Promise<DrainResult>;
  /** The node's Ready condition is True. */
  ready(node: NodeRef): Promise<boolean>;
  uncordon(node: NodeRef): Promise<void>;
}

/** No cluster manager here: no worker is a node. */
export const NO_CLUSTER_NODES: ClusterNodes = {
  find: async () => null,
  cordon: async () => ({ was_unschedulable: false }),
  drain: async () => ({ ok: true, evicted: [], left_pool: [] }),
  ready: async () => true,
  uncordon: async () => {},
};
