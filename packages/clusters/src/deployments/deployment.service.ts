import { randomBytes } from 'node:crypto';
import { AppError, INTERRUPTED_MESSAGE, type Job, type JobRunner, type OperationsLog, Periodic, isFinished } from '@ironlens/core';
import type { Helm } from '../adapters/helm.adapter';
import type { Kube, KubeObjectRef, NamespacedItem } from '../adapters/kube.adapter';
import {
  ACCELERATORS,
  type AcceleratorInventory,
  type DeploymentExecution,
  type DeploymentPatchRequest,
  type DeploymentRun,
  type DeploymentStatus,
  type ExecutionEvents,
  type ExecutionListQuery,
  type ExecutionPods,
  type OpenAiModelList,
  type PlacementAnswer,
  type PodLogQuery,
  type PodLogs,
  type PublishedModel,
  type PublishedModelList,
  type StandardVllmRunRequest,
} from '../api/deployments';
import { type ClusterAccess, clusterFailure, onCluster } from '../registry/cluster-access';
import type { ClusterRow } from '../registry/cluster.repository';
import type { SessionRepository } from '../registry/session.repository';
import type { StackProfile } from '../shared/profile';
import { isDnsSubdomain } from '../shared/domain';
import { LWS_CRD, podView, readClusterFacts } from './deployment.kube';
import { DEPLOY_JOB, DeploymentJob, type DeploymentTimings, type JobMode } from './deployment.job';
import { BASE_MODEL_HEADER, CLUSTER_LABEL, DEPLOYMENT_LABEL, MANAGED_BY, modelServerImage, renderDeployment, SERVER_PORT } from './deployment.render';
import type { Applied, AppliedObject, DeploymentRepository, DeploymentRow } from './deployment.repository';
import { checkArguments, type DeploymentSpec, podGroups, specFromRequest } from './deployment.spec';
import { ACCELERATOR_SPECS, acceleratorRows, type ClusterFacts, place, type ReportedWorker } from './placement';

/** The machines ironlens booted that joined a cluster, with their host reports (metal's, wired by `ironlens serve`). */
export interface WorkerInventory {
  joinedTo(clusterId: string): Promise<ReportedWorker[]>;
}

/** What deployments need of the shared gateway (the gateway feature's, wired in `wiring.ts`). */
export interface GatewayLink {
  /** The registration's shared gateway's public URL, or null when it is not known. */
  publicUrl(cluster: ClusterRow): Promise<string | null>;
  /**
   * The cluster and name of a gateway access key from `Authorization: Bearer …`, counted against
   * the hook's per-source rate limit; throws `gateway_unauthorized` (no key), `gateway_forbidden`
   * (any other), `gateway_rate_limited`.
   */
  keyOwner(authorization: string | undefined, source: string): Promise<{ clusterId: string; name: string }>;
}

export interface DeploymentServiceOptions extends DeploymentTimings {
  profile: StackProfile;
  /** How often deployments left in progress by a dead replica or a restart are taken up again. Default `10000` ms. */
  resumeMs?: number;
}

/** Statuses in which a deployment serves (the model service lists it). */
const SERVING: DeploymentStatus[] = ['ready', 'rolled_back'];
/** Statuses a job is working on. */
const IN_PROGRESS: DeploymentStatus[] = ['validated', 'rendered', 'deploying', 'rolling_back'];

const newId = () => randomBytes(6).toString('hex');

/**
 * Model deployments on registered clusters (issue 28), in llm-d Lens' deployment module's shapes:
 * placement before anything is applied, the durable job that applies and proves readiness, the
 * executions' views (pods, events, logs), the update that rolls back, the delete that removes
 * exactly what was applied, and the model service's lists.
 */
export class DeploymentService {
  private gateway: GatewayLink | null = null;
  private workers: WorkerInventory | null = null;
  private readonly resumer: Periodic<void>;
  readonly job: DeploymentJob;

  constructor(
    private readonly access: ClusterAccess,
    private readonly sessions: SessionRepository,
    private readonly repo: DeploymentRepository,
    private readonly runner: JobRunner,
    private readonly ops: OperationsLog,
    helm: Helm,
    private readonly opts: DeploymentServiceOptions,
  ) {
    this.job = new DeploymentJob(access, repo, helm, opts.profile, opts);
    this.resumer = new Periodic(() => this.resume().then(() => undefined), opts.resumeMs ?? 10_000);
  }

  private get db() {
    return this.access.db;
  }

  useGateway(g: GatewayLink): void {
    this.gateway = g;
    this.job.gatewayUrl = (c) => g.publicUrl(c);
  }

