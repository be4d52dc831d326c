import { isDeepStrictEqual } from 'node:util';
import { AppError, type Job, type JobContext, type JobRunner, type OperationsLog, sleep } from '@ironlens/core';
import type { Helm, HelmRelease } from '../adapters/helm.adapter';
import { type Kube, KubeApiError, type KubeObjectRef } from '../adapters/kube.adapter';
import type { BundleId } from '../api/clusters';
import type { ClusterAccess } from '../registry/cluster-access';
import type { ClusterRow } from '../registry/cluster.repository';
import { FIELD_MANAGER } from '../shared/manifests';
import type { GatewayRepository, GatewayStateRow, ObjectKey } from './gateway.repository';
import { CLUSTER_ID_LABEL, type GatewayInputs, gatewayClassName, IPP_CHART, renderGateway } from './gateway.render';
import { type GatewaySettings, PORT_UNKNOWN } from './gateway.settings';

export const GATEWAY_JOB = 'clusters.gateway';

const keyOf = (o: KubeObjectRef): ObjectKey => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) });

/**
 * `helm upgrade --install` unless the release is deployed at that chart version (with or without
 * a leading `v`) with exactly these values; true when it installed. A release in any other state
 * (failed, pending) is installed again.
 */
export async function ensureRelease(helm: Helm, kubeconfig: string, c: HelmRelease, ctx: Pick<JobContext, 'signal' | 'log'>): Promise<boolean> {
  const have = await helm.get(kubeconfig, c.release, c.namespace, ctx.signal);
  const wantChart = `${c.chart}-${c.version}`;
  const bare = (v: string) => v.replace(/-v(\d)/, '-$1');
  if (have && have.status === 'deployed' && bare(have.chart) === bare(wantChart) && isDeepStrictEqual(have.values, JSON.parse(JSON.stringify(c.values)))) {
    ctx.log(`${c.namespace}/${c.release}: ${wantChart} is deployed with these values`);
    return false;
  }
  ctx.log(`${c.namespace}/${c.release}: helm upgrade --install ${wantChart}`);
  await helm.upgradeInstall(kubeconfig, c, { signal: ctx.signal, onLine: (l) => ctx.log(`helm: ${l}`) });
  return true;
}

/**
 * The object as a write would change it: everything but its status, its resourceVersion and the
 * times and order of its field owners (the API server may re-sort them, which changes nothing).
 */
function written(o: KubeObjectRef): string {
  const { status: _status, ...rest } = o as KubeObjectRef & { status?: unknown };
  const meta = { ...(o.metadata as Record<string, unknown>) };
  delete meta.resourceVersion;
  const fields = ((meta.managedFields as Array<Record<string, unknown>> | undefined) ?? []).map(({ time: _time, ...f }) => JSON.stringify(f)).sort();
  meta.managedFields = fields;
  return JSON.stringify({ ...rest, metadata: meta }, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v));
}

/** True when a dry-run apply leaves the object as it is (see {@link written}). */
const sameAsWritten = (before: KubeObjectRef, dry: KubeObjectRef) => written(before) === written(dry);

/**
 * The Gateways of the cluster (any namespace) whose class is `className`, as `namespace/name`;
 * none when the Gateway API is not served.
 */
async function gatewaysUsing(kube: Kube, className: string): Promise<string[]> {
  let list: { items?: Array<{ metadata?: { name?: string; namespace?: string }; spec?: { gatewayClassName?: string } }> };
  try {
    list = await kube.getJson('/apis/gateway.networking.k8s.io/v1/gateways', 'GatewayList');
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return [];
    throw e;
  }
  return (list.items ?? []).filter((g) => g.spec?.gatewayClassName === className).map((g) => `${g.metadata?.namespace}/${g.metadata?.name}`);
}

/**
 * Deletes an object this registration applied and no longer needs, when it still carries the
 * registration's label (never the provider's own or another registration's), except a
 * GatewayClass that a Gateway still uses (another registration's, a user's): that one is kept.
 * Says what it did, or why not.
 */
