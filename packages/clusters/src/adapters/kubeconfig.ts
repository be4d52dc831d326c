import { isIP } from 'node:net';
import type { Cluster, Context, User } from '@kubernetes/client-node';
import { createRequire } from 'node:module';
import type { KubeConfig } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { isLinkLocalAddress } from './address-guard';

/**
 * The one place a kubeconfig's text becomes a `KubeConfig` (issue 18, findings 1, 3 and 7).
 *
 * Invariant: `@kubernetes/client-node` never parses a kubeconfig's text itself. Its
 * `loadFromString` parses with `js-yaml` (which applies `<<` merge keys) and already reads
 * `token-file` while loading (a FIFO there freezes the event loop, a file's content becomes a
 * bearer token). So the text is parsed here, once, with the same `js-yaml` and the same
 * (default) schema the client uses, every user and cluster of the loaded object is checked,
 * and the client gets a `KubeConfig` built with `loadFromOptions` from the checked object with
 * only the fields kept below (embedded data, never a file, a command or a plugin). Every path a
 * kubeconfig enters (registration, the bootstrap's register, stored kubeconfigs opened at a
 * probe or after a restart) goes through `loadCheckedKubeconfig`.
 */

/** A kubeconfig refused by the check; the message names the entry and key, never a file's content. */
export class KubeconfigRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigRefused';
  }
}

export interface KubeconfigCheckOptions {
  /**
   * Accept servers on link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata
   * names. Default is `false` (`IRONLENS_CLUSTER_ALLOW_LINK_LOCAL=1` sets it).
   */
  allowLinkLocal?: boolean;
}

/** Largest kubeconfig text accepted, bytes. */
export const KUBECONFIG_MAX_BYTES = 1024 * 1024;

/** User keys that make the client run a command or read a file of this host (both spellings). */
export const REFUSED_USER_KEYS = [
  'exec',
  'auth-provider',
  'authProvider',
  'token-file',
  'tokenFile',
  'client-certificate',
  'clientCertificate',
  'client-key',
  'clientKey',
  'certFile',
  'keyFile',
] as const;
/** Cluster keys that make the client read a file of this host (both spellings). */
export const REFUSED_CLUSTER_KEYS = ['certificate-authority', 'certificateAuthority', 'caFile'] as const;

const METADATA_NAMES = new Set(['metadata.google.internal', 'metadata', 'instance-data', 'instance-data.ec2.internal']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** True when any mapping in the document has a `<<` key (walked once per node: aliases are shared, not expanded). */
function hasMergeKey(root: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (!v || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) stack.push(...v);
    else {
      for (const [k, x] of Object.entries(v)) {
        if (k === '<<') return true;
        stack.push(x);
      }
    }
  }
  return false;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Is a host (from a URL) link-local or a metadata service? */
export function isLinkLocalHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (METADATA_NAMES.has(h.replace(/\.$/, ''))) return true;
  // Literal addresses: the same test as at connection time (`address-guard.ts`).
  if (isIP(h)) return isLinkLocalAddress(h);
  return false;
}

