import { isDeepStrictEqual } from 'node:util';
import { type JobContext, JobCancelledError } from '@ironlens/core';
import type { Helm, HelmRelease } from '../adapters/helm.adapter';
import { type Kube, KubeApiError, type KubeObjectRef } from '../adapters/kube.adapter';
import type { DeploymentFailure, DeploymentStatus } from '../api/deployments';
import type { ClusterAccess } from '../registry/cluster-access';
import type { ClusterRow } from '../registry/cluster.repository';
import { FIELD_MANAGER } from '../shared/manifests';
import type { StackProfile } from '../shared/profile';
import type { ClustersDb } from '../shared/tables';
import type { GatewayProvider } from '../shared/domain';
import { podState, poolFacts, routeFacts, smokeRequest } from './deployment.kube';
import { DEPLOYMENT_LABEL, HF_KEY, HF_SECRET, ownLabels, type PublishTarget, type RenderedDeployment, renderDeployment, SERVER_PORT } from './deployment.render';
import type { Applied, AppliedObject, DeploymentPatch, DeploymentRepository, DeploymentRow, SmokeRecord } from './deployment.repository';
import type { DeploymentSpec } from './deployment.spec';
import { evaluate, type ReadinessOutcome, type SmokeFacts } from './readiness';

export const DEPLOY_JOB = 'deployments.deploy';

/** The job's stages, in their order (the execution's `stage`; docs/deployments.md). */
export const DEPLOY_STAGES = [
  'place',
  'render',
  'copy the HF token',
  'install the InferencePool and its endpoint picker (helm)',
  'apply the model servers',
  'publish on the gateway',
  'wait for the model servers',
  'wait for the gateway to accept the route',
  'smoke request',
] as const;
const [PLACE, RENDER, COPY_TOKEN, INSTALL_POOL, APPLY_SERVERS, PUBLISH, WAIT_SERVERS, WAIT_GATEWAY, SMOKE] = DEPLOY_STAGES;

/** `deploy`: a new deployment; `update`: a new revision of a ready one (rolled back when it fails); `rollback`: back to the last ready revision. */
export type JobMode = 'deploy' | 'update' | 'rollback';

export interface DeploymentTimings {
  /** `IRONLENS_DEPLOYMENT_POLL_MS`: how often readiness is read while deploying. */
  pollMs: number;
  /** `IRONLENS_DEPLOYMENT_READY_TIMEOUT_MS`: past it a deployment that is not ready fails with its last reason. */
  readyTimeoutMs: number;
  /** `IRONLENS_DEPLOYMENT_SMOKE_TIMEOUT_MS`: how long Ready servers may leave the smoke request unanswered. */
  smokeTimeoutMs: number;
  /** One smoke request's timeout. */
  smokeRequestTimeoutMs: number;
}

/** Ends the readiness wait: the deployment cannot become ready (a fatal pod state, an unanswered smoke request, the time). */
export class DeploymentFailed extends Error {
  constructor(
    readonly reason: string,
    readonly logs: string | null,
    readonly code: string = 'deployment_failed',
  ) {
    super(reason);
    this.name = 'DeploymentFailed';
  }
}

const keyOf = (o: KubeObjectRef): AppliedObject => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) });
const same = (a: AppliedObject, b: AppliedObject) => a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '');
const union = (a: AppliedObject[], b: AppliedObject[]) => [...a, ...b.filter((x) => !a.some((y) => same(x, y)))];

/**
 * The durable job behind a deployment (kind `deployments.deploy`, subject the execution id, one
 * at a time per deployment): render, copy the HF token, install the InferencePool and its
 * endpoint picker with Helm, server-side apply the model servers, publish on the gateway, then
 * read readiness until it is ready or fails; an update that fails rolls back. Every step is
 * idempotent (server-side apply, `helm upgrade --install` skipped when deployed with the same
 * values), so a job resumed after a restart re-enters where it stopped.
 */
