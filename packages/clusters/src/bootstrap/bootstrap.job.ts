import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFileExclusiveSync, type JobContext, type SecretBox } from '@ironlens/core';
import type { BootstrapRepository } from './bootstrap.repository';
import { type BootstrapProxy, renderGroupVars, renderInventory, renderKnownHosts, renderPasswordVars } from './inventory';
import type { IronlensKey } from './ironlens-key';
import type { Kubespray } from './kubespray.adapter';
import type { ResolvedNode } from './nodes';
import type { PreflightService } from './preflight.service';
import type { Redactor, Slots } from './redact';
import type { ClusterRegistrar } from './registrar';
import type { WorkerDirectory } from './workers';
import type { HostKey } from './ssh.adapter';

export { type BootstrapPhase, PHASES } from '../api/phases';

/** Everything one run needs; the credentials in `nodes` live only here, in memory. */
export interface BootstrapRun {
  id: string;
  nodes: ResolvedNode[];
  proxy?: BootstrapProxy;
  register?: { name: string; description?: string };
  redactor: Redactor;
  /** The nodes given as workers (issue 24): they are told the cluster they joined once it is registered. */
  workerIds?: string[];
}

export interface BootstrapJobDeps {
  repo: BootstrapRepository;
  preflight: PreflightService;
  kubespray: Kubespray;
  key: IronlensKey;
  box: SecretBox;
  registrar?: ClusterRegistrar;
  /** Where the workers are told the cluster they joined (issue 24). Default: nowhere. */
  workers?: WorkerDirectory;
  slots: Slots;
  /** `<dataDir>/bootstrap/jobs`: one directory per job, deleted when it ends. */
  jobsDir: string;
  /** Per-job deadline. */
  timeoutMs: number;
  sshTimeoutMs: number;
}

/** The sealed-kubeconfig purpose: binds the ciphertext to its job. */
export const kubeconfigPurpose = (id: string) => `bootstrap:${id}:kubeconfig`;

/**
 * One bootstrap: wait for a slot (`queued`), check every node again over its pinned key
 * (`preflight`, which also yields the keys for `known_hosts`), fetch Kubespray and its
 * requirements (`provisioning`), run `cluster.yml` (`running`), then hand the admin kubeconfig
 * over (`kubeconfig_ready`): sealed in the store until read once, or registered with the cluster
 * manager. The job directory, with every secret file in it, is deleted whatever the outcome.
 */
export class BootstrapJob {
  constructor(private readonly deps: BootstrapJobDeps) {}

  jobDir(id: string): string {
    if (!/^bootstrap-[0-9a-f]{12}$/.test(id)) throw new Error(`invalid bootstrap id ${id}`);
    return join(this.deps.jobsDir, id);
  }

