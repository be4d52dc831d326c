import { randomBytes, randomUUID } from 'node:crypto';
import { AppError, isUniqueViolation, type JobContext, type JobRunner, type OperationsLog, type SecretBox, sleep } from '@ironlens/core';
import { type Kube, parseKubeConfig } from '../adapters/kube.adapter';
import type { ClusterList, ClusterSettingsUpdateBody, ClusterWithSession, GatewayPortCheck, LegacySession, LensHostsAnswer } from '../api/clusters';
import { type KubeconfigCheckOptions, KubeconfigRefused } from '../adapters/kubeconfig';
import type { LensHosts } from '../adapters/lens-hosts.adapter';
import { proxyConfigProblem } from '../adapters/proxy-settings';
import {
  type ClusterRecord,
  DEFAULT_GATEWAY_NAME,
  DEFAULT_INOTIFY_MAX_USER_INSTANCES,
  GATEWAY_PORT_MAX,
  GATEWAY_PORT_MIN,
  GATEWAY_PROVIDERS,
  gatewayNamespaceFor,
  isoUtc,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PROXY_MODES,
  type ProxyConfig,
  type ProxyMode,
} from '../shared/domain';
import type { StackProfile } from '../shared/profile';
import type { ClusterRepository, ClusterRow } from './cluster.repository';
import type { ClustersDb } from '../shared/tables';
import type { SessionRepository } from './session.repository';
import { type ClusterAccess, clusterFailure, kubeconfigPurpose, onCluster } from './cluster-access';
import { ensureNamespace, FIELD_MANAGER, inotifyDaemonSet, inotifyDaemonSetName, NODE_TUNING_NAMESPACE, PREPULL_NAMESPACE, prepullDaemonSetName } from '../shared/manifests';

/** POST /api/cluster/clusters, after the multipart form is read. Version fields are not taken. */
/** The label of every object of an ironlens model deployment (issue 28; `deployments/`). */
const MODEL_DEPLOYMENT_LABEL = 'ironlens.dev/deployment';

export interface RegisterClusterInput {
  name: string;
  description?: string;
  /** The uploaded kubeconfig (raw bytes are checked to be UTF-8). */
  kubeconfig: string | Buffer;
  /** ProxyConfigDTO as a JSON string (the form field) or an object. */
  proxy?: string | Partial<ProxyConfig> | ClusterSettingsUpdateBody['proxy'] | null;
  gatewayProvider?: string | null;
  gatewayNamespace?: string | null;
  gatewayPublicUrl?: string | null;
  gatewayPort?: number | string | null;
  gatewayAuthzHost?: string | null;
  inotifyMaxUserInstances?: number | string | null;
  draft?: boolean | string | null;
}

/** PATCH /api/cluster/clusters/{id} (ClusterSettingsUpdateRequest): the route's body, as its schema says (version fields ignored). */
export type ClusterSettingsUpdate = ClusterSettingsUpdateBody;

export type { ClusterWithSession } from '../api/clusters';

export interface ClusterServiceOptions {
  profile: StackProfile;
  /** Timeout of the `/readyz` probe behind `ready`. */
  readyTimeoutMs: number;
  /** How long DELETE waits for the gateway namespace to be gone. */
  gatewayCleanupTimeoutMs: number;
  /** Image of the node-tuning DaemonSet (needs `sysctl` and `sleep`). */
  helperImage: string;
  /** Kubeconfig servers on link-local / metadata addresses are accepted (`IRONLENS_CLUSTER_ALLOW_LINK_LOCAL`). Default is `false`. */
  allowLinkLocal?: boolean;
  /** Longest `description`, characters (registration and PATCH; 422 `invalid_cluster_description` past it). Default is `4096`. */
  descriptionMaxLength?: number;
}

/** Longest cluster description (registration, PATCH, the bootstrap's register), characters. */
export const DESCRIPTION_MAX_LENGTH = 4096;

export const NODE_TUNING_JOB = 'clusters.node_tuning';
/** DELETE's checks and cleanup, one job per request. */
export const DELETE_JOB = 'clusters.delete';

const PROTECTED_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);

/** ConfigMaps Kubernetes and common cluster add-ons put into every namespace. */
const INJECTED_CONFIGMAPS = new Set(['kube-root-ca.crt', 'openshift-service-ca.crt', 'istio-ca-root-cert']);

