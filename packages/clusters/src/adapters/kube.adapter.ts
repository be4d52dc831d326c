import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Agent } from 'node:http';
import type {
  KubeConfig,
  V1DaemonSet,
  V1Deployment,
  V1Namespace,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import type { ProxyConfig } from '../api/clusters';
import { AppError } from '@ironlens/core';
import { guardedLookup, type HostResolver } from './address-guard';
import { type KubeconfigCheckOptions, loadCheckedKubeconfig } from './kubeconfig';

export { preloadKubeClient } from './kubeconfig';
import { proxyUrlFor } from './proxy-settings';

/** The API server answered with an error status. */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** The API server could not be reached (connection refused, TLS, proxy…) or did not answer in time. */
export class KubeUnreachableError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
  ) {
    super(message);
    this.name = 'KubeUnreachableError';
  }
}

/**
 * The cluster answered, but not with what was asked for: more bytes than allowed (`too_large`,
 * stopped while streaming) or JSON that is not the expected kind or shape (`invalid`). The
 * message never holds the body.
 */
export class KubeResponseError extends Error {
  constructor(
    readonly code: 'cluster_response_too_large' | 'cluster_response_invalid',
    message: string,
  ) {
    super(message);
    this.name = 'KubeResponseError';
  }
}

/** Default cap of one answer from a cluster, bytes (`IRONLENS_CLUSTER_MAX_RESPONSE_BYTES`). */
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Default cap of one list answer (the overview's lists), bytes (`IRONLENS_CLUSTER_MAX_LIST_BYTES`). */
export const DEFAULT_MAX_LIST_BYTES = 64 * 1024 * 1024;
/** Deepest JSON accepted from a cluster (deeper cannot be rendered back, and no Kubernetes object needs it). */
export const MAX_JSON_DEPTH = 128;

/** Nesting depth of a parsed JSON value, counted without recursion; stops early past `limit`. */
export function jsonDepth(v: unknown, limit = MAX_JSON_DEPTH): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[v, 1]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (!x || typeof x !== 'object') continue;
    if (d > max) max = d;
    if (max > limit) return max;
    for (const y of Array.isArray(x) ? x : Object.values(x)) if (y && typeof y === 'object') stack.push([y, d + 1]);
  }
  return max;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

export interface KubeObjectRef {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

/** One namespaced object found in a namespace. */
export interface NamespacedItem {
  resource: string;
  group: string;
  name: string;
  /** Secret type, ServiceAccount name… whatever helps to tell Kubernetes' own objects apart. */
  type?: string;
  annotations?: Record<string, string>;
  /** It has a controller owner (`ownerReferences[].controller`): made from another object, going away with it. */
  owned?: boolean;
}

export interface ApiResourceRef {
  group: string;
  version: string;
  resource: string;
  kind: string;
}

/**
 * What the cluster manager needs from one cluster's API server. One instance per cluster
 * registration (kubeconfig + proxy settings); `ClientNodeKube` is the real one.
 */
export interface Kube {
  readonly server: string;
  /** `GET /readyz` within `timeoutMs`; never throws. */
  readyz(timeoutMs: number): Promise<boolean>;
  version(): Promise<{ major: string; minor: string; gitVersion: string }>;
  /** Raw JSON of a read-only path (planning discovery), a JSON object of `kind` when given; throws on failure. */
  getJson<T = unknown>(path: string, kind?: string): Promise<T>;

  getNamespace(name: string): Promise<V1Namespace | null>;
  createNamespace(name: string, labels: Record<string, string>): Promise<void>;
  /** Deletes a namespace; false when it did not exist. */
  deleteNamespace(name: string): Promise<boolean>;
  /** Every namespaced, listable object in a namespace, over all served resource types. */
  listNamespaceContents(namespace: string): Promise<NamespacedItem[]>;

  getSecret(namespace: string, name: string): Promise<V1Secret | null>;
  /** Creates a secret; a KubeApiError 409 when it exists. */
  createSecret(secret: V1Secret): Promise<void>;
  deleteSecret(namespace: string, name: string): Promise<boolean>;
  listSecrets(): Promise<V1Secret[]>;