export class DeploymentJob {
  /** The registration's shared gateway's public URL (the gateway feature's, wired in `wiring.ts`). */
  gatewayUrl: ((cluster: ClusterRow) => Promise<string | null>) | null = null;

  constructor(
    private readonly access: ClusterAccess,
    private readonly repo: DeploymentRepository,
    private readonly helm: Helm,
    private readonly profile: StackProfile,
    private readonly timings: DeploymentTimings,
  ) {}

  private get db(): ClustersDb {
    return this.access.db;
  }

  private async write(id: string, p: DeploymentPatch): Promise<void> {
    await this.repo.update(this.db, id, p, new Date().toISOString());
  }

  /** The registration's shared gateway, or null: the deployment is not published. */
  static publishTarget(row: ClusterRow, spec: DeploymentSpec): PublishTarget | null {
    if (spec.path === 'baseline' || !row.gatewayProvider) return null;
    return { provider: row.gatewayProvider as GatewayProvider, namespace: row.gatewayNamespace, gatewayName: row.gatewayName };
  }

  async run(id: string, mode: JobMode, ctx: JobContext): Promise<{ result: unknown; message: string }> {
    const d = await this.repo.get(this.db, id);
    if (!d) throw new Error(`deployment ${id} is gone`);
    const cluster = await this.access.record(d.clusterId);
    await this.write(id, { jobId: ctx.id });
    if (mode === 'rollback') return this.rollback(d, cluster, ctx, null);
    try {
      const outcome = await this.deploy(d, d.spec, cluster, ctx, 'deploying');
      const endpoint = await this.endpointOf(cluster, d.spec);
      await this.write(id, {
        endpoint,
        status: 'ready',
        readySpec: d.spec,
        reason: null,
        logs: null,
        failure: null,
        stage: 'ready',
        smoke: outcome.smoke,
        readiness: outcome.readiness.readiness,
      });
      return { result: { status: 'ready', revision: d.revision, smoke: outcome.smoke }, message: `ready: answered in ${outcome.smoke.latency_ms} ms` };
    } catch (e) {
      // Interrupted (the process stops, or another replica took the lease): the deployment stays in
      // progress, and `DeploymentService.resume` takes it up where it stopped.
      if (ctx.signal.aborted && !ctx.cancelRequested) throw e;
      const cancelled = e instanceof JobCancelledError || ctx.cancelRequested;
      const reason = cancelled ? 'cancelled by request' : e instanceof DeploymentFailed ? e.reason : (e as Error).message?.slice(0, 1000) || String(e);
      const logs = e instanceof DeploymentFailed ? e.logs : null;
      const code = cancelled ? 'deployment_cancelled' : e instanceof DeploymentFailed ? e.code : 'deployment_failed';
      if (mode === 'update' && d.readySpec) {
        ctx.log(`revision ${d.revision} failed: ${reason}; rolling back to the last ready revision`);
        await this.write(id, { reason, logs, failure: failureOf(code, reason) });
        const back = await this.rollback({ ...d, reason, logs }, cluster, ctx, { reason, logs, code });
        if (cancelled) throw new JobCancelledError();
        return back;
      }
      await this.write(id, { status: 'failed', reason, logs, failure: failureOf(code, reason), stage: 'failed' });
      if (cancelled) throw new JobCancelledError();
      throw new Error(reason);
    }
  }

  private async endpointOf(cluster: ClusterRow, spec: DeploymentSpec): Promise<string | null> {
    if (!DeploymentJob.publishTarget(cluster, spec) || !this.gatewayUrl) return null;
    return this.gatewayUrl(cluster).catch(() => null);
  }

