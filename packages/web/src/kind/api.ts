/** The kind panel's REST API (seed 001), as the dashboard uses it. Its shapes are the server's own schemas. */
import type {
  CancelView,
  ClusterSummary,
  CreateAccepted,
  CreateClusterBody,
  DeleteView,
  HealthView,
  JobView,
  StatsView,
  VersionsView,
  WorkloadsView,
} from '@ironlens/kind/api';
import { type ApiAuth, createHttp } from '../shared/http';

export { ApiError, saveBlob } from '../shared/http';

export function isActive(job: JobView): boolean {
  return job.status === 'queued' || job.status === 'running';
}

export function createKindApi(base: string, auth?: ApiAuth) {
  const http = createHttp(base, auth, { client: 'kind' });
  const root = http.base;
  const call = http.call;
  /** The file as a Blob, fetched with the bearer header (a plain link cannot carry it). */
  const blob = (path: string) => http.blob('GET', path);
  return {
    base: root,
    health: () => call<HealthView>('GET', '/health'),
    healthUrl: `${root}/health`,
    versions: () => call<VersionsView>('GET', '/versions'),
    stats: () => call<StatsView>('GET', '/stats'),
    clusters: () => call<ClusterSummary[]>('GET', '/clusters'),
    createCluster: (req: CreateClusterBody) => call<CreateAccepted>('POST', '/clusters', req),
    deleteCluster: (name: string) => call<DeleteView>('DELETE', `/clusters/${encodeURIComponent(name)}`),
    workloads: (name: string) => call<WorkloadsView>('GET', `/clusters/${encodeURIComponent(name)}/workloads`),
    kubeconfigUrl: (name: string) => `${root}/clusters/${encodeURIComponent(name)}/kubeconfig`,
    kubeconfig: (name: string) => blob(`/clusters/${encodeURIComponent(name)}/kubeconfig`),
    jobs: (limit = 30) => call<JobView[]>('GET', `/jobs?limit=${limit}`),
    job: (id: string) => call<JobView>('GET', `/jobs/${encodeURIComponent(id)}`),
    cancelJob: (id: string) => call<CancelView>('POST', `/jobs/${encodeURIComponent(id)}/cancel`),
  };
}

export type KindApi = ReturnType<typeof createKindApi>;
