import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, isFinished, type Job, type JobRunner, type OperationsLog, Periodic, type SecretBox } from '@ironlens/core';
import { type BootstrapJob, type BootstrapPhase, kubeconfigPurpose, PHASES } from './bootstrap.job';
import type { BootstrapStatus, BootstrapSummary, HostKeyItem, PublicKeyResponse, StartResponse } from '../api/bootstrap';
import type { BootstrapRepository, NodeAuth, StoredNode } from './bootstrap.repository';
import { expandTargets, MAX_EXPANDED_HOSTS } from './host-spec';
import { type BootstrapProxy, NO_PROXY, PROXY_URL } from './inventory';
import type { IronlensKey } from './ironlens-key';
import type { Kubespray } from './kubespray.adapter';
import { type HostKeyPin, resolveNodes } from './nodes';
import type { PreflightResult, PreflightService } from './preflight.service';
import { Redactor } from './redact';
import type { ClusterRegistrar } from './registrar';
import { mapLimit, type SshHosts } from './ssh.adapter';
import { type AnyNodeInput, expandWorkerNodes, type WorkerDirectory } from './workers';

/** The core job kind of a bootstrap. */
export const BOOTSTRAP_JOB_KIND = 'clusters.bootstrap';
/** What a failed job says when ironlens stopped while it ran. */
export const INTERRUPTED_BY_RESTART = 'interrupted by a restart';
/** The log tail a status read returns. */
export const LOG_TAIL_BYTES = 32 * 1024;

// The answers are the API schemas' types (issue 19).
export type { BootstrapStatus, BootstrapSummary, HostKeyItem } from '../api/bootstrap';

export interface BootstrapStartRequest {
  nodes: AnyNodeInput[];
  /** May be left out when every node is a worker. */
  hostKeys?: HostKeyPin[];
  proxy?: BootstrapProxy;
  register?: { name: string; description?: string };
}

export interface BootstrapServiceDeps {
  repo: BootstrapRepository;
  runner: JobRunner;
  preflight: PreflightService;
  ssh: SshHosts;
  job: BootstrapJob;
  kubespray: Kubespray;
  key: IronlensKey;
  box: SecretBox;
  registrar?: ClusterRegistrar;
  operations?: OperationsLog;
  /** The boot control plane's workers (issue 24): nodes given as `{workerId}`. Default: none (such nodes are 422). */
  workers?: WorkerDirectory;
  sshTimeoutMs: number;
  /** `<dataDir>/bootstrap/jobs`. */
  jobsDir: string;
}

function phaseOf(job: Job | undefined): BootstrapPhase {
  if (!job) return 'failed';
  if (job.status === 'success') return 'succeeded';
  if (job.status === 'failed' || job.status === 'cancelled') return job.status;
  if (job.status === 'running' && job.stage && (PHASES as readonly string[]).includes(job.stage)) return job.stage as BootstrapPhase;
  return 'queued';
}

/** The last `bytes` bytes of the log, starting at a line. */
export function logTail(lines: string[], bytes: number): string {
  const text = lines.join('\n');
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return text;
  // Cut at a line start, so no half line (or half character) leads the tail.
  const cut = buf.subarray(buf.length - bytes).toString('utf8');
  const nl = cut.indexOf('\n');
  return nl >= 0 ? cut.slice(nl + 1) : cut;
}

function checkProxy(proxy: BootstrapProxy | undefined): void {
  if (proxy?.mode !== 'custom') return;
  if (!proxy.httpProxy && !proxy.httpsProxy) throw new AppError('bootstrap_proxy_invalid', 'mode custom needs httpProxy or httpsProxy');
  for (const [k, v] of [['httpProxy', proxy.httpProxy], ['httpsProxy', proxy.httpsProxy]] as const) {
    if (v && !PROXY_URL.test(v)) throw new AppError('bootstrap_proxy_invalid', `${k} must be an http(s) URL`);
  }
  if (proxy.noProxy && !NO_PROXY.test(proxy.noProxy)) throw new AppError('bootstrap_proxy_invalid', 'noProxy holds characters a host list cannot');
}

/** Host keys, preflight, and the durable bootstrap jobs. */
export class BootstrapService {
  constructor(private readonly deps: BootstrapServiceDeps) {}

