import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { Kube, KubeObjectRef } from '../adapters/kube.adapter';
import type { PodView } from '../api/deployments';
import type { AllocatedDevice, ClusterFacts, DeviceFacts, NodeFacts, PodFacts } from './placement';
import type { ConditionFacts, ContainerFacts, ParentFacts, PodStateFacts, PoolFacts, RouteFacts, SmokeFacts } from './readiness';

/**
 * What deployments read from a cluster, turned into the shapes placement and readiness take. A
 * cluster's answers are hostile until checked (issue 18): every field is read with its type
 * checked, strings are cut, and anything of another shape counts as absent.
 */

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown, max = 1000): string => (typeof v === 'string' ? v.slice(0, max) : '');
const strOrNull = (v: unknown, max = 1000): string | null => (typeof v === 'string' ? v.slice(0, max) : null);
const int = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : 0);
const stringMap = (v: unknown): Record<string, string> => Object.fromEntries(Object.entries(obj(v)).filter(([, x]) => typeof x === 'string')) as Record<string, string>;

export const LWS_CRD = 'leaderworkersets.leaderworkerset.x-k8s.io';

function nodeFacts(n: V1Node): NodeFacts | null {
  const m = obj(n.metadata);
  const name = str(m.name, 253);
  if (!name) return null;
  const spec = obj(n.spec);
  const status = obj(n.status);
  return {
    name,
    ready: arr(status.conditions).some((c) => obj(c).type === 'Ready' && obj(c).status === 'True'),
    unschedulable: spec.unschedulable === true,
    taints: arr(spec.taints).map((t) => ({ key: str(obj(t).key, 253), effect: str(obj(t).effect, 32) })),
    labels: stringMap(m.labels),
    capacity: stringMap(status.capacity),
    allocatable: stringMap(status.allocatable),
    addresses: arr(status.addresses).map((a) => str(obj(a).address, 253)).filter(Boolean),
  };
}

/** A pod's effective request per resource: the sum over its containers, or its largest init container when that is larger. */
export function podRequests(p: V1Pod): Record<string, number> {
  const spec = obj(p.spec);
  const sum: Record<string, number> = {};
  const add = (into: Record<string, number>, c: unknown) => {
    for (const [k, v] of Object.entries(stringMap(obj(obj(c).resources).requests))) {
      const n = Number(v);
      if (Number.isInteger(n) && n >= 0) into[k] = (into[k] ?? 0) + n;
    }
  };
  for (const c of arr(spec.containers)) add(sum, c);
  for (const c of arr(spec.initContainers)) {
    const one: Record<string, number> = {};
    add(one, c);
    // A native sidecar (restartPolicy Always) runs beside the containers: it adds up.
    if (obj(c).restartPolicy === 'Always') for (const [k, v] of Object.entries(one)) sum[k] = (sum[k] ?? 0) + v;
    else for (const [k, v] of Object.entries(one)) sum[k] = Math.max(sum[k] ?? 0, v);
  }
  return sum;
}