  listNodes(): Promise<V1Node[]>;
  getNode(name: string): Promise<V1Node | null>;
  setUnschedulable(name: string, value: boolean): Promise<V1Node>;
  /**
   * Asks the eviction API (policy/v1) to evict a pod: PodDisruptionBudgets decide. `evicted`
   * (201), `gone` (404: nothing to evict), or `refused` with the API server's status (429: a
   * budget refuses it now) and message.
   */
  evictPod(namespace: string, name: string): Promise<{ outcome: 'evicted' | 'gone' } | { outcome: 'refused'; status: number; message: string }>;
  /** Sets (a string) or removes (null) labels of a pod (a JSON merge patch). */
  patchPodLabels(namespace: string, name: string, labels: Record<string, string | null>): Promise<void>;
  /** The kubelet Summary API through the API server's node proxy. */
  nodeSummary(name: string, timeoutMs?: number): Promise<KubeletSummary>;

  listNamespaces(): Promise<V1Namespace[]>;
  listDeployments(labelSelector?: string): Promise<V1Deployment[]>;
  listDaemonSets(labelSelector?: string): Promise<V1DaemonSet[]>;
  listStatefulSets(): Promise<V1StatefulSet[]>;
  listPods(opts?: { namespace?: string; labelSelector?: string; fieldSelector?: string }): Promise<V1Pod[]>;
  listServices(labelSelector?: string): Promise<V1Service[]>;
  listPvcs(labelSelector?: string): Promise<V1PersistentVolumeClaim[]>;
  deletePvc(namespace: string, name: string): Promise<boolean>;
  deletePv(name: string): Promise<boolean>;
  getDaemonSet(namespace: string, name: string): Promise<V1DaemonSet | null>;
  deleteDaemonSet(namespace: string, name: string): Promise<boolean>;
  /** resource.k8s.io/v1 lists (empty when the API group is not served). */
  listResourceSlices(): Promise<ResourceSliceLike[]>;
  listResourceClaims(): Promise<ResourceClaimLike[]>;
  /** Is a CRD present and Established? */
  crdEstablished(name: string): Promise<boolean>;