  useWorkers(w: WorkerInventory): void {
    this.workers = w;
  }

  /** Takes up deployments left in progress now, and then every `resumeMs` (a replica that died leaves its jobs interrupted). */
  start(): Promise<number> {
    this.resumer.start();
    return this.resume();
  }

  stop(): void {
    this.resumer.stop();
  }

  // ---- placement ----

  private async facts(cluster: ClusterRow, kube: Kube, exclude: string | null): Promise<ClusterFacts> {
    const [raw, workers] = await Promise.all([
      readClusterFacts(kube),
      this.workers ? this.workers.joinedTo(cluster.id).catch(() => [] as ReportedWorker[]) : Promise.resolve([] as ReportedWorker[]),
    ]);
    // An update's own pods give their accelerators back to it.
    const pods = raw.pods.filter((_, i) => exclude === null || raw.podOwners[i] !== exclude);
    return { nodes: raw.nodes, pods, devices: raw.devices, allocated: raw.allocated, workers };
  }

  /** Placement of a spec; the 422 `insufficient_accelerators` names what is free where. */
  private async placeOrRefuse(cluster: ClusterRow, kube: Kube, spec: Omit<DeploymentSpec, 'request'>, exclude: string | null): Promise<{ placement: PlacementAnswer; request: DeploymentSpec['request'] }> {
    const facts = await onCluster(() => this.facts(cluster, kube, exclude));
    if (spec.pins.node && !facts.nodes.some((n) => n.name === spec.pins.node)) throw new AppError('accelerator_not_found', `node ${spec.pins.node} is not in the cluster`);
    const out = place(facts, { accelerator: spec.accelerator, groups: podGroups(spec), node: spec.pins.node, gpuProduct: spec.pins.gpuProduct });
    if (spec.pins.gpuProduct && spec.accelerator !== 'cpu') {
      const label = ACCELERATOR_SPECS[spec.accelerator].productLabel!;
      const known = new Set([...facts.nodes.map((n) => n.labels[label]), ...facts.devices.map((d) => d.product)].filter(Boolean));
      if (!known.has(spec.pins.gpuProduct)) throw new AppError('accelerator_not_found', `no node of the cluster has GPU product ${spec.pins.gpuProduct} (known: ${[...known].join(', ') || 'none'})`);
    }
    if (!out.ok) throw new AppError('insufficient_accelerators', out.detail, { free: out.answer.nodes });
    let request: DeploymentSpec['request'] = { kind: 'none' };
    if (spec.accelerator !== 'cpu') {
      const nodes = new Set(out.answer.assignments.map((a) => a.node));
      const rows = out.answer.nodes.filter((r) => nodes.has(r.node));
      const dra = rows.some((r) => r.resource?.endsWith('(DRA)'));
      const ext = rows.find((r) => r.resource && !r.resource.endsWith('(DRA)'))?.resource;
      if (dra && ext) throw new AppError('insufficient_accelerators', 'the replicas would need both an extended resource and DRA claims: pin a node or a GPU product', { free: out.answer.nodes });
      request = dra ? { kind: 'dra', deviceClass: ACCELERATOR_SPECS[spec.accelerator].draDriver! } : { kind: 'extended', resource: ext ?? ACCELERATOR_SPECS[spec.accelerator].resources[0] };
    }
    return { placement: out.answer, request };
  }

  /** The cluster of a request: `cluster_id`, or an active session's (Lens' `cluster_session_id`). */
  private async clusterOf(r: { cluster_id?: string; cluster_session_id?: string }): Promise<{ cluster: ClusterRow; sessionId: string | null }> {
    if (r.cluster_id) {
      const cluster = await this.access.record(r.cluster_id);
      const s = await this.sessions.activeFor(this.db, cluster.id);
      return { cluster, sessionId: s?.id ?? null };
    }
    if (!r.cluster_session_id) throw new AppError('deployment_request_invalid', 'cluster_session_id or cluster_id is required');
    const s = await this.sessions.get(this.db, r.cluster_session_id);
    if (!s?.active) throw new AppError('cluster_session_inactive', `session ${r.cluster_session_id} is not active`);
    return { cluster: await this.access.record(s.clusterId), sessionId: s.id };
  }