/** The sources downloaded for each cluster (the software feature's `DownloadRepository`): a record shows their paths. */
export interface DownloadPaths {
  /** cluster id → component (`llmD`, `llmDBenchmark`) → path, of the downloads that are ready. */
  readyPaths(db: ClustersDb): Promise<Map<string, Record<string, string>>>;
}

/** What the cluster registration tells the shared gateway (issue 22); set by the wiring. */
export interface GatewayHooks {
  /** A registration or PATCH: reconcile when what would be applied changed. */
  changed(row: ClusterRow): Promise<unknown>;
  /** DELETE: stop a running reconcile first. */
  stop(clusterId: string): Promise<void>;
  /** DELETE, after the gateway namespace: the registration's cluster-scoped objects. */
  cleanup(kube: Kube, row: ClusterRow): Promise<string[]>;
}

/**
 * Cluster registrations: register (validate, encrypt, store), list with live readiness,
 * settings, delete with the seed's remote cleanup, sessions, Lens host candidates.
 */
export class ClusterService {
  constructor(
    private readonly access: ClusterAccess,
    private readonly repo: ClusterRepository,
    private readonly sessions: SessionRepository,
    private readonly downloads: DownloadPaths,
    private readonly box: SecretBox,
    private readonly ops: OperationsLog,
    private readonly runner: JobRunner,
    private readonly hosts: LensHosts,
    private readonly opts: ClusterServiceOptions,
  ) {}

  private gateway?: GatewayHooks;

  useGateway(g: GatewayHooks): void {
    this.gateway = g;
  }

  private get db() {
    return this.access.db;
  }

  lensHosts(): LensHostsAnswer {
    return { items: this.hosts.list() };
  }

  /** Every record (drafts on request), each probed at once: the list takes as long as the slowest probe. */
  async list(includeDrafts: boolean): Promise<ClusterList> {
    const rows = await this.repo.list(this.db, { includeDrafts });
    const paths = await this.downloads.readyPaths(this.db);
    const ready = await Promise.all(rows.map((r) => this.probe(r)));
    return { items: rows.map((r, i) => this.toRecord(r, ready[i], paths.get(r.id))) };
  }

  async record(id: string, probe = true): Promise<ClusterRecord> {
    const row = await this.access.record(id);
    return this.toRecordWithPaths(row, probe ? await this.probe(row) : false);
  }

  async recordOf(row: ClusterRow, probe = true): Promise<ClusterRecord> {
    return this.toRecordWithPaths(row, probe ? await this.probe(row) : false);
  }

  private async toRecordWithPaths(row: ClusterRow, ready: boolean): Promise<ClusterRecord> {
    const paths = await this.downloads.readyPaths(this.db);
    return this.toRecord(row, ready, paths.get(row.id));
  }

  /** `/readyz` within the short timeout; false on any failure. */
  async probe(row: ClusterRow): Promise<boolean> {
    let kube: Kube;
    try {
      kube = this.access.kube(row);
    } catch {
      return false;
    }
    return kube.readyz(this.opts.readyTimeoutMs);
  }

  private toRecord(r: ClusterRow, ready: boolean, paths: Record<string, string> | undefined): ClusterRecord {
    const p = this.opts.profile;
    return {
      id: r.id,
      name: r.name,
      description: r.description,
      createdAt: r.createdAt,
      ready,
      proxy: r.proxy,
      llmDRef: p.llm_d,
      llmDBenchmarkRef: p.llm_d_lensmark,
      llmDRepoPath: paths?.llmD ?? null,
      llmDBenchmarkRepoPath: paths?.llmDBenchmark ?? null,
      hfTokenSecret: r.hfTokenSecret,
      draft: r.draft,
      gatewayProvider: r.gatewayProvider,
      gatewayNamespace: r.gatewayNamespace,
      gatewayName: r.gatewayName,
      gatewayPublicUrl: r.gatewayPublicUrl,
      gatewayPort: r.gatewayPort,
      gatewayAuthzHost: r.gatewayAuthzHost,
      inotifyMaxUserInstances: r.inotifyMaxUserInstances,
      routerVersion: p.llm_d_router,
      gieVersion: p.k8s_gateway_api_inference_extension,
      ippVersion: p.llm_d_inference_payload_processor,
    };
  }

  /**
   * Registers a cluster: the checks of POST /api/cluster/clusters, the kubeconfig sealed with
   * the SecretBox, the record stored. Returns only the id (for the CLI and the bootstrap).
   */
  async register(input: { name: string; description?: string; kubeconfig: string } & Partial<RegisterClusterInput>): Promise<{ id: string }> {
    const { row } = await this.insert(input);
    return { id: row.id };
  }