  /** One object of any served kind, or null when it (or its kind) is not there. */
  getObject(apiVersion: string, kind: string, name: string, namespace?: string): Promise<KubeObjectRef | null>;
  /** Deletes one object of any served kind (background propagation); false when it was not there. */
  deleteObject(apiVersion: string, kind: string, name: string, namespace?: string): Promise<boolean>;
  /**
   * Server-side apply (`application/apply-patch+yaml`, the body sent verbatim as JSON). `dryRun`:
   * the API server answers the object as the apply would leave it and stores nothing. Default is `false`.
   */
  apply(obj: KubeObjectRef, fieldManager: string, force: boolean, opts?: { dryRun?: boolean }): Promise<KubeObjectRef>;
  /** GET through the API server's service proxy: `/api/v1/namespaces/{ns}/services/{name}:{port}/proxy{path}`. */
  serviceProxyGet(namespace: string, service: string, port: string, path: string, timeoutMs?: number): Promise<unknown>;
  /**
   * POST of a JSON body through the service proxy; never throws for the upstream's HTTP status:
   * `{status, body}` with the body parsed as JSON when it is (else null), capped like any answer.
   */
  serviceProxyPost(namespace: string, service: string, port: string, path: string, body: unknown, timeoutMs?: number): Promise<{ status: number; body: unknown }>;
  /** Objects of one served kind (all namespaces, or one), by label; empty when the kind is not served. */
  listObjects(apiVersion: string, kind: string, o?: { namespace?: string; labelSelector?: string }): Promise<KubeObjectRef[]>;
  /** Events of a namespace (core/v1). */
  listEvents(namespace: string): Promise<KubeEventLike[]>;
  /** The last lines of a container's log (`/log?tailLines=`), at most `maxBytes` (the tail is kept). */
  podLog(namespace: string, pod: string, o: { container?: string; tailLines: number; previous?: boolean; maxBytes?: number }): Promise<string>;
  close(): void;
}

export interface KubeEventLike {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  involvedObject?: { kind?: string; name?: string };
}

export interface KubeletSummary {
  node: {
    nodeName: string;
    fs?: { capacityBytes?: number; usedBytes?: number; availableBytes?: number };
    cpu?: { usageNanoCores?: number };
    memory?: { workingSetBytes?: number; availableBytes?: number };
  };
}

export interface ResourceSliceLike {
  metadata: { name: string };
  spec: {
    driver: string;
    nodeName?: string;
    devices?: Array<{ name: string; attributes?: Record<string, { string?: string; int?: number; version?: string; bool?: boolean }>; capacity?: Record<string, { value: string }> }>;
  };
}

export interface ResourceClaimLike {
  metadata: { name: string; namespace: string };
  status?: { allocation?: { devices?: { results?: Array<{ driver: string; pool: string; device: string }> } } };
}

export interface KubeConnectOptions {
  proxy: ProxyConfig;
  /** Default per-request timeout. */
  timeoutMs: number;
  /** Where `system` proxy settings come from. Default is `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Servers on link-local / metadata addresses are accepted. Default is `false`: a literal
   * address is refused when the kubeconfig is loaded, and every connection resolves the
   * server's name through `guardedLookup`, failing with `cluster_address_forbidden` when it
   * resolves to such an address (also when it resolved elsewhere before: DNS rebinding).
   */
  allowLinkLocal?: boolean;
  /** Resolves the server's name at each connection. Default: the system resolver (`dns.lookup`). */
  resolve?: HostResolver;
  /** Cap of one answer, bytes, enforced while streaming. Default is `DEFAULT_MAX_RESPONSE_BYTES` (4 MiB). */
  maxResponseBytes?: number;
  /** Cap of one list answer, bytes. Default is `DEFAULT_MAX_LIST_BYTES` (64 MiB). */
  maxListBytes?: number;
}

/** Opens one cluster's API from its kubeconfig text. */
export type KubeConnector = (kubeconfig: string, opts: KubeConnectOptions) => Kube;

/**
 * Loads a kubeconfig for the client through the check of `kubeconfig.ts` (never the client's
 * own `loadFromString`); throws `KubeconfigRefused` when it is not accepted.
 */
export function parseKubeConfig(text: string, opts: KubeconfigCheckOptions = {}): KubeConfig {
  return loadCheckedKubeconfig(text, opts);
}

const enc = encodeURIComponent;

interface RequestOpts {
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
  /** Cap of this answer, bytes. Default: the connection's `maxResponseBytes`. */
  maxBytes?: number;
  /** The `kind` the answer must have (`NodeList`, `Namespace`…). */
  kind?: string;
}

/**
 * The real Kube over `@kubernetes/client-node`: the library parses the kubeconfig, runs its
 * authentication (client certificates, tokens, exec and auth-provider plugins), and builds the
 * TLS agent — through an HTTP CONNECT proxy (`proxy-url`) when the cluster's proxy settings ask
 * for one, which the library only does when `proxyUrl` is set on the cluster. The agent is made
 * once per connection with keep-alive, so the many calls of an overview reuse their TLS sessions.
 * REST paths are typed by this interface; the library's generated clients are not used because
 * they rebuild an agent per request and re-serialize bodies (server-side apply must be verbatim).
 */
export class ClientNodeKube implements Kube {
  readonly server: string;
  private readonly kc: KubeConfig;
  private agent?: Agent;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxListBytes: number;
  private discovery?: Promise<ApiResourceRef[]>;

  constructor(kubeconfig: string, opts: KubeConnectOptions) {
    const kc = parseKubeConfig(kubeconfig, { allowLinkLocal: opts.allowLinkLocal });
    const current = kc.getCurrentCluster()!;
    const proxyUrl = proxyUrlFor(current.server, opts.proxy, opts.env ?? process.env);
    // The client honours a cluster's `proxyUrl` (kubeconfig `proxy-url`), nothing else.
    const clusters = kc.clusters.map((c) => (c.name === current.name ? { ...c, proxyUrl } : c));
    kc.loadFromOptions({ clusters, users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext });
    // One keep-alive agent per connection instead of one per request. `createAgent` is private in
    // client-node's types (no option sets the agent), so only a cast reaches it.
    const holder = kc as unknown as { createAgent: (cluster: unknown, o: Record<string, unknown>) => Agent };
    const original = holder.createAgent.bind(kc);
    // Every connection's name resolution is checked: the server's, or an HTTP(S) proxy's (which then resolves the server itself).
    const lookup = opts.allowLinkLocal ? undefined : guardedLookup(opts.resolve);
    holder.createAgent = (cluster, o) => {
      // `proxyRequestOptions` reaches hpagent's CONNECT to an HTTP(S) proxy: the proxy's own name is checked too.
      this.agent ??= original(cluster, { ...o, keepAlive: true, maxSockets: 64, ...(lookup ? { lookup, proxyRequestOptions: { lookup } } : {}) });
      return this.agent;
    };
    this.kc = kc;
    this.server = current.server.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs;
    this.maxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.maxListBytes = opts.maxListBytes ?? DEFAULT_MAX_LIST_BYTES;
  }