/** Why a server URL is refused, or null. */
export function serverProblem(server: string, opts: KubeconfigCheckOptions = {}): string | null {
  if (server.includes('#')) return 'the server URL may not hold a fragment (#)';
  if (server.includes('?')) return 'the server URL may not hold a query (?)';
  let u: URL;
  try {
    u = new URL(server);
  } catch {
    return 'the server is not a URL';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'the server must be an http(s) URL';
  if (u.username || u.password || /^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(server)) return 'the server URL may not hold a user name or password';
  if (!opts.allowLinkLocal && isLinkLocalHost(u.hostname)) return `the server ${u.hostname} is a link-local or metadata address (IRONLENS_CLUSTER_ALLOW_LINK_LOCAL=1 allows it)`;
  return null;
}

/**
 * Parses, checks and loads a kubeconfig; throws `KubeconfigRefused` for anything the client
 * could turn into a command, a file read or a request to a forbidden address.
 */
export function loadCheckedKubeconfig(text: string, opts: KubeconfigCheckOptions = {}): KubeConfig {
  if (typeof text !== 'string' || !text.trim()) throw new KubeconfigRefused('the kubeconfig is empty');
  if (Buffer.byteLength(text) > KUBECONFIG_MAX_BYTES) throw new KubeconfigRefused(`the kubeconfig is larger than ${KUBECONFIG_MAX_BYTES} bytes`);
  // 1. Merge keys: with the core schema `<<` stays a plain key (and `!!merge` is an unknown tag).
  let core: unknown;
  try {
    core = yaml.load(text, { schema: yaml.CORE_SCHEMA });
  } catch (e) {
    throw new KubeconfigRefused(`the kubeconfig is not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (hasMergeKey(core)) throw new KubeconfigRefused('YAML merge keys (<<) are not accepted in a kubeconfig');
  // 2. What the client would load: the same js-yaml, the same default schema.
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (e) {
    throw new KubeconfigRefused(`the kubeconfig is not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (!isObj(doc) || !Array.isArray(doc.clusters) || doc.clusters.length === 0 || !Array.isArray(doc.contexts) || !Array.isArray(doc.users)) {
    throw new KubeconfigRefused('the file is not a kubeconfig (clusters, contexts and users are required)');
  }
  if (doc.kind !== undefined && doc.kind !== 'Config') throw new KubeconfigRefused(`the file is a ${String(doc.kind).slice(0, 64)}, not a kubeconfig`);
  const name = (e: Obj) => JSON.stringify(typeof e.name === 'string' ? e.name.slice(0, 64) : '');

  const users: User[] = [];
  for (const [i, u] of (doc.users as unknown[]).entries()) {
    if (!isObj(u)) throw new KubeconfigRefused(`users[${i}] is not a mapping`);
    const user = u.user ?? {};
    if (!isObj(user)) throw new KubeconfigRefused(`user ${name(u)}: user is not a mapping`);
    for (const key of REFUSED_USER_KEYS) {
      if (Object.hasOwn(user, key) && user[key] !== null && user[key] !== undefined) {
        throw new KubeconfigRefused(`user ${name(u)}: ${key} is not accepted; embed credentials (client-certificate-data, client-key-data or token)`);
      }
    }
    if (!str(u.name)) throw new KubeconfigRefused(`users[${i}].name is missing`);
    users.push({
      name: u.name as string,
      certData: str(user['client-certificate-data']),
      keyData: str(user['client-key-data']),
      token: str(user.token),
      username: str(user.username),
      password: str(user.password),
      impersonateUser: str(user.as),
    });
  }
  const clusters: Cluster[] = [];
  for (const [i, c] of (doc.clusters as unknown[]).entries()) {
    if (!isObj(c)) throw new KubeconfigRefused(`clusters[${i}] is not a mapping`);
    const cluster = c.cluster;
    if (!isObj(cluster)) throw new KubeconfigRefused(`cluster ${name(c)}: cluster is missing`);
    for (const key of REFUSED_CLUSTER_KEYS) {
      if (Object.hasOwn(cluster, key) && cluster[key] !== null && cluster[key] !== undefined) {
        throw new KubeconfigRefused(`cluster ${name(c)}: ${key} (a file) is not accepted; embed certificate-authority-data`);
      }
    }
    if (!str(c.name)) throw new KubeconfigRefused(`clusters[${i}].name is missing`);
    const server = str(cluster.server);
    if (!server) throw new KubeconfigRefused(`cluster ${name(c)}: server is missing`);
    const problem = serverProblem(server, opts);
    if (problem) throw new KubeconfigRefused(`cluster ${name(c)}: ${problem}`);
    clusters.push({
      name: c.name as string,
      server: server.replace(/\/$/, ''),
      caData: str(cluster['certificate-authority-data']),
      skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
      tlsServerName: str(cluster['tls-server-name']),
      proxyUrl: str(cluster['proxy-url']),
    });
  }
  const contexts: Context[] = [];
  for (const [i, c] of (doc.contexts as unknown[]).entries()) {
    if (!isObj(c) || !isObj(c.context) || !str(c.name) || !str(c.context.cluster)) throw new KubeconfigRefused(`contexts[${i}] needs a name and a cluster`);
    contexts.push({ name: c.name as string, cluster: c.context.cluster as string, user: str(c.context.user) as string, namespace: str(c.context.namespace) });
  }
  const kc = new (clientNode().KubeConfig)();
  kc.loadFromOptions({ clusters, users, contexts, currentContext: str(doc['current-context']) ?? '' });
  const current = kc.getCurrentCluster();
  if (!current) throw new KubeconfigRefused('no current context/cluster');
  if (!kc.getCurrentUser()) throw new KubeconfigRefused('the current context has no user');
  return kc;
}

type ClientNode = typeof import('@kubernetes/client-node');
let clientNodeModule: ClientNode | undefined;

/**
 * `@kubernetes/client-node`, loaded at its first use (it is CommonJS, so synchronously): loading
 * it took 0.3–1.3 s of `ironlens serve`'s start, before any cluster is asked anything (issue 19).
 * `serve` calls {@link preloadKubeClient} once it listens, so the first request rarely waits.
 */
function clientNode(): ClientNode {
  clientNodeModule ??= createRequire(import.meta.url)('@kubernetes/client-node') as ClientNode;
  return clientNodeModule;
}

/** Loads `@kubernetes/client-node` now (after the listeners are up), instead of at the first cluster request. */
export function preloadKubeClient(): void {
  clientNode();
}
