import type { WorkerDirectory } from './bootstrap/workers';
import { join } from 'node:path';
import { type Env, envBool, envInt, envOptional, envString, githubMirrorFrom, jobLeaseFromEnv, JobRunner, JobsRepository, OperationsLog, partOf, SecretBox, type Store } from '@ironlens/core';
import { type BundleFetcher, HttpBundleFetcher } from './adapters/bundle-fetch.adapter';
import { GitCli, type GitClone } from './adapters/git.adapter';
import { clientNodeConnector, type KubeConnector } from './adapters/kube.adapter';
import type { HostResolver } from './adapters/address-guard';
import { type LensHosts, SystemLensHosts } from './adapters/lens-hosts.adapter';
import { GatewayRepository } from './gateway/gateway.repository';
import { GATEWAY_JOB, GatewayService } from './gateway/gateway.service';
import { findHelm, type Helm, HelmCli } from './adapters/helm.adapter';
import { type BundlePins, loadBundlePins, type StackProfile, stackProfile } from './shared/profile';
import { ClusterRepository } from './registry/cluster.repository';
import { DownloadRepository, PrepullRepository } from './software/download.repository';
import { SessionRepository } from './registry/session.repository';
import type { ClustersDatabase } from './shared/tables';
import { ClusterAccess } from './registry/cluster-access';
import { ClusterService, DELETE_JOB, NODE_TUNING_JOB } from './registry/cluster.service';
import { CRDS_JOB, CrdsService } from './software/crds.service';
import { HfTokenService } from './registry/hf-token.service';
import { OverviewService } from './overview/overview.service';
import { PlatformService } from './overview/platform.service';
import { DOWNLOAD_JOB, PREPULL_JOB, PrepullService, SoftwareService } from './software/software.service';
import { DeploymentRepository } from './deployments/deployment.repository';
import { DEPLOY_JOB } from './deployments/deployment.job';
import { DeploymentService, type WorkerInventory } from './deployments/deployment.service';
import { createHash } from 'node:crypto';
import { AppError } from '@ironlens/core';

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

export interface ClusterServices {
  config: ClustersConfig;
  profile: StackProfile;
  clusters: ClusterService;
  hfToken: HfTokenService;
  software: SoftwareService;
  prepull: PrepullService;
  crds: CrdsService;
  overview: OverviewService;
  platform: PlatformService;
  gateway: GatewayService;
  deployments: DeploymentService;
  runner: JobRunner;
  /** Resolves once jobs left running by a previous process are marked failed (interrupted). */
  ready: Promise<void>;
  /** Stops this instance's jobs (when it owns the runner) and closes cluster connections. Does not close the store. */
  close(): Promise<void>;
}

export interface ClusterServicesDeps {
  /** The shared store; it must hold `operationsMigrations`, `jobsMigrations` and `clustersMigrations`. */
  store: Store<ClustersDatabase>;
  env: Env;
  /** The data dir: the SecretBox key file (unless `IRONLENS_SECRET_KEY`) and the source cache live here. */
  dataDir: string;
  /** The shared job runner. Default: one of its own over `store`. */
  runner?: JobRunner;
  /** Opens a cluster's API. Default: `@kubernetes/client-node`. */
  connector?: KubeConnector;
  /** Resolves cluster servers' names at each connection (the link-local guard checks the answers). Default: the system resolver. */
  resolve?: HostResolver;
  git?: GitClone;
  fetcher?: BundleFetcher;
  hosts?: LensHosts;
  profile?: StackProfile;
  /** Runs Helm. Default: the helm CLI (`IRONLENS_HELM` or `PATH`). */
  helm?: Helm;
  /** The CRD bundles' sha256 pins. Default: `profile/crd-bundles.json`. */
  bundlePins?: BundlePins;
  /** The booted workers (issue 24): the gateway's public URL prefers a joined worker's reported address. */
  workers?: Pick<WorkerDirectory, 'joinedTo'>;
  /** The booted workers' host reports (issue 28: their accelerators beside the nodes). Default: none known. */
  inventory?: WorkerInventory;
}

export const CLUSTER_JOB_KINDS = [NODE_TUNING_JOB, CRDS_JOB, DOWNLOAD_JOB, PREPULL_JOB, DELETE_JOB, GATEWAY_JOB, DEPLOY_JOB];