  async run(ctx: JobContext, run: BootstrapRun): Promise<void> {
    const log = (line: string) => ctx.log(run.redactor.line(line));
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new Error(`the bootstrap took longer than its deadline (${Math.round(this.deps.timeoutMs / 1000)} s)`)), this.deps.timeoutMs);
    const signal = AbortSignal.any([ctx.signal, deadline.signal]);
    const dir = this.jobDir(run.id);
    let release: (() => void) | undefined;
    try {
      ctx.stage('queued');
      release = await this.deps.slots.acquire(signal);

      ctx.stage('preflight');
      await ctx.flush();
      const pre = await this.deps.preflight.runWithKeys(run.nodes, { timeoutMs: this.deps.sshTimeoutMs, signal });
      this.stopIfAborted(signal);
      for (const item of pre.items) {
        log(`${item.host}: ${item.state} (${item.checks.map((c) => `${c.id} ${c.status}${c.detail ? `: ${c.detail}` : ''}`).join('; ')})`);
      }
      if (!pre.allPassed) {
        const failed = pre.items.filter((i) => i.state === 'failed').map((i) => `${i.host}: ${i.error}`);
        throw new Error(`preflight failed: ${failed.join('; ')}`);
      }

      ctx.stage('provisioning');
      const checkout = await this.deps.kubespray.prepare({ signal, onLine: log });
      this.stopIfAborted(signal);
      this.writeJobDir(dir, run, pre.hostKeys);

      ctx.stage('running');
      const code = await this.deps.kubespray.runCluster({ checkout, jobDir: dir, knownHosts: join(dir, 'known_hosts'), signal, onLine: log });
      this.stopIfAborted(signal);
      if (code !== 0) throw new Error(`ansible-playbook cluster.yml exited ${code}`);

      ctx.stage('kubeconfig_ready');
      const adminConf = join(dir, 'artifacts', 'admin.conf');
      if (!existsSync(adminConf)) throw new Error('the playbook finished but wrote no artifacts/admin.conf');
      const kubeconfig = readFileSync(adminConf, 'utf8');
      if (kubeconfig.trim() === '') throw new Error('artifacts/admin.conf is empty');
      this.stopIfAborted(signal);
      if (run.register) {
        if (!this.deps.registrar) throw new Error('cluster registration is not available');
        let clusterId: string;
        const registering = this.deps.registrar.register({ ...run.register, kubeconfig });
        // A cancel does not wait for the cluster manager; a registration that still completes is recorded.
        registering.then(
          ({ id }) => (signal.aborted ? this.deps.repo.setClusterId(run.id, id).catch(() => {}) : undefined),
          () => {},
        );
        try {
          ({ id: clusterId } = await abortable(registering, signal));
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          // The cluster exists: keep its kubeconfig for the one hand-out rather than lose it.
          await this.deps.repo.holdKubeconfig(run.id, this.deps.box.seal(kubeconfig, kubeconfigPurpose(run.id)));
          throw new Error(`the cluster was built but registering it failed: ${run.redactor.line((err as Error).message)}; its kubeconfig is handed out once instead`);
        }
        await this.deps.repo.setClusterId(run.id, clusterId);
        log(`registered as cluster ${clusterId}`);
        if (run.workerIds?.length && this.deps.workers) {
          // The cluster exists and is registered: a failure here is logged, not the job's failure.
          await this.deps.workers.joined(run.workerIds, clusterId).then(
            () => log(`workers ${run.workerIds?.join(', ')} joined cluster ${clusterId}`),
            (err: Error) => log(`warning: recording the workers' cluster failed: ${run.redactor.line(err.message)}`),
          );
        }
      } else {
        await this.deps.repo.holdKubeconfig(run.id, this.deps.box.seal(kubeconfig, kubeconfigPurpose(run.id)));
        log('admin kubeconfig held (encrypted) for its one hand-out');
      }
    } catch (err) {
      if (deadline.signal.aborted && !ctx.cancelRequested) throw deadline.signal.reason;
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw new Error(run.redactor.line((err as Error).message ?? String(err)));
    } finally {
      clearTimeout(timer);
      release?.();
      rmSync(dir, { recursive: true, force: true });
      await ctx.flush();
    }
  }

  private stopIfAborted(signal: AbortSignal): void {
    if (signal.aborted) throw signal.reason;
  }

  /** inventory.yml, group vars, known_hosts from the verified keys, secrets in 0600 files. */
  private writeJobDir(dir: string, run: BootstrapRun, keys: Map<string, HostKey>): void {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, 'secrets'), { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    mkdirSync(join(dir, 'host_vars'), { mode: 0o700 });
    mkdirSync(join(dir, 'group_vars', 'all'), { recursive: true });
    mkdirSync(join(dir, 'artifacts'), { mode: 0o700 });
    const secret = (file: string, text: string) => createFileExclusiveSync(file, text, 0o600);
    const keyFiles = new Map<string, string>();
    for (const n of run.nodes) {
      if (n.privateKey) {
        const file = join(dir, 'secrets', `${n.name}.key`);
        secret(file, n.privateKey.endsWith('\n') ? n.privateKey : `${n.privateKey}\n`);
        keyFiles.set(n.name, file);
      } else if (!n.password) {
        keyFiles.set(n.name, this.deps.key.privateKeyFile);
      }
      const pw = renderPasswordVars(n);
      if (pw) secret(join(dir, 'host_vars', `${n.name}.yml`), pw);
    }
    writeFileSync(join(dir, 'inventory.yml'), renderInventory(run.nodes, (n) => ({ keyFile: keyFiles.get(n.name) })), { mode: 0o600 });
    writeFileSync(join(dir, 'group_vars', 'all', 'ironlens.yml'), renderGroupVars(run.proxy), { mode: 0o600 });
    const entries = run.nodes.map((n) => {
      const key = keys.get(`${n.host}:${n.port}`);
      if (!key) throw new Error(`no verified host key for ${n.host}:${n.port}`);
      return { host: n.host, port: n.port, key };
    });
    writeFileSync(join(dir, 'known_hosts'), renderKnownHosts(entries), { mode: 0o644 });
  }
}

/** Settles with `p`, or rejects with the signal's reason as soon as it aborts. */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
