import { describe, expect, it } from 'vitest';
import { type ContainerFacts, evaluate, type PodStateFacts, type ReadinessInput } from './readiness';

// Readiness from facts and Lens' transient/fatal rules (issue 28), each rule with its own case.

const labels = { 'ironlens.dev/deployment': 'a1b2c3d4e5f6', 'llm-d.ai/inference-serving': 'true', 'llm-d.ai/role': 'decode' };
const running: ContainerFacts = { name: 'vllm', ready: true, restartCount: 0, waiting: null, terminated: null, lastTerminated: null };

function pod(name: string, o: Partial<PodStateFacts> = {}): PodStateFacts {
  return { name, role: 'decode', phase: 'Running', ready: true, nodeName: 'gpu-0', podIP: '10.244.0.5', labels, unschedulable: null, containers: [running], initContainers: [], deleting: false, ...o };
}

const gw = { namespace: 'lens-gateway-c0ffee00', name: 'lens-gateway' };
const EG = 'gateway.envoyproxy.io/gatewayclass-controller';
const accepted = [
  { type: 'Accepted', status: 'True', reason: 'Accepted', message: '' },
  { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: '' },
];

function input(o: Partial<ReadinessInput> = {}): ReadinessInput {
  return {
    desiredPods: 2,
    pods: [pod('a'), pod('b')],
    events: [],
    pool: { expected: true, facts: { matchLabels: { 'ironlens.dev/deployment': 'a1b2c3d4e5f6', 'llm-d.ai/inference-serving': 'true' }, targetPorts: [8000], parents: [] } },
    route: { expected: true, facts: { parents: [{ name: 'lens-gateway', namespace: 'lens-gateway-c0ffee00', controllerName: EG, conditions: accepted }] } },
    gateway: gw,
    serverPort: 8000,
    smoke: { ok: true, statusCode: 200, latencyMs: 12.5, error: null },
    smokeOverdue: false,
    now: '2026-09-23T10:00:00.000Z',
    ...o,
  };
}

