import { createHash, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { AppError, type ErrorCode, errorCatalog, type Job, type JobContext, type JobRunner, type OperationsLog, sleep } from '@ironlens/core';
import { type Kube, KubeApiError, type KubeObjectRef } from '../adapters/kube.adapter';
import type { GatewayProvider } from '../shared/domain';
import type { StackProfile } from '../shared/profile';
import type { ClusterRepository, ClusterRow } from '../registry/cluster.repository';
import { inventoryName } from '../bootstrap/nodes';
import type { WorkerDirectory } from '../bootstrap/workers';
import type { ClusterAccess } from '../registry/cluster-access';
import { type BundleId, bundleUrls, type CrdsService } from '../software/crds.service';
import { FIELD_MANAGER } from '../shared/manifests';
import type { GatewayKeyRow, GatewayRepository, GatewayStateRow, ObjectKey } from './gateway.repository';
import {
  authzPath,
  CLUSTER_ID_LABEL,
  FAIRNESS_HEADER,
  type GatewayInputs,
  gatewayClassName,
  IPP_CHART,
  IPP_NAME,
  PROVIDERS,
  renderGateway,
} from './gateway.render';
import type { Helm, HelmRelease } from '../adapters/helm.adapter';

export const GATEWAY_JOB = 'clusters.gateway';

export interface GatewayServiceOptions {
  profile: StackProfile;
  githubMirror: string;
  /** ironlens' console port: the hook's EndpointSlice port; null: the console listener's bound port ({@link GatewayService.useConsolePort}). */
  authzPort: number | null;
  /** How long a reconcile waits for a CRD a chart just installed to be served. */
  crdWaitMs: number;
  /** The hook's rate limit per source address: `perSecond` refill, `burst` bucket size. */
  rate: { perSecond: number; burst: number };
}

/** GatewayOperation (Lens' field names) of the last reconcile. */
export interface GatewayOperationView {
  id: string;
  kind: 'reconcile-gateway';
  status: 'running' | 'succeeded' | 'failed';
  clusterId: string;
  message: string;
  detailJson: Record<string, unknown> | null;
  createdByUserId: string | null;
  createdAt: string;
  finishedAt: string | null;
}

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

/** GatewayStatusCluster (Lens' field names) with ironlens' details from the objects' own conditions. */
export interface GatewayStatusView {
  clusterId: string;
  clusterName: string;
  members: unknown[];
  gatewayProvider: string | null;
  gatewayState: 'installed' | 'missing' | 'unknown';
  gatewayNamespace: string;
  gatewayName: string;
  gatewayReady: boolean | null;
  gatewayAddress: string | null;
  gatewayPublicUrl: string | null;
  gatewayPort: number | null;
  gatewayNodeAddress: string | null;
  ippState: 'installed' | 'missing' | 'unknown';
  ippName: string;
  ippNamespace: string;
  lastOperation: GatewayOperationView | null;
  gatewayClassName: string | null;
  gatewayClassConditions: Condition[];
  gatewayConditions: Condition[];
  ippReady: boolean | null;
  authz: { state: 'ready' | 'failed' | 'missing' | 'disabled' | 'unknown'; path: string; endpoints: string[]; reason: string | null };
  controlPlane: { state: 'ready' | 'progressing' | 'missing' | 'none' | 'unknown'; deployments: Array<{ namespace: string; name: string; available: boolean }> };
  error: string | null;
}

const KEY_NAME = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;
const KEY_PREFIX = 'ilgw_';

/** The hook's failure when its port is not known (an ephemeral console port not bound yet). */
const PORT_UNKNOWN_CODE = 'gateway_authz_port_unknown' satisfies ErrorCode;
const PORT_UNKNOWN = `${PORT_UNKNOWN_CODE}: ${errorCatalog[PORT_UNKNOWN_CODE].message}`;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const keyOf = (o: KubeObjectRef): ObjectKey => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) });
const sameKey = (a: ObjectKey, b: ObjectKey) => a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '');

