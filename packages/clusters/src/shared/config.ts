import { join } from 'node:path';
import { type Env, envBool, envInt, envOptional, envString, githubMirrorFrom } from '@ironlens/core';
import { findHelm } from '../adapters/helm.adapter';

/** The cluster manager's settings, read from the environment (each states its default). */
export interface ClustersConfig {
  /** `IRONLENS_GITHUB_MIRROR`. Default is `https://github.com`. */
  githubMirror: string;
  /** `IRONLENS_CLUSTER_READY_TIMEOUT_MS`: the `/readyz` probe behind `ready`. Default is `1500`. */
  readyTimeoutMs: number;
  /** `IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS`: any other request to a cluster (504 past it). Default is `15000`. */
  requestTimeoutMs: number;
  /** `IRONLENS_CLUSTER_GATEWAY_CLEANUP_TIMEOUT_MS`: DELETE waits this long for the gateway namespace. Default is `120000`. */
  gatewayCleanupTimeoutMs: number;
  /** `IRONLENS_CLUSTER_HELPER_IMAGE`: image of the node-tuning and pre-pull DaemonSets (sh, sysctl, nsenter, sleep). Default is `docker.io/library/busybox:1.37.0`. */
  helperImage: string;
  /** `IRONLENS_LENS_HOSTS`: comma-separated answer of `lens-hosts`. Default: this host's addresses. */
  lensHosts: string | undefined;
  /** `IRONLENS_CLUSTER_SUMMARY_TTL_MS`: how long the overview reuses a node's kubelet Summary (older ones, up to 5 min, are answered while refreshed in the background). Default is `15000`. */
  summaryTtlMs: number;
  /** `IRONLENS_CLUSTER_SUMMARY_BUDGET_MS`: how long an overview waits, from the request's arrival, for kubelet Summaries it does not hold yet; past it the disk figures are `null` and the scrape goes on in the background for the next call. Default is `500`; `0` never waits. */
  summaryBudgetMs: number;
  /** `IRONLENS_CLUSTER_ALLOW_LINK_LOCAL`: accept kubeconfig servers on link-local (169.254.0.0/16, fe80::/10) and cloud-metadata addresses. Default is `false`. */
  allowLinkLocal: boolean;
  /** `IRONLENS_CLUSTER_MAX_RESPONSE_BYTES`: cap of one answer from a cluster, enforced while streaming (502 `cluster_response_too_large` past it). Default is `4194304` (4 MiB). */
  maxResponseBytes: number;
  /** `IRONLENS_CLUSTER_MAX_LIST_BYTES`: cap of one list answer (nodes, pods… of the overview). Default is `67108864` (64 MiB). */
  maxListBytes: number;
  /** `IRONLENS_CRD_BUNDLE_MAX_BYTES`: cap of a CRD bundle download, enforced while streaming. Default is `16777216` (16 MiB). */
  bundleMaxBytes: number;
  /** `IRONLENS_CRD_BUNDLE_REDIRECT_HOSTS`: comma-separated hosts a bundle download may be redirected to, besides the mirror's own host. Default is `objects.githubusercontent.com,release-assets.githubusercontent.com`. */
  bundleRedirectHosts: string[];
  /** Where downloaded sources are kept: `<dataDir>/clusters/cache`. */
  cacheDir: string;
  /** `IRONLENS_CHART_MIRROR`: the Helm charts of the gateway providers and the IPP (an HTTP Helm repository with `index.yaml`, or an `oci://` prefix), under their upstream names. Default: unset (no chart is installed; a reconcile that needs one fails saying so). */
  chartMirror: string | null;
  /** `IRONLENS_HELM`: the helm binary. Default: `helm` on `PATH`. */
  helm: string | null;
  /**
   * `IRONLENS_GATEWAY_AUTHZ_PORT`: the port the hook's EndpointSlice points at. Default: the port of
   * `IRONLENS_CONSOLE_LISTEN` (`8080`); `null` when that port is `0` (ephemeral): then the port the
   * console listener actually bound, given by `ironlens serve` once it listens (`GatewayService.useConsolePort`).
   */
  authzPort: number | null;
  /** `IRONLENS_GATEWAY_AUTHZ_RATE` / `IRONLENS_GATEWAY_AUTHZ_BURST`: authorization calls per second per source, and the burst. Default is `200` / `400`. */
  authzRate: { perSecond: number; burst: number };
  /** `IRONLENS_GATEWAY_CRD_WAIT_MS`: how long a reconcile waits for a kind a chart just added to be served. Default is `60000`. */
  crdWaitMs: number;
  /** `IRONLENS_DEPLOYMENT_POLL_MS`: how often a deployment's readiness is read while it deploys. Default is `2000`. */
  deploymentPollMs: number;
  /** `IRONLENS_DEPLOYMENT_READY_TIMEOUT_MS`: a deployment not ready by then fails with its last reason. Default is `1800000` (30 min). */
  deploymentReadyTimeoutMs: number;
  /** `IRONLENS_DEPLOYMENT_SMOKE_TIMEOUT_MS`: how long Ready model servers may leave the smoke request unanswered before the deployment fails. Default is `300000`. */
  deploymentSmokeTimeoutMs: number;
  /** `IRONLENS_DEPLOYMENT_SMOKE_REQUEST_TIMEOUT_MS`: one smoke request's timeout. Default is `30000`. */
  deploymentSmokeRequestTimeoutMs: number;
}