describe('readiness', () => {
  it('is ready when the pods are Ready, the pool selects them, the gateway’s controller accepted and resolved the route, and the smoke request was answered', () => {
    const out = evaluate(input());
    expect(out.readiness.verdict).toBe('ready');
    expect(out.reason).toBeNull();
    expect(out.readiness.httpRoute).toEqual({ ok: true, reason: null, by: EG });
    expect(out.readiness.inferencePool).toEqual({ ok: true, reason: 'no controller writes the InferencePool status: ironlens checked that it selects the Ready servers on their port', by: 'ironlens' });
    expect(out.readiness.smoke).toEqual({ ok: true, reason: null, by: 'model-server' });
  });

  it('is not ready without the smoke answer, and says so', () => {
    const out = evaluate(input({ smoke: null }));
    expect(out.readiness.verdict).toBe('transient');
    expect(out.podsReady).toBe(true);
    expect(out.reason).toBe('the smoke request has not been sent yet');
  });

  it('an unanswered smoke request keeps it deploying, then fails it once overdue', () => {
    const refused = { ok: false, statusCode: null, latencyMs: 3, error: 'connect ECONNREFUSED 10.244.0.5:8000' };
    expect(evaluate(input({ smoke: refused })).readiness.verdict).toBe('transient');
    const late = evaluate(input({ smoke: refused, smokeOverdue: true }));
    expect(late.readiness.verdict).toBe('fatal');
    expect(late.reason).toBe('the smoke request was not answered: connect ECONNREFUSED 10.244.0.5:8000');
  });

  it('Insufficient nvidia.com/gpu keeps it deploying with the scheduler’s reason', () => {
    const pending = pod('b', { phase: 'Pending', ready: false, nodeName: null, containers: [], unschedulable: { reason: 'Unschedulable', message: '0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn\'t match Pod\'s node affinity/selector.' } });
    const out = evaluate(input({ pods: [pod('a'), pending], smoke: null }));
    expect(out.readiness.verdict).toBe('transient');
    expect(out.reason).toBe("b is Pending: Unschedulable: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector.");
  });

  it('a pending resource claim keeps it deploying (from the event when the pod carries no scheduler condition yet)', () => {
    const pending = pod('b', { phase: 'Pending', ready: false, containers: [] });
    const out = evaluate(input({ pods: [pod('a'), pending], smoke: null, events: [{ reason: 'FailedScheduling', message: 'running PreBind plugin "DynamicResources": waiting for resource claim b-accelerators to be allocated', object: 'Pod/b' }] }));
    expect(out.readiness.verdict).toBe('transient');
    expect(out.reason).toBe('Pod/b: FailedScheduling: running PreBind plugin "DynamicResources": waiting for resource claim b-accelerators to be allocated');
  });

  it.each([
    ['ImagePullBackOff', 'Back-off pulling image "ghcr.io/llm-d/llm-d-cuda:v0.0.0"', false],
    ['ErrImagePull', 'rpc error: not found', false],
    ['CreateContainerConfigError', 'secret "llm-d-hf-token" not found', false],
    ['CrashLoopBackOff', 'back-off 40s restarting failed container=vllm', true],
  ])('%s is fatal, with the container whose log to keep', (reason, message, previous) => {
    const bad = pod('b', { ready: false, containers: [{ ...running, ready: false, restartCount: previous ? 3 : 0, waiting: { reason, message } }] });
    const out = evaluate(input({ pods: [pod('a'), bad], smoke: null }));
    expect(out.readiness.verdict).toBe('fatal');
    expect(out.reason).toBe(`b: ${reason}: ${message}`);
    expect(out.logsOf).toEqual({ pod: 'b', container: 'vllm', previous });
  });

  it('fatal first: a crash loop beside a GPU shortage fails', () => {
    const crash = pod('a', { ready: false, containers: [{ ...running, ready: false, restartCount: 5, waiting: { reason: 'CrashLoopBackOff', message: 'back-off' } }] });
    const pending = pod('b', { phase: 'Pending', ready: false, nodeName: null, containers: [], unschedulable: { reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.' } });
    expect(evaluate(input({ pods: [pending, crash], smoke: null })).readiness.verdict).toBe('fatal');
  });

  it('an OOM-killed server is fatal; a container still creating is not', () => {
    const oom = pod('a', { ready: false, containers: [{ ...running, ready: false, restartCount: 1, lastTerminated: { reason: 'OOMKilled', exitCode: 137 } }] });
    expect(evaluate(input({ pods: [oom, pod('b')], smoke: null })).reason).toBe('a: OOMKilled: container vllm exited 137');
    const creating = pod('a', { ready: false, containers: [{ ...running, ready: false, waiting: { reason: 'ContainerCreating', message: '' } }] });
    const out = evaluate(input({ pods: [creating, pod('b')], smoke: null }));
    expect(out.readiness.verdict).toBe('transient');
    expect(out.reason).toBe('a: ContainerCreating');
  });

  it('the route must be Accepted and resolved by the Gateway’s own controller; its reason is shown', () => {
    const refused = [
      { type: 'Accepted', status: 'True', reason: 'Accepted', message: '' },
      { type: 'ResolvedRefs', status: 'False', reason: 'RefNotPermitted', message: 'Backend ref to InferencePool ironlens-x/q not permitted by any ReferenceGrant' },
    ];
    const out = evaluate(input({ route: { expected: true, facts: { parents: [{ name: 'lens-gateway', namespace: gw.namespace, controllerName: EG, conditions: refused }] } } }));
    expect(out.readiness.verdict).toBe('transient');
    expect(out.reason).toBe('the HTTPRoute is not resolved by the Gateway: ResolvedRefs=False RefNotPermitted: Backend ref to InferencePool ironlens-x/q not permitted by any ReferenceGrant');
    const other = evaluate(input({ route: { expected: true, facts: { parents: [{ name: 'another-gateway', namespace: gw.namespace, controllerName: EG, conditions: accepted }] } } }));
    expect(other.reason).toBe("the HTTPRoute has no status from Gateway lens-gateway-c0ffee00/lens-gateway's controller yet");
  });

  it('a pool status written by a controller must accept it for this Gateway', () => {
    const pool = (conditions: typeof accepted) => ({ expected: true, facts: { matchLabels: { 'ironlens.dev/deployment': 'a1b2c3d4e5f6' }, targetPorts: [8000], parents: [{ name: 'lens-gateway', namespace: gw.namespace, controllerName: 'aigateway.envoyproxy.io/ai-gateway-controller', conditions }] } });
    expect(evaluate(input({ pool: pool(accepted) })).readiness.inferencePool).toEqual({ ok: true, reason: null, by: 'aigateway.envoyproxy.io/ai-gateway-controller' });
    const no = evaluate(input({ pool: pool([{ type: 'Accepted', status: 'False', reason: 'NotAccepted', message: 'no route' }]) }));
    expect(no.reason).toBe('the InferencePool is not accepted by Gateway lens-gateway-c0ffee00/lens-gateway: Accepted=False NotAccepted: no route');
  });

  it('a pool that does not select the Ready servers, or misses their port, is not ready', () => {
    const wrong = evaluate(input({ pool: { expected: true, facts: { matchLabels: { 'ironlens.dev/deployment': 'ffffffffffff' }, targetPorts: [8000], parents: [] } } }));
    expect(wrong.reason).toBe("the InferencePool's selector does not select the Ready servers (a, b)");
    const port = evaluate(input({ pool: { expected: true, facts: { matchLabels: labels, targetPorts: [9000], parents: [] } } }));
    expect(port.reason).toBe("the InferencePool's targetPorts (9000) miss the servers' port 8000");
    expect(evaluate(input({ pool: { expected: true, facts: null } })).reason).toBe('the InferencePool does not exist yet');
  });

  it('the baseline path checks no pool and no route', () => {
    const out = evaluate(input({ pool: { expected: false, facts: null }, route: { expected: false, facts: null }, gateway: null }));
    expect(out.readiness.verdict).toBe('ready');
    expect(out.readiness.inferencePool).toBeNull();
    expect(out.readiness.httpRoute).toBeNull();
  });

  it('terminating pods of an old revision do not count; too few Ready pods is transient', () => {
    const out = evaluate(input({ pods: [pod('a'), pod('old', { deleting: true, ready: false })], smoke: null }));
    expect(out.reason).toBe('1 of 2 model-server pod(s) Ready');
  });
});