  close(): void {
    this.agent?.destroy();
  }

  private async request(method: string, path: string, o: RequestOpts = {}): Promise<{ status: number; text: string }> {
    const opts: RequestOptions & { headers: Record<string, string> } = { headers: {} };
    try {
      await this.kc.applyToHTTPSOptions(opts as never);
    } catch (e) {
      throw new KubeUnreachableError(`${this.server}: the kubeconfig's credentials cannot be used: ${(e as Error).message}`, false);
    }
    const url = new URL(this.server + path);
    const body = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    const headers: Record<string, string> = { accept: 'application/json', ...(opts.headers as Record<string, string>) };
    if (body !== undefined) {
      headers['content-type'] = o.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const timeoutMs = o.timeoutMs ?? this.timeoutMs;
    const maxBytes = o.maxBytes ?? this.maxBytes;
    const where = `${method} ${path.split('?')[0]}`;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      let done = false;
      let req: ReturnType<typeof send> | undefined;
      const settle = (e: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(e);
        req?.destroy();
      };
      const fail = (e: Error, timedOut: boolean) =>
        settle(new KubeUnreachableError(`${this.server}: ${timedOut ? `no answer within ${timeoutMs} ms` : e.message}`, timedOut));
      const tooLarge = () => settle(new KubeResponseError('cluster_response_too_large', `${where}: the answer is larger than ${maxBytes} bytes`));
      const timer = setTimeout(() => fail(new Error('timeout'), true), timeoutMs);
      try {
        req = send(url, { ...opts, method, headers, agent: opts.agent }, (res: IncomingMessage) => {
          // Capped while streaming: a hostile server never makes this process hold more than maxBytes.
          const declared = Number(res.headers['content-length']);
          if (Number.isFinite(declared) && declared > maxBytes) {
            tooLarge();
            res.destroy();
            return;
          }
          const chunks: Buffer[] = [];
          let total = 0;
          res.on('data', (c: Buffer) => {
            if (done) return;
            total += c.length;
            if (total > maxBytes) {
              chunks.length = 0;
              tooLarge();
              res.destroy();
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', (e) => fail(e, false));
          res.on('aborted', () => fail(new Error('the answer was cut off'), false));
        });
        // A refused address (cluster_address_forbidden) is reported as itself, not as unreachable.
        req.on('error', (e) => (e instanceof AppError ? settle(e) : fail(e, false)));
        req.end(body);
      } catch (e) {
        // A kubeconfig whose certificate or key cannot be loaded fails here, before any packet.
        fail(e as Error, false);
      }
    });
  }

  /**
   * A JSON answer, checked: 2xx, JSON, not deeper than `MAX_JSON_DEPTH`, an object, and of
   * `o.kind` when given. An error status is a `KubeApiError` with the message of a `Status`
   * object only (never the body of something else).
   */
  private async json<T>(method: string, path: string, o: RequestOpts = {}): Promise<T> {
    let r = await this.request(method, path, o);
    // A read answered 429 (a custom resource's watch cache still initializing: "storage is
    // (re)initializing", or API priority and fairness) is tried again, as client-go does.
    for (let attempt = 1; r.status === 429 && method === 'GET' && attempt <= 3; attempt++) {
      await new Promise((res) => setTimeout(res, 250 * attempt));
      r = await this.request(method, path, o);
    }
    const where = `${method} ${path.split('?')[0]}`;
    if (r.status >= 200 && r.status < 300) {
      if (!r.text) return {} as T;
      let v: unknown;
      try {
        v = JSON.parse(r.text);
      } catch {
        throw new KubeResponseError('cluster_response_invalid', `${where}: the answer is not JSON`);
      }
      if (jsonDepth(v) > MAX_JSON_DEPTH) throw new KubeResponseError('cluster_response_invalid', `${where}: the answer is nested deeper than ${MAX_JSON_DEPTH} levels`);
      if (!isPlainObject(v)) throw new KubeResponseError('cluster_response_invalid', `${where}: the answer is not a JSON object`);
      if (o.kind && v.kind !== o.kind) throw new KubeResponseError('cluster_response_invalid', `${where}: the answer is not a ${o.kind}`);
      return v as T;
    }
    throw statusError(where, r);
  }

  /** GET that maps 404 to null. */
  private async getOrNull<T>(path: string, kind?: string): Promise<T | null> {
    try {
      return await this.json<T>('GET', path, { kind });
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return null;
      throw e;
    }
  }

  private async deleteOrFalse(path: string, body?: unknown): Promise<boolean> {
    try {
      await this.json('DELETE', path, body ? { body } : {});
      return true;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return false;
      throw e;
    }
  }

  /** A list of `kind` (`NodeList`…): items must be objects; capped at the list limit. */
  private async list<T>(path: string, kind: string, q: Record<string, string | undefined> = {}): Promise<T[]> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v) params.set(k, v);
    const qs = params.toString();
    const r = await this.json<{ items?: unknown }>('GET', qs ? `${path}?${qs}` : path, { kind, maxBytes: this.maxListBytes });
    if (r.items === undefined || r.items === null) return [];
    if (!Array.isArray(r.items) || !r.items.every(isPlainObject)) throw new KubeResponseError('cluster_response_invalid', `GET ${path}: items is not a list of objects`);
    return r.items as T[];
  }

