import { isMap, isSeq, parseDocument } from 'yaml';

const WILDCARD_OR_NAMED_LOOPBACK = new Set(['0.0.0.0', 'localhost', '[::]', '::', '[::1]']);

export interface PatchedKubeconfig {
  text: string;
  /** Each cluster's API server address after patching. */
  servers: string[];
}

/**
 * Makes a kubeconfig exported by kind usable from the host: the API server address is the
 * loopback `127.0.0.1` (kind may write `0.0.0.0` or `localhost`), or `apiServerHost` when
 * the panel reaches the host's published port through another name (a panel in a container
 * uses `host.docker.internal`). With another name, `tls-server-name: localhost` keeps the
 * certificate check valid (kind's API server certificate names `localhost`).
 */
export function patchKubeconfigForHost(text: string, apiServerHost?: string): PatchedKubeconfig {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`kubeconfig is not valid YAML: ${doc.errors[0].message}`);
  const clusters = doc.get('clusters');
  if (!isSeq(clusters) || clusters.items.length === 0) throw new Error('kubeconfig has no clusters entry');
  const servers: string[] = [];
  for (const item of clusters.items) {
    if (!isMap(item)) continue;
    const cluster = item.get('cluster');
    if (!isMap(cluster)) continue;
    const server = cluster.get('server');
    if (typeof server !== 'string') continue;
    let url: URL;
    try {
      url = new URL(server);
    } catch {
      throw new Error(`kubeconfig server is not a URL: ${server}`);
    }
    if (WILDCARD_OR_NAMED_LOOPBACK.has(url.hostname)) url.hostname = '127.0.0.1';
    if (apiServerHost && (url.hostname === '127.0.0.1' || url.hostname === 'localhost')) {
      url.hostname = apiServerHost;
      if (!cluster.has('tls-server-name')) cluster.set('tls-server-name', 'localhost');
    }
    const patched = url.toString().replace(/\/$/, '');
    cluster.set('server', patched);
    servers.push(patched);
  }
  if (servers.length === 0) throw new Error('kubeconfig has no cluster server address');
  return { text: doc.toString(), servers };
}