/** The console listener's configured port; `null` for `0` (an ephemeral port, known once bound). */
function consolePort(env: Env): number | null {
  const listen = envOptional(env, 'IRONLENS_CONSOLE_LISTEN') ?? '127.0.0.1:8080';
  const m = /:(\d+)$/.exec(listen);
  const port = m ? Number(m[1]) : 8080;
  return port === 0 ? null : port;
}

function envPort(env: Env, name: string): number {
  const port = envInt(env, name, 0, 1);
  if (port > 65535) throw new Error(`${name} must be a port (1-65535), got ${port}`);
  return port;
}

export function clustersConfigFromEnv(env: Env, dataDir: string): ClustersConfig {
  return {
    githubMirror: githubMirrorFrom(env),
    readyTimeoutMs: envInt(env, 'IRONLENS_CLUSTER_READY_TIMEOUT_MS', 1500, 1),
    requestTimeoutMs: envInt(env, 'IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS', 15_000, 1),
    gatewayCleanupTimeoutMs: envInt(env, 'IRONLENS_CLUSTER_GATEWAY_CLEANUP_TIMEOUT_MS', 120_000, 1),
    helperImage: envString(env, 'IRONLENS_CLUSTER_HELPER_IMAGE', 'docker.io/library/busybox:1.37.0'),
    lensHosts: envOptional(env, 'IRONLENS_LENS_HOSTS'),
    summaryTtlMs: envInt(env, 'IRONLENS_CLUSTER_SUMMARY_TTL_MS', 15_000, 0),
    summaryBudgetMs: envInt(env, 'IRONLENS_CLUSTER_SUMMARY_BUDGET_MS', 500, 0),
    allowLinkLocal: envBool(env, 'IRONLENS_CLUSTER_ALLOW_LINK_LOCAL', false),
    maxResponseBytes: envInt(env, 'IRONLENS_CLUSTER_MAX_RESPONSE_BYTES', 4 * 1024 * 1024, 1024),
    maxListBytes: envInt(env, 'IRONLENS_CLUSTER_MAX_LIST_BYTES', 64 * 1024 * 1024, 1024),
    bundleMaxBytes: envInt(env, 'IRONLENS_CRD_BUNDLE_MAX_BYTES', 16 * 1024 * 1024, 1024),
    bundleRedirectHosts: (envOptional(env, 'IRONLENS_CRD_BUNDLE_REDIRECT_HOSTS') ?? 'objects.githubusercontent.com,release-assets.githubusercontent.com')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    cacheDir: join(dataDir, 'clusters', 'cache'),
    chartMirror: envOptional(env, 'IRONLENS_CHART_MIRROR') ?? null,
    helm: findHelm({ IRONLENS_HELM: envOptional(env, 'IRONLENS_HELM'), PATH: env.PATH ?? process.env.PATH }),
    authzPort: envOptional(env, 'IRONLENS_GATEWAY_AUTHZ_PORT') === undefined ? consolePort(env) : envPort(env, 'IRONLENS_GATEWAY_AUTHZ_PORT'),
    authzRate: { perSecond: envInt(env, 'IRONLENS_GATEWAY_AUTHZ_RATE', 200, 1), burst: envInt(env, 'IRONLENS_GATEWAY_AUTHZ_BURST', 400, 1) },
    crdWaitMs: envInt(env, 'IRONLENS_GATEWAY_CRD_WAIT_MS', 60_000, 0),
    deploymentPollMs: envInt(env, 'IRONLENS_DEPLOYMENT_POLL_MS', 2000, 10),
    deploymentReadyTimeoutMs: envInt(env, 'IRONLENS_DEPLOYMENT_READY_TIMEOUT_MS', 1_800_000, 1000),
    deploymentSmokeTimeoutMs: envInt(env, 'IRONLENS_DEPLOYMENT_SMOKE_TIMEOUT_MS', 300_000, 0),
    deploymentSmokeRequestTimeoutMs: envInt(env, 'IRONLENS_DEPLOYMENT_SMOKE_REQUEST_TIMEOUT_MS', 30_000, 100),
  };
}