/**
 * The shared inference gateway of a registration: a reconcile job (CRDs, the provider's control
 * plane from the chart mirror, the GatewayClass and Gateway, the IPP, the authorization hook),
 * its status read from the objects' own conditions, the hook's access keys and the hook itself.
 */
export class GatewayService {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private workers: Pick<WorkerDirectory, 'joinedTo'> | null = null;
  private consolePort: number | null = null;

  constructor(
    private readonly access: ClusterAccess,
    private readonly clusters: ClusterRepository,
    private readonly repo: GatewayRepository,
    private readonly runner: JobRunner,
    private readonly ops: OperationsLog,
    private readonly helm: Helm,
    /** The pinned CRD bundles, fetched and checked (sha256 pin, allow-list) as `POST …/crds` does. */
    private readonly crds: Pick<CrdsService, 'checkedBundle'>,
    private readonly opts: GatewayServiceOptions,
  ) {}

  private get db() {
    return this.access.db;
  }

  /** The booted workers (issue 24): a worker that joined the cluster gives the public URL its reported address. */
  useWorkers(w: Pick<WorkerDirectory, 'joinedTo'>): void {
    this.workers = w;
  }

  /**
   * The port the console listener bound (`ironlens serve` gives it once it listens): the hook's
   * port when `IRONLENS_GATEWAY_AUTHZ_PORT` is unset and the console listens on port 0.
   */
  useConsolePort(port: number): void {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`console port ${port} is not a port`);
    this.consolePort = port;
  }

  /** The hook's port: the configured one, else the console's bound one; null while neither is known. */
  authzPort(): number | null {
    return this.opts.authzPort ?? this.consolePort;
  }

  /** True when the registration wants a hook whose port is not known yet. */
  private hookPortUnknown(i: GatewayInputs): boolean {
    return i.authzHost !== null && i.provider !== 'gke' && i.authzPort === null;
  }

  inputs(row: ClusterRow): GatewayInputs | null {
    if (!row.gatewayProvider) return null;
    return {
      clusterId: row.id,
      provider: row.gatewayProvider as GatewayProvider,
      namespace: row.gatewayNamespace,
      gatewayName: row.gatewayName,
      port: row.gatewayPort,
      authzHost: row.gatewayAuthzHost,
      authzPort: this.authzPort(),
    };
  }

  /** The charts of a registration's provider and its IPP, with their values. */
  private releases(i: GatewayInputs, ippValues: Record<string, unknown>): { controlPlane: HelmRelease[]; ipp: HelmRelease } {
    return {
      controlPlane: PROVIDERS[i.provider].charts(this.opts.profile),
      ipp: { release: IPP_NAME, chart: IPP_CHART, version: this.opts.profile.llm_d_inference_payload_processor, namespace: i.namespace, values: ippValues },
    };
  }

  /** Hash of everything a reconcile would apply: equal to the last applied one means nothing changed. */
  desiredHash(row: ClusterRow): string | null {
    const i = this.inputs(row);
    if (!i) return null;
    const r = renderGateway(i, this.opts.profile);
    const rel = this.releases(i, r.ippValues);
    return sha256(JSON.stringify({ r, rel, crds: bundleUrls(this.opts.githubMirror, this.opts.profile) }));
  }

  /**
   * After a registration or a PATCH: starts a reconcile when the rendered gateway differs from
   * what was last applied (a registration without a provider installs nothing).
   */
  async changed(row: ClusterRow): Promise<Job | null> {
    if (row.draft || !row.gatewayProvider) return null;
    const state = await this.repo.state(this.db, row.id);
    if (state?.state === 'success' && state.appliedHash === this.desiredHash(row)) return null;
    return this.start(row.id, false);
  }

  /** POST …/gateway/reconcile: a forced reconcile (every step checked again; unchanged objects stay untouched). */
  async reconcile(clusterId: string): Promise<Job> {
    const row = await this.access.record(clusterId);
    if (!row.gatewayProvider) throw new AppError('gateway_not_configured', `cluster ${clusterId} has no gatewayProvider`);
    return this.start(clusterId, true);
  }

  async job(clusterId: string, jobId: string): Promise<Job> {
    await this.access.record(clusterId);
    const job = await this.runner.repository.get(jobId);
    if (!job || job.kind !== GATEWAY_JOB || job.subject !== clusterId) throw new AppError('gateway_job_not_found', `no gateway job ${jobId} for cluster ${clusterId}`);
    return job;
  }

  async cancel(clusterId: string, jobId: string): Promise<Job> {
    await this.job(clusterId, jobId);
    return this.runner.cancel(jobId);
  }

  private async activeJob(clusterId: string): Promise<Job | null> {
    const jobs = await this.runner.repository.list({ kind: GATEWAY_JOB, subject: clusterId, limit: 1 });
    const j = jobs[0];
    return j && (j.status === 'queued' || j.status === 'running') ? j : null;
  }

  private async start(clusterId: string, force: boolean): Promise<Job> {
    const running = await this.activeJob(clusterId);
    if (running) {
      // One reconcile at a time: a change while one runs cancels it and starts over with the new settings.
      await this.runner.cancel(running.id).catch(() => undefined);
      await this.runner.wait(running.id);
    }
    const job = await this.runner.start({ kind: GATEWAY_JOB, subject: clusterId, input: { force } }, (ctx) => this.work(clusterId, force, ctx));
    return job;
  }

  /** Cancels a running reconcile and waits for it (DELETE runs this before removing the namespace). */
  async stop(clusterId: string): Promise<void> {
    const running = await this.activeJob(clusterId);
    if (!running) return;
    await this.runner.cancel(running.id).catch(() => undefined);
    await this.runner.wait(running.id);
  }

  /** DELETE's part: the registration's cluster-scoped objects (its GatewayClass); the namespace goes with the seed's cleanup. */
  async cleanup(kube: Kube, row: ClusterRow): Promise<string[]> {
    const notes: string[] = [];
    const state = await this.repo.state(this.db, row.id);
    for (const k of state?.appliedObjects ?? []) {
      if (k.namespace) continue;
      const o = await kube.getObject(k.apiVersion, k.kind, k.name);
      // Only what still carries this registration's label: never the provider's own or another registration's.
      if (o && o.metadata.labels?.[CLUSTER_ID_LABEL] === row.id) {
        await kube.deleteObject(k.apiVersion, k.kind, k.name);
        notes.push(`deleted ${k.kind} ${k.name}`);
      }
    }
    return notes;
  }

  private async work(clusterId: string, force: boolean, ctx: JobContext) {
    const row = await this.access.record(clusterId);
    const i = this.inputs(row);
    const startedAt = new Date().toISOString();
    const prev = await this.repo.state(this.db, clusterId);
    const base: GatewayStateRow = {
      clusterId,
      appliedHash: prev?.appliedHash ?? null,
      appliedProvider: prev?.appliedProvider ?? null,
      appliedObjects: prev?.appliedObjects ?? [],
      jobId: ctx.id,
      state: 'running',
      error: null,
      hookError: prev?.hookError ?? null,
      startedAt,
      finishedAt: null,
    };
    await this.repo.putState(this.db, base);
    try {
      if (!i) return { result: { applied: 0 }, message: 'no gateway provider: nothing to install' };
      const out = await this.apply(row, i, force, ctx, base);
      await this.repo.putState(this.db, { ...base, ...out.state, state: 'success', finishedAt: new Date().toISOString() });
      await this.ops.append({ op: 'cluster.gateway.reconcile', status: 'ok', cluster_id: clusterId, job_id: ctx.id, provider: i.provider, changed: out.changed });
      return { result: { changed: out.changed, skipped: out.skipped, hookError: out.state.hookError }, message: out.state.hookError ? `applied; the hook was refused: ${out.state.hookError}` : 'applied' };
    } catch (e) {
      const cancelled = ctx.signal.aborted;
      const msg = (e as Error).message ?? String(e);
      await this.repo.putState(this.db, { ...base, state: cancelled ? 'cancelled' : 'failed', error: cancelled ? 'cancelled' : msg, finishedAt: new Date().toISOString() });
      await this.ops.append({ op: 'cluster.gateway.reconcile', status: 'failed', cluster_id: clusterId, job_id: ctx.id, error: cancelled ? 'cancelled' : msg.slice(0, 500) });
      throw e;
    }
  }

  private async apply(row: ClusterRow, i: GatewayInputs, force: boolean, ctx: JobContext, base: GatewayStateRow) {
    const kube = this.access.kube(row);
    const hash = this.desiredHash(row);
    const r = renderGateway(i, this.opts.profile);
    const rel = this.releases(i, r.ippValues);
    let changed = 0;
    let skipped = 0;
    const applied: ObjectKey[] = [];
    const applyAll = async (objs: KubeObjectRef[]) => {
      for (const o of objs) {
        ctx.throwIfCancelled();
        if (await this.applyOne(kube, o, ctx)) changed++;
        else skipped++;
        applied.push(keyOf(o));
      }
    };
    if (!force && base.appliedHash === hash && base.state === 'success') return { changed, skipped, state: {} };

    ctx.stage('apply the Gateway API and Inference Extension CRDs', 5);
    const urls = bundleUrls(this.opts.githubMirror, this.opts.profile);
    for (const id of Object.keys(urls) as BundleId[]) {
      const objects = await this.crds.checkedBundle(id, ctx.signal);
      for (const o of objects) {
        ctx.throwIfCancelled();
        // A bundle object a provider chart also ships (Envoy Gateway's chart carries the Gateway
        // API's safe-upgrades policy) belongs to that Helm release once it holds it: left alone,
        // so the two never undo each other on every reconcile.
        const have = o.kind === 'CustomResourceDefinition' ? null : await kube.getObject(o.apiVersion, o.kind, o.metadata.name, o.metadata.namespace);
        const release = (have?.metadata.annotations as Record<string, string> | undefined)?.['meta.helm.sh/release-name'];
        if (release) {
          ctx.log(`${o.kind} ${o.metadata.name} belongs to the Helm release ${release}: left to it`);
          skipped++;
          continue;
        }
        if (await this.applyOne(kube, o, ctx)) changed++;
        else skipped++;
      }
      ctx.log(`${id}: ${objects.length} object(s) checked`);
    }

    const kubeconfig = this.access.kubeconfigText(row);
    const charts = rel.controlPlane;
    ctx.stage(charts.length ? `install the ${i.provider} control plane (${charts.map((c) => `${c.chart} ${c.version}`).join(', ')})` : `${i.provider}: no control plane to install`, 20);
    for (const c of charts) {
      ctx.throwIfCancelled();
      if (await this.helmRelease(kubeconfig, c, ctx)) changed++;
      else skipped++;
    }

    ctx.stage(`apply the GatewayClass ${gatewayClassName(i)} and the Gateway ${i.namespace}/${i.gatewayName}`, 50);
    if (r.gatewayClass) await applyAll([r.gatewayClass]);
    // A Gateway moving to another class is replaced (the old class' controller lets go of it).
    const gw = r.gateway.find((o) => o.kind === 'Gateway')!;
    const existing = await kube.getObject(gw.apiVersion, 'Gateway', gw.metadata.name, gw.metadata.namespace);
    const wantClass = (gw.spec as { gatewayClassName: string }).gatewayClassName;
    if (existing && (existing.spec as { gatewayClassName?: string } | undefined)?.gatewayClassName !== wantClass) {
      ctx.log(`the Gateway moves to class ${wantClass}: replacing it`);
      await kube.deleteObject(gw.apiVersion, 'Gateway', gw.metadata.name, gw.metadata.namespace);
      const end = Date.now() + 60_000;
      while (await kube.getObject(gw.apiVersion, 'Gateway', gw.metadata.name, gw.metadata.namespace)) {
        if (Date.now() > end) throw new Error('the old Gateway was not deleted within 60 s');
        ctx.throwIfCancelled();
        await sleep(200);
      }
    }
    await applyAll(r.gateway);

    ctx.stage(`install the inference payload processor (${IPP_CHART} ${rel.ipp.version})`, 65);
    if (await this.helmRelease(kubeconfig, rel.ipp, ctx)) changed++;
    else skipped++;
    await applyAll(r.ippWiring);

    ctx.stage('apply the authorization hook', 80);
    let hookError: string | null = null;
    if (this.hookPortUnknown(i)) {
      hookError = PORT_UNKNOWN;
      ctx.log(`the hook is not applied: ${hookError}`);
    } else if (r.authz.length === 0) ctx.log(i.authzHost ? `${i.provider} has no ext_authz hook` : 'no gatewayAuthzHost: no hook');
    for (const o of r.authz) {
      try {
        if (await this.applyOne(kube, o, ctx)) changed++;
        else skipped++;
        applied.push(keyOf(o));
      } catch (e) {
        if (e instanceof KubeApiError && (e.status === 422 || e.status === 400)) {
          hookError = e.message.replace(/^PATCH \S+: /, '');
          ctx.log(`the hook's ${o.kind} was refused: ${hookError}`);
          break;
        }
        throw e;
      }
    }

    ctx.stage('remove what is no longer rendered', 95);
    for (const old of base.appliedObjects) {
      if (applied.some((k) => sameKey(k, old))) continue;
      const o = await kube.getObject(old.apiVersion, old.kind, old.name, old.namespace);
      if (o && o.metadata.labels?.[CLUSTER_ID_LABEL] === i.clusterId) {
        await kube.deleteObject(old.apiVersion, old.kind, old.name, old.namespace);
        ctx.log(`deleted ${old.kind} ${old.namespace ? `${old.namespace}/` : ''}${old.name}`);
        changed++;
      }
    }
    return { changed, skipped, state: { appliedHash: hookError ? null : hash, appliedProvider: i.provider, appliedObjects: applied, hookError } };
  }

  /**
   * Server-side apply; true when it changed the object. A no-op apply leaves the object as it was
   * and does not touch the field manager's entry (its `time`), so a status write by the controller
   * in between is not taken for a change. Waits for a kind a chart just added to be served.
   */
  private async applyOne(kube: Kube, o: KubeObjectRef, ctx: JobContext): Promise<boolean> {
    const end = Date.now() + this.opts.crdWaitMs;
    type Managed = { manager?: string; operation?: string; time?: string; subresource?: string };
    const mine = (x: KubeObjectRef | null) =>
      JSON.stringify(((x?.metadata as { managedFields?: Managed[] } | undefined)?.managedFields ?? []).find((m) => m.manager === FIELD_MANAGER && m.operation === 'Apply' && !m.subresource) ?? null);
    for (;;) {
      try {
        const before = await kube.getObject(o.apiVersion, o.kind, o.metadata.name, o.metadata.namespace);
        const after = await kube.apply(o, FIELD_MANAGER, true);
        const rv = (x: KubeObjectRef | null) => (x?.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
        const changed = rv(before) !== rv(after) && (before === null || mine(before) !== mine(after));
        if (changed) ctx.log(`${before ? 'updated' : 'created'} ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
        return changed;
      } catch (e) {
        const notServed = e instanceof KubeApiError && e.status === 404 && /is not served/.test(e.message);
        if (!notServed || Date.now() > end) throw e;
        ctx.throwIfCancelled();
        await sleep(500);
      }
    }
  }

  /** `helm upgrade --install` unless the release is deployed at that chart version with these values. */
  private async helmRelease(kubeconfig: string, c: HelmRelease, ctx: JobContext): Promise<boolean> {
    const have = await this.helm.get(kubeconfig, c.release, c.namespace, ctx.signal);
    const wantChart = `${c.chart}-${c.version}`;
    const bare = (v: string) => v.replace(/-v(\d)/, '-$1');
    if (have && have.status === 'deployed' && bare(have.chart) === bare(wantChart) && isDeepStrictEqual(have.values, JSON.parse(JSON.stringify(c.values)))) {
      ctx.log(`${c.namespace}/${c.release}: ${wantChart} is deployed with these values`);
      return false;
    }
    ctx.log(`${c.namespace}/${c.release}: helm upgrade --install ${wantChart}`);
    await this.helm.upgradeInstall(kubeconfig, c, { signal: ctx.signal, onLine: (l) => ctx.log(`helm: ${l}`) });
    return true;
  }

  // ---- status ----

  async status(clusterId: string): Promise<GatewayStatusView> {
    const row = await this.access.record(clusterId);
    return this.statusOf(row);
  }

  /** The same status for a record already read (the cluster's overview shows it). */
  statusOfRecord(row: ClusterRow): Promise<GatewayStatusView> {
    return this.statusOf(row);
  }

  async allStatus(): Promise<{ clusters: GatewayStatusView[] }> {
    const rows = await this.clusters.list(this.db, { includeDrafts: false });
    return { clusters: await Promise.all(rows.map((r) => this.statusOf(r))) };
  }

  private async lastOperation(row: ClusterRow, state: GatewayStateRow | null): Promise<GatewayOperationView | null> {
    if (!state?.jobId) return null;
    const job = await this.runner.repository.get(state.jobId);
    const status = state.state === 'running' ? 'running' : state.state === 'success' ? 'succeeded' : 'failed';
    return {
      id: state.jobId,
      kind: 'reconcile-gateway',
      status,
      clusterId: row.id,
      message: state.error ?? job?.message ?? '',
      detailJson: job ? { stage: job.stage ?? null, percent: job.percent ?? null, hookError: state.hookError } : null,
      createdByUserId: null,
      createdAt: state.startedAt ?? job?.createdAt ?? new Date().toISOString(),
      finishedAt: state.finishedAt,
    };
  }

  private async statusOf(row: ClusterRow): Promise<GatewayStatusView> {
    const i = this.inputs(row);
    const state = await this.repo.state(this.db, row.id);
    const view: GatewayStatusView = {
      clusterId: row.id,
      clusterName: row.name,
      members: [],
      gatewayProvider: row.gatewayProvider,
      gatewayState: 'unknown',
      gatewayNamespace: row.gatewayNamespace,
      gatewayName: row.gatewayName,
      gatewayReady: null,
      gatewayAddress: null,
      gatewayPublicUrl: row.gatewayPublicUrl,
      gatewayPort: row.gatewayPort,
      gatewayNodeAddress: null,
      ippState: 'unknown',
      ippName: IPP_NAME,
      ippNamespace: row.gatewayNamespace,
      lastOperation: await this.lastOperation(row, state),
      gatewayClassName: i ? gatewayClassName(i) : null,
      gatewayClassConditions: [],
      gatewayConditions: [],
      ippReady: null,
      // Without a hook (no host, gke), or without its port, the cluster need not be read to say so.
      authz: { state: !i?.authzHost || i.provider === 'gke' ? 'disabled' : this.hookPortUnknown(i) ? 'failed' : 'unknown', path: authzPath(row.id), endpoints: [], reason: i && this.hookPortUnknown(i) ? PORT_UNKNOWN : (state?.hookError ?? null) },
      controlPlane: { state: 'unknown', deployments: [] },
      error: state?.error ?? null,
    };
    if (!i) {
      view.gatewayState = 'missing';
      view.ippState = 'missing';
      view.authz.state = 'disabled';
      view.controlPlane.state = 'none';
      return view;
    }
    let kube: Kube;
    try {
      kube = this.access.kube(row);
      const conds = (o: KubeObjectRef | null): Condition[] =>
        (((o?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[]).map((c) => ({
          type: String(c.type),
          status: String(c.status),
          reason: String(c.reason ?? ''),
          message: String(c.message ?? '').slice(0, 1000),
          ...(c.lastTransitionTime ? { lastTransitionTime: String(c.lastTransitionTime) } : {}),
        }));
      const GW = 'gateway.networking.k8s.io/v1';
      const [cls, gw, ipp, slice, deployments] = await Promise.all([
        kube.getObject(GW, 'GatewayClass', gatewayClassName(i)),
        kube.getObject(GW, 'Gateway', row.gatewayName, row.gatewayNamespace),
        kube.getObject('apps/v1', 'Deployment', IPP_NAME, row.gatewayNamespace),
        kube.getObject('discovery.k8s.io/v1', 'EndpointSlice', 'lens-authz-ironlens', row.gatewayNamespace),
        PROVIDERS[i.provider].controlPlaneNamespaces.length ? kube.listDeployments() : Promise.resolve([]),
      ]);
      view.gatewayClassConditions = conds(cls);
      view.gatewayConditions = conds(gw);
      view.gatewayState = gw ? 'installed' : 'missing';
      const programmed = view.gatewayConditions.find((c) => c.type === 'Programmed');
      view.gatewayReady = gw ? programmed?.status === 'True' : null;
      const addrs = ((gw?.status as { addresses?: Array<{ value?: string }> } | undefined)?.addresses ?? []).map((a) => String(a.value ?? '')).filter(Boolean);
      view.gatewayAddress = addrs[0] ?? null;
      view.ippState = ipp ? 'installed' : 'missing';
      const ippConds = conds(ipp);
      view.ippReady = ipp ? ippConds.some((c) => c.type === 'Available' && c.status === 'True') : null;
      const eps = ((slice as { endpoints?: Array<{ addresses?: string[] }> } | null)?.endpoints ?? []).flatMap((e) => e.addresses ?? []);
      view.authz.endpoints = eps.map(String);
      view.authz.state = !i.authzHost || i.provider === 'gke' ? 'disabled' : this.hookPortUnknown(i) || state?.hookError ? 'failed' : slice ? 'ready' : 'missing';
      const ns = new Set(PROVIDERS[i.provider].controlPlaneNamespaces);
      // The control plane is what the provider's charts installed (Helm's label), not the proxies its controller creates there.
      const cp = deployments.filter((d) => ns.has(d.metadata?.namespace ?? '') && d.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'Helm');
      view.controlPlane.deployments = cp.map((d) => ({
        namespace: d.metadata?.namespace ?? '',
        name: d.metadata?.name ?? '',
        available: !!d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True'),
      }));
      view.controlPlane.state = ns.size === 0 ? 'none' : cp.length === 0 ? 'missing' : cp.every((d) => d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True')) ? 'ready' : 'progressing';
      if (row.gatewayPort !== null) {
        const [nodes, joined] = await Promise.all([kube.listNodes(), this.joinedWorkers(row.id)]);
        const readyNodes = nodes.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
        // A Ready node that is a worker ironlens booted and that joined this cluster (named from its
        // address by the bootstrap's inventory, or listing that address): the address it reported.
        const booted = joined.find((w) => readyNodes.some((n) => n.metadata?.name === inventoryName(w) || (n.status?.addresses ?? []).some((a) => a.address === w)));
        view.gatewayNodeAddress = booted ?? readyNodes[0]?.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? null;
      }
    } catch (e) {
      view.error = `the cluster could not be read: ${(e as Error).message.slice(0, 300)}`;
    }
    if (!view.gatewayPublicUrl) {
      const host = view.gatewayAddress ?? view.gatewayNodeAddress;
      if (host && row.gatewayPort !== null) view.gatewayPublicUrl = `http://${host.includes(':') ? `[${host}]` : host}:${row.gatewayPort}/v1`;
      else if (view.gatewayAddress) view.gatewayPublicUrl = `http://${view.gatewayAddress}/v1`;
    }
    return view;
  }

  /** The reported addresses of the workers that joined this cluster, by worker id; none when unknown. */
  private async joinedWorkers(clusterId: string): Promise<string[]> {
    if (!this.workers?.joinedTo) return [];
    try {
      const ws = await this.workers.joinedTo(clusterId);
      return ws
        .filter((w) => typeof w.address === 'string' && isIP(w.address) !== 0)
        .sort((a, b) => a.workerId.localeCompare(b.workerId))
        .map((w) => w.address as string);
    } catch {
      return [];
    }
  }

  // ---- keys ----

  async createKey(clusterId: string, name: unknown): Promise<{ name: string; key: string; createdAt: string }> {
    await this.access.record(clusterId);
    const n = typeof name === 'string' ? name.trim() : '';
    if (!KEY_NAME.test(n)) throw new AppError('gateway_key_name_invalid', 'name must be 1-63 lower-case letters, digits, dots, dashes or underscores, starting and ending with a letter or digit');
    const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    const createdAt = new Date().toISOString();
    try {
      await this.repo.insertKey(this.db, { clusterId, name: n, keyHash: sha256(key), createdAt, lastUsedAt: null });
    } catch (e) {
      if ((await this.repo.listKeys(this.db, clusterId)).some((k) => k.name === n)) throw new AppError('gateway_key_exists', `cluster ${clusterId} already has a key named ${n}`);
      throw e;
    }
    await this.ops.append({ op: 'cluster.gateway.key.create', status: 'ok', cluster_id: clusterId, name: n });
    return { name: n, key, createdAt };
  }

  async listKeys(clusterId: string): Promise<{ items: Array<{ name: string; createdAt: string; lastUsedAt: string | null }> }> {
    await this.access.record(clusterId);
    const rows = await this.repo.listKeys(this.db, clusterId);
    return { items: rows.map((k: GatewayKeyRow) => ({ name: k.name, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt })) };
  }

  async deleteKey(clusterId: string, name: string): Promise<void> {
    await this.access.record(clusterId);
    if (!(await this.repo.deleteKey(this.db, clusterId, name))) throw new AppError('gateway_key_not_found', `cluster ${clusterId} has no key named ${name}`);
    await this.ops.append({ op: 'cluster.gateway.key.delete', status: 'ok', cluster_id: clusterId, name });
  }

  // ---- the hook ----

  /** One token of the source's bucket; false when it is empty. */
  private take(source: string): boolean {
    const now = Date.now();
    const { perSecond, burst } = this.opts.rate;
    const b = this.buckets.get(source) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    if (this.buckets.size > 10_000 && !this.buckets.has(source)) this.buckets.clear();
    this.buckets.set(source, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /**
   * The provider's external-authorization call: allowed (the fairness header set to the key's
   * name) only for a current key of this very cluster. Denials say nothing about why.
   */
  async authorize(clusterId: string, authorization: string | undefined, source: string): Promise<{ headers: Record<string, string> }> {
    if (!this.take(source)) throw new AppError('gateway_rate_limited', 'too many authorization calls from this source');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new AppError('gateway_unauthorized', 'a gateway access key is required');
    const key = m[1];
    const row = key.startsWith(KEY_PREFIX) && key.length < 200 ? await this.repo.keyByHash(this.db, sha256(key)) : null;
    if (!row || row.clusterId !== clusterId) throw new AppError('gateway_forbidden', 'access denied');
    const at = new Date().toISOString();
    if (!row.lastUsedAt || Date.parse(at) - Date.parse(row.lastUsedAt) > 60_000) await this.repo.touchKey(this.db, clusterId, row.name, at);
    return { headers: { [FAIRNESS_HEADER]: row.name } };
  }
}