/** Hand-written constructor injection for the cluster manager. */
export function createClusterServices(deps: ClusterServicesDeps): ClusterServices {
  const { store, env, dataDir } = deps;
  const config = clustersConfigFromEnv(env, dataDir);
  const profile = deps.profile ?? stackProfile();
  const box = SecretBox.fromEnv(env, dataDir);
  const ops = new OperationsLog(partOf(store));
  const runner = deps.runner ?? new JobRunner(new JobsRepository(partOf(store)), jobLeaseFromEnv(env));
  const recovered = Promise.all(CLUSTER_JOB_KINDS.map((k) => runner.recover(k)));
  const repo = new ClusterRepository();
  const sessions = new SessionRepository();
  const downloads = new DownloadRepository();
  const access = new ClusterAccess(store, repo, box, deps.connector ?? clientNodeConnector, {
    requestTimeoutMs: config.requestTimeoutMs,
    env,
    allowLinkLocal: config.allowLinkLocal,
    resolve: deps.resolve,
    maxResponseBytes: config.maxResponseBytes,
    maxListBytes: config.maxListBytes,
  });
  const clusters = new ClusterService(access, repo, sessions, downloads, box, ops, runner, deps.hosts ?? new SystemLensHosts(config.lensHosts), {
    profile,
    readyTimeoutMs: config.readyTimeoutMs,
    gatewayCleanupTimeoutMs: config.gatewayCleanupTimeoutMs,
    helperImage: config.helperImage,
    allowLinkLocal: config.allowLinkLocal,
  });
  const fetcher = deps.fetcher ?? new HttpBundleFetcher({ maxBytes: config.bundleMaxBytes, redirectHosts: config.bundleRedirectHosts });
  const crds = new CrdsService(access, runner, fetcher, ops, profile, config.githubMirror, deps.bundlePins ?? loadBundlePins());
  const helm = deps.helm ?? new HelmCli(config.helm, config.chartMirror, join(dataDir, 'clusters', 'helm'));
  const gatewayRepo = new GatewayRepository();
  const gateway = new GatewayService(access, repo, gatewayRepo, runner, ops, helm, crds, {
    profile,
    githubMirror: config.githubMirror,
    authzPort: config.authzPort,
    crdWaitMs: config.crdWaitMs,
    rate: config.authzRate,
  });
  clusters.useGateway(gateway);
  if (deps.workers) gateway.useWorkers(deps.workers);
  const overview = new OverviewService(access, clusters, {
    summaryConcurrency: 64,
    summaryTimeoutMs: 5000,
    summaryTtlMs: config.summaryTtlMs,
    summaryMaxStaleMs: 5 * 60_000,
    summaryBudgetMs: config.summaryBudgetMs,
    prometheusTimeoutMs: 5000,
  });
  overview.useGateway(gateway);
  const deployments = new DeploymentService(access, sessions, new DeploymentRepository(), runner, ops, helm, {
    profile,
    pollMs: config.deploymentPollMs,
    readyTimeoutMs: config.deploymentReadyTimeoutMs,
    smokeTimeoutMs: config.deploymentSmokeTimeoutMs,
    smokeRequestTimeoutMs: config.deploymentSmokeRequestTimeoutMs,
  });
  deployments.useGateway({
    publicUrl: async (row) => (await gateway.statusOfRecord(row)).gatewayPublicUrl,
    // A gateway key names its cluster (only its SHA-256 is stored); the hook's own check (rate limit, last use) then runs for that cluster.
    keyOwner: async (authorization, source) => {
      const m = /^Bearer\s+(ilgw_\S{1,200})\s*$/i.exec(authorization ?? '');
      const owner = m ? await gatewayRepo.keyByHash(access.db, createHash('sha256').update(m[1]).digest('hex')) : null;
      if (!owner) {
        await gateway.authorize('', authorization, source);
        throw new AppError('gateway_forbidden', 'access denied');
      }
      const { headers } = await gateway.authorize(owner.clusterId, authorization, source);
      return { clusterId: owner.clusterId, name: Object.values(headers)[0] ?? owner.name };
    },
  });
  if (deps.inventory) deployments.useWorkers(deps.inventory);
  const ready = recovered.then(() => deployments.start()).then(() => undefined);
  return {
    config,
    profile,
    clusters,
    gateway,
    deployments,
    hfToken: new HfTokenService(access, repo, ops),
    software: new SoftwareService(access, downloads, runner, deps.git ?? new GitCli(process.env), ops, profile, config.githubMirror, config.cacheDir),
    prepull: new PrepullService(access, new PrepullRepository(), runner, ops, profile, config.helperImage),
    crds,
    overview,
    platform: new PlatformService(access, clusters, ops, profile),
    runner,
    ready,
    async close() {
      deployments.stop();
      if (!deps.runner) await runner.stop();
      access.close();
    },
  };
}
