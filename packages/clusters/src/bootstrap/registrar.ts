/**
 * What the bootstrap needs from the cluster manager to register the cluster it made: the same
 * thing the cluster manager's `POST /api/cluster/clusters` does with an uploaded kubeconfig.
 * The cluster manager's service implements it; `ironlens serve` wires the two together.
 */
export interface ClusterRegistrar {
  register(input: { name: string; description?: string; kubeconfig: string }): Promise<{ id: string }>;
}
