// The Kubespray bootstrap over SSH (seed 000's bootstrap sections; issue 10).
import { join } from 'node:path';
import { type Env, envInt, githubMirrorFrom, type JobObserver, JobRunner, JobsRepository, jobLeaseFromEnv, type OperationsLog, partOf, SecretBox, type Store } from '@ironlens/core';
import { BootstrapJob } from './bootstrap.job';
import { type BootstrapDatabase, BootstrapRepository } from './bootstrap.repository';
import type { BootstrapServices } from './bootstrap.routes';
import { BOOTSTRAP_JOB_KIND, BootstrapService, INTERRUPTED_BY_RESTART } from './bootstrap.service';
import { IronlensKey } from './ironlens-key';
import { type Kubespray, KubesprayCli } from './kubespray.adapter';
import { PreflightService } from './preflight.service';
import { Slots } from './redact';
import type { ClusterRegistrar } from './registrar';
import { Ssh2Hosts, type SshHosts } from './ssh.adapter';
import type { WorkerDirectory } from './workers';

export { type BootstrapPhase, PHASES } from './bootstrap.job';
export { type BootstrapDatabase, type BootstrapRecord, type BootstrapTables, bootstrapMigrations, type StoredNode } from './bootstrap.repository';
export { type BootstrapPluginOptions, type BootstrapServices, bootstrapPlugin } from './bootstrap.routes';
export { BOOTSTRAP_JOB_KIND, BootstrapService, type BootstrapStatus, INTERRUPTED_BY_RESTART } from './bootstrap.service';
export { expandHostSpec, MAX_EXPANDED_HOSTS } from './host-spec';
export { KUBESPRAY_VERSION, type Kubespray, KubesprayCli } from './kubespray.adapter';
export type { ClusterRegistrar } from './registrar';
export { fingerprintOf, type HostKey, Ssh2Hosts, type SshHosts } from './ssh.adapter';
export { expandWorkerNodes, preferredKey, type WorkerDirectory, type WorkerHost, type WorkerNodeInput } from './workers';

export interface BootstrapWiring {
  store: Store<BootstrapDatabase>;
  env: Env;
  /** ironlens' data dir: `bootstrap/` under it holds the SSH key, Kubespray checkouts, virtualenvs and job dirs. */
  dataDir: string;
  /** The cluster manager's registration, for `register` (without it, `register` answers 503). */
  registrar?: ClusterRegistrar;
  /** Appends `bootstrap.*` entries when given (the store then needs core's `operationsMigrations`). */
  operations?: OperationsLog;
  /** Default is `Ssh2Hosts`. */
  ssh?: SshHosts;
  /** Default is `KubesprayCli` over the GitHub mirror. */
  kubespray?: Kubespray;
  /** Default is `SecretBox.fromEnv(env, dataDir)`. */
  box?: SecretBox;
  /** Told about bootstrap jobs (the process' job metrics). Default: nothing. */
  jobObserver?: JobObserver;
  /** The boot control plane's workers (issue 24), for nodes given as `{workerId}`. Default: none. */
  workers?: WorkerDirectory;
}

export interface BootstrapRuntime {
  services: BootstrapServices;
  runner: JobRunner;
  /** Stops running bootstraps (they end failed, interrupted by a restart). Does not close the store. */
  close(): Promise<void>;
}

/**
 * Wires the bootstrap from `env` over the shared store (which needs core's `jobsMigrations` and
 * `bootstrapMigrations`). Settings (each optional):
 * - `IRONLENS_BOOTSTRAP_TIMEOUT_S`: a job's deadline. Default is `3600`.
 * - `IRONLENS_BOOTSTRAP_SSH_TIMEOUT_S`: per-host SSH timeout (scan, preflight). Default is `10`.
 * - `IRONLENS_BOOTSTRAP_CONCURRENCY`: jobs running at once; the others wait `queued`. Default is `1`.
 * - `IRONLENS_BOOTSTRAP_JOBS_KEEP`: finished jobs kept. Default is `200`.
 * - `IRONLENS_GITHUB_MIRROR`: where Kubespray is cloned from. Default is `https://github.com`.
 * Takes ironlens' SSH key from the store (sealed; a data dir's key file is moved into a store without one, a new key made
 * when neither has one, one ssh2 cannot use replaced); marks jobs a previous process left running as failed.
 */
export async function createBootstrapServices(w: BootstrapWiring): Promise<BootstrapRuntime> {
  const root = join(w.dataDir, 'bootstrap');
  const timeoutMs = envInt(w.env, 'IRONLENS_BOOTSTRAP_TIMEOUT_S', 3600, 1) * 1000;
  const sshTimeoutMs = envInt(w.env, 'IRONLENS_BOOTSTRAP_SSH_TIMEOUT_S', 10, 1) * 1000;
  const concurrency = envInt(w.env, 'IRONLENS_BOOTSTRAP_CONCURRENCY', 1, 1);
  const keep = envInt(w.env, 'IRONLENS_BOOTSTRAP_JOBS_KEEP', 200, 1);
  const box = w.box ?? SecretBox.fromEnv(w.env, w.dataDir);
  const repo = new BootstrapRepository(w.store);
  const key = await IronlensKey.open(w.dataDir, repo, box);
  if (key.replaced) await w.operations?.append({ op: 'bootstrap.ssh_key.replaced', reason: 'the key ssh2 could not use was moved aside; put the new public key in the nodes\' authorized_keys' });
  const ssh = w.ssh ?? new Ssh2Hosts();
  const kubespray = w.kubespray ?? new KubesprayCli({ root, githubMirror: githubMirrorFrom(w.env), env: w.env });
  const runner = new JobRunner(new JobsRepository(partOf(w.store)), {
    retention: { [BOOTSTRAP_JOB_KIND]: keep },
    interruptedMessage: INTERRUPTED_BY_RESTART,
    logTailLines: 2000,
    logLineMax: 4096,
    cancelPollMs: 1000,
    ...jobLeaseFromEnv(w.env),
    observer: w.jobObserver,
  });
  const preflight = new PreflightService(ssh, key);
  const jobsDir = join(root, 'jobs');
  const job = new BootstrapJob({ repo, preflight, kubespray, key, box, registrar: w.registrar, workers: w.workers, slots: new Slots(concurrency), jobsDir, timeoutMs, sshTimeoutMs });
  const bootstrap = new BootstrapService({ repo, runner, preflight, ssh, job, kubespray, key, box, registrar: w.registrar, operations: w.operations, workers: w.workers, sshTimeoutMs, jobsDir });
  await bootstrap.recover();
  // Replicas: a job of this data dir's previous process fails when its lease runs out, later.
  const stopJanitor = w.store.dialect === 'postgres' ? bootstrap.startJanitor(jobLeaseFromEnv(w.env).heartbeatMs ?? 5000) : () => {};
  return {
    services: { bootstrap },
    runner,
    close: () => {
      stopJanitor();
      return runner.stop();
    },
  };
}
