import type { DatabaseStatus } from './api/clusters';
import { join } from 'node:path';
import { joinedWorkerNodes, type WorkerDirectory } from './bootstrap/workers';
import { type Env, jobLeaseFromEnv, JobRunner, JobsRepository, OperationsLog, partOf, SecretBox, type Store } from '@ironlens/core';
import { type ClustersConfig, clustersConfigFromEnv } from './shared/config';
import { type BundleFetcher, HttpBundleFetcher } from './adapters/bundle-fetch.adapter';
import { GitCli, type GitClone } from './adapters/git.adapter';
import { clientNodeConnector, type KubeConnector } from './adapters/kube.adapter';
import type { HostResolver } from './adapters/address-guard';
import { type LensHosts, SystemLensHosts } from './adapters/lens-hosts.adapter';
import { GatewayAuthorizer } from './gateway/gateway-authz.service';
import { GatewayKeys } from './gateway/gateway-keys.service';
import { GATEWAY_JOB, GatewayReconciler } from './gateway/gateway-reconcile.service';
import { GatewayStatusService } from './gateway/gateway-status.service';
import { GatewayRepository } from './gateway/gateway.repository';
import { GatewayService } from './gateway/gateway.service';
import { GatewaySettings } from './gateway/gateway.settings';
import { type Helm, HelmCli } from './adapters/helm.adapter';
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
import { PREPULL_JOB, PrepullService } from './software/prepull.service';
import { DOWNLOAD_JOB, SoftwareService } from './software/software.service';
import { DeploymentRepository } from './deployments/deployment.repository';
import { DEPLOY_JOB } from './deployments/deployment.job';
import { DeploymentService, type WorkerInventory } from './deployments/deployment.service';

export interface ClusterServices {
  config: ClustersConfig;
  profile: StackProfile;
  /** What `GET /api/v1/system/database` answers: the store's engine (fixed at start). */
  database: DatabaseStatus;
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
  const gatewayRepo = new GatewayRepository();
  const settings = new GatewaySettings({ profile, githubMirror: config.githubMirror, authzPort: config.authzPort, crdWaitMs: config.crdWaitMs, rate: config.authzRate });
  const helm = deps.helm ?? new HelmCli(config.helm, config.chartMirror, join(dataDir, 'clusters', 'helm'));
  const workers = deps.workers;
  const authorizer = new GatewayAuthorizer(access, gatewayRepo, config.authzRate);
  const gateway = new GatewayService(
    settings,
    new GatewayReconciler(access, gatewayRepo, runner, ops, helm, crds, settings),
    new GatewayStatusService(access, repo, gatewayRepo, runner, settings, workers ? { joined: (clusterId) => joinedWorkerNodes(workers, clusterId) } : null),
    new GatewayKeys(access, gatewayRepo, ops),
    authorizer,
  );
  clusters.useGateway(gateway);
  const overview = new OverviewService(access, clusters, gateway, {
    summaryConcurrency: 64,
    summaryTimeoutMs: 5000,
    summaryTtlMs: config.summaryTtlMs,
    summaryMaxStaleMs: 5 * 60_000,
    summaryBudgetMs: config.summaryBudgetMs,
    prometheusTimeoutMs: 5000,
  });
  const postgres = store.dialect === 'postgres';
  const deployments = new DeploymentService(access, sessions, new DeploymentRepository(), runner, ops, helm, {
    profile,
    pollMs: config.deploymentPollMs,
    readyTimeoutMs: config.deploymentReadyTimeoutMs,
    smokeTimeoutMs: config.deploymentSmokeTimeoutMs,
    smokeRequestTimeoutMs: config.deploymentSmokeRequestTimeoutMs,
  });
  deployments.useGateway({ publicUrl: async (row) => (await gateway.statusOfRecord(row)).gatewayPublicUrl, keyOwner: (a, source) => authorizer.owner(a, source) });
  if (deps.inventory) deployments.useWorkers(deps.inventory);
  // Deployments a job left in progress (a restart, a dead replica) are taken up once the runner recovered.
  const ready = recovered.then(() => deployments.start()).then(() => undefined);
  return {
    config,
    profile,
    database: { configured: true, mode: postgres ? 'external' : 'embedded', engine: postgres ? 'postgresql' : 'sqlite', displayTarget: postgres ? store.displayTarget : null },
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