  /** Back to the last ready revision (`rolling_back` → `rolled_back`), or `failed` when that fails too. */
  private async rollback(d: DeploymentRow, cluster: ClusterRow, ctx: JobContext, why: { reason: string; logs: string | null; code: string } | null): Promise<{ result: unknown; message: string }> {
    const target = d.readySpec;
    if (!target) {
      await this.write(d.id, { status: 'failed', stage: 'failed', reason: why?.reason ?? 'no ready revision to roll back to' });
      throw new Error('no ready revision to roll back to');
    }
    await this.write(d.id, { status: 'rolling_back', stage: 'roll back to the last ready revision' });
    // A cancel stops the update, not its rollback: the rollback runs to its end.
    const inner: JobContext = why && ctx.cancelRequested ? detached(ctx) : ctx;
    try {
      const outcome = await this.deploy(d, target, cluster, inner, 'rolling_back');
      const reason = why ? `the update to revision ${d.revision} failed (${why.reason}); rolled back to the last ready revision` : 'rolled back to the last ready revision';
      await this.write(d.id, {
        endpoint: await this.endpointOf(cluster, target),
        status: 'rolled_back',
        spec: target,
        stage: 'rolled back',
        reason,
        logs: why?.logs ?? null,
        failure: why ? failureOf(why.code, why.reason) : null,
        smoke: outcome.smoke,
        readiness: outcome.readiness.readiness,
      });
      return { result: { status: 'rolled_back', reason }, message: reason };
    } catch (e) {
      const reason = e instanceof DeploymentFailed ? e.reason : (e as Error).message;
      await this.write(d.id, { status: 'failed', stage: 'failed', reason: `the rollback failed too: ${reason}`, failure: failureOf('deployment_rollback_failed', reason) });
      throw new Error(`the rollback failed: ${reason}`);
    }
  }

  /** Applies `spec` and waits until it is ready; throws `DeploymentFailed` when it cannot become ready. */
  private async deploy(d: DeploymentRow, spec: DeploymentSpec, cluster: ClusterRow, ctx: JobContext, status: DeploymentStatus): Promise<{ smoke: SmokeRecord; readiness: ReadinessOutcome }> {
    const kube = this.access.kube(cluster);
    const stage = async (text: string, percent: number, s?: DeploymentStatus) => {
      ctx.throwIfCancelled();
      ctx.stage(text, percent);
      await this.write(d.id, { stage: text, ...(s ? { status: s } : {}) });
    };
    await stage(PLACE, 5);
    ctx.log(`placement: ${(d.placement?.assignments ?? []).map((a) => `${a.role}/${a.replica} → ${a.node} (${a.devices})`).join(', ') || 'no accelerators'}`);
    const publish = DeploymentJob.publishTarget(cluster, spec);
    const r = renderDeployment(spec, this.profile, publish);
    await stage(RENDER, 10, status === 'rolling_back' ? undefined : 'rendered');
    ctx.log(`${r.objects.length} object(s), ${r.release ? `chart ${r.release.chart} ${r.release.version}` : 'no chart'}, ${r.publication.length} on the gateway`);
    await stage(COPY_TOKEN, 15, status);
    const applied: Applied = d.applied ?? { namespace: null, objects: [], release: null, publication: [], secret: null };
    await this.apply(kube, r.namespace, ctx);
    applied.namespace = spec.namespace;
    await this.write(d.id, { applied });
    if (spec.hfToken && cluster.hfTokenSecret) {
      const src = await kube.getSecret(cluster.hfTokenSecret.namespace, cluster.hfTokenSecret.name);
      const token = src?.data?.[HF_KEY];
      if (typeof token !== 'string' || !token) {
        // The kubelet will say so for every server (CreateContainerConfigError), which readiness turns into the failure.
        ctx.log(`the cluster's HF token secret ${cluster.hfTokenSecret.namespace}/${cluster.hfTokenSecret.name} has no ${HF_KEY}: not copied`);
      } else {
        const secret: KubeObjectRef = { apiVersion: 'v1', kind: 'Secret', metadata: { name: HF_SECRET, namespace: spec.namespace, labels: ownLabels(spec) }, type: 'Opaque', data: { [HF_KEY]: token } };
        await this.apply(kube, secret, ctx, true);
        applied.secret = keyOf(secret);
        ctx.log(`copied the HF token into ${spec.namespace}/${HF_SECRET}`);
      }
    }
    if (r.release) {
      await stage(INSTALL_POOL, 25);
      applied.release = { release: r.release.release, namespace: r.release.namespace };
      await this.write(d.id, { applied });
      await this.helmRelease(this.access.kubeconfigText(cluster), r.release, ctx);
    }
    await stage(APPLY_SERVERS, 40);
    for (const o of r.objects) {
      applied.objects = union(applied.objects, [keyOf(o)]);
      await this.write(d.id, { applied });
      await this.apply(kube, o, ctx);
    }
    if (r.publication.length) {
      await stage(PUBLISH, 50);
      for (const o of r.publication) {
        applied.publication = union(applied.publication, [keyOf(o)]);
        await this.write(d.id, { applied });
        await this.apply(kube, o, ctx);
      }
    }
    return this.waitReady(d, spec, r, publish, kube, ctx);
  }