  /** POST /api/cluster/clusters: register, open a session, report the record (with a readiness probe). */
  async create(input: RegisterClusterInput): Promise<ClusterWithSession> {
    const { row, sessionId } = await this.insert(input);
    return { cluster: await this.recordOf(row), sessionId };
  }

  private async insert(input: RegisterClusterInput): Promise<{ row: ClusterRow; sessionId: string }> {
    const name = typeof input.name === 'string' ? input.name.trim() : '';
    if (!name) throw new AppError('invalid_cluster_name', 'name must not be blank');
    if (name.length > 253) throw new AppError('invalid_cluster_name', 'name is longer than 253 characters');
    const kubeconfig = checkKubeconfig(input.kubeconfig, { allowLinkLocal: this.opts.allowLinkLocal });
    const proxy = parseProxy(input.proxy);
    const draft = parseBool(input.draft, 'draft') ?? false;
    const gatewayProvider = parseProvider(input.gatewayProvider);
    const gatewayPort = parsePort(input.gatewayPort);
    const inotify = parseInotify(input.inotifyMaxUserInstances) ?? DEFAULT_INOTIFY_MAX_USER_INSTANCES;
    const authz = (input.gatewayAuthzHost ?? '').trim() || this.hosts.list()[0] || null;
    const now = isoUtc();
    for (let attempt = 0; ; attempt++) {
      const id = randomBytes(4).toString('hex');
      const gatewayNamespace = gatewayNamespaceFor(input.gatewayNamespace, id);
      if (!gatewayNamespace) throw new AppError('invalid_gateway_namespace', `gatewayNamespace ${JSON.stringify(input.gatewayNamespace)} does not make a namespace name`);
      const row: ClusterRow = {
        id,
        name,
        description: this.description(input.description),
        createdAt: now,
        updatedAt: new Date().toISOString(),
        draft,
        proxy,
        kubeconfigSealed: this.box.seal(kubeconfig, kubeconfigPurpose(id)),
        gatewayProvider,
        gatewayNamespace,
        gatewayName: DEFAULT_GATEWAY_NAME,
        gatewayPublicUrl: (input.gatewayPublicUrl ?? '').trim() || null,
        gatewayPort,
        gatewayAuthzHost: authz,
        inotifyMaxUserInstances: inotify,
        hfTokenSecret: null,
      };
      const sessionId = randomUUID();
      try {
        await this.access.db.transaction().execute(async (trx) => {
          await this.repo.insert(trx, row);
          await this.sessions.insert(trx, { id: sessionId, clusterId: id, createdAt: new Date().toISOString(), active: true });
          await this.ops.append({ op: 'cluster.register', status: 'ok', cluster_id: id, name, draft }, trx);
        });
      } catch (err) {
        // An id collision (8 hex characters) is retried; a name conflict is not.
        if (attempt < 5 && isUniqueViolation(err)) continue;
        throw err;
      }
      if (!draft) await this.startNodeTuning(row);
      if (!draft) await this.gateway?.changed(row);
      return { row, sessionId };
    }
  }

  /** A description within `descriptionMaxLength` (422 `invalid_cluster_description` past it). */
  private description(v: unknown): string {
    const text = v === undefined || v === null ? '' : String(v);
    const max = this.opts.descriptionMaxLength ?? DESCRIPTION_MAX_LENGTH;
    if (text.length > max) throw new AppError('invalid_cluster_description', `description is ${text.length} characters long; at most ${max}`);
    return text;
  }

