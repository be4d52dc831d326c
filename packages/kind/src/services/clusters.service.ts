import { AppError, type JobRunner } from '@ironlens/core';
import { type ClusterDetails, type ClusterSummary, type CreateAccepted, type CreateClusterBody, type DeleteView, type StatsView, WORKERS_DEFAULT, WORKERS_MAX, type WorkloadsView } from '../api/schemas';
import type { KindClusters } from '../adapters/kind.adapter';
import { KUBECTL_MISSING_RC, type Kubectl } from '../adapters/kubectl.adapter';
import { assertClusterName, versionTag } from '../cluster-name';
import type { ClusterFiles } from '../repositories/cluster-files.repository';
import type { CreateClusterJob } from './create-cluster.job';
import { CREATE_CLUSTER_JOB } from './kind-jobs.service';

/** Clusters: the union of kind's list and the clusters directory, their files, kubectl views, create and delete. */
export class ClustersService {
  constructor(
    private readonly kind: KindClusters,
    private readonly kubectl: Kubectl,
    private readonly files: ClusterFiles,
    private readonly runner: JobRunner,
    private readonly createJob: CreateClusterJob,
  ) {}

  /** kind's clusters, or null when kind is missing or fails (the panel still lists directories). */
  private async kindNames(): Promise<string[] | null> {
    try {
      return await this.kind.list();
    } catch {
      return null;
    }
  }

  private async summary(name: string, inKind: Set<string>): Promise<ClusterSummary> {
    return {
      name,
      registered_in_kind: inKind.has(name),
      has_local_kubeconfig: await this.files.hasKubeconfig(name),
      meta: await this.files.readMeta(name),
    };
  }

  async list(): Promise<ClusterSummary[]> {
    const inKind = new Set(await this.kindNames());
    const names = new Set([...inKind, ...(await this.files.names())]);
    return Promise.all([...names].sort().map((n) => this.summary(n, inKind)));
  }

  async get(nameIn: string): Promise<ClusterDetails> {
    const name = assertClusterName(nameIn);
    const inKind = new Set(await this.kindNames());
    const hasDir = await this.files.exists(name);
    if (!inKind.has(name) && !hasDir) throw new AppError('kind_cluster_not_found', `Cluster ${name} not found in kind or in the clusters directory`);
    const s = await this.summary(name, inKind);
    const details: ClusterDetails = { ...s, kubeconfig_path: null, kubectl_get_nodes_rc: null, kubectl_get_nodes: null };
    if (s.has_local_kubeconfig) {
      const path = this.files.kubeconfigPath(name);
      const nodes = await this.kubectl.getNodesWide(path);
      details.kubeconfig_path = path;
      details.kubectl_get_nodes_rc = nodes.rc;
      details.kubectl_get_nodes = nodes.output;
    }
    return details;
  }

  async kubeconfig(nameIn: string): Promise<{ filename: string; content: string }> {
    const name = assertClusterName(nameIn);
    const content = await this.files.readKubeconfig(name);
    if (content === null) throw new AppError('kind_kubeconfig_not_found', `No saved kubeconfig in clusters/${name}/`);
    return { filename: `kubeconfig-${name}.yaml`, content };
  }

  async workloads(nameIn: string): Promise<WorkloadsView> {
    const name = assertClusterName(nameIn);
    const view: WorkloadsView = { cluster_name: name, nodes_rc: null, nodes_output: null, pods_rc: null, pods_output: null, error: null };
    if (!(await this.files.hasKubeconfig(name))) {
      view.error = `No saved kubeconfig in clusters/${name}/`;
      return view;
    }
    const path = this.files.kubeconfigPath(name);
    const [nodes, pods] = await Promise.all([this.kubectl.getNodesWide(path), this.kubectl.getPodsAll(path)]);
    Object.assign(view, { nodes_rc: nodes.rc, nodes_output: nodes.output, pods_rc: pods.rc, pods_output: pods.output });
    if (nodes.rc === KUBECTL_MISSING_RC) view.error = 'kubectl is not installed or not on PATH';
    else if (nodes.rc !== 0 || pods.rc !== 0) view.error = 'kubectl failed (see the outputs)';
    return view;
  }