  private async checkCreatable(cluster: ClusterRow, spec: Omit<DeploymentSpec, 'request'>, kube: Kube): Promise<void> {
    if (cluster.draft) throw new AppError('cluster_is_draft', `cluster ${cluster.id} is a draft: finish its registration first`);
    if (spec.path !== 'baseline' && !cluster.gatewayProvider) throw new AppError('gateway_not_configured', `cluster ${cluster.id} has no shared gateway (gatewayProvider) to publish on; use path baseline, or set a provider`);
    if (spec.path === 'wide-ep' && !(await onCluster(() => kube.crdEstablished(LWS_CRD)))) throw new AppError('lws_not_installed', `cluster ${cluster.id} does not serve LeaderWorkerSet (${LWS_CRD}): install LWS for the wide-ep path`);
    if (spec.path !== 'baseline') {
      const others = await this.repo.list(this.db, { clusterId: cluster.id });
      const clash = others.find((o) => o.status !== 'cleaned' && o.spec.path !== 'baseline' && o.spec.model === spec.model);
      if (clash) throw new AppError('model_already_published', `model ${spec.model} is already published on this cluster's gateway by deployment ${clash.id}`);
    }
  }

  /** `POST /api/v1/deployments/placement`: where a request would fit, without creating anything. */
  async preview(body: StandardVllmRunRequest): Promise<{ fits: boolean; detail: string | null; placement: PlacementAnswer }> {
    const { cluster } = await this.clusterOf(body);
    const spec = specFromRequest('000000000000', cluster.id, body, !!cluster.hfTokenSecret);
    const kube = this.access.kube(cluster);
    try {
      const { placement } = await this.placeOrRefuse(cluster, kube, spec, null);
      return { fits: true, detail: null, placement };
    } catch (e) {
      if (e instanceof AppError && e.code === 'insufficient_accelerators') {
        const facts = await onCluster(() => this.facts(cluster, kube, null));
        const out = place(facts, { accelerator: spec.accelerator, groups: podGroups(spec), node: spec.pins.node, gpuProduct: spec.pins.gpuProduct });
        return { fits: false, detail: e.message, placement: out.answer };
      }
      throw e;
    }
  }