  /** PATCH: editable settings; version fields are the profile's and ignored here. */
  async update(id: string, patch: ClusterSettingsUpdate): Promise<ClusterWithSession> {
    const row = await this.access.record(id);
    const next: ClusterRow = { ...row, updatedAt: new Date().toISOString() };
    if (patch.name !== undefined) {
      const name = String(patch.name).trim();
      if (!name) throw new AppError('invalid_cluster_name', 'name must not be blank');
      next.name = name;
    }
    if (patch.description !== undefined) next.description = this.description(patch.description);
    if (patch.proxy !== undefined) next.proxy = parseProxy(patch.proxy);
    if (patch.gatewayProvider !== undefined) next.gatewayProvider = parseProvider(patch.gatewayProvider);
    if (patch.gatewayNamespace !== undefined) {
      const ns = gatewayNamespaceFor(patch.gatewayNamespace, id);
      if (!ns) throw new AppError('invalid_gateway_namespace', `gatewayNamespace ${JSON.stringify(patch.gatewayNamespace)} does not make a namespace name (at most 63 characters with -${id})`);
      next.gatewayNamespace = ns;
    }
    if (patch.gatewayName !== undefined) next.gatewayName = (patch.gatewayName ?? '').trim() || DEFAULT_GATEWAY_NAME;
    if (patch.gatewayPublicUrl !== undefined) next.gatewayPublicUrl = (patch.gatewayPublicUrl ?? '').trim() || null;
    if (patch.gatewayAuthzHost !== undefined) next.gatewayAuthzHost = (patch.gatewayAuthzHost ?? '').trim() || this.hosts.list()[0] || null;
    if (patch.inotifyMaxUserInstances !== undefined) next.inotifyMaxUserInstances = parseInotify(patch.inotifyMaxUserInstances) ?? next.inotifyMaxUserInstances;
    if (patch.draft !== undefined) next.draft = !!patch.draft;
    if (patch.gatewayPort !== undefined) {
      next.gatewayPort = parsePort(patch.gatewayPort);
      if (next.gatewayPort !== null && next.gatewayPort !== row.gatewayPort) {
        const owner = await this.portOwner(row, next.gatewayPort);
        if (owner && !owner.ours) throw new AppError('gateway_port_in_use', `nodePort ${next.gatewayPort} is held by Service ${owner.ref}`);
      }
    }
    await this.db.transaction().execute(async (trx) => {
      await this.repo.update(trx, next);
      await this.ops.append({ op: 'cluster.update', status: 'ok', cluster_id: id, fields: Object.keys(patch) }, trx);
    });
    if (!next.draft && (patch.inotifyMaxUserInstances != null || (row.draft && patch.draft === false))) await this.startNodeTuning(next);
    await this.gateway?.changed(next);
    return { cluster: await this.recordOf(next), sessionId: null };
  }

  /** Which Service holds a nodePort: `{ref: "ns/name", ours}`, or null. Needs the cluster. */
  async portOwner(row: ClusterRow, port: number): Promise<{ ref: string; ours: boolean } | null> {
    const services = await onCluster(() => this.access.kube(row).listServices());
    for (const s of services) {
      for (const p of s.spec?.ports ?? []) {
        if (p.nodePort === port) {
          const ns = s.metadata?.namespace ?? '';
          return { ref: `${ns}/${s.metadata?.name}`, ours: ns === row.gatewayNamespace };
        }
      }
    }
    return null;
  }

  /** GET gateway-port-check: `{available, owner, reason?}`. */
  async gatewayPortCheck(id: string, port: number): Promise<GatewayPortCheck> {
    const row = await this.access.record(id);
    if (!Number.isInteger(port) || port < GATEWAY_PORT_MIN || port > GATEWAY_PORT_MAX) {
      return { available: false, owner: null, reason: `port must be a NodePort in ${GATEWAY_PORT_MIN}-${GATEWAY_PORT_MAX}` };
    }
    const owner = await this.portOwner(row, port);
    if (!owner) return { available: true, owner: null };
    if (owner.ours) return { available: true, owner: owner.ref };
    return { available: false, owner: owner.ref, reason: `nodePort ${port} is held by Service ${owner.ref}` };
  }

  /** Applies the inotify DaemonSet in the background (a job); failures land in the job, not the request. */
  private async startNodeTuning(row: ClusterRow): Promise<void> {
    const image = this.opts.helperImage;
    const kube = () => this.access.kube(row);
    await this.runner.start({ kind: NODE_TUNING_JOB, subject: row.id, input: { value: row.inotifyMaxUserInstances } }, async (ctx) => {
      ctx.stage('apply inotify DaemonSet');
      const k = kube();
      await ensureNamespace(k, NODE_TUNING_NAMESPACE);
      await k.apply(inotifyDaemonSet(row.id, row.inotifyMaxUserInstances, image), FIELD_MANAGER, true);
      return { result: { value: row.inotifyMaxUserInstances } };
    });
  }

  /** GET /api/cluster/session: the active session of a cluster, created when there is none. */
  async session(clusterId: string): Promise<ClusterWithSession> {
    const row = await this.access.record(clusterId);
    let s = await this.sessions.activeFor(this.db, clusterId);
    if (!s) {
      s = { id: randomUUID(), clusterId, createdAt: new Date().toISOString(), active: true };
      await this.sessions.insert(this.db, s);
    }
    return { cluster: await this.recordOf(row), sessionId: s.id };
  }

