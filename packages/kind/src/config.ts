import { resolve } from 'node:path';
import { type Env, envBool, envInt, envOptional, envString, hostList } from '@ironlens/core';

/** The Docker Hub tags API the original panel reads `kindest/node` tags from. */
export const DEFAULT_TAGS_URL = 'https://hub.docker.com/v2/repositories/kindest/node/tags?page_size=100';

export type ContainerCliName = 'docker' | 'podman';

export interface KindConfig {
  /** `KIND_K8S_WEB_HOST`. Default is `127.0.0.1` (this machine only: the API hands out kubeconfigs; the seed used `0.0.0.0`). */
  host: string;
  /** `KIND_K8S_WEB_PORT`. Default is `8080`. */
  port: number;
  /** `CONTAINER_CLI`: `docker` or `podman`. Default is `docker`. */
  containerCli: ContainerCliName;
  /** `KIND_K8S_SKIP_VERSION_LIST`: answer an empty version list without asking the registry. Default is `false`. */
  skipVersionList: boolean;
  /** `KIND_K8S_CLUSTERS_DIR`: each cluster's `kubeconfig`, `kind-config.yaml` and `meta.json`. Default is `./clusters`. */
  clustersDir: string;
  /** `KIND_K8S_TAGS_URL`: where the `kindest/node` tags are read from. Default is Docker Hub's tags API. */
  tagsUrl: string;
  /** `KIND_K8S_DB`: the SQLite store of the standalone panel (jobs). Default is `./.data/kind.sqlite`. */
  dbFile: string;
  /**
   * `KIND_K8S_API_SERVER_HOST`: host written into saved kubeconfigs, for a panel that runs in a
   * container and reaches the host's published API port through another name (`host.docker.internal`).
   * Default: unset (the loopback address `127.0.0.1`).
   */
  apiServerHost: string | undefined;
  /** `KIND_K8S_NODES_READY_TIMEOUT`: seconds to wait for nodes Ready after creation. Default is `180`. */
  nodesReadyTimeoutS: number;
  /** `KIND_K8S_CREATE_TIMEOUT`: seconds `kind create cluster` may take. Default is `1200`. */
  createTimeoutS: number;
  /**
   * `KIND_K8S_HOSTS`: comma-separated host names the panel answers besides the loopback names and
   * its own addresses (a request for another `Host` is a 421: DNS rebinding); `*` for any. Default: none.
   */
  hosts: string[];
}

export function readKindConfig(env: Env, cwd = process.cwd()): KindConfig {
  const cli = envString(env, 'CONTAINER_CLI', 'docker').trim().toLowerCase();
  if (cli !== 'docker' && cli !== 'podman') throw new Error(`CONTAINER_CLI must be docker or podman, got ${JSON.stringify(env.CONTAINER_CLI)}`);
  const port = envInt(env, 'KIND_K8S_WEB_PORT', 8080, 0);
  if (port > 65535) throw new Error(`KIND_K8S_WEB_PORT must be a port number, got ${port}`);
  return {
    host: envString(env, 'KIND_K8S_WEB_HOST', '127.0.0.1'),
    port,
    containerCli: cli,
    skipVersionList: envBool(env, 'KIND_K8S_SKIP_VERSION_LIST', false),
    clustersDir: resolve(cwd, envString(env, 'KIND_K8S_CLUSTERS_DIR', 'clusters')),
    tagsUrl: envString(env, 'KIND_K8S_TAGS_URL', DEFAULT_TAGS_URL),
    dbFile: resolve(cwd, envString(env, 'KIND_K8S_DB', '.data/kind.sqlite')),
    apiServerHost: envOptional(env, 'KIND_K8S_API_SERVER_HOST'),
    nodesReadyTimeoutS: envInt(env, 'KIND_K8S_NODES_READY_TIMEOUT', 180, 1),
    createTimeoutS: envInt(env, 'KIND_K8S_CREATE_TIMEOUT', 1200, 1),
    hosts: hostList(env.KIND_K8S_HOSTS),
  };
}
