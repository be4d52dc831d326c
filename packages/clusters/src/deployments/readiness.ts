import type { Readiness, ReadinessCheck } from '../api/deployments';

/**
 * Readiness from facts (issue 28), pure: a deployment is ready only when its model-server pods
 * are Ready, the InferencePool is accepted by its parent Gateway (or, where no controller writes
 * the pool's status, selects those Ready pods), the HTTPRoute is Accepted with its refs resolved
 * by the Gateway's controller, and a smoke request was answered by a model server. Lens' rules
 * decide what is transient (keeps `deploying`, the reason shown) and what is fatal (`failed`):
 * fatal first — a crash loop, an image that cannot be pulled, a container that cannot be
 * configured (a missing secret) — even when a resource shortage is reported beside it.
 */

export interface ContainerFacts {
  name: string;
  ready: boolean;
  restartCount: number;
  waiting: { reason: string; message: string } | null;
  terminated: { reason: string; message: string; exitCode: number } | null;
  lastTerminated: { reason: string; exitCode: number } | null;
}

export interface PodStateFacts {
  name: string;
  role: string | null;
  phase: string;
  ready: boolean;
  nodeName: string | null;
  podIP: string | null;
  labels: Record<string, string>;
  /** `PodScheduled=False`: the scheduler's reason and message. */
  unschedulable: { reason: string; message: string } | null;
  containers: ContainerFacts[];
  initContainers: ContainerFacts[];
  deleting: boolean;
}