  async readyz(timeoutMs: number): Promise<boolean> {
    try {
      const r = await this.request('GET', '/readyz', { timeoutMs, maxBytes: 64 * 1024 });
      return r.status === 200;
    } catch {
      return false;
    }
  }

  async version(): Promise<{ major: string; minor: string; gitVersion: string }> {
    const v = await this.json<Record<string, unknown>>('GET', '/version');
    if (typeof v.gitVersion !== 'string' || typeof v.major !== 'string' || typeof v.minor !== 'string') {
      throw new KubeResponseError('cluster_response_invalid', 'GET /version: the answer is not a VersionInfo');
    }
    return { major: v.major, minor: v.minor, gitVersion: v.gitVersion };
  }

  getJson<T = unknown>(path: string, kind?: string): Promise<T> {
    return this.json<T>('GET', path, { kind });
  }

  getNamespace(name: string): Promise<V1Namespace | null> {
    return this.getOrNull(`/api/v1/namespaces/${enc(name)}`, 'Namespace');
  }

  async createNamespace(name: string, labels: Record<string, string>): Promise<void> {
    await this.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } } });
  }

  deleteNamespace(name: string): Promise<boolean> {
    return this.deleteOrFalse(`/api/v1/namespaces/${enc(name)}`);
  }

  private apiResources(): Promise<ApiResourceRef[]> {
    this.discovery ??= (async () => {
      const out: ApiResourceRef[] = [];
      const core = await this.resourceList('/api/v1');
      for (const r of core) if (r.namespaced && r.verbs.includes('list') && !r.name.includes('/')) out.push({ group: '', version: 'v1', resource: r.name, kind: r.kind });
      const groups = await this.json<{ groups?: unknown }>('GET', '/apis', { kind: 'APIGroupList' });
      const gs = (Array.isArray(groups.groups) ? groups.groups : []).filter(
        (g): g is { name: string; preferredVersion: { groupVersion: string } } =>
          isPlainObject(g) && typeof g.name === 'string' && isPlainObject(g.preferredVersion) && typeof g.preferredVersion.groupVersion === 'string' && /^[a-z0-9.-]+\/[a-z0-9]+$/.test(g.preferredVersion.groupVersion),
      );
      const lists = await Promise.all(gs.map((g) => this.resourceList(`/apis/${g.preferredVersion.groupVersion}`).then((l) => ({ g, l }))));
      for (const { g, l } of lists) {
        for (const r of l) {
          if (r.namespaced && r.verbs.includes('list') && !r.name.includes('/')) {
            out.push({ group: g.name, version: g.preferredVersion.groupVersion.split('/')[1], resource: r.name, kind: r.kind });
          }
        }
      }
      return out;
    })();
    const p = this.discovery;
    // A failed discovery is not cached.
    p.catch(() => {
      if (this.discovery === p) this.discovery = undefined;
    });
    return p;
  }

  /** An APIResourceList's resources, each checked (name, kind, namespaced, verbs). */
  private async resourceList(path: string): Promise<Array<{ name: string; kind: string; namespaced: boolean; verbs: string[] }>> {
    const l = await this.json<{ resources?: unknown }>('GET', path, { kind: 'APIResourceList' });
    if (!Array.isArray(l.resources)) throw new KubeResponseError('cluster_response_invalid', `GET ${path}: resources is not a list`);
    return l.resources
      .filter((r): r is Record<string, unknown> => isPlainObject(r) && typeof r.name === 'string' && /^[a-z0-9.\/-]+$/.test(r.name) && typeof r.kind === 'string' && /^[A-Za-z0-9]+$/.test(r.kind))
      .map((r) => ({
        name: r.name as string,
        kind: r.kind as string,
        namespaced: r.namespaced === true,
        verbs: Array.isArray(r.verbs) ? r.verbs.filter((v): v is string => typeof v === 'string') : [],
      }));
  }

  async listNamespaceContents(namespace: string): Promise<NamespacedItem[]> {
    const resources = await this.apiResources();
    const lists = await Promise.all(
      resources.map(async (r) => {
        const base = r.group ? `/apis/${r.group}/${r.version}` : '/api/v1';
        const items = await this.list<{ metadata?: { name?: unknown; annotations?: Record<string, string>; ownerReferences?: unknown }; type?: unknown }>(
          `${base}/namespaces/${enc(namespace)}/${r.resource}`,
          `${r.kind}List`,
        );
        return items.map((i) => ({
          resource: r.resource,
          group: r.group,
          name: String(i.metadata?.name ?? ''),
          type: typeof i.type === 'string' ? i.type : undefined,
          annotations: isPlainObject(i.metadata?.annotations) ? i.metadata.annotations : undefined,
          owned: Array.isArray(i.metadata?.ownerReferences) && i.metadata.ownerReferences.some((o) => isPlainObject(o) && o.controller === true),
        }));
      }),
    );
    return lists.flat();
  }

  getSecret(namespace: string, name: string): Promise<V1Secret | null> {
    return this.getOrNull(`/api/v1/namespaces/${enc(namespace)}/secrets/${enc(name)}`, 'Secret');
  }

  async createSecret(secret: V1Secret): Promise<void> {
    await this.json('POST', `/api/v1/namespaces/${enc(secret.metadata!.namespace!)}/secrets`, { body: { apiVersion: 'v1', kind: 'Secret', ...secret } });
  }

  deleteSecret(namespace: string, name: string): Promise<boolean> {
    return this.deleteOrFalse(`/api/v1/namespaces/${enc(namespace)}/secrets/${enc(name)}`);
  }

  listSecrets(): Promise<V1Secret[]> {
    return this.list('/api/v1/secrets', 'SecretList');
  }

  listNodes(): Promise<V1Node[]> {
    return this.list('/api/v1/nodes', 'NodeList');
  }

  getNode(name: string): Promise<V1Node | null> {
    return this.getOrNull(`/api/v1/nodes/${enc(name)}`, 'Node');
  }

  setUnschedulable(name: string, value: boolean): Promise<V1Node> {
    return this.json('PATCH', `/api/v1/nodes/${enc(name)}`, { body: { spec: { unschedulable: value ? true : null } }, contentType: 'application/merge-patch+json' });
  }

  async evictPod(namespace: string, name: string): Promise<{ outcome: 'evicted' | 'gone' } | { outcome: 'refused'; status: number; message: string }> {
    try {
      await this.json('POST', `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}/eviction`, { body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } } });
      return { outcome: 'evicted' };
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return { outcome: 'gone' };
      if (e instanceof KubeApiError && e.status === 429) return { outcome: 'refused', status: 429, message: e.message };
      throw e;
    }
  }

  async patchPodLabels(namespace: string, name: string, labels: Record<string, string | null>): Promise<void> {
    await this.json('PATCH', `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`, { body: { metadata: { labels } }, contentType: 'application/merge-patch+json' });
  }

  nodeSummary(name: string, timeoutMs?: number): Promise<KubeletSummary> {
    return this.json('GET', `/api/v1/nodes/${enc(name)}/proxy/stats/summary?only_cpu_and_memory=false`, { timeoutMs });
  }

  listNamespaces(): Promise<V1Namespace[]> {
    return this.list('/api/v1/namespaces', 'NamespaceList');
  }

  listDeployments(labelSelector?: string): Promise<V1Deployment[]> {
    return this.list('/apis/apps/v1/deployments', 'DeploymentList', { labelSelector });
  }

  listDaemonSets(labelSelector?: string): Promise<V1DaemonSet[]> {
    return this.list('/apis/apps/v1/daemonsets', 'DaemonSetList', { labelSelector });
  }

  listStatefulSets(): Promise<V1StatefulSet[]> {
    return this.list('/apis/apps/v1/statefulsets', 'StatefulSetList');
  }

  listPods(o: { namespace?: string; labelSelector?: string; fieldSelector?: string } = {}): Promise<V1Pod[]> {
    const path = o.namespace ? `/api/v1/namespaces/${enc(o.namespace)}/pods` : '/api/v1/pods';
    return this.list(path, 'PodList', { labelSelector: o.labelSelector, fieldSelector: o.fieldSelector });
  }

  listServices(labelSelector?: string): Promise<V1Service[]> {
    return this.list('/api/v1/services', 'ServiceList', { labelSelector });
  }

  listPvcs(labelSelector?: string): Promise<V1PersistentVolumeClaim[]> {
    return this.list('/api/v1/persistentvolumeclaims', 'PersistentVolumeClaimList', { labelSelector });
  }

  deletePvc(namespace: string, name: string): Promise<boolean> {
    return this.deleteOrFalse(`/api/v1/namespaces/${enc(namespace)}/persistentvolumeclaims/${enc(name)}`);
  }

  deletePv(name: string): Promise<boolean> {
    return this.deleteOrFalse(`/api/v1/persistentvolumes/${enc(name)}`);
  }

  getDaemonSet(namespace: string, name: string): Promise<V1DaemonSet | null> {
    return this.getOrNull(`/apis/apps/v1/namespaces/${enc(namespace)}/daemonsets/${enc(name)}`, 'DaemonSet');
  }

  deleteDaemonSet(namespace: string, name: string): Promise<boolean> {
    return this.deleteOrFalse(`/apis/apps/v1/namespaces/${enc(namespace)}/daemonsets/${enc(name)}`, { propagationPolicy: 'Background' });
  }

  private async listOptionalGroup<T>(path: string, kind: string): Promise<T[]> {
    try {
      return await this.list<T>(path, kind);
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return [];
      throw e;
    }
  }

  listResourceSlices(): Promise<ResourceSliceLike[]> {
    return this.listOptionalGroup('/apis/resource.k8s.io/v1/resourceslices', 'ResourceSliceList');
  }

  listResourceClaims(): Promise<ResourceClaimLike[]> {
    return this.listOptionalGroup('/apis/resource.k8s.io/v1/resourceclaims', 'ResourceClaimList');
  }

  async crdEstablished(name: string): Promise<boolean> {
    const crd = await this.getOrNull<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${enc(name)}`,
      'CustomResourceDefinition',
    );
    return !!crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
  }

  async apply(obj: KubeObjectRef, fieldManager: string, force: boolean, opts: { dryRun?: boolean } = {}): Promise<KubeObjectRef> {
    const path = await this.objectPath(obj);
    const q = new URLSearchParams({ fieldManager, force: String(force) });
    if (opts.dryRun) q.set('dryRun', 'All');
    return this.json('PATCH', `${path}?${q}`, { body: obj, contentType: 'application/apply-patch+yaml' });
  }

  async getObject(apiVersion: string, kind: string, name: string, namespace?: string): Promise<KubeObjectRef | null> {
    let path: string;
    try {
      path = await this.objectPath({ apiVersion, kind, metadata: { name, namespace } });
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return null;
      throw e;
    }
    return this.getOrNull<KubeObjectRef>(path);
  }

  async deleteObject(apiVersion: string, kind: string, name: string, namespace?: string): Promise<boolean> {
    let path: string;
    try {
      path = await this.objectPath({ apiVersion, kind, metadata: { name, namespace } });
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return false;
      throw e;
    }
    return this.deleteOrFalse(path, { propagationPolicy: 'Background' });
  }

  /** The REST path of an object, from discovery of its group/version. */
  private async objectPath(obj: KubeObjectRef): Promise<string> {
    const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
    const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
    const r = await this.resourceOf(base, obj.kind);
    if (!r) throw new KubeApiError(404, 'NotFound', `${obj.apiVersion} ${obj.kind} is not served by this cluster`);
    const ns = r.namespaced ? `/namespaces/${enc(obj.metadata.namespace ?? 'default')}` : '';
    return `${base}${ns}/${r.name}/${enc(obj.metadata.name)}`;
  }

  /**
   * A kind's resource in a group/version, from discovery (kept per connection). A kind missing from
   * the kept list is asked for once more: a CRD established after the list was read (the gateway's
   * CRDs are applied, then a GatewayClass of the same group is, before the API server's discovery
   * lists every kind of that group) must not stay "not served" for the connection's life.
   */
  private async resourceOf(base: string, kind: string): Promise<{ name: string; kind: string; namespaced: boolean } | undefined> {
    const find = (l: Array<{ name: string; kind: string; namespaced: boolean }>) => l.find((x) => x.kind === kind && !x.name.includes('/'));
    const kept = find(await this.gvResources(base));
    if (kept) return kept;
    this.gvCache.delete(base);
    return find(await this.gvResources(base));
  }

  private readonly gvCache = new Map<string, Promise<Array<{ name: string; kind: string; namespaced: boolean }>>>();
  private gvResources(base: string): Promise<Array<{ name: string; kind: string; namespaced: boolean }>> {
    let p = this.gvCache.get(base);
    if (!p) {
      p = this.resourceList(base);
      this.gvCache.set(base, p);
      p.catch(() => this.gvCache.delete(base));
    }
    return p;
  }

  serviceProxyGet(namespace: string, service: string, port: string, path: string, timeoutMs?: number): Promise<unknown> {
    return this.json('GET', `/api/v1/namespaces/${enc(namespace)}/services/${enc(service)}:${enc(port)}/proxy${path}`, { timeoutMs });
  }

  async serviceProxyPost(namespace: string, service: string, port: string, path: string, body: unknown, timeoutMs?: number): Promise<{ status: number; body: unknown }> {
    const r = await this.request('POST', `/api/v1/namespaces/${enc(namespace)}/services/${enc(service)}:${enc(port)}/proxy${path}`, { body, timeoutMs });
    let parsed: unknown = null;
    try {
      parsed = r.text ? JSON.parse(r.text) : null;
    } catch {
      parsed = null;
    }
    if (parsed !== null && jsonDepth(parsed) > MAX_JSON_DEPTH) parsed = null;
    return { status: r.status, body: parsed };
  }

  async listObjects(apiVersion: string, kind: string, o: { namespace?: string; labelSelector?: string } = {}): Promise<KubeObjectRef[]> {
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
    const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
    let r: { name: string; kind: string; namespaced: boolean } | undefined;
    try {
      r = await this.resourceOf(base, kind);
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return [];
      throw e;
    }
    if (!r) return [];
    const path = r.namespaced && o.namespace ? `${base}/namespaces/${enc(o.namespace)}/${r.name}` : `${base}/${r.name}`;
    const items = await this.list<KubeObjectRef>(path, `${kind}List`, { labelSelector: o.labelSelector });
    return items.filter((i) => isPlainObject(i.metadata) && typeof i.metadata.name === 'string');
  }

  listEvents(namespace: string): Promise<KubeEventLike[]> {
    return this.list(`/api/v1/namespaces/${enc(namespace)}/events`, 'EventList');
  }

  async podLog(namespace: string, pod: string, o: { container?: string; tailLines: number; previous?: boolean; maxBytes?: number }): Promise<string> {
    const q = new URLSearchParams({ tailLines: String(o.tailLines) });
    if (o.container) q.set('container', o.container);
    if (o.previous) q.set('previous', 'true');
    // The tail lines are what is asked for; a larger answer is cut to its last bytes, never refused.
    q.set('limitBytes', String(o.maxBytes ?? 256 * 1024));
    const path = `/api/v1/namespaces/${enc(namespace)}/pods/${enc(pod)}/log?${q}`;
    const r = await this.request('GET', path, { maxBytes: (o.maxBytes ?? 256 * 1024) + 64 * 1024 });
    if (r.status >= 200 && r.status < 300) return r.text;
    throw statusError(`GET ${path.split('?')[0]}`, r);
  }
}

/** An error status as a `KubeApiError` with the message of a `Status` object only (never the body of something else). */
function statusError(where: string, r: { status: number; text: string }): KubeApiError {
  let reason = '';
  let message = `HTTP ${r.status}`;
  try {
    const st = JSON.parse(r.text) as unknown;
    if (isPlainObject(st) && st.kind === 'Status') {
      if (typeof st.reason === 'string') reason = st.reason.slice(0, 64);
      if (typeof st.message === 'string') message = `${r.status} ${st.message.slice(0, 300)}`;
    }
  } catch {
    // not a Status object: its body is not repeated
  }
  return new KubeApiError(r.status, reason, `${where}: ${message}`);
}

export const clientNodeConnector: KubeConnector = (kubeconfig, opts) => new ClientNodeKube(kubeconfig, opts);