  async delete(nameIn: string): Promise<DeleteView> {
    const name = assertClusterName(nameIn);
    const active = await this.runner.repository.list({ kind: CREATE_CLUSTER_JOB, subject: name, statuses: ['queued', 'running'], limit: 1 });
    if (active.length > 0) throw new AppError('kind_cluster_busy', `A creation job for ${name} is still running (${active[0].id}); cancel it first`);
    // null: kind could not be asked (missing or failing), so try the delete anyway.
    let inKind: boolean | null = null;
    try {
      inKind = (await this.kind.list()).includes(name);
    } catch {
      inKind = null;
    }
    const hasDir = await this.files.exists(name);
    if (inKind === false && !hasDir) throw new AppError('kind_cluster_not_found', `Cluster ${name} not found in kind or in the clusters directory`);

    const parts: string[] = [];
    let kindOk: boolean;
    if (inKind === false) {
      kindOk = true;
      parts.push('kind delete: not registered in kind');
    } else {
      const r = await this.kind.delete(name);
      kindOk = r.ok;
      parts.push(r.ok ? 'kind delete: OK' : `kind delete failed: ${r.output.split('\n').filter(Boolean).pop() ?? 'unknown error'}`);
    }
    if (hasDir) {
      const dir = this.files.dir(name);
      try {
        await this.files.remove(name);
      } catch (err) {
        throw new AppError('kind_delete_failed', `${parts.join('; ')}; removing ${dir} failed: ${(err as Error).message}`);
      }
      parts.push(`removed folder ${dir}`);
    }
    return { name, kind_delete_ok: kindOk, summary: parts.join('; ') };
  }

  async stats(): Promise<StatsView> {
    const [kindNames, dirs, total, failed] = await Promise.all([
      this.kindNames(),
      this.files.names(),
      this.runner.repository.count({ kind: CREATE_CLUSTER_JOB }),
      this.runner.repository.count({ kind: CREATE_CLUSTER_JOB, status: 'failed' }),
    ]);
    let workers: number | null = null;
    for (const d of dirs) {
      const w = (await this.files.readMeta(d))?.worker_nodes;
      if (typeof w === 'number' && Number.isFinite(w)) workers = (workers ?? 0) + w;
    }
    return {
      kind_clusters_count: kindNames?.length ?? 0,
      local_cluster_dirs_count: dirs.length,
      total_workers_from_meta: workers,
      jobs_total: total,
      jobs_recent_failed: failed,
    };
  }

  /** Validates, refuses a name kind already has (409), and starts the creation job (one per name at a time). */
  async create(req: CreateClusterBody): Promise<Pick<CreateAccepted, 'job_id' | 'status'>> {
    const name = assertClusterName(req.name);
    const version = req.kubernetes_version;
    let tag: string | null = null;
    if (version !== undefined && version !== null && version !== '') {
      if (typeof version !== 'string') throw new AppError('kind_version_invalid', 'kubernetes_version must be a string like 1.29.4');
      tag = versionTag(version);
    }
    let workers = WORKERS_DEFAULT;
    if (req.workers !== undefined && req.workers !== null) {
      if (typeof req.workers !== 'number' || !Number.isInteger(req.workers) || req.workers < 0 || req.workers > WORKERS_MAX) {
        throw new AppError('request_invalid', `workers must be an integer from 0 to ${WORKERS_MAX}`);
      }
      workers = req.workers;
    }
    const existing = await this.kindNames();
    if (existing?.includes(name)) throw new AppError('kind_cluster_exists', 'A cluster with this name already exists in kind');
    try {
      const job = await this.runner.start(
        { kind: CREATE_CLUSTER_JOB, subject: name, exclusive: true, input: { name, kubernetes_version_tag: tag, workers } },
        this.createJob.handler({ name, versionTag: tag, workers }),
      );
      return { job_id: job.id, status: 'queued' };
    } catch (err) {
      if ((err as AppError).code === 'job_conflict') throw new AppError('kind_cluster_exists', `A cluster named ${name} is already being created`);
      throw err;
    }
  }
}
