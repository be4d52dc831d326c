import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One answer of the hostile server: a status and a JSON body, a raw body, or a streamed body of `streamBytes`. */
export type HostileAnswer =
  | { status?: number; json: unknown; delayMs?: number }
  | { status?: number; raw: string; contentType?: string; delayMs?: number }
  | { status?: number; streamBytes: number; prefix?: string };

const list = (kind: string, items: unknown[] = []) => ({ kind, apiVersion: 'v1', metadata: {}, items });

/** The lists an overview reads, each empty and well formed. */
export function emptyClusterAnswers(): Record<string, HostileAnswer> {
  return {
    '/readyz': { raw: 'ok', contentType: 'text/plain' },
    '/version': { json: { major: '1', minor: '36', gitVersion: 'v1.36.0' } },
    '/api/v1/nodes': { json: list('NodeList') },
    '/api/v1/namespaces': { json: list('NamespaceList') },
    '/apis/apps/v1/deployments': { json: list('DeploymentList') },
    '/apis/apps/v1/daemonsets': { json: list('DaemonSetList') },
    '/apis/apps/v1/statefulsets': { json: list('StatefulSetList') },
    '/api/v1/pods': { json: list('PodList') },
    '/api/v1/services': { json: list('ServiceList') },
    '/apis/resource.k8s.io/v1/resourceslices': { json: list('ResourceSliceList') },
    '/apis/resource.k8s.io/v1/resourceclaims': { json: list('ResourceClaimList') },
  };
}

/**
 * An API server of the test's own on loopback that answers what it is told, per path: the
 * bodies a hostile (or broken) cluster sends. Counts requests per path. Plain HTTP, any token.
 */
export class HostileApiServer {
  readonly answers = new Map<string, HostileAnswer>();
  readonly counts = new Map<string, number>();
  private server?: Server;
  url = '';

  constructor(answers: Record<string, HostileAnswer> = emptyClusterAnswers()) {
    for (const [k, v] of Object.entries(answers)) this.answers.set(k, v);
  }

  set(path: string, answer: HostileAnswer): void {
    this.answers.set(path, answer);
  }

  count(path: string): number {
    return this.counts.get(path) ?? 0;
  }

  async start(host = '127.0.0.1'): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, host, r));
    const a = this.server.address();
    this.url = `http://${host}:${typeof a === 'object' && a ? a.port : 0}`;
    return this.url;
  }

  /** A kubeconfig (token user) pointing at this server, or at `server` when given. */
  kubeconfig(server = this.url): string {
    return `apiVersion: v1
kind: Config
clusters: [{name: hostile, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: hostile-token}}]
contexts: [{name: hostile, context: {cluster: hostile, user: u}}]
current-context: hostile
`;
  }

  /** Closes every open connection (keep-alive ones included), so the next request connects (and resolves) anew. */
  dropConnections(): void {
    this.server?.closeAllConnections();
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
    req.resume();
    res.on('error', () => {});
    const a = this.answers.get(path);
    if (!a) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' }));
      return;
    }
    if ('delayMs' in a && a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
    if ('streamBytes' in a) {
      // Streamed without a length, in 1 MiB chunks, as fast as the client reads.
      res.writeHead(a.status ?? 200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1024 * 1024, 'a');
      let left = a.streamBytes;
      if (a.prefix) res.write(a.prefix);
      const pump = () => {
        while (left > 0) {
          left -= chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end('"}');
      };
      res.on('close', () => {
        left = 0;
      });
      pump();
      return;
    }
    if ('raw' in a) {
      res.writeHead(a.status ?? 200, { 'content-type': a.contentType ?? 'application/json' }).end(a.raw);
      return;
    }
    res.writeHead(a.status ?? 200, { 'content-type': 'application/json' }).end(JSON.stringify(a.json));
  }
}