  /** `POST /api/v1/deployments/standard-vllm-runs`: placed, recorded `validated`, then the job. */
  async create(body: StandardVllmRunRequest): Promise<DeploymentRun> {
    const { cluster, sessionId } = await this.clusterOf(body);
    const id = newId();
    const base = specFromRequest(id, cluster.id, body, !!cluster.hfTokenSecret);
    const kube = this.access.kube(cluster);
    await this.checkCreatable(cluster, base, kube);
    const { placement, request } = await this.placeOrRefuse(cluster, kube, base, null);
    const spec: DeploymentSpec = { ...base, request };
    renderDeployment(spec, this.opts.profile, DeploymentJob.publishTarget(cluster, spec));
    const now = new Date().toISOString();
    const row: DeploymentRow = {
      id,
      runId: `run-${newId()}`,
      clusterId: cluster.id,
      sessionId,
      name: body.deployment_name,
      displayName: body.deployment_name,
      description: body.description ?? '',
      status: 'validated',
      revision: 1,
      spec,
      readySpec: null,
      placement,
      applied: null,
      readiness: null,
      reason: null,
      logs: null,
      failure: null,
      smoke: null,
      endpoint: null,
      jobId: null,
      stage: 'validated',
      createdBy: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.repo.insert(this.db, row);
    await this.ops.append({ op: 'deployment.create', status: 'ok', cluster_id: cluster.id, deployment_id: id, model: spec.model, path: spec.path, replicas: spec.replicas, tensor_parallel_size: spec.tensorParallelSize });
    const job = await this.startJob(id, 'deploy');
    return this.runView({ ...row, jobId: job.id }, job);
  }

  private async startJob(id: string, mode: JobMode): Promise<Job> {
    const job = await this.runner.start({ kind: DEPLOY_JOB, subject: id, input: { mode }, exclusive: true }, (ctx) => this.job.run(id, mode, ctx));
    await this.repo.update(this.db, id, { jobId: job.id }, new Date().toISOString());
    return job;
  }

  private async activeJob(d: DeploymentRow): Promise<Job | null> {
    if (!d.jobId) return null;
    const j = await this.runner.repository.get(d.jobId);
    return j && !isFinished(j.status) ? j : null;
  }

  /**
   * Deployments a job should be working on but none is (the process or replica running it
   * died): a new job takes each up where it stopped. A job that ended any other way wrote its
   * outcome, so only an interrupted or vanished one is resumed.
   */
  async resume(): Promise<number> {
    let n = 0;
    for (const d of await this.repo.list(this.db, { statuses: IN_PROGRESS })) {
      const j = d.jobId ? await this.runner.repository.get(d.jobId) : null;
      if (j && !isFinished(j.status)) continue;
      if (j && j.status !== 'failed') continue;
      if (j && j.error !== INTERRUPTED_MESSAGE && !/interrupted/.test(j.error ?? '')) continue;
      const mode: JobMode = d.status === 'rolling_back' ? 'rollback' : d.readySpec && d.revision > 1 ? 'update' : 'deploy';
      try {
        await this.startJob(d.id, mode);
        await this.ops.append({ op: 'deployment.resume', status: 'ok', cluster_id: d.clusterId, deployment_id: d.id, mode });
        n++;
      } catch (e) {
        if (!(e instanceof AppError && e.code === 'job_conflict')) throw e;
      }
    }
    return n;
  }

  // ---- reads ----

  private async row(id: string): Promise<DeploymentRow> {
    const d = typeof id === 'string' && /^[0-9a-f]{12}$/.test(id) ? await this.repo.get(this.db, id) : null;
    if (!d) throw new AppError('deployment_not_found', `deployment execution not found: ${id}`);
    return d;
  }

  async list(q: ExecutionListQuery): Promise<{ items: DeploymentExecution[] }> {
    const statuses = new Set<string>([...(q.status ? [q.status] : []), ...(q.statuses ?? [])]);
    if (statuses.has('cleaned_up')) statuses.add('cleaned');
    const rows = await this.repo.list(this.db, { clusterId: q.cluster_id, statuses: statuses.size ? [...statuses] : undefined });
    const needle = (q.query ?? '').toLowerCase();
    const hit = (d: DeploymentRow) =>
      !needle || [d.id, d.displayName, d.description, d.name, d.spec.model, d.spec.namespace, d.spec.path, 'vllm', d.status].some((v) => v.toLowerCase().includes(needle));
    const picked = rows.filter(hit).slice(0, q.limit ?? 200);
    const jobs = await Promise.all(picked.map((d) => (d.jobId ? this.runner.repository.get(d.jobId) : Promise.resolve(undefined))));
    return { items: picked.map((d, i) => this.view(d, jobs[i] ?? null)) };
  }

  async get(id: string): Promise<DeploymentExecution> {
    const d = await this.row(id);
    const job = d.jobId ? await this.runner.repository.get(d.jobId) : undefined;
    return this.view(d, job ?? null);
  }

  private view(d: DeploymentRow, job: Job | null): DeploymentExecution {
    const s = d.spec;
    const r = renderDeployment(s, this.opts.profile, null);
    const published = s.path !== 'baseline';
    const route = d.applied?.publication.find((o) => o.kind === 'HTTPRoute');
    return {
      execution_id: d.id,
      status: d.status,
      cluster_id: d.clusterId,
      cluster_session_id: d.sessionId,
      namespace: s.namespace,
      name: d.name,
      display_name: d.displayName,
      description: d.description,
      model: s.model,
      backend: 'vLLM',
      guide: s.path,
      endpoint: d.endpoint,
      forwarded_endpoint: null,
      replicas: s.replicas,
      tensor_parallel_size: s.tensorParallelSize,
      image: modelServerImage(this.opts.profile, s.accelerator),
      preserve_deployment: false,
      created_at: d.createdAt,
      updated_at: d.updatedAt,
      max_model_len: s.vllm.maxModelLen,
      gpu_memory_utilization: s.vllm.gpuMemoryUtilization,
      enable_prefix_caching: s.vllm.enablePrefixCaching,
      max_num_seqs: s.vllm.maxNumSeqs,
      max_num_batched_tokens: s.vllm.maxNumBatchedTokens,
      storage_type: s.storage.type,
      storage_volume_id: s.storage.type === 'model-cache' ? s.storage.volume : '',
      mount_path: '/model-cache',
      pvc_name: s.storage.type === 'model-cache' ? `${s.base}-model-cache` : '',
      failure: d.failure,
      custom_parameters: s.vllm.arguments.map((a) => ({ target: s.path === 'pd-disaggregation' ? 'both' : 'decode', kind: 'argument', name: a.name, value: a.value })),
      baseline_endpoint: `http://${r.service.name}.${s.namespace}.svc:${SERVER_PORT}`,
      service_ref: `${s.namespace}/${r.service.name}`,
      run_id: d.runId,
      path: s.path,
      accelerator: s.accelerator,
      revision: d.revision,
      prefill: s.prefill ? { replicas: s.prefill.replicas, tensor_parallel_size: s.prefill.tensorParallelSize } : null,
      wide_ep: s.wideEp ? { group_size: s.wideEp.groupSize, data_parallel_local: s.wideEp.dataParallelLocal } : null,
      pins: { node: s.pins.node, gpuProduct: s.pins.gpuProduct },
      stage: job && !isFinished(job.status) ? (job.stage ?? d.stage) : d.stage,
      reason: d.reason,
      logs: d.logs,
      readiness: d.readiness,
      placement: d.placement,
      gateway: published ? { route: route ? `${route.namespace}/${route.name}` : `ilm-${s.id}`, pool: `${s.namespace}/${s.base}`, baseModel: s.model, header: BASE_MODEL_HEADER, url: d.endpoint } : null,
      smoke: d.smoke,
      curl: published && d.endpoint ? curlLine(d.endpoint, s.model) : null,
      job: job ? { id: job.id, kind: job.kind, status: job.status, stage: job.stage, percent: job.percent, log: job.log.slice(-50), error: job.error } : null,
    };
  }

  private runView(d: DeploymentRow, job: Job): DeploymentRun {
    const status: DeploymentRun['status'] = job.status === 'queued' ? 'queued' : job.status === 'running' ? 'running' : job.status === 'success' ? 'succeeded' : job.status === 'cancelled' ? 'cancelled' : 'failed';
    return {
      id: d.runId,
      status,
      source_configurations: [{ ordinal: 0, provider_ref: d.spec.path, format: 'ironlens' }],
      cases: [
        {
          id: `${d.runId}-0`,
          run_id: d.runId,
          ordinal: 0,
          source_configuration_ordinal: 0,
          provider_ref: d.spec.path,
          component: 'model-server',
          depends_on: [],
          status: status === 'running' ? 'deploying' : status,
          attempt: 1,
          parent_case_id: null,
          execution_id: d.id,
          failure: d.failure,
        },
      ],
      failure_policy: 'stop',
      provenance: { deployment_source: { kind: 'standard-kubernetes-service' }, cluster_id: d.clusterId, cluster_session_id: d.sessionId, deployment_name: d.name, description: d.description },
      created_at: d.createdAt,
      started_at: job.startedAt,
      finished_at: job.finishedAt,
      execution_id: d.id,
    };
  }

  // ---- changes ----

  /** `PATCH …/executions/{id}`: Lens' metadata in place; replicas, TP or vLLM arguments make a new revision (placed first). */
  async patch(id: string, body: DeploymentPatchRequest): Promise<DeploymentExecution> {
    const d = await this.row(id);
    if (d.status === 'cleaned') throw new AppError('deployment_not_found', `deployment ${id} was deleted`);
    const now = new Date().toISOString();
    if (body.display_name !== undefined || body.description !== undefined) {
      await this.repo.update(this.db, id, { ...(body.display_name !== undefined ? { displayName: body.display_name } : {}), ...(body.description !== undefined ? { description: body.description } : {}) }, now);
    }
    const runtime = body.replicas !== undefined || body.tensor_parallel_size !== undefined || body.vllm_arguments !== undefined;
    if (runtime) {
      if (await this.activeJob(d)) throw new AppError('deployment_busy', `deployment ${id} is ${d.status}: wait for it, or cancel its run`);
      const next: DeploymentSpec = {
        ...d.spec,
        replicas: body.replicas ?? d.spec.replicas,
        tensorParallelSize: body.tensor_parallel_size ?? d.spec.tensorParallelSize,
        vllm: { ...d.spec.vllm, arguments: body.vllm_arguments ? checkArguments(body.vllm_arguments) : d.spec.vllm.arguments },
      };
      const cluster = await this.access.record(d.clusterId);
      const kube = this.access.kube(cluster);
      const { placement, request } = await this.placeOrRefuse(cluster, kube, next, d.id);
      // The accelerators are asked for the same way as before (a running revision's pods keep theirs).
      const spec: DeploymentSpec = { ...next, request: d.spec.request.kind === 'none' ? request : d.spec.request };
      renderDeployment(spec, this.opts.profile, DeploymentJob.publishTarget(cluster, spec));
      const ready = SERVING.includes(d.status) && d.readySpec !== null;
      await this.repo.update(this.db, id, { spec, placement, revision: d.revision + 1, status: 'validated', reason: null, logs: null, failure: null, stage: 'validated', readySpec: ready ? d.readySpec : null }, now);
      await this.ops.append({ op: 'deployment.update', status: 'ok', cluster_id: d.clusterId, deployment_id: id, revision: d.revision + 1, replicas: spec.replicas, tensor_parallel_size: spec.tensorParallelSize });
      await this.startJob(id, ready ? 'update' : 'deploy');
    } else {
      await this.ops.append({ op: 'deployment.update', status: 'ok', cluster_id: d.clusterId, deployment_id: id, metadata: true });
    }
    return this.get(id);
  }

  /** `POST /runs/{run_id}/cancel` (Lens) and `POST /executions/{id}/cancel`: 202 `{id, status: "cancelling"}`. */
  async cancelRun(runId: string): Promise<{ id: string; status: 'cancelling' }> {
    const d = await this.repo.byRun(this.db, runId);
    if (!d) throw new AppError('deployment_run_not_found', `deployment run not found: ${runId}`);
    return this.cancelOf(d, runId);
  }

  async cancelExecution(id: string): Promise<{ id: string; status: 'cancelling' }> {
    const d = await this.row(id);
    return this.cancelOf(d, d.runId);
  }

  private async cancelOf(d: DeploymentRow, answerId: string): Promise<{ id: string; status: 'cancelling' }> {
    const job = await this.activeJob(d);
    if (!job) throw new AppError('deployment_run_not_active', 'deployment run is not active');
    try {
      await this.runner.cancel(job.id);
    } catch (e) {
      if (e instanceof AppError && e.code === 'job_finished') throw new AppError('deployment_run_not_active', 'deployment run is not active');
      throw e;
    }
    await this.ops.append({ op: 'deployment.cancel', status: 'ok', cluster_id: d.clusterId, deployment_id: d.id, job_id: job.id });
    return { id: answerId, status: 'cancelling' };
  }

  /** Waits for a job to end (on any replica), at most `ms`. */
  private async waitJob(id: string, ms: number): Promise<void> {
    await this.runner.wait(id);
    const end = Date.now() + ms;
    for (;;) {
      const j = await this.runner.repository.get(id);
      if (!j || isFinished(j.status) || Date.now() > end) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * `DELETE …/executions/{id}`: stops its job, then removes exactly what it applied — each object
   * only while it still carries this deployment's label, the Helm release, the copied secret —
   * and its namespace (when asked, and only when it is this deployment's). Anything else in the
   * cluster, a user's object in that namespace included when the namespace is kept, stays.
   */
  async delete(id: string, deleteNamespace: boolean): Promise<void> {
    const d = await this.row(id);
    const job = await this.activeJob(d);
    if (job) {
      await this.runner.cancel(job.id).catch(() => undefined);
      await this.waitJob(job.id, 60_000);
    }
    if (d.status === 'cleaned') return;
    const cluster = await this.access.record(d.clusterId);
    const kube = this.access.kube(cluster);
    const applied = (await this.repo.get(this.db, id))?.applied ?? d.applied;
    const notes: string[] = [];
    const mine = (o: KubeObjectRef | null) => o?.metadata.labels?.[DEPLOYMENT_LABEL] === id && o.metadata.labels?.[MANAGED_BY.key] === MANAGED_BY.value;
    const remove = async (k: AppliedObject) => {
      const o = await kube.getObject(k.apiVersion, k.kind, k.name, k.namespace);
      if (mine(o)) {
        await kube.deleteObject(k.apiVersion, k.kind, k.name, k.namespace);
        notes.push(`deleted ${k.kind} ${k.namespace ? `${k.namespace}/` : ''}${k.name}`);
      }
    };
    try {
      if (applied) {
        for (const k of applied.publication) await remove(k);
        for (const k of [...applied.objects].reverse()) await remove(k);
        if (applied.secret) await remove(applied.secret);
        if (applied.release) {
          const gone = await this.job.uninstall(cluster, applied.release.release, applied.release.namespace);
          if (gone) notes.push(`uninstalled ${applied.release.namespace}/${applied.release.release}`);
        }
        if (deleteNamespace && applied.namespace) {
          const ns = await kube.getNamespace(applied.namespace);
          if (ns?.metadata?.labels?.[DEPLOYMENT_LABEL] === id && ns.metadata.labels?.[CLUSTER_LABEL] === d.clusterId) {
            const theirs = await this.foreignContent(kube, applied);
            if (theirs === null) notes.push(`kept namespace ${applied.namespace}: its content could not be listed`);
            else if (theirs.length) notes.push(`kept namespace ${applied.namespace}: it holds objects ironlens did not make (${theirs.slice(0, 5).join(', ')})`);
            else {
              await kube.deleteNamespace(applied.namespace);
              notes.push(`deleted namespace ${applied.namespace}`);
            }
          }
        }
      }
    } catch (e) {
      const mapped = clusterFailure(e);
      const msg = mapped instanceof Error ? mapped.message : String(mapped);
      await this.ops.append({ op: 'deployment.delete', status: 'failed', cluster_id: d.clusterId, deployment_id: id, error: msg.slice(0, 500) });
      throw new AppError('deployment_cleanup_failed', `the deployment's objects could not all be removed: ${msg}`);
    }
    await this.repo.update(this.db, id, { status: 'cleaned', stage: 'cleaned', reason: null, endpoint: null }, new Date().toISOString());
    await this.ops.append({ op: 'deployment.delete', status: 'ok', cluster_id: d.clusterId, deployment_id: id, removed: notes.length });
  }

  /**
   * A user's objects in the deployment's namespace (see `userObjects`), or null when its content
   * cannot be listed (an API group failing, after three tries a second apart): then the namespace stays.
   */
  private async foreignContent(kube: Kube, applied: Applied): Promise<string[] | null> {
    for (let i = 0; i < 3; i++) {
      try {
        return userObjects(await kube.listNamespaceContents(applied.namespace!), applied);
      } catch {
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    return null;
  }

  // ---- the execution's pods, events, logs ----

  async pods(id: string): Promise<ExecutionPods> {
    const d = await this.row(id);
    const cluster = await this.access.record(d.clusterId);
    try {
      const pods = await this.access.kube(cluster).listPods({ namespace: d.spec.namespace, labelSelector: `${DEPLOYMENT_LABEL}=${id}` });
      return { execution_id: id, namespace: d.spec.namespace, pods: pods.map(podView).sort((a, b) => a.name.localeCompare(b.name)) };
    } catch (e) {
      const m = clusterFailure(e);
      return { execution_id: id, namespace: d.spec.namespace, pods: [], error: m instanceof Error ? m.message.slice(0, 500) : String(m) };
    }
  }

  async events(id: string): Promise<ExecutionEvents> {
    const d = await this.row(id);
    const cluster = await this.access.record(d.clusterId);
    try {
      const events = await this.access.kube(cluster).listEvents(d.spec.namespace);
      return {
        execution_id: id,
        namespace: d.spec.namespace,
        events: events
          .map((e) => ({
            type: String(e.type ?? '').slice(0, 32),
            reason: String(e.reason ?? '').slice(0, 128),
            message: String(e.message ?? '').slice(0, 1000),
            object: `${String(e.involvedObject?.kind ?? '').slice(0, 64)}/${String(e.involvedObject?.name ?? '').slice(0, 253)}`,
            count: typeof e.count === 'number' && Number.isFinite(e.count) ? Math.trunc(e.count) : 1,
            last_timestamp: typeof e.lastTimestamp === 'string' ? e.lastTimestamp : typeof e.eventTime === 'string' ? e.eventTime : null,
          }))
          .sort((a, b) => String(a.last_timestamp ?? '').localeCompare(String(b.last_timestamp ?? '')))
          .slice(-200),
      };
    } catch (e) {
      const m = clusterFailure(e);
      return { execution_id: id, namespace: d.spec.namespace, events: [], error: m instanceof Error ? m.message.slice(0, 500) : String(m) };
    }
  }

  async logs(id: string, podName: string, q: PodLogQuery): Promise<PodLogs> {
    const d = await this.row(id);
    if (!isDnsSubdomain(podName)) throw new AppError('deployment_pod_not_found', `no pod ${podName} in deployment ${id}`);
    const cluster = await this.access.record(d.clusterId);
    const kube = this.access.kube(cluster);
    const pods = await onCluster(() => kube.listPods({ namespace: d.spec.namespace, labelSelector: `${DEPLOYMENT_LABEL}=${id}` }));
    const pod = pods.find((p) => p.metadata?.name === podName);
    if (!pod) throw new AppError('deployment_pod_not_found', `no pod ${podName} in deployment ${id}`);
    const container = q.container ?? 'vllm';
    try {
      const logs = await kube.podLog(d.spec.namespace, podName, { container, tailLines: q.tail ?? 200, previous: q.previous ?? false });
      return { execution_id: id, namespace: d.spec.namespace, pod_name: podName, container, logs, success: true };
    } catch (e) {
      const mapped = clusterFailure(e);
      throw new AppError('deployment_logs_unavailable', `the log of ${podName}/${container} could not be read: ${mapped instanceof Error ? mapped.message : String(mapped)}`);
    }
  }

  // ---- the model service ----

  private published(d: DeploymentRow, clusterName: string): PublishedModel {
    return {
      id: d.id,
      name: d.name,
      modelRef: d.spec.model,
      displayName: d.displayName,
      description: d.description,
      selectionPolicy: 'affinity',
      status: 'active',
      clusterId: d.clusterId,
      clusterName,
      servedName: d.spec.model,
      baseModel: d.spec.model,
      createdByUserId: d.createdBy,
      createdAt: d.createdAt,
      updatedAt: d.updatedAt,
      baseUrl: d.endpoint,
      header: BASE_MODEL_HEADER,
      curl: d.endpoint ? curlLine(d.endpoint, d.spec.model) : null,
    };
  }

  /** `GET /api/v1/model-service/models`: the models served on a shared gateway, per cluster. */
  async models(): Promise<PublishedModelList> {
    const rows = (await this.repo.list(this.db, { statuses: SERVING })).filter((d) => d.spec.path !== 'baseline');
    const names = new Map<string, string>();
    for (const d of rows) if (!names.has(d.clusterId)) names.set(d.clusterId, (await this.access.record(d.clusterId).catch(() => null))?.name ?? d.clusterId);
    return { items: rows.map((d) => this.published(d, names.get(d.clusterId) ?? d.clusterId)) };
  }

  /** `GET /v1/models` with a gateway key: the OpenAI list of the models its cluster's gateway serves. */
  async openAiModels(authorization: string | undefined, source: string): Promise<OpenAiModelList> {
    if (!this.gateway) throw new AppError('gateway_unauthorized', 'a gateway access key is required');
    const { clusterId } = await this.gateway.keyOwner(authorization, source);
    const rows = (await this.repo.list(this.db, { clusterId, statuses: SERVING })).filter((d) => d.spec.path !== 'baseline');
    return { object: 'list', data: rows.map((d) => ({ id: d.spec.model, object: 'model' as const, created: Math.floor(Date.parse(d.createdAt) / 1000), owned_by: 'ironlens' })) };
  }

  /** `GET /api/cluster/clusters/{id}/accelerators`: per accelerator, what each node offers and what is free (host reports beside). */
  async inventory(clusterId: string): Promise<AcceleratorInventory> {
    const cluster = await this.access.record(clusterId);
    const kube = this.access.kube(cluster);
    const [facts, lws] = await onCluster(() => Promise.all([this.facts(cluster, kube, null), kube.crdEstablished(LWS_CRD)]));
    const accelerators: AcceleratorInventory['accelerators'] = [];
    for (const a of ACCELERATORS) {
      if (a === 'cpu') continue;
      const nodes = acceleratorRows(facts, a);
      if (!nodes.length) continue;
      accelerators.push({ accelerator: a, resource: ACCELERATOR_SPECS[a].resources[0] ?? null, products: [...new Set(nodes.map((n) => n.product).filter((p): p is string => !!p))].sort(), nodes });
    }
    return { clusterId, accelerators, lws };
  }
}

/** What controllers make from a deployment's objects, and what Kubernetes puts into every namespace: never a user's. */
const MADE_FOR_US = new Set(['events', 'pods', 'replicasets', 'endpoints', 'endpointslices', 'controllerrevisions', 'leases', 'resourceclaims', 'podmetrics']);

/**
 * The objects of a deployment's namespace that are neither this deployment's (applied by it, or
 * its chart release's, still going away) nor what controllers and Kubernetes make there (the kinds
 * above, and anything with a controller owner — a LeaderWorkerSet's StatefulSets and headless
 * Service —, which its owner decides): a user's.
 */
export function userObjects(items: NamespacedItem[], applied: Applied): string[] {
  const mine = new Set([...applied.objects, ...applied.publication, ...(applied.secret ? [applied.secret] : [])].map((o) => o.name));
  return items
    .filter((i) => !MADE_FOR_US.has(i.resource) && !i.owned)
    .filter((i) => !(i.resource === 'serviceaccounts' && i.name === 'default'))
    .filter((i) => !(i.resource === 'configmaps' && ['kube-root-ca.crt', 'openshift-service-ca.crt', 'istio-ca-root-cert'].includes(i.name)))
    .filter((i) => !(i.resource === 'secrets' && i.type === 'kubernetes.io/service-account-token'))
    .filter((i) => !mine.has(i.name))
    .filter((i) => !(applied.release && i.annotations?.['meta.helm.sh/release-name'] === applied.release.release))
    .map((i) => `${i.resource}/${i.name}`);
}

/** A copyable curl line: the key is `$KEY` (a gateway key is shown once, when it is created). */
export function curlLine(baseUrl: string, model: string): string {
  const url = baseUrl.replace(/\/+$/, '');
  return `curl -sS ${url}/completions -H "Authorization: Bearer $KEY" -H "${BASE_MODEL_HEADER}: ${model}" -H "Content-Type: application/json" -d '{"model":"${model}","prompt":"Hello","max_tokens":16}'`;
}