async function removeApplied(kube: Kube, k: ObjectKey, clusterId: string): Promise<string | null> {
  const o = await kube.getObject(k.apiVersion, k.kind, k.name, k.namespace);
  if (!o || o.metadata.labels?.[CLUSTER_ID_LABEL] !== clusterId) return null;
  const what = `${k.kind} ${k.namespace ? `${k.namespace}/` : ''}${k.name}`;
  if (k.kind === 'GatewayClass' && k.apiVersion.startsWith('gateway.networking.k8s.io/')) {
    const users = await gatewaysUsing(kube, k.name);
    if (users.length) return `kept ${what}: Gateway ${users.slice(0, 5).join(', ')}${users.length > 5 ? ` and ${users.length - 5} more` : ''} still use${users.length === 1 ? 's' : ''} it`;
  }
  await kube.deleteObject(k.apiVersion, k.kind, k.name, k.namespace);
  return `deleted ${what}`;
}

const sameKey = (a: ObjectKey, b: ObjectKey) => a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '');

/** The pinned CRD bundles, fetched and checked (sha256 pin, allow-list) as `POST …/crds` does (the software feature's `CrdsService`). */
export interface CheckedBundles {
  checkedBundle(id: BundleId, signal?: AbortSignal): Promise<KubeObjectRef[]>;
}

/**
 * The reconcile of a registration's shared inference gateway, as a job: the CRDs, the provider's
 * control plane from the chart mirror, the GatewayClass and Gateway, the IPP, the authorization
 * hook; and DELETE's part (the registration's cluster-scoped objects).
 */
export class GatewayReconciler {
  constructor(
    private readonly access: ClusterAccess,
    private readonly repo: GatewayRepository,
    private readonly runner: JobRunner,
    private readonly ops: OperationsLog,
    private readonly helm: Helm,
    private readonly crds: CheckedBundles,
    private readonly settings: GatewaySettings,
  ) {}

  private get db() {
    return this.access.db;
  }

  /**
   * After a registration or a PATCH: starts a reconcile when the rendered gateway differs from
   * what was last applied (a registration without a provider installs nothing).
   */
  async changed(row: ClusterRow): Promise<Job | null> {
    if (row.draft || !row.gatewayProvider) return null;
    const state = await this.repo.state(this.db, row.id);
    if (state?.state === 'success' && state.appliedHash === this.settings.desiredHash(row)) return null;
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
      const note = await removeApplied(kube, k, row.id);
      if (note) notes.push(note);
    }
    return notes;
  }

  private async work(clusterId: string, force: boolean, ctx: JobContext) {
    const row = await this.access.record(clusterId);
    const i = this.settings.inputs(row);
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
    const hash = this.settings.desiredHash(row);
    const r = renderGateway(i, this.settings.opts.profile);
    const rel = this.settings.releases(i, r.ippValues);
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
    const urls = this.settings.bundleUrls();
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
      if (await ensureRelease(this.helm, kubeconfig, c, ctx)) changed++;
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
    if (await ensureRelease(this.helm, kubeconfig, rel.ipp, ctx)) changed++;
    else skipped++;
    await applyAll(r.ippWiring);

    ctx.stage('apply the authorization hook', 80);
    let hookError: string | null = null;
    if (this.settings.hookPortUnknown(i)) {
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
      const note = await removeApplied(kube, old, i.clusterId);
      if (note) ctx.log(note);
      if (note?.startsWith('deleted ')) changed++;
    }
    return { changed, skipped, state: { appliedHash: hookError ? null : hash, appliedProvider: i.provider, appliedObjects: applied, hookError } };
  }

  /**
   * Server-side apply; true when it changed the object. An object that exists is applied as a dry
   * run first: when that leaves it as it is (its spec, metadata and field owners; the status is not
   * ironlens'), nothing is written. A plain apply would write such an object anyway whenever the API
   * server persists what it defaulted on read (a Gateway API object's `Pending` status conditions,
   * before any controller wrote them), moving its resourceVersion with nothing changed. Waits for a
   * kind a chart just added to be served.
   */
  private async applyOne(kube: Kube, o: KubeObjectRef, ctx: JobContext): Promise<boolean> {
    const end = Date.now() + this.settings.opts.crdWaitMs;
    type Managed = { manager?: string; operation?: string; time?: string; subresource?: string };
    const mine = (x: KubeObjectRef | null) =>
      JSON.stringify(((x?.metadata as { managedFields?: Managed[] } | undefined)?.managedFields ?? []).find((m) => m.manager === FIELD_MANAGER && m.operation === 'Apply' && !m.subresource) ?? null);
    for (;;) {
      try {
        const before = await kube.getObject(o.apiVersion, o.kind, o.metadata.name, o.metadata.namespace);
        if (before && sameAsWritten(before, await kube.apply(o, FIELD_MANAGER, true, { dryRun: true }))) return false;
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

}
