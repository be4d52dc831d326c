/**
 * Server-side apply of objects exactly as given (like `kubectl apply --server-side`):
 * the body is sent verbatim as `application/apply-patch+yaml`, with the resource
 * path found through API discovery. (The generic object client of
 * @kubernetes/client-node re-serializes known kinds through its generated models,
 * which renames some JSON fields, e.g. a DeviceAttribute's `int`.)
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';

export interface ApplyTarget {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${code}: ${body.slice(0, 2000)}`);
  }
}

interface ResourceInfo {
  name: string;
  namespaced: boolean;
}

export class RawApplyClient {
  private readonly agent: Agent;
  private readonly discovery = new Map<string, Map<string, ResourceInfo>>();

  constructor(
    private readonly server: string,
    tls: { ca: string; cert: string; key: string },
  ) {
    this.agent = new Agent({
      ca: readFileSync(tls.ca),
      cert: readFileSync(tls.cert),
      key: readFileSync(tls.key),
      keepAlive: true,
      maxSockets: 32,
    });
  }

  close(): void {
    this.agent.destroy();
  }

  request(method: string, path: string, body?: string, contentType = 'application/json'): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(path, this.server),
        {
          method,
          agent: this.agent,
          headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': contentType } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  private async resource(apiVersion: string, kind: string): Promise<ResourceInfo> {
    for (let attempt = 0; attempt < 2; attempt++) {
      let m = this.discovery.get(apiVersion);
      if (!m || attempt > 0) {
        const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
        const r = await this.request('GET', path);
        if (r.status !== 200) throw new ApiError(r.status, r.body, `discovery ${path}`);
        const list = JSON.parse(r.body) as { resources: Array<{ name: string; kind: string; namespaced: boolean }> };
        m = new Map(list.resources.filter((x) => !x.name.includes('/')).map((x) => [x.kind, { name: x.name, namespaced: x.namespaced }]));
        this.discovery.set(apiVersion, m);
      }
      const hit = m.get(kind);
      if (hit) return hit;
    }
    throw new Error(`the API server serves no kind ${kind} in ${apiVersion}`);
  }

  async path(obj: ApplyTarget): Promise<string> {
    const info = await this.resource(obj.apiVersion, obj.kind);
    const base = obj.apiVersion.includes('/') ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`;
    const ns = info.namespaced ? `/namespaces/${encodeURIComponent(obj.metadata.namespace ?? 'default')}` : '';
    return `${base}${ns}/${info.name}/${encodeURIComponent(obj.metadata.name ?? '')}`;
  }

  /** Server-side apply; returns the object as stored. Throws ApiError (with .code) on rejection. */
  async apply<T = ApplyTarget>(obj: ApplyTarget, fieldManager: string, force = true): Promise<T> {
    if (!obj.metadata?.name) throw new Error(`cannot apply a ${obj.kind} without metadata.name`);
    const p = `${await this.path(obj)}?fieldManager=${encodeURIComponent(fieldManager)}${force ? '&force=true' : ''}`;
    const r = await this.request('PATCH', p, JSON.stringify(obj), 'application/apply-patch+yaml');
    if (r.status < 200 || r.status > 299) throw new ApiError(r.status, r.body, `apply ${obj.kind} ${obj.metadata.name}`);
    return JSON.parse(r.body) as T;
  }
}
