/**
 * The permission of each route of the kind panel (seed 001), relative to where the plugin is
 * mounted (issue 20, docs/access.md). A kubeconfig is cluster-admin: an operator's, not a
 * viewer's. Routes added later declare their own (`config: { permission }`).
 */
export const KIND_ROUTE_PERMISSIONS: Readonly<Record<string, string>> = {
  'GET /api/v1/health': 'kind:environment:read',
  'GET /api/v1/versions': 'kind:environment:read',
  'GET /api/v1/stats': 'kind:cluster:read',
  'GET /api/v1/clusters': 'kind:cluster:read',
  'POST /api/v1/clusters': 'kind:cluster:create',
  'GET /api/v1/clusters/:name': 'kind:cluster:read',
  'GET /api/v1/clusters/:name/kubeconfig': 'kind:kubeconfig:read',
  'GET /api/v1/clusters/:name/workloads': 'kind:cluster:read',
  'DELETE /api/v1/clusters/:name': 'kind:cluster:delete',
  'GET /api/v1/jobs': 'kind:job:read',
  'GET /api/v1/jobs/:job_id': 'kind:job:read',
  'POST /api/v1/jobs/:job_id/cancel': 'kind:job:cancel',
  // The dashboard and its assets hold no state.
  'GET /': 'public',
  'GET /ui': 'public',
  'GET /static/*': 'public',
};
