import { type Env, SecretBox, type Store } from '@ironlens/core';
import type { HostResolver } from '../adapters/address-guard';
import { clientNodeConnector, type KubeConnector } from '../adapters/kube.adapter';
import { ClusterRepository } from '../registry/cluster.repository';
import type { ClustersDatabase } from '../shared/tables';
import { ClusterAccess } from '../registry/cluster-access';
import { clustersConfigFromEnv } from '../shared/config';
import { type ClusterNodesOptions, KubeClusterNodes } from './cluster-nodes.service';

export interface ClusterNodesDeps extends ClusterNodesOptions {
  /** The shared store (it holds the registered clusters). */
  store: Store<ClustersDatabase>;
  env: Env;
  /** The data dir: the SecretBox key file (unless `IRONLENS_SECRET_KEY`). */
  dataDir: string;
  /** Opens a cluster's API. Default: `@kubernetes/client-node`. */
  connector?: KubeConnector;
  resolve?: HostResolver;
}

/**
 * The registered clusters' nodes for the boot control plane's rollouts (issue 31): a connection
 * per cluster record with the same settings as the cluster manager's own (timeouts, response caps,
 * the link-local guard, proxies), whether or not the console listener runs. `close()` ends the
 * connections.
 */
export function createClusterNodes(deps: ClusterNodesDeps): { nodes: KubeClusterNodes; close(): void } {
  const config = clustersConfigFromEnv(deps.env, deps.dataDir);
  const repo = new ClusterRepository();
  const access = new ClusterAccess(deps.store, repo, SecretBox.fromEnv(deps.env, deps.dataDir), deps.connector ?? clientNodeConnector, {
    requestTimeoutMs: config.requestTimeoutMs,
    env: deps.env,
    allowLinkLocal: config.allowLinkLocal,
    resolve: deps.resolve,
    maxResponseBytes: config.maxResponseBytes,
    maxListBytes: config.maxListBytes,
  });
  const nodes = new KubeClusterNodes(
    {
      ids: async () => (await repo.list(deps.store.db, { includeDrafts: false })).map((r) => r.id),
      kube: async (id) => access.kube(await access.record(id)),
    },
    deps,
  );
  return { nodes, close: () => access.close() };
}
