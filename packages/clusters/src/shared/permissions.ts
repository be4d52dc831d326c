/**
 * The permission of each route of the cluster manager (seed 000) and its Kubespray bootstrap,
 * Lens' names where Lens has the route (issue 20, docs/access.md). Routes added later declare
 * their own (`config: { permission }`); a route in neither place is refused.
 */
export const CLUSTERS_ROUTE_PERMISSIONS: Readonly<Record<string, string>> = {
  'GET /api/v1/versions': 'cluster:cluster:read',
  'GET /api/v1/system/database': 'cluster:cluster:read',
  'GET /api/cluster/lens-hosts': 'cluster:cluster:read',
  'GET /api/cluster/clusters': 'cluster:cluster:read',
  'POST /api/cluster/clusters': 'cluster:cluster:create',
  'PATCH /api/cluster/clusters/:cluster_id': 'cluster:cluster:update',
  'DELETE /api/cluster/clusters/:cluster_id': 'cluster:cluster:delete',
  'POST /api/cluster/clusters/:cluster_id/hf-token-secrets': 'cluster:hf-token:create',
  'PUT /api/cluster/clusters/:cluster_id/hf-token-secret': 'cluster:hf-token:update',
  'POST /api/cluster/clusters/:cluster_id/software-downloads': 'cluster:software:download',
  'GET /api/cluster/clusters/:cluster_id/software-downloads': 'cluster:cluster:read',
  'POST /api/cluster/clusters/:cluster_id/images/prepull': 'cluster:image:prepull',
  'GET /api/cluster/clusters/:cluster_id/images/prepull': 'cluster:cluster:read',
  'POST /api/cluster/clusters/:cluster_id/crds': 'cluster:crd:install',
  'GET /api/cluster/clusters/:cluster_id/crds': 'cluster:cluster:read',
  'GET /api/cluster/clusters/:cluster_id/kubernetes-version': 'cluster:cluster:read',
  'GET /api/cluster/clusters/:cluster_id/gateway-port-check': 'cluster:gateway:check',
  'POST /api/cluster/clusters/:cluster_id/nodes/cordon': 'cluster:node:operate',
  'POST /api/cluster/clusters/:cluster_id/nodes/uncordon': 'cluster:node:operate',
  // Secrets' metadata: not a viewer's.
  'GET /api/cluster/model-secrets': 'cluster:model-secret:read',
  'GET /api/cluster/session': 'cluster:session:read',
  'GET /api/cluster/overview': 'cluster:session:read',
  'GET /api/cluster/sessions/:session_id': 'cluster:session:read',
  'GET /api/cluster/sessions/:session_id/planning-discovery/:resource': 'cluster:session:read',
  'GET /api/cluster-overview/sessions/:session_id': 'cluster:session:read',
  'POST /api/cluster-overview/sessions/:session_id/disconnect': 'cluster:session:operate',
  // The catch-alls answer 404 in problem+json, after authentication.
  'ALL /api/cluster/*': 'cluster:cluster:read',
  'ALL /api/cluster-overview/*': 'cluster:cluster:read',
  // Kubespray bootstrap
  'POST /api/cluster/bootstrap/host-keys': 'cluster:bootstrap:preflight',
  'POST /api/cluster/bootstrap/preflight': 'cluster:bootstrap:preflight',
  'GET /api/cluster/bootstrap/ssh-public-key': 'cluster:ssh-key:read',
  'GET /api/cluster/bootstrap': 'cluster:bootstrap:read',
  'POST /api/cluster/bootstrap': 'cluster:bootstrap:execute',
  'GET /api/cluster/bootstrap/:id': 'cluster:bootstrap:read',
  'POST /api/cluster/bootstrap/:id/cancel': 'cluster:bootstrap:cancel',
};