  private async waitReady(d: DeploymentRow, spec: DeploymentSpec, r: RenderedDeployment, publish: PublishTarget | null, kube: Kube, ctx: JobContext): Promise<{ smoke: SmokeRecord; readiness: ReadinessOutcome }> {
    const desired = r.workloads.reduce((s, w) => s + w.pods, 0);
    const started = Date.now();
    let smokeSince: number | null = null;
    let lastStage: string = WAIT_SERVERS;
    ctx.stage(lastStage, 60);
    await this.write(d.id, { stage: lastStage });
    let lastReason: string | null = null;
    for (;;) {
      ctx.throwIfCancelled();
      const [podList, events, pool, route] = await Promise.all([
        kube.listPods({ namespace: spec.namespace, labelSelector: `${DEPLOYMENT_LABEL}=${spec.id}` }),
        kube.listEvents(spec.namespace).catch(() => []),
        r.pool ? kube.getObject('inference.networking.k8s.io/v1', 'InferencePool', r.pool.name, r.pool.namespace) : Promise.resolve(null),
        r.route ? kube.getObject('gateway.networking.k8s.io/v1', 'HTTPRoute', r.route.name, r.route.namespace) : Promise.resolve(null),
      ]);
      // Only the pods of the revision just applied count (a rollout's old pods, or a failed
      // revision's being replaced, are not this revision's), once the controller has seen it.
      const current = await this.currentRevision(kube, spec.namespace, r);
      const pods = podList
        .map(podState)
        .filter((p) => p.role !== null)
        .filter((p) => {
          const hash = current.hashes.get(p.role ?? '');
          return hash === undefined || p.labels['pod-template-hash'] === hash;
        });
      const warnings = events
        .filter((e) => e.type === 'Warning')
        .sort((a, b) => String(a.lastTimestamp ?? a.eventTime ?? '').localeCompare(String(b.lastTimestamp ?? b.eventTime ?? '')))
        .map((e) => ({ reason: String(e.reason ?? ''), message: String(e.message ?? '').slice(0, 1000), object: `${e.involvedObject?.kind ?? ''}/${e.involvedObject?.name ?? ''}` }));
      const input = {
        desiredPods: desired,
        pods,
        events: warnings,
        pool: { expected: r.pool !== null, facts: poolFacts(pool) },
        route: { expected: r.route !== null, facts: routeFacts(route) },
        gateway: publish ? { namespace: publish.namespace, name: publish.gatewayName } : null,
        serverPort: SERVER_PORT,
        smoke: null as SmokeFacts | null,
        smokeOverdue: false,
        now: new Date().toISOString(),
      };
      let out = evaluate(input);
      // Until the controller has made the revision's ReplicaSet, the pods it sees belong to another revision: nothing is decided from them.
      if (current.pending) out = { ...out, podsReady: false, reason: current.pending, logsOf: null, readiness: { ...out.readiness, verdict: 'transient', pods: { ok: false, reason: current.pending, by: 'kube-controller-manager' } } };
      let smoke: (SmokeFacts & { text: string }) | null = null;
      // The smoke request goes once the servers are Ready and the gateway has taken the route and the pool.
      const published = (out.readiness.inferencePool?.ok ?? true) && (out.readiness.httpRoute?.ok ?? true);
      if (out.podsReady && published && out.readiness.verdict !== 'fatal') {
        const stageText = SMOKE;
        if (lastStage !== stageText) {
          ctx.stage(stageText, 90);
          lastStage = stageText;
          await this.write(d.id, { stage: stageText });
        }
        smoke = await smokeRequest(kube, spec.namespace, r.service.name, r.service.port, spec.model, this.timings.smokeRequestTimeoutMs);
        if (smoke.ok) smokeSince = null;
        else smokeSince ??= Date.now();
        out = evaluate({ ...input, smoke, smokeOverdue: smokeSince !== null && Date.now() - smokeSince > this.timings.smokeTimeoutMs });
      } else {
        smokeSince = null;
        const stageText = out.readiness.pods.ok ? WAIT_GATEWAY : WAIT_SERVERS;
        if (lastStage !== stageText) {
          ctx.stage(stageText, out.readiness.pods.ok ? 80 : 60);
          lastStage = stageText;
          await this.write(d.id, { stage: stageText });
        }
      }
      if (out.reason !== lastReason) {
        if (out.reason) ctx.log(`not ready: ${out.reason}`);
        lastReason = out.reason;
      }
      await this.write(d.id, { readiness: out.readiness, reason: out.reason });
      if (out.readiness.verdict === 'ready' && smoke?.ok) {
        return { smoke: { latency_ms: smoke.latencyMs, at: new Date().toISOString(), status_code: 200, text: smoke.text }, readiness: out };
      }
      if (out.readiness.verdict === 'fatal') {
        let logs: string | null = null;
        if (out.logsOf) {
          logs = await kube
            .podLog(spec.namespace, out.logsOf.pod, { container: out.logsOf.container, tailLines: 50, previous: out.logsOf.previous, maxBytes: 16 * 1024 })
            .then((t) => t.slice(-16 * 1024))
            .catch((e) => `(the log could not be read: ${(e as Error).message.slice(0, 200)})`);
        }
        throw new DeploymentFailed(out.reason ?? 'failed', logs);
      }
      if (Date.now() - started > this.timings.readyTimeoutMs) throw new DeploymentFailed(`not ready within ${Math.round(this.timings.readyTimeoutMs / 1000)} s: ${out.reason ?? 'no reason known'}`, null, 'deployment_timeout');
      await waitOrCancel(this.timings.pollMs, ctx);
    }
  }