export interface ConditionFacts {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export interface ParentFacts {
  name: string;
  namespace: string | null;
  controllerName: string | null;
  conditions: ConditionFacts[];
}

export interface PoolFacts {
  matchLabels: Record<string, string>;
  targetPorts: number[];
  parents: ParentFacts[];
}

export interface RouteFacts {
  parents: ParentFacts[];
}

export interface SmokeFacts {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

export interface ReadinessInput {
  /** Pods the workloads should run, in all. */
  desiredPods: number;
  pods: PodStateFacts[];
  /** Warning events of the namespace (FailedScheduling…), newest last. */
  events: Array<{ reason: string; message: string; object: string }>;
  /** null: the path publishes no pool (baseline). `undefined` pool facts: expected, not there. */
  pool: { expected: boolean; facts: PoolFacts | null };
  route: { expected: boolean; facts: RouteFacts | null };
  gateway: { namespace: string; name: string } | null;
  /** The pool's target port the servers must answer on. */
  serverPort: number;
  smoke: SmokeFacts | null;
  /** The smoke request has failed for longer than its allowance: its failure is fatal now. */
  smokeOverdue: boolean;
  now: string;
}

export interface ReadinessOutcome {
  readiness: Readiness;
  /** The reason shown while not ready (the first one that matters), or null when ready. */
  reason: string | null;
  /** For a fatal container state: whose last log lines to keep. */
  logsOf: { pod: string; container: string; previous: boolean } | null;
  /** Pods are Ready: the smoke request may be sent. */
  podsReady: boolean;
}

/** Container waiting reasons that end a deployment (Lens' fatal list, and the kubelet's configuration failures). */
export const FATAL_WAITING = new Set(['CrashLoopBackOff', 'ImagePullBackOff', 'ErrImagePull', 'InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);
/** Terminations that end a deployment even before the kubelet backs off. */
export const FATAL_TERMINATED = new Set(['OOMKilled']);

const TRANSIENT_WORDS = ['insufficient ', 'waiting for resourceclaim', 'waiting for resource claim', 'resourceclaim is not allocated', 'resource claim is not allocated', 'unschedulable', 'didn\'t match', 'untolerated taint'];

const cut = (s: string, n = 500) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** The first fatal container state of a pod (init containers first, as the kubelet runs them). */
function fatalOf(p: PodStateFacts): { reason: string; container: string; previous: boolean } | null {
  for (const c of [...p.initContainers, ...p.containers]) {
    if (c.waiting && FATAL_WAITING.has(c.waiting.reason)) {
      return { reason: `${c.waiting.reason}: ${cut(c.waiting.message || `container ${c.name}`)}`, container: c.name, previous: c.restartCount > 0 };
    }
    if (c.terminated && FATAL_TERMINATED.has(c.terminated.reason)) return { reason: `${c.terminated.reason}: container ${c.name} exited ${c.terminated.exitCode}`, container: c.name, previous: false };
    if (c.lastTerminated && FATAL_TERMINATED.has(c.lastTerminated.reason) && !c.ready) return { reason: `${c.lastTerminated.reason}: container ${c.name} exited ${c.lastTerminated.exitCode}`, container: c.name, previous: true };
  }
  if (p.phase === 'Failed') return { reason: `pod ${p.name} failed`, container: p.containers[0]?.name ?? 'vllm', previous: false };
  return null;
}

const isTrue = (cs: ConditionFacts[], type: string) => cs.some((c) => c.type === type && c.status === 'True');
const explain = (cs: ConditionFacts[], type: string) => {
  const c = cs.find((x) => x.type === type);
  return c ? `${type}=${c.status}${c.reason ? ` ${c.reason}` : ''}${c.message ? `: ${cut(c.message, 300)}` : ''}` : `no ${type} condition`;
};

function parentFor(parents: ParentFacts[], gw: { namespace: string; name: string }): ParentFacts | undefined {
  return parents.find((x) => x.name === gw.name && (x.namespace ?? gw.namespace) === gw.namespace);
}

/** Decides readiness (see the module comment); `verdict` is `fatal` only for a fatal pod state or an overdue smoke request. */
export function evaluate(i: ReadinessInput): ReadinessOutcome {
  const live = i.pods.filter((p) => !p.deleting);
  const reasons: string[] = [];
  let fatal: { reason: string; logsOf: ReadinessOutcome['logsOf'] } | null = null;
  for (const p of live) {
    const f = fatalOf(p);
    if (f) {
      fatal = { reason: `${p.name}: ${f.reason}`, logsOf: { pod: p.name, container: f.container, previous: f.previous } };
      break;
    }
  }
  const ready = live.filter((p) => p.ready && p.phase === 'Running');
  const podsOk = ready.length >= i.desiredPods && i.desiredPods > 0 && live.length === ready.length;
  let podsReason: string | null = null;
  if (fatal) podsReason = fatal.reason;
  else if (!podsOk) {
    const pending = live.find((p) => p.unschedulable);
    if (pending?.unschedulable) podsReason = `${pending.name} is Pending: ${pending.unschedulable.reason}: ${cut(pending.unschedulable.message)}`;
    else {
      const ev = [...i.events].reverse().find((e) => TRANSIENT_WORDS.some((w) => e.message.toLowerCase().includes(w)));
      const waiting = live.flatMap((p) => p.containers.filter((c) => c.waiting).map((c) => `${p.name}: ${c.waiting!.reason}${c.waiting!.message ? `: ${cut(c.waiting!.message)}` : ''}`))[0];
      podsReason = ev ? `${ev.object}: ${ev.reason}: ${cut(ev.message)}` : (waiting ?? `${ready.length} of ${i.desiredPods} model-server pod(s) Ready`);
    }
  }
  const pods: ReadinessCheck = { ok: podsOk && !fatal, reason: podsOk && !fatal ? null : podsReason, by: 'kubelet' };
  if (!pods.ok && pods.reason) reasons.push(pods.reason);

  let inferencePool: ReadinessCheck | null = null;
  if (i.pool.expected) {
    const f = i.pool.facts;
    if (!f) inferencePool = { ok: false, reason: 'the InferencePool does not exist yet', by: 'ironlens' };
    else {
      const selects = (p: PodStateFacts) => Object.entries(f.matchLabels).every(([k, v]) => p.labels[k] === v);
      const unselected = ready.filter((p) => !selects(p));
      const parent = i.gateway ? parentFor(f.parents, i.gateway) : undefined;
      if (!f.targetPorts.includes(i.serverPort)) inferencePool = { ok: false, reason: `the InferencePool's targetPorts (${f.targetPorts.join(', ')}) miss the servers' port ${i.serverPort}`, by: 'ironlens' };
      else if (Object.keys(f.matchLabels).length === 0 || unselected.length || (ready.length === 0 && podsOk)) inferencePool = { ok: false, reason: `the InferencePool's selector does not select the Ready servers${unselected.length ? ` (${unselected.map((p) => p.name).join(', ')})` : ''}`, by: 'ironlens' };
      else if (parent) {
        const ok = isTrue(parent.conditions, 'Accepted');
        inferencePool = { ok, reason: ok ? null : `the InferencePool is not accepted by Gateway ${i.gateway!.namespace}/${i.gateway!.name}: ${explain(parent.conditions, 'Accepted')}`, by: parent.controllerName ?? 'gateway controller' };
      } else if (f.parents.length === 0) {
        // No controller writes this pool's status (Envoy Gateway does not; the AI Gateway controller would):
        // ironlens' own check stands — the pool exists and selects the Ready servers — with the route's ResolvedRefs below.
        inferencePool = { ok: true, reason: 'no controller writes the InferencePool status: ironlens checked that it selects the Ready servers on their port', by: 'ironlens' };
      } else inferencePool = { ok: false, reason: `the InferencePool has no status for Gateway ${i.gateway?.namespace}/${i.gateway?.name} yet`, by: 'ironlens' };
    }
    if (!inferencePool.ok && inferencePool.reason) reasons.push(inferencePool.reason);
  }

  let httpRoute: ReadinessCheck | null = null;
  if (i.route.expected && i.gateway) {
    const f = i.route.facts;
    if (!f) httpRoute = { ok: false, reason: 'the HTTPRoute does not exist yet', by: 'ironlens' };
    else {
      const parent = parentFor(f.parents, i.gateway);
      if (!parent) httpRoute = { ok: false, reason: `the HTTPRoute has no status from Gateway ${i.gateway.namespace}/${i.gateway.name}'s controller yet`, by: 'ironlens' };
      else {
        const accepted = isTrue(parent.conditions, 'Accepted');
        const resolved = isTrue(parent.conditions, 'ResolvedRefs');
        httpRoute = {
          ok: accepted && resolved,
          reason: accepted && resolved ? null : `the HTTPRoute is not ${accepted ? 'resolved' : 'accepted'} by the Gateway: ${explain(parent.conditions, accepted ? 'ResolvedRefs' : 'Accepted')}`,
          by: parent.controllerName ?? 'gateway controller',
        };
      }
    }
    if (!httpRoute.ok && httpRoute.reason) reasons.push(httpRoute.reason);
  }

  let smoke: ReadinessCheck;
  if (!i.smoke) smoke = { ok: false, reason: pods.ok ? 'the smoke request has not been sent yet' : 'the smoke request waits for Ready pods', by: 'model-server' };
  else if (i.smoke.ok) smoke = { ok: true, reason: null, by: 'model-server' };
  else smoke = { ok: false, reason: `the smoke request was not answered: ${i.smoke.error ?? `HTTP ${i.smoke.statusCode}`}`, by: 'model-server' };
  if (!smoke.ok && pods.ok && smoke.reason) reasons.push(smoke.reason);

  const everything = pods.ok && (inferencePool?.ok ?? true) && (httpRoute?.ok ?? true) && smoke.ok;
  let verdict: Readiness['verdict'] = everything ? 'ready' : 'transient';
  let reason: string | null = everything ? null : (reasons[0] ?? 'not ready');
  let logsOf: ReadinessOutcome['logsOf'] = null;
  if (fatal) {
    verdict = 'fatal';
    reason = fatal.reason;
    logsOf = fatal.logsOf;
  } else if (pods.ok && i.smoke && !i.smoke.ok && i.smokeOverdue) {
    verdict = 'fatal';
    reason = smoke.reason;
  }
  return { readiness: { pods, inferencePool, httpRoute, smoke, verdict, checkedAt: i.now }, reason, logsOf, podsReady: pods.ok };
}