  /** An active session and its cluster row; 404 `cluster_session_inactive` otherwise. */
  async activeSession(sessionId: string): Promise<{ session: { id: string; clusterId: string; createdAt: string }; row: ClusterRow }> {
    const s = await this.sessions.get(this.db, sessionId);
    if (!s?.active) throw new AppError('cluster_session_inactive', `session ${sessionId} is not active`);
    const row = await this.repo.get(this.db, s.clusterId);
    if (!row) throw new AppError('cluster_session_inactive', `session ${sessionId} is not active`);
    return { session: s, row };
  }

  async sessionInfo(sessionId: string): Promise<ClusterWithSession> {
    const { row } = await this.activeSession(sessionId);
    return { cluster: await this.recordOf(row), sessionId };
  }

  /** Legacy overview session: `{id, serverId, createdAt, status: "connected"}`. */
  async legacySession(sessionId: string): Promise<LegacySession> {
    const { session } = await this.activeSession(sessionId);
    return { id: session.id, serverId: session.clusterId, createdAt: isoUtc(new Date(session.createdAt)), status: 'connected' };
  }

  async disconnect(sessionId: string): Promise<void> {
    if (!(await this.sessions.deactivate(this.db, sessionId))) throw new AppError('cluster_session_inactive', `session ${sessionId} is not active`);
  }

  /**
   * DELETE, in the seed's order, as a job of the shared runner (`clusters.delete`, subject the
   * cluster id) that the request starts and waits for: its stages and notes land in the jobs
   * record like the other long work, and the request answers with the job's outcome.
   */
  async delete(id: string, opts: { force?: boolean } = {}): Promise<void> {
    const row = await this.access.record(id);
    const force = opts.force === true;
    let failure: unknown;
    const job = await this.runner.start(
      { kind: DELETE_JOB, subject: id, input: { name: row.name, draft: row.draft, gatewayNamespace: row.gatewayNamespace, force } },
      async (ctx) => {
        try {
          return await this.deleteWork(row, ctx, force);
        } catch (e) {
          failure = e;
          throw e;
        }
      },
    );
    const done = await this.runner.wait(job.id);
    if (done?.status === 'success') return;
    if (failure !== undefined) throw failure;
    // Cancelled before it ran, or stopped with the process: nothing was deleted for sure.
    throw new AppError('cluster_gateway_cleanup_failed', `the cleanup of cluster ${id} did not finish: ${done?.error ?? 'the job was lost'}`);
  }

  /**
   * The remote cleanup (`remoteCleanup`), then the record. Two ways past a cleanup that cannot be
   * done (issue 33): a draft no write of ironlens ever reached (`reached_at` null: the wizard's
   * Cancel of an unreachable cluster) has nothing of ours there, so it is removed without one; and
   * `force` (an admin's `?force=true`) removes the record when the cleanup fails with
   * `cluster_gateway_cleanup_failed`, naming in the job log and the `cluster.delete` entry what may
   * be left on the cluster. Neither overrides a 409 of a cluster that still serves.
   */
  private async deleteWork(row: ClusterRow, ctx: JobContext, force: boolean): Promise<{ result: { notes: string[] }; message: string }> {
    const id = row.id;
    let notes: string[];
    let audit: Record<string, unknown> = {};
    if (row.draft && !row.reachedAt) {
      ctx.stage('skip the remote cleanup: no write of ironlens ever reached this draft’s cluster', 50);
      notes = ['no remote cleanup: no write of ironlens ever reached the cluster, so nothing of ours can be there'];
      audit = { remote_cleanup: 'skipped', reason: 'draft_never_reached' };
    } else {
      try {
        notes = await this.remoteCleanup(row, ctx);
      } catch (e) {
        if (!force || !(e instanceof AppError && e.code === 'cluster_gateway_cleanup_failed')) throw e;
        const left = leftBehind(row);
        ctx.stage('skip the remote cleanup (force)', 90);
        notes = [`forced: the remote cleanup failed (${e.message}); what may be left on the cluster: ${left.join('; ')}`];
        audit = { forced: true, remote_cleanup: 'skipped', reason: e.message, left_behind: left };
      }
    }
    for (const n of notes) ctx.log(n);
    ctx.stage('remove the record', 95);
    await this.db.transaction().execute(async (trx) => {
      await this.repo.delete(trx, id);
      await this.ops.append({ op: 'cluster.delete', status: 'ok', cluster_id: id, job_id: ctx.id, name: row.name, notes, ...audit }, trx);
    });
    this.access.forget(id);
    return { result: { notes }, message: `cluster ${row.name} deleted` };
  }