  /**
   * Per role, the `pod-template-hash` of the ReplicaSet of each Deployment's current revision
   * (`deployment.kubernetes.io/revision`), and why it is not known yet (the controller has not
   * observed the applied generation). LeaderWorkerSets: every pod counts.
   */
  private async currentRevision(kube: Kube, namespace: string, r: RenderedDeployment): Promise<{ hashes: Map<string, string>; pending: string | null }> {
    const hashes = new Map<string, string>();
    let pending: string | null = null;
    const sets = await kube.listObjects('apps/v1', 'ReplicaSet', { namespace, labelSelector: DEPLOYMENT_LABEL });
    for (const w of r.workloads.filter((x) => x.kind === 'Deployment')) {
      const d = await kube.getObject('apps/v1', 'Deployment', w.name, namespace);
      const meta = (d?.metadata ?? {}) as { generation?: number; annotations?: Record<string, string> };
      const observed = (d?.status as { observedGeneration?: number } | undefined)?.observedGeneration ?? 0;
      const revision = meta.annotations?.['deployment.kubernetes.io/revision'];
      if (!d || observed < (meta.generation ?? 0) || !revision) {
        pending ??= `the Deployment ${w.name}'s controller has not observed its revision yet`;
        continue;
      }
      const owned = sets.filter((rs) => (rs.metadata as { ownerReferences?: Array<{ kind?: string; name?: string }> }).ownerReferences?.some((o) => o.kind === 'Deployment' && o.name === w.name));
      const rs = owned.find((x) => (x.metadata as { annotations?: Record<string, string> }).annotations?.['deployment.kubernetes.io/revision'] === revision);
      const hash = rs?.metadata.labels?.['pod-template-hash'];
      if (hash) hashes.set(w.role, hash);
      else pending ??= `the Deployment ${w.name}'s ReplicaSet of revision ${revision} is not there yet`;
    }
    return { hashes, pending };
  }

