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

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** FastAPI's `detail` is a string or a list of `{loc, msg}`. */
function detailText(body: unknown, status: number): string {
  const d = (body as { detail?: unknown } | null)?.detail;
  if (typeof d === 'string') return d;
  if (Array.isArray(d)) return d.map((e) => `${(e.loc ?? []).slice(1).join('.') || 'body'}: ${e.msg ?? 'invalid'}`).join('; ');
  return `HTTP ${status}`;
}

export function isActive(job: JobView): boolean {
  return job.status === 'queued' || job.status === 'running';
}

/** How the client authenticates: the token to send, and where a 401 is reported. Default: none. */
export interface ApiAuth {
  get(): string | null;
  unauthorized(sent: string | null): void;
}

export function createKindApi(base: string, auth?: ApiAuth) {
  const root = base.replace(/\/$/, '');
  /** fetch with the bearer header when a token is set; a 401 is reported to `auth` and thrown. */
  async function send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Response> {
    const token = auth?.get() ?? null;
    // Writes carry the header the listener asks of browser writes (an HTML form of another site cannot send it).
    const sent: Record<string, string> = method === 'GET' || method === 'HEAD' ? { ...headers } : { ...headers, 'x-ironlens-request': 'kind' };
    if (token) sent.authorization = `Bearer ${token}`;
    const res = await fetch(`${root}${path}`, { method, headers: sent, body });
    if (res.status === 401) auth?.unauthorized(token);
    return res;
  }
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await send(
      method,
      path,
      body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body === undefined ? undefined : JSON.stringify(body),
    );
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    if (!res.ok) throw new ApiError(res.status, detailText(parsed, res.status));
    return parsed as T;
  }
  /** The file as a Blob, fetched with the bearer header (a plain link cannot carry it). */
  async function blob(path: string): Promise<Blob> {
    const res = await send('GET', path, {});
    if (!res.ok) {
      let parsed: unknown = null;
      try {
        parsed = await res.json();
      } catch {
        parsed = null;
      }
      throw new ApiError(res.status, detailText(parsed, res.status));
    }
    return res.blob();
  }
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

/** Saves a Blob as a file through an object URL (the browser's download, with a name). */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