  /**
   * A finished (non-draft) cluster that still serves is refused (409). Then the gateway
   * namespace must go (502 `cluster_gateway_cleanup_failed` otherwise, record kept); the HF
   * secret and its namespace under the seed's rules, the draft's volumes, and ironlens' own
   * DaemonSets are best effort (what failed is in the notes).
   */
  private async remoteCleanup(row: ClusterRow, ctx: JobContext): Promise<string[]> {
    const id = row.id;
    const kube = this.access.kube(row);
    const gatewayFailure = (e: unknown) => {
      const mapped = clusterFailure(e);
      const msg = mapped instanceof Error ? mapped.message : String(mapped);
      return new AppError('cluster_gateway_cleanup_failed', `gateway namespace ${row.gatewayNamespace} could not be deleted: ${msg}`);
    };
    if (!row.draft) {
      ctx.stage('check that the cluster no longer serves', 0);
      let deployments: Awaited<ReturnType<Kube['listDeployments']>>;
      let models: Awaited<ReturnType<Kube['listDeployments']>>;
      let groups: Awaited<ReturnType<Kube['listObjects']>>;
      let pvcs: Awaited<ReturnType<Kube['listPvcs']>>;
      try {
        // Lens' labelled deployments, and ironlens' model deployments (issue 28): their model
        // servers' Deployments and LeaderWorkerSets carry `ironlens.dev/deployment`.
        [deployments, models, groups, pvcs] = await Promise.all([
          kube.listDeployments(`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`),
          kube.listDeployments(MODEL_DEPLOYMENT_LABEL),
          kube.listObjects('leaderworkerset.x-k8s.io/v1', 'LeaderWorkerSet', { labelSelector: MODEL_DEPLOYMENT_LABEL }),
          kube.listPvcs(`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`),
        ]);
      } catch (e) {
        // Without the cluster nothing can be cleaned: the gateway cleanup fails first.
        throw gatewayFailure(e);
      }
      const readyGroups = groups.filter((g) => Number((g.status as { readyReplicas?: unknown } | undefined)?.readyReplicas ?? 0) > 0);
      const serving = [...deployments, ...models].filter((d) => (d.status?.availableReplicas ?? 0) > 0);
      if (serving.length || readyGroups.length) {
        const names = [...serving.map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`), ...readyGroups.map((g) => `${g.metadata.namespace}/${g.metadata.name}`)].join(', ');
        throw new AppError('cluster_has_available_deployments', `the cluster still serves: ${names}; remove these deployments first`);
      }
      if (pvcs.length) {
        const names = pvcs.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ');
        throw new AppError('cluster_has_storage_volumes', `the cluster still has storage volumes: ${names}; remove them first`);
      }
    }
    // 1. The gateway namespace, to completion (a running gateway reconcile is stopped first).
    await this.gateway?.stop(id);
    ctx.stage(`delete the gateway namespace ${row.gatewayNamespace}`, 10);
    try {
      await this.deleteNamespaceAndWait(kube, row.gatewayNamespace, ctx);
    } catch (e) {
      await this.ops.append({ op: 'cluster.delete', status: 'failed', cluster_id: id, job_id: ctx.id, error: 'gateway cleanup failed' });
      throw e instanceof AppError && e.code === 'cluster_gateway_cleanup_failed' ? e : gatewayFailure(e);
    }
    // 2. The HF token secret, and its namespace when nothing else keeps it.
    const notes: string[] = [];
    // The gateway's cluster-scoped objects of this registration (its GatewayClass); never the provider's control plane.
    if (this.gateway) notes.push(...(await this.gateway.cleanup(kube, row).catch((e: Error) => [`gateway: ${e.message}`])));
    if (row.hfTokenSecret) {
      ctx.stage(`delete the HF token secret ${row.hfTokenSecret.namespace}/${row.hfTokenSecret.name}`, 60);
      await this.cleanupHfSecret(kube, row, notes).catch((e: Error) => notes.push(`hf secret: ${e.message}`));
    }
    // 3. A draft's storage volumes (the PVs keep their data: Retain).
    if (row.draft) {
      ctx.stage('delete the draft’s volumes', 75);
      await this.cleanupDraftVolumes(kube).catch((e: Error) => notes.push(`volumes: ${e.message}`));
    }
    // 4. ironlens' own DaemonSets for this registration.
    ctx.stage('delete the node-tuning and pre-pull DaemonSets', 85);
    for (const [ns, name] of [
      [NODE_TUNING_NAMESPACE, inotifyDaemonSetName(id)],
      [PREPULL_NAMESPACE, prepullDaemonSetName(id)],
    ]) {
      // Best effort, as the seed's cleanup is: a DaemonSet left on the cluster is named in the notes (job log, operations log).
      await kube.deleteDaemonSet(ns, name).catch((e: unknown) => {
        const mapped = clusterFailure(e);
        notes.push(`DaemonSet ${ns}/${name} was not deleted: ${mapped instanceof Error ? mapped.message : String(mapped)}`);
      });
    }
    return notes;
  }

  private async deleteNamespaceAndWait(kube: Kube, ns: string, ctx: JobContext): Promise<void> {
    const deadline = Date.now() + this.opts.gatewayCleanupTimeoutMs;
    const existed = await kube.deleteNamespace(ns);
    if (!existed) {
      ctx.log(`namespace ${ns} was not there`);
      return;
    }
    while (Date.now() < deadline) {
      ctx.throwIfCancelled();
      if (!(await kube.getNamespace(ns))) return;
      await sleep(250);
    }
    throw new AppError('cluster_gateway_cleanup_failed', `gateway namespace ${ns} was still terminating after ${this.opts.gatewayCleanupTimeoutMs} ms`);
  }

  private async cleanupHfSecret(kube: Kube, row: ClusterRow, notes: string[]): Promise<void> {
    const { namespace, name } = row.hfTokenSecret!;
    await kube.deleteSecret(namespace, name);
    if (PROTECTED_NAMESPACES.has(namespace)) return;
    const ns = await kube.getNamespace(namespace);
    if (!ns) return;
    const ours = namespace === `llm-d-bench-storage-${row.id}` || ns.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
    if (!ours) {
      let items: Awaited<ReturnType<Kube['listNamespaceContents']>>;
      try {
        items = await kube.listNamespaceContents(namespace);
      } catch (e) {
        notes.push(`namespace ${namespace} kept: its content could not be listed (${(e as Error).message})`);
        return;
      }
      const foreign = items.filter((i) => !isInjected(i) && !(i.resource === 'secrets' && i.name === name));
      if (foreign.length) {
        notes.push(`namespace ${namespace} kept: it holds ${foreign.length} other object(s)`);
        return;
      }
    }
    await kube.deleteNamespace(namespace);
  }

  private async cleanupDraftVolumes(kube: Kube): Promise<void> {
    const pvcs = await kube.listPvcs(`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`);
    for (const p of pvcs) {
      await kube.deletePvc(p.metadata!.namespace!, p.metadata!.name!);
      if (p.spec?.volumeName) await kube.deletePv(p.spec.volumeName);
    }
  }
}

/** Objects Kubernetes (and common add-ons) put into every namespace; events are not objects anyone keeps. */
/** What ironlens may have left on a cluster whose remote cleanup was skipped by force: the objects a cleanup would delete. */
export function leftBehind(row: ClusterRow): string[] {
  const out = [`namespace ${row.gatewayNamespace} (the gateway's)`];
  if (row.gatewayProvider) out.push(`the ${row.gatewayProvider} GatewayClass of this registration`);
  if (row.hfTokenSecret) out.push(`Secret ${row.hfTokenSecret.namespace}/${row.hfTokenSecret.name} (HF token)`);
  if (row.draft) out.push(`PersistentVolumeClaims labelled ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`);
  out.push(`DaemonSet ${NODE_TUNING_NAMESPACE}/${inotifyDaemonSetName(row.id)}`, `DaemonSet ${PREPULL_NAMESPACE}/${prepullDaemonSetName(row.id)}`);
  return out;
}

function isInjected(i: { resource: string; group: string; name: string; type?: string; annotations?: Record<string, string> }): boolean {
  if (i.resource === 'events') return true;
  if (i.group === '' && i.resource === 'serviceaccounts' && i.name === 'default') return true;
  if (i.group === '' && i.resource === 'configmaps' && INJECTED_CONFIGMAPS.has(i.name)) return true;
  if (i.group === '' && i.resource === 'secrets' && i.type === 'kubernetes.io/service-account-token' && i.annotations?.['kubernetes.io/service-account.name'] === 'default') {
    return true;
  }
  return false;
}

/**
 * The registration's kubeconfig check: UTF-8, then `loadCheckedKubeconfig` (what the client will
 * load, checked: no merge keys, no exec/auth-provider, no file paths, no forbidden server).
 * Exported for the tests that make the check and the client agree.
 */
export function checkKubeconfig(input: string | Buffer, opts: KubeconfigCheckOptions = {}): string {
  let text: string;
  if (Buffer.isBuffer(input)) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(input);
    } catch {
      throw new AppError('invalid_kubeconfig', 'the kubeconfig is not UTF-8');
    }
  } else if (typeof input === 'string') {
    text = input;
  } else {
    throw new AppError('invalid_kubeconfig', 'no kubeconfig file was uploaded');
  }
  if (!text.trim()) throw new AppError('invalid_kubeconfig', 'the kubeconfig is empty');
  try {
    parseKubeConfig(text, opts);
  } catch (e) {
    throw new AppError('invalid_kubeconfig', e instanceof KubeconfigRefused ? e.message : `the kubeconfig cannot be used: ${(e as Error).message}`);
  }
  return text;
}

function parseProxy(input: RegisterClusterInput['proxy']): ProxyConfig {
  // Lens' ProxyConfigDTO default: a registration without proxy settings uses the process' own (auto).
  if (input === undefined || input === null || input === '') return { mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null };
  let obj: unknown = input;
  if (typeof input === 'string') {
    try {
      obj = JSON.parse(input);
    } catch {
      throw new AppError('invalid_proxy_config', 'proxy is not JSON');
    }
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new AppError('invalid_proxy_config', 'proxy must be a JSON object');
  const o = obj as Record<string, unknown>;
  const given = o.mode ?? 'auto';
  if (!isProxyMode(given)) throw new AppError('invalid_proxy_config', `proxy.mode must be one of ${PROXY_MODES.join(', ')}`);
  // `system` is ironlens' earlier name of Lens' `auto`; `auto` and `none` take no values (as Lens clears them).
  const mode = given === 'system' ? 'auto' : given;
  if (mode !== 'custom') return { mode, httpProxy: null, httpsProxy: null, noProxy: null };
  const str = (k: string): string | null => {
    const v = o[k];
    if (v === undefined || v === null || v === '') return null;
    if (typeof v !== 'string') throw new AppError('invalid_proxy_config', `proxy.${k} must be a string`);
    return v.trim() || null;
  };
  const p: ProxyConfig = { mode, httpProxy: str('httpProxy'), httpsProxy: str('httpsProxy'), noProxy: str('noProxy') };
  const problem = proxyConfigProblem(p);
  if (problem) throw new AppError('invalid_proxy_config', problem);
  return p;
}

const isProxyMode = (v: unknown): v is ProxyMode => (PROXY_MODES as readonly unknown[]).includes(v);

function parseBool(v: unknown, field: string): boolean | null {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v === 'boolean') return v;
  const s = String(v).trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off'].includes(s)) return false;
  throw new AppError('validation_failed', `${field} must be a boolean`);
}

function parseProvider(v: unknown): string | null {
  if (v === undefined || v === null || String(v).trim() === '') return null;
  const s = String(v).trim();
  if (!(GATEWAY_PROVIDERS as readonly string[]).includes(s)) throw new AppError('invalid_gateway_provider', `gatewayProvider must be one of ${GATEWAY_PROVIDERS.join(', ')}`);
  return s;
}

function parsePort(v: unknown): number | null {
  if (v === undefined || v === null || String(v).trim() === '') return null;
  const n = Number(v);
  if (!Number.isInteger(n) || n < GATEWAY_PORT_MIN || n > GATEWAY_PORT_MAX) {
    throw new AppError('invalid_gateway_port', `gatewayPort must be an integer in ${GATEWAY_PORT_MIN}-${GATEWAY_PORT_MAX}, got ${JSON.stringify(v)}`);
  }
  return n;
}

function parseInotify(v: unknown): number | null {
  if (v === undefined || v === null || String(v).trim() === '') return null;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1) throw new AppError('validation_failed', 'inotifyMaxUserInstances must be a positive integer');
  return n;
}