/** Nodes, live pods' requests, DRA devices and their allocations: what placement takes. */
export async function readClusterFacts(kube: Kube): Promise<Omit<ClusterFacts, 'workers'> & { podOwners: Array<string | null> }> {
  const [nodes, pods, slices, claims] = await Promise.all([
    kube.listNodes(),
    kube.listPods({ fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' }),
    kube.listObjects('resource.k8s.io/v1', 'ResourceSlice'),
    kube.listObjects('resource.k8s.io/v1', 'ResourceClaim'),
  ]);
  const podFacts: PodFacts[] = [];
  const podOwners: Array<string | null> = [];
  for (const p of pods) {
    const spec = obj(p.spec);
    podFacts.push({ nodeName: strOrNull(spec.nodeName, 253), phase: str(obj(p.status).phase, 32), requests: podRequests(p) });
    podOwners.push(strOrNull(stringMap(obj(p.metadata).labels)['ironlens.dev/deployment'], 64));
  }
  const devices: DeviceFacts[] = [];
  for (const s of slices) {
    const spec = obj(s.spec);
    const node = str(spec.nodeName, 253);
    const driver = str(spec.driver, 253);
    const pool = str(obj(spec.pool).name, 253);
    if (!node || !driver) continue;
    for (const d of arr(spec.devices)) {
      const attrs = obj(obj(d).attributes);
      const product = obj(attrs.productName).string ?? obj(attrs.model).string;
      devices.push({ node, driver, pool, name: str(obj(d).name, 253), product: typeof product === 'string' ? product.slice(0, 200) : null });
    }
  }
  const allocated: AllocatedDevice[] = [];
  for (const c of claims) {
    for (const r of arr(obj(obj(obj(c.status).allocation).devices).results)) {
      const x = obj(r);
      allocated.push({ driver: str(x.driver, 253), pool: str(x.pool, 253), device: str(x.device, 253) });
    }
  }
  return { nodes: nodes.map(nodeFacts).filter((n): n is NodeFacts => n !== null), pods: podFacts, podOwners, devices, allocated };
}

function containerFacts(c: unknown): ContainerFacts {
  const x = obj(c);
  const state = obj(x.state);
  const waiting = obj(state.waiting);
  const terminated = obj(state.terminated);
  const last = obj(obj(x.lastState).terminated);
  return {
    name: str(x.name, 63),
    ready: x.ready === true,
    restartCount: Math.max(0, int(x.restartCount)),
    waiting: Object.keys(waiting).length ? { reason: str(waiting.reason, 64), message: str(waiting.message, 1000) } : null,
    terminated: Object.keys(terminated).length ? { reason: str(terminated.reason, 64), message: str(terminated.message, 1000), exitCode: int(terminated.exitCode) } : null,
    lastTerminated: Object.keys(last).length ? { reason: str(last.reason, 64), exitCode: int(last.exitCode) } : null,
  };
}

export function podState(p: V1Pod): PodStateFacts {
  const m = obj(p.metadata);
  const status = obj(p.status);
  const labels = stringMap(m.labels);
  const scheduled = arr(status.conditions).map(obj).find((c) => c.type === 'PodScheduled');
  return {
    name: str(m.name, 253),
    role: labels['llm-d.ai/role'] ?? null,
    phase: str(status.phase, 32) || 'Unknown',
    ready: arr(status.conditions).some((c) => obj(c).type === 'Ready' && obj(c).status === 'True'),
    nodeName: strOrNull(obj(p.spec).nodeName, 253),
    podIP: strOrNull(status.podIP, 64),
    labels,
    unschedulable: scheduled && scheduled.status === 'False' ? { reason: str(scheduled.reason, 64) || 'Unschedulable', message: str(scheduled.message, 1000) } : null,
    containers: arr(status.containerStatuses).map(containerFacts),
    initContainers: arr(status.initContainerStatuses).map(containerFacts),
    deleting: typeof m.deletionTimestamp === 'string' && m.deletionTimestamp !== '',
  };
}

/** Lens' pod payload (`get_execution_pods`), plus the role and the scheduler's or container's message. */
export function podView(p: V1Pod): PodView {
  const f = podState(p);
  const m = obj(p.metadata);
  const status = obj(p.status);
  const all = [...f.initContainers, ...f.containers];
  const images = new Map(arr(status.containerStatuses).concat(arr(status.initContainerStatuses)).map((c) => [str(obj(c).name, 63), str(obj(c).image, 500)]));
  const specImages = new Map(arr(obj(p.spec).containers).concat(arr(obj(p.spec).initContainers)).map((c) => [str(obj(c).name, 63), str(obj(c).image, 500)]));
  const reason = all.map((c) => c.waiting?.reason || c.terminated?.reason).find(Boolean) ?? f.unschedulable?.reason ?? f.phase;
  const message = all.map((c) => c.waiting?.message || c.terminated?.message).find(Boolean) ?? f.unschedulable?.message ?? null;
  const containers = (all.length ? all : arr(obj(p.spec).containers).map((c) => ({ name: str(obj(c).name, 63), ready: false, restartCount: 0, waiting: null, terminated: null, lastTerminated: null }))).map((c) => ({
    name: c.name,
    image: images.get(c.name) || specImages.get(c.name) || '',
    ready: c.ready,
    restart_count: c.restartCount,
    state: c.waiting ? ('waiting' as const) : c.terminated ? ('terminated' as const) : all.length ? ('running' as const) : ('unknown' as const),
  }));
  return {
    name: f.name,
    namespace: str(m.namespace, 63),
    phase: f.phase,
    ready: f.ready,
    pod_ip: f.podIP,
    node_name: f.nodeName,
    restarts: all.reduce((s, c) => s + c.restartCount, 0),
    status_reason: reason,
    containers,
    creation_timestamp: strOrNull(m.creationTimestamp, 64),
    role: f.role,
    message,
  };
}

function conditions(v: unknown): ConditionFacts[] {
  return arr(v)
    .map(obj)
    .map((c) => ({ type: str(c.type, 64), status: str(c.status, 16), reason: str(c.reason, 128), message: str(c.message, 1000) }));
}

function parents(status: unknown): ParentFacts[] {
  return arr(obj(status).parents)
    .map(obj)
    .map((p) => {
      const ref = obj(p.parentRef);
      return { name: str(ref.name, 253), namespace: strOrNull(ref.namespace, 63), controllerName: strOrNull(p.controllerName, 253), conditions: conditions(p.conditions) };
    });
}

export function poolFacts(o: KubeObjectRef | null): PoolFacts | null {
  if (!o) return null;
  const spec = obj(o.spec);
  return {
    matchLabels: stringMap(obj(spec.selector).matchLabels),
    targetPorts: arr(spec.targetPorts).map((t) => int(obj(t).number)).filter((n) => n > 0),
    parents: parents(o.status),
  };
}

export function routeFacts(o: KubeObjectRef | null): RouteFacts | null {
  if (!o) return null;
  return { parents: parents(o.status) };
}

/** The generation a workload's controller has seen, and how many of its replicas are ready. */
export function workloadStatus(o: KubeObjectRef | null): { readyReplicas: number; replicas: number } | null {
  if (!o) return null;
  const st = obj(o.status);
  return { readyReplicas: int(st.readyReplicas), replicas: int(obj(o.spec).replicas) };
}

/**
 * The smoke request: `POST /v1/completions` for the model, a few tokens, through the API server's
 * service proxy to the deployment's own Service (the way Lens smoke-tests a model server). OK only
 * for a 200 whose body is an OpenAI completion with a text.
 */
export async function smokeRequest(kube: Kube, namespace: string, service: string, port: number, model: string, timeoutMs: number): Promise<SmokeFacts & { text: string }> {
  const started = performance.now();
  try {
    const r = await kube.serviceProxyPost(namespace, service, String(port), '/v1/completions', { model, prompt: 'ping', max_tokens: 4 }, timeoutMs);
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    const choice = obj(arr(obj(r.body).choices)[0]);
    if (r.status === 200 && typeof choice.text === 'string') return { ok: true, statusCode: 200, latencyMs, error: null, text: choice.text.slice(0, 200) };
    const err = obj(obj(r.body).error);
    const message = str(err.message, 300) || str(obj(r.body).message, 300);
    return { ok: false, statusCode: r.status, latencyMs, error: `HTTP ${r.status}${message ? `: ${message}` : ''}`, text: '' };
  } catch (e) {
    return { ok: false, statusCode: null, latencyMs: Math.round(performance.now() - started), error: (e as Error).message.slice(0, 300), text: '' };
  }
}