  /**
   * Reads every expanded host's key without authenticating, 16 at once, in input order. A node
   * given as `{workerId}` is read at its reported address, and its key must be one it reported.
   */
  async hostKeys(nodes: Array<{ host: string; port?: number } | { workerId: string }>): Promise<{ items: HostKeyItem[] }> {
    // Roles do not matter for reading keys; the expansion wants them on every row.
    const given: AnyNodeInput[] = nodes.map((n) => ({ ...n, roles: ['worker' as const] }));
    const expanded = await expandWorkerNodes(given, [], this.deps.workers);
    const targets = expandTargets(expanded.nodes, MAX_EXPANDED_HOSTS);
    const items = await mapLimit(targets, 16, async (t): Promise<HostKeyItem> => {
      const workerId = expanded.workers.get(`${t.host}:${t.port}`);
      const tag = workerId ? { workerId } : {};
      try {
        const key = await this.deps.ssh.scanHostKey(t.host, t.port, { timeoutMs: this.deps.sshTimeoutMs });
        const reported = expanded.reported.get(`${t.host}:${t.port}`);
        if (reported && !reported.some((k) => k.fingerprint === key.fingerprint)) {
          return { host: t.host, port: t.port, error: `host key ${key.fingerprint} (${key.algorithm}) is not one worker ${workerId} reported`, ...tag };
        }
        return { host: t.host, port: t.port, algorithm: key.algorithm, fingerprint: key.fingerprint, ...tag };
      } catch (err) {
        return { host: t.host, port: t.port, error: (err as Error).message, ...tag };
      }
    });
    return { items };
  }

  async preflight(req: { nodes: AnyNodeInput[]; hostKeys?: HostKeyPin[] }): Promise<PreflightResult> {
    const expanded = await expandWorkerNodes(req.nodes, req.hostKeys ?? [], this.deps.workers);
    const nodes = resolveNodes(expanded.nodes, expanded.pins);
    const result = await this.deps.preflight.run(nodes, { timeoutMs: this.deps.sshTimeoutMs });
    for (const item of result.items) {
      const node = nodes.find((n) => n.host === item.host);
      const workerId = node && expanded.workers.get(`${node.host}:${node.port}`);
      if (workerId) item.workerId = workerId;
    }
    return result;
  }

  publicKey(): PublicKeyResponse {
    return { publicKey: this.deps.key.publicKey };
  }

  /** Validates like preflight (422s before anything connects), records the job, starts it in the background. */
  async start(req: BootstrapStartRequest): Promise<StartResponse> {
    const expanded = await expandWorkerNodes(req.nodes, req.hostKeys ?? [], this.deps.workers);
    const nodes = resolveNodes(expanded.nodes, expanded.pins);
    checkProxy(req.proxy);
    let register: { name: string; description?: string } | undefined;
    if (req.register) {
      const name = req.register.name?.trim() ?? '';
      if (name === '') throw new AppError('bootstrap_register_invalid', 'register.name must not be blank');
      if (!this.deps.registrar) throw new AppError('bootstrap_register_unavailable');
      register = req.register.description ? { name, description: req.register.description } : { name };
    }
    const id = `bootstrap-${randomBytes(6).toString('hex')}`;
    const stored: StoredNode[] = nodes.map((n) => ({
      host: n.host,
      port: n.port,
      roles: n.roles,
      username: n.username,
      ...(expanded.workers.has(`${n.host}:${n.port}`) ? { workerId: expanded.workers.get(`${n.host}:${n.port}`) } : {}),
      auth: (n.privateKey ? 'private_key' : n.password ? 'password' : 'ironlens_key') satisfies NodeAuth,
    }));
    const proxyUrls = [req.proxy?.httpProxy, req.proxy?.httpsProxy].map((u) => (u ? /:\/\/([^@/]*)@/.exec(u)?.[1] : undefined));
    const redactor = new Redactor([...nodes.flatMap((n) => [n.privateKey, n.password]), ...proxyUrls]);
    const workerIds = [...new Set(expanded.workers.values())];
    const run = { id, nodes, proxy: req.proxy, register, redactor, workerIds };
    // The job row holds no credential: the input is the stored nodes only.
    const job = await this.deps.runner.start({ kind: BOOTSTRAP_JOB_KIND, subject: id, input: { id, nodes: stored } }, async (ctx) => {
      await this.deps.job.run(ctx, run);
      return { result: null };
    });
    await this.deps.repo.create({ id, jobId: job.id, nodes: stored, register: register ?? null });
    // The runner prunes old jobs of this kind; their bootstrap rows (and any sealed kubeconfig) go with them.
    await this.deps.repo.pruneOrphans();
    await this.deps.operations?.append({ op: 'bootstrap.start', status: 'ok', bootstrap_id: id, hosts: stored.map((n) => `${n.host}:${n.port}`) });
    return { bootstrapId: id };
  }

