import { type Env, envInt, type Exec, exec as realExec, jobLeaseFromEnv, type JobObserver, JobRunner, JobsRepository, type JobsTables, type NamedMigration, type Store } from '@ironlens/core';
import { ContainerEngineCli } from './adapters/container-engine.adapter';
import { KindCli } from './adapters/kind.adapter';
import { KubectlCli } from './adapters/kubectl.adapter';
import { RegistryNodeTags } from './adapters/node-tags.adapter';
import { pathLookup } from './adapters/path-lookup';
import { type KindConfig, readKindConfig } from './config';
import { ClusterFiles } from './repositories/cluster-files.repository';
import { ClustersService } from './services/clusters.service';
import { CreateClusterJob } from './services/create-cluster.job';
import { EnvironmentService } from './services/environment.service';
import { CREATE_CLUSTER_JOB, KindJobsService } from './services/kind-jobs.service';
import type { KindServices } from './services/kind-services';

/**
 * The kind panel keeps no tables of its own: its jobs live in core's `jobs` table, so a
 * store for it needs `jobsMigrations` from `@ironlens/core` (plus these, empty today).
 */
export const kindMigrations: NamedMigration[] = [];

/** The tables the kind panel queries: core's `jobs`. */
export type KindDatabase = JobsTables;

export interface KindRuntime {
  config: KindConfig;
  services: KindServices;
  runner: JobRunner;
  /** Stops this runtime's running jobs (they end failed, interrupted). Does not close the store. */
  close(): Promise<void>;
}

export interface KindWiringOptions {
  /** The command runner. Default is core's `exec`. */
  exec?: Exec;
  /** For the registry client. Default is the global `fetch`. */
  fetch?: typeof fetch;
  /** Resolves relative directories of the configuration. Default is `process.cwd()`. */
  cwd?: string;
  /** Share a runner with other subsystems; by default the panel makes its own over `store`. */
  runner?: JobRunner;
  /** Told about the panel's jobs (the process' job metrics) when it makes its own runner. Default: nothing. */
  jobObserver?: JobObserver;
}

/**
 * Wires the real adapters (kind, kubectl, docker/podman CLIs; the registry) from `env`
 * into the services the plugin needs, over the shared `store` (which must include
 * `jobsMigrations`). Marks creation jobs left running by a previous process as failed
 * (interrupted). `KIND_K8S_JOBS_KEEP` (default `200`) bounds the kept creation jobs.
 */
export async function createKindServices(env: Env, store: Store<KindDatabase>, opts: KindWiringOptions = {}): Promise<KindRuntime> {
  const config = readKindConfig(env, opts.cwd);
  const exec = opts.exec ?? realExec;
  const keep = envInt(env, 'KIND_K8S_JOBS_KEEP', 200, 1);
  const runner = opts.runner ?? new JobRunner(new JobsRepository(store), { retention: { [CREATE_CLUSTER_JOB]: keep }, observer: opts.jobObserver, ...jobLeaseFromEnv(env) });
  await runner.recover(CREATE_CLUSTER_JOB);

  const onPath = pathLookup(env);
  const kind = new KindCli(exec, env, config.containerCli);
  const kubectl = new KubectlCli(exec, env);
  const engine = new ContainerEngineCli(exec, env, config.containerCli);
  const files = new ClusterFiles(config.clustersDir);
  const tags = new RegistryNodeTags(config.tagsUrl, { fetch: opts.fetch });
  const createJob = new CreateClusterJob({
    kind,
    kubectl,
    engine,
    files,
    onPath,
    apiServerHost: config.apiServerHost,
    nodesReadyTimeoutS: config.nodesReadyTimeoutS,
    createTimeoutS: config.createTimeoutS,
  });
  const services: KindServices = {
    environment: new EnvironmentService(onPath, engine, tags, { skipVersionList: config.skipVersionList }),
    clusters: new ClustersService(kind, kubectl, files, runner, createJob),
    jobs: new KindJobsService(runner),
  };
  return {
    config,
    services,
    runner,
    close: async () => {
      if (!opts.runner) await runner.stop();
    },
  };
}