  /** Server-side apply (field manager `ironlens`, conflicts forced); a secret's content never reaches the log. */
  private async apply(kube: Kube, o: KubeObjectRef, ctx: JobContext, secret = false): Promise<void> {
    ctx.throwIfCancelled();
    try {
      await kube.apply(o, FIELD_MANAGER, true);
    } catch (e) {
      const msg = e instanceof KubeApiError ? e.message.replace(/^PATCH \S+: /, '') : (e as Error).message;
      throw new Error(`${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name} was not applied: ${secret ? msg.replace(/"data":\{[^}]*\}/g, '"data":{…}') : msg}`);
    }
    ctx.log(`applied ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
  }

  /** `helm uninstall` of a deployment's release (its delete). */
  uninstall(cluster: ClusterRow, release: string, namespace: string): Promise<boolean> {
    return this.helm.uninstall(this.access.kubeconfigText(cluster), release, namespace);
  }

  /** `helm upgrade --install` unless the release is deployed at that chart version with these values. */
  private async helmRelease(kubeconfig: string, c: HelmRelease, ctx: JobContext): Promise<void> {
    const have = await this.helm.get(kubeconfig, c.release, c.namespace, ctx.signal);
    const bare = (v: string) => v.replace(/-v(\d)/, '-$1');
    const want = `${c.chart}-${c.version}`;
    if (have && have.status === 'deployed' && bare(have.chart) === bare(want) && isDeepStrictEqual(have.values, JSON.parse(JSON.stringify(c.values)))) {
      ctx.log(`${c.namespace}/${c.release}: ${want} is deployed with these values`);
      return;
    }
    ctx.log(`${c.namespace}/${c.release}: helm upgrade --install ${want}`);
    await this.helm.upgradeInstall(kubeconfig, c, { signal: ctx.signal, onLine: (l) => ctx.log(`helm: ${l}`) });
  }
}

export function failureOf(code: string, detail: string): DeploymentFailure {
  return { title: code === 'deployment_cancelled' ? 'Deployment cancelled' : 'Deployment failed', detail, code, status: code === 'deployment_cancelled' ? 'cancelled' : 'failed' };
}

/** Sleeps `ms`, returning early (and throwing) when the job is cancelled. */
async function waitOrCancel(ms: number, ctx: JobContext): Promise<void> {
  if (ctx.signal.aborted) ctx.throwIfCancelled();
  await new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      ctx.signal.removeEventListener('abort', done);
      resolve();
    }
    ctx.signal.addEventListener('abort', done, { once: true });
  });
  ctx.throwIfCancelled();
}

/** The job's context without its cancellation (a rollback after a cancelled update runs to its end). */
function detached(ctx: JobContext): JobContext {
  const signal = new AbortController().signal;
  return {
    id: ctx.id,
    signal,
    stage: (t, p) => ctx.stage(t, p),
    progress: (p) => ctx.progress(p),
    log: (l) => ctx.log(l),
    cancelRequested: false,
    throwIfCancelled: () => {},
    flush: () => ctx.flush(),
  };
}