  /** The job's phase, redacted log tail and error; the kubeconfig once, on the first read after success. */
  async status(id: string): Promise<BootstrapStatus> {
    const rec = await this.deps.repo.get(id);
    if (!rec) throw new AppError('bootstrap_not_found', `bootstrap job ${id} not found`);
    const job = await this.deps.runner.repository.get(rec.jobId);
    const phase = phaseOf(job);
    let kubeconfig: string | null = null;
    // Succeeded, or failed only because registering failed: the held kubeconfig goes out once.
    if ((phase === 'succeeded' || phase === 'failed') && rec.kubeconfigState === 'held') {
      const sealed = await this.deps.repo.takeKubeconfig(id);
      if (sealed) {
        kubeconfig = this.deps.box.openText(sealed, kubeconfigPurpose(id));
        await this.deps.operations?.append({ op: 'bootstrap.kubeconfig_handed_out', status: 'ok', bootstrap_id: id });
      }
    }
    return {
      id,
      phase,
      logTail: logTail(job?.log ?? [], LOG_TAIL_BYTES),
      error: job ? job.error : 'the job record was pruned',
      kubeconfig,
      clusterId: rec.clusterId,
    };
  }

  /** Asks the job to stop; a finished job stays as it ended. Unknown id → 404. */
  async cancel(id: string): Promise<void> {
    const rec = await this.deps.repo.get(id);
    if (!rec) throw new AppError('bootstrap_not_found', `bootstrap job ${id} not found`);
    try {
      await this.deps.runner.cancel(rec.jobId);
      await this.deps.operations?.append({ op: 'bootstrap.cancel', status: 'ok', bootstrap_id: id });
    } catch (err) {
      if (err instanceof AppError && (err.code === 'job_finished' || err.code === 'job_not_found')) return;
      throw err;
    }
  }

  async list(): Promise<{ items: BootstrapSummary[] }> {
    const recs = await this.deps.repo.list();
    const items: BootstrapSummary[] = [];
    for (const rec of recs) {
      const job = await this.deps.runner.repository.get(rec.jobId);
      items.push({
        id: rec.id,
        phase: phaseOf(job),
        error: job ? job.error : 'the job record was pruned',
        nodes: rec.nodes.map((n) => ({ host: n.host, port: n.port, roles: n.roles, username: n.username, ...(n.workerId ? { workerId: n.workerId } : {}) })),
        register: rec.register,
        clusterId: rec.clusterId,
        kubeconfigDelivered: rec.kubeconfigState === 'delivered',
        createdAt: rec.createdAt,
        finishedAt: job?.finishedAt ?? null,
        actor: job?.actor ?? null,
      });
    }
    return { items };
  }

  /**
   * At start: jobs a previous process left queued or running become failed ("interrupted by a
   * restart", their log kept); processes it left behind are killed and job directories (with
   * their secret files) deleted. Several replicas on one database: only jobs whose lease ran
   * out are failed, and the directory of a job still active (another live replica's, should
   * it share this data dir) is left alone.
   */
  async recover(): Promise<number> {
    const n = await this.deps.runner.recover(BOOTSTRAP_JOB_KIND);
    await this.tidyJobDirs(false);
    return n;
  }

  /**
   * Kills what a job left behind and deletes its directory, for every job directory whose job
   * is finished (and, at start, unknown). With replicas, a job of this data dir's previous process
   * is failed only when its lease runs out, by whichever replica sweeps first, after this
   * process's start: {@link startJanitor} then cleans up after it here.
   */
  private async tidyJobDirs(onlyFinished: boolean): Promise<void> {
    if (!existsSync(this.deps.jobsDir)) return;
    for (const name of readdirSync(this.deps.jobsDir)) {
      const job = await this.deps.runner.repository.get(name);
      if (job ? !isFinished(job.status) : onlyFinished) continue;
      const dir = join(this.deps.jobsDir, name);
      this.deps.kubespray.killLeftovers(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Replicas: every `everyMs`, {@link tidyJobDirs} for jobs another replica's sweep failed. Returns the stop function. */
  startJanitor(everyMs: number): () => void {
    const janitor = new Periodic(() => this.tidyJobDirs(true), everyMs).start();
    return () => janitor.stop();
  }
}
