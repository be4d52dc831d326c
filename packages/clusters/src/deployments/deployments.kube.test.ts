import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '@ironlens/core/testing';
import type { KubeHarness } from '@ironlens/kube-harness';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackProfile } from '../shared/profile';
import type { ClustersTestApp } from '../testing/app';
import { type DeploymentLab, startDeploymentLab } from '../testing/deployment-lab';
import type { EnvoyGatewayController } from '../testing/envoy-gateway.controller';
import type { CountingChartMirror } from '../testing/gateway-upstream';
import type { TestKubelet } from '../testing/test-kubelet';

// Model deployments on a live cluster (issue 28), one harness for every case: the REAL upstream
// CRDs (Gateway API v1.5.1, Inference Extension v1.5.0, LeaderWorkerSet v0.9.0 from the Go module
// sigs.k8s.io/lws), the REAL Inference Extension `inferencepool` chart packaged by the real Helm
// and installed from a counting chart mirror, the REAL kube-scheduler placing model servers on
// kwok GPU nodes (H100 ×8, Max 1550 ×4, A100 ×8), and the REAL Envoy Gateway v1.8.1 controller
// (with ironlens' own extension-manager values, InferencePool as a backend) writing the HTTPRoutes'
// status, and the REAL LeaderWorkerSet v0.9.0 controller (its webhooks included) making wide-EP's groups. What cannot run here stands in: the kubelet's container steps (`TestKubelet`: a
// registry, secrets, `vllm serve` exiting on an unknown argument, written into pod status by a kwok
// stage), and vLLM itself (`VllmStandIn`, listening at the pods' own IPs in a network namespace the
// API server's proxy reaches). Nothing writes the InferencePools' status here: the AI Gateway
// controller that does is not on the Go module proxy (docs/deployments.md).

const p = stackProfile();
let lab: DeploymentLab;
let h: KubeHarness;
let t: ClustersTestApp;
let charts: CountingChartMirror;
let eg: EnvoyGatewayController;
let kubelet: TestKubelet;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let clusterId: string;
let gwNs: string;
let gate: string;

const GW = { group: 'gateway.networking.k8s.io', version: 'v1' };
const EG_CONTROLLER = 'gateway.envoyproxy.io/gatewayclass-controller';

async function until<T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs = 180_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  let seen: unknown;
  for (;;) {
    if (kubelet?.error) throw kubelet.error;
    try {
      const v = await fn();
      if (v) return v;
      seen = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''} (last: ${JSON.stringify(seen)?.slice(0, 3000)})`);
    await sleep(250);
  }
}

type Execution = Record<string, unknown> & { execution_id: string; status: string; reason: string | null; run_id: string; namespace: string; job: { log: string[]; status: string } | null };

const api = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => t.app.inject({ method, url, payload });
const get = async (id: string) => (await api('GET', `/api/v1/deployments/executions/${id}`)).json() as Execution;

/** Waits until the execution reaches one of `statuses` (its job log in the failure message). */
async function reach(id: string, statuses: string[], timeoutMs = 240_000): Promise<Execution> {
  let last: Execution | undefined;
  try {
    return await until(
      `execution ${id} to be ${statuses.join(' or ')}`,
      async () => {
        last = await get(id);
        return statuses.includes(last.status) ? last : null;
      },
      timeoutMs,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}\nstatus ${last?.status}, reason ${last?.reason}\n${last?.job?.log.join('\n')}\n--- envoy gateway ---\n${eg.log().slice(-1500)}`);
  }
}

async function deploy(body: Record<string, unknown>): Promise<string> {
  const res = await api('POST', '/api/v1/deployments/standard-vllm-runs', { cluster_id: clusterId, replicas: 1, tensor_parallel_size: 1, ...body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().execution_id;
}

const nodesOf = async (ns: string) => (await core.listNamespacedPod({ namespace: ns, labelSelector: 'llm-d.ai/role' })).items.map((x) => x.spec?.nodeName ?? null);

beforeAll(async () => {
  lab = await startDeploymentLab({
    env: { IRONLENS_DEPLOYMENT_POLL_MS: '250', IRONLENS_DEPLOYMENT_SMOKE_TIMEOUT_MS: '3000', IRONLENS_DEPLOYMENT_SMOKE_REQUEST_TIMEOUT_MS: '2000' },
  });
  ({ h, t, charts, eg, kubelet, clusterId, gate } = lab);
  gwNs = lab.gatewayNamespace;
  core = h.kubeConfig().makeApiClient(CoreV1Api);
  apps = h.kubeConfig().makeApiClient(AppsV1Api);
  custom = h.kubeConfig().makeApiClient(CustomObjectsApi);
}, 45 * 60_000);

afterAll(async () => {
  await lab?.stop();
});

let first: string;

describe('placement on the live cluster', { timeout: 300_000 }, () => {
  it('refuses with 422 before anything is applied, naming what is free where', async () => {
    const res = await api('POST', '/api/v1/deployments/standard-vllm-runs', { cluster_id: clusterId, model: 'Qwen/Qwen3-32B', deployment_name: 'too big', replicas: 3, tensor_parallel_size: 8 });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().code).toBe('insufficient_accelerators');
    expect(res.json().free.map((r: { node: string; product: string; free: number }) => `${r.node} ${r.product} ${r.free}`)).toEqual(['gpu-nv-0001 NVIDIA-H100-80GB-HBM3 8', 'gpu-nv-0003 NVIDIA-A100-SXM4-40GB 8']);
    expect((await core.listNamespace()).items.map((n) => n.metadata?.name).filter((n) => n?.startsWith('ironlens-'))).toEqual([]);
    expect(charts.requests.filter((r) => r.includes('inferencepool'))).toEqual([]);
  });
});

describe('the optimized baseline, published on the shared gateway', { timeout: 300_000 }, () => {
  it('deploys a pinned GPU product on the right node, the real controller accepts its route, a model server answers: ready', async () => {
    first = await deploy({ model: 'Qwen/Qwen3-0.6B', deployment_name: 'qwen small', replicas: 2, tensor_parallel_size: 2, gpu_product: 'NVIDIA-A100-SXM4-40GB' });
    const e = await reach(first, ['ready', 'failed']);
    expect(e.status, `${e.reason}\n${e.job?.log.join('\n')}`).toBe('ready');
    // The real scheduler put both on the A100 node.
    expect(await nodesOf(e.namespace)).toEqual(['gpu-nv-0003', 'gpu-nv-0003']);
    // The chart at the profile's version, from the mirror: its InferencePool selects the servers.
    expect(charts.requests).toContain(`GET /inferencepool-${p.k8s_gateway_api_inference_extension}.tgz`);
    const pool = (await custom.getNamespacedCustomObject({ group: 'inference.networking.k8s.io', version: 'v1', namespace: e.namespace, plural: 'inferencepools', name: 'qwen-small' })) as { spec: { selector: { matchLabels: Record<string, string> }; endpointPickerRef: { name: string } } };
    expect(pool.spec.selector.matchLabels).toEqual({ 'ironlens.dev/deployment': first, 'llm-d.ai/inference-serving': 'true' });
    expect(pool.spec.endpointPickerRef.name).toBe('qwen-small-epp');
    const epp = await apps.readNamespacedDeployment({ name: 'qwen-small-epp', namespace: e.namespace });
    expect(epp.spec?.template.spec?.containers[0].image).toBe(`ghcr.io/llm-d/llm-d-router-endpoint-picker:${p.llm_d_router}`);
    // The route's status is the real Envoy Gateway controller's.
    const readiness = e.readiness as { httpRoute: { ok: boolean; by: string }; inferencePool: { ok: boolean; by: string }; smoke: { ok: boolean } };
    expect(readiness.httpRoute).toEqual({ ok: true, reason: null, by: EG_CONTROLLER });
    expect(readiness.inferencePool.by).toBe('ironlens');
    const smoke = e.smoke as { latency_ms: number; status_code: number; text: string };
    expect(smoke.status_code).toBe(200);
    expect(smoke.text).toBe(' pong pong pong pong');
    expect(smoke.latency_ms).toBeGreaterThan(0);
    expect(e.curl).toContain(`-H "X-Gateway-Base-Model-Name: Qwen/Qwen3-0.6B"`);
    expect(e.curl).toContain('Bearer $KEY');
    // The HF token was copied into the namespace; everything ironlens applied carries its labels.
    const copied = await core.readNamespacedSecret({ name: 'llm-d-hf-token', namespace: e.namespace });
    expect(Buffer.from(copied.data?.HF_TOKEN ?? '', 'base64').toString()).toBe('hf_serving_test_token');
    for (const o of [copied, await apps.readNamespacedDeployment({ name: 'qwen-small-decode', namespace: e.namespace })]) {
      expect(o.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'ironlens', 'ironlens.dev/cluster': clusterId, 'ironlens.dev/deployment': first });
    }
    // Stages, in order, in the job's log.
    const stages = (e.job?.log ?? []).filter((l) => l.startsWith('==> ')).map((l) => l.slice(4));
    expect(stages.slice(0, 6)).toEqual(['place', 'render', 'copy the HF token', 'install the InferencePool and its endpoint picker (helm)', 'apply the model servers', 'publish on the gateway']);
    expect(stages.at(-1)).toBe('smoke request');
  });

  it('lists it in the model service and on /v1/models for a gateway key of its cluster; the pods and their logs read back', async () => {
    const models = (await api('GET', '/api/v1/model-service/models')).json();
    expect(models.items.map((m: { baseModel: string; clusterId: string }) => [m.baseModel, m.clusterId])).toEqual([['Qwen/Qwen3-0.6B', clusterId]]);
    const key = (await api('POST', `/api/cluster/clusters/${clusterId}/gateway/keys`, { name: 'team-serving' })).json().key as string;
    const list = await t.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${key}` } });
    expect(list.json().data.map((m: { id: string }) => m.id)).toEqual(['Qwen/Qwen3-0.6B']);
    // The hook keeps answering the fairness id per key.
    const hook = await t.app.inject({ method: 'POST', url: `/api/v1/internal/model-gateway/authorize/cluster/${clusterId}/v1/completions`, headers: { authorization: `Bearer ${key}` } });
    expect(hook.headers['x-llm-d-inference-fairness-id']).toBe('team-serving');
    const pods = (await api('GET', `/api/v1/deployments/executions/${first}/pods`)).json();
    expect(pods.pods.map((x: { ready: boolean; node_name: string; role: string }) => [x.ready, x.node_name, x.role])).toEqual([
      [true, 'gpu-nv-0003', 'decode'],
      [true, 'gpu-nv-0003', 'decode'],
    ]);
    const log = (await api('GET', `/api/v1/deployments/executions/${first}/pods/${pods.pods[0].name}/logs?tail=5`)).json();
    expect(log).toMatchObject({ success: true, container: 'vllm' });
    expect(log.logs).toContain('Starting vLLM API server');
  });

  it('a cluster delete sees it: 409 cluster_has_available_deployments', async () => {
    const res = await api('DELETE', `/api/cluster/clusters/${clusterId}`);
    expect(res.json()).toMatchObject({ status: 409, code: 'cluster_has_available_deployments' });
    expect(res.json().detail).toContain('qwen-small-decode');
  });
});

describe('readiness from real pod states', { timeout: 300_000 }, () => {
  it('a race that leaves a pod Pending keeps it deploying with the scheduler’s reason; freed, it becomes ready', async () => {
    writeFileSync(join(gate, 'hold'), '');
    const id = await deploy({ model: 'Qwen/Qwen3-1.7B', deployment_name: 'race', replicas: 1, tensor_parallel_size: 8, node: 'gpu-nv-0001' });
    await until('helm held', async () => existsSync(join(gate, 'waiting')));
    // Between placement and apply, someone else takes two of the node's GPUs.
    await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'user-gpu-job', labels: { app: 'user' } }, spec: { nodeSelector: { 'kubernetes.io/hostname': 'gpu-nv-0001' }, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'busybox', resources: { limits: { 'nvidia.com/gpu': '2' } } }] } },
    });
    await until('the user pod bound', async () => (await core.readNamespacedPod({ name: 'user-gpu-job', namespace: 'default' })).spec?.nodeName === 'gpu-nv-0001');
    rmSync(join(gate, 'hold'));
    const pending = await until('the scheduler’s reason', async () => {
      const e = await get(id);
      return e.status === 'deploying' && e.reason?.includes('Insufficient nvidia.com/gpu') ? e : null;
    });
    expect(pending.reason).toMatch(/^race-decode-[a-z0-9]+-[a-z0-9]+ is Pending: Unschedulable: 0\/4 nodes are available: .*1 Insufficient nvidia\.com\/gpu/);
    await core.deleteNamespacedPod({ name: 'user-gpu-job', namespace: 'default', gracePeriodSeconds: 0 });
    const e = await reach(id, ['ready', 'failed']);
    expect(e.status, String(e.reason)).toBe('ready');
    expect(await nodesOf(e.namespace)).toEqual(['gpu-nv-0001']);
    const gone = await api('DELETE', `/api/v1/deployments/executions/${id}`);
    expect(gone.statusCode, gone.body).toBe(204);
  });

  it.each([
    ['ImagePullBackOff', { deployment_name: 'cpu server', model: 'Qwen/Qwen3-0.6B', accelerator: 'cpu', path: 'baseline' }, /^cpu-server-decode-\S+: ImagePullBackOff: Back-off pulling image "ghcr\.io\/llm-d\/llm-d-cpu:v\d/],
    ['CrashLoopBackOff', { deployment_name: 'bad flag', model: 'Qwen/Qwen3-0.6B', path: 'baseline', vllm_arguments: [{ name: 'not-a-vllm-flag', value: '1' }] }, /^bad-flag-decode-\S+: CrashLoopBackOff: back-off 40s restarting failed container=vllm/],
  ])('%s fails it with the reason and the container’s last log lines', async (_n, body, reason) => {
    const id = await deploy(body);
    const e = await reach(id, ['ready', 'failed']);
    expect(e.status).toBe('failed');
    expect(e.reason).toMatch(reason);
    expect((e.failure as { code: string }).code).toBe('deployment_failed');
    if (_n === 'CrashLoopBackOff') expect(e.logs).toBe('usage: vllm serve [model_tag] [options]\nvllm serve: error: unrecognized arguments: --not-a-vllm-flag=1\n');
    expect((await api('DELETE', `/api/v1/deployments/executions/${id}`)).statusCode).toBe(204);
  });

  it('a missing secret (the cluster’s HF token gone before the copy) fails it: CreateContainerConfigError', async () => {
    await core.deleteNamespacedSecret({ name: 'hf-token', namespace: 'llm-d-hf' });
    try {
      const id = await deploy({ deployment_name: 'no token', model: 'meta-llama/Llama-3.2-1B', path: 'baseline' });
      const e = await reach(id, ['ready', 'failed']);
      expect(e.status).toBe('failed');
      expect(e.reason).toMatch(/^no-token-decode-\S+: CreateContainerConfigError: secret "llm-d-hf-token" not found$/);
      expect(e.job?.log.join('\n')).toContain('has no HF_TOKEN: not copied');
      expect((await api('DELETE', `/api/v1/deployments/executions/${id}`)).statusCode).toBe(204);
    } finally {
      await api('POST', `/api/cluster/clusters/${clusterId}/hf-token-secrets`, { namespace: 'llm-d-hf', name: 'hf-token', token: 'hf_serving_test_token' });
    }
  });

  it('servers that do not answer keep it deploying, then fail it with the reason', async () => {
    kubelet.silent.add('silent');
    const id = await deploy({ deployment_name: 'silent', model: 'Qwen/Qwen3-4B', path: 'baseline' });
    const e = await reach(id, ['ready', 'failed']);
    expect(e.status).toBe('failed');
    expect(e.reason).toMatch(/^the smoke request was not answered: /);
    // While it waited, it was deploying with that reason (the job's log says so in order).
    const log = e.job?.log ?? [];
    const notAnswered = log.findIndex((l) => l.startsWith('not ready: the smoke request was not answered'));
    expect(notAnswered).toBeGreaterThan(log.indexOf('==> smoke request'));
    expect((await api('DELETE', `/api/v1/deployments/executions/${id}`)).statusCode).toBe(204);
  });

  it('a failed update rolls back to the previous revision', async () => {
    const res = await api('PATCH', `/api/v1/deployments/executions/${first}`, { vllm_arguments: [{ name: 'not-a-vllm-flag', value: '1' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ revision: 2 });
    const e = await reach(first, ['rolled_back', 'failed', 'ready']);
    expect(e.status, String(e.reason)).toBe('rolled_back');
    expect(e.reason).toMatch(/^the update to revision 2 failed \(qwen-small-decode-\S+: CrashLoopBackOff: .*\); rolled back to the last ready revision$/);
    expect(e.job?.log.join('\n')).toContain('rolling back to the last ready revision');
    const d = await apps.readNamespacedDeployment({ name: 'qwen-small-decode', namespace: e.namespace });
    expect(d.spec?.template.spec?.containers[0].args).not.toContain('--not-a-vllm-flag=1');
    expect((e.vllm_arguments ?? e.custom_parameters) as unknown[]).toEqual([]);
    // Serving again: the model service lists it.
    expect((await api('GET', '/api/v1/model-service/models')).json().items.map((m: { id: string }) => m.id)).toEqual([first]);
  });
});

describe('the P/D and wide-EP paths', { timeout: 300_000 }, () => {
  it('P/D: prefill and decode roles, decode behind the routing sidecar, the P/D picker configuration; ready once the sidecar answers for vLLM', async () => {
    const id = await deploy({ path: 'pd-disaggregation', model: 'Qwen/Qwen3-8B', deployment_name: 'pd', replicas: 1, tensor_parallel_size: 2, prefill: { replicas: 2, tensor_parallel_size: 1 }, node: 'gpu-nv-0001' });
    const e = await reach(id, ['ready', 'failed']);
    expect(e.status, String(e.reason)).toBe('ready');
    const pods = (await core.listNamespacedPod({ namespace: e.namespace, labelSelector: 'llm-d.ai/role' })).items;
    expect(pods.map((x) => `${x.metadata?.labels?.['llm-d.ai/role']} ${x.spec?.nodeName}`).sort()).toEqual(['decode gpu-nv-0001', 'prefill gpu-nv-0001', 'prefill gpu-nv-0001']);
    const decode = pods.find((x) => x.metadata?.labels?.['llm-d.ai/role'] === 'decode')!;
    expect(decode.spec?.initContainers?.map((c) => [c.name, c.restartPolicy, c.image])).toEqual([['routing-proxy', 'Always', `ghcr.io/llm-d/llm-d-router-disagg-sidecar:${p.llm_d_router}`]]);
    expect(decode.spec?.containers[0].args).toContain('--port=8200');
    // The endpoint picker of the chart runs llm-d's P/D plugins.
    const cm = await core.readNamespacedConfigMap({ name: 'pd-epp', namespace: e.namespace });
    expect(cm.data?.['ironlens-pd.yaml']).toContain('type: always-disagg-pd-decider');
    expect((await apps.readNamespacedDeployment({ name: 'pd-epp', namespace: e.namespace })).spec?.template.spec?.containers[0].args).toContain('/config/ironlens-pd.yaml');
    // 4 GPUs of the H100 node are this deployment's.
    const free = (await api('GET', `/api/cluster/clusters/${clusterId}/accelerators`)).json().accelerators[0].nodes.find((r: { node: string }) => r.node === 'gpu-nv-0001');
    expect(free).toMatchObject({ allocatable: 8, requested: 4, free: 4 });
    expect((await api('DELETE', `/api/v1/deployments/executions/${id}`)).statusCode).toBe(204);
  });

  it('wide-EP: the real LeaderWorkerSet controller makes the group (leader and worker on kwok GPU nodes, their ranks from its webhook); ready once the ranks answer', async () => {
    const id = await deploy({ path: 'wide-ep', model: 'deepseek-ai/DeepSeek-V2-Lite', deployment_name: 'wide', replicas: 1, tensor_parallel_size: 1, wide_ep: { group_size: 2, data_parallel_local: 4 } });
    let e: Execution;
    try {
      e = await reach(id, ['ready', 'failed']);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- lws ---\n${lab.lws.log().slice(-2000)}`);
    }
    expect(e.status, `${e.reason}\n${lab.lws.log().slice(-2000)}`).toBe('ready');
    const ns = e.namespace;
    // The controller's objects: the leader's StatefulSet, the group's workers' StatefulSet, the headless Service.
    const sets = (await apps.listNamespacedStatefulSet({ namespace: ns })).items.map((x) => `${x.metadata?.name} ${x.metadata?.ownerReferences?.[0]?.kind}`).sort();
    expect(sets).toEqual(['wide-decode LeaderWorkerSet', 'wide-decode-0 Pod']);
    expect((await core.readNamespacedService({ name: 'wide-decode', namespace: ns })).spec?.clusterIP).toBe('None');
    // Leader and worker, each with 4 GPUs, placed by the real scheduler on kwok GPU nodes; the
    // group's index, worker index and leader address written by LWS' pod webhook.
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'leaderworkerset.sigs.k8s.io/name=wide-decode' })).items.sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
    expect(pods.map((x) => [x.metadata?.name, x.metadata?.labels?.['leaderworkerset.sigs.k8s.io/worker-index'], x.status?.phase])).toEqual([
      ['wide-decode-0', '0', 'Running'],
      ['wide-decode-0-1', '1', 'Running'],
    ]);
    const gpuNodes = new Set(['gpu-nv-0001', 'gpu-nv-0003']);
    for (const pod of pods) {
      expect(gpuNodes.has(pod.spec?.nodeName ?? '')).toBe(true);
      expect(pod.spec?.containers[0].resources?.limits?.['nvidia.com/gpu']).toBe('4');
      const env = Object.fromEntries((pod.spec?.containers[0].env ?? []).filter((v) => v.value !== undefined).map((v) => [v.name, v.value]));
      expect(env).toMatchObject({ LWS_LEADER_ADDRESS: `wide-decode-0.wide-decode.${ns}`, LWS_GROUP_SIZE: '2' });
    }
    // The container's own script gave each its ranks: the worker starts at rank 4 of 8.
    const started = (pod: string) => kubelet.commandLines.get(pod)?.filter((a) => a.startsWith('--data-parallel-'));
    expect(started('wide-decode-0')).toEqual(['--data-parallel-size=8', '--data-parallel-size-local=4', '--data-parallel-rpc-port=5555', '--data-parallel-multi-port-external-lb', `--data-parallel-address=wide-decode-0.wide-decode.${ns}`, '--data-parallel-start-rank=0']);
    expect(started('wide-decode-0-1')).toEqual(['--data-parallel-size=8', '--data-parallel-size-local=4', '--data-parallel-rpc-port=5555', '--data-parallel-multi-port-external-lb', `--data-parallel-address=wide-decode-0.wide-decode.${ns}`, '--data-parallel-start-rank=4']);
    // The pool's ports are the ranks'; the controller wrote the LeaderWorkerSet's status.
    const pool = (await custom.getNamespacedCustomObject({ group: 'inference.networking.k8s.io', version: 'v1', namespace: ns, plural: 'inferencepools', name: 'wide' })) as { spec: { targetPorts: Array<{ number: number }> } };
    expect(pool.spec.targetPorts.map((x) => x.number)).toEqual([8000, 8001, 8002, 8003]);
    const lws = (await custom.getNamespacedCustomObject({ group: 'leaderworkerset.x-k8s.io', version: 'v1', namespace: ns, plural: 'leaderworkersets', name: 'wide-decode' })) as { status: { readyReplicas: number; conditions: Array<{ type: string; status: string }> } };
    expect(lws.status.readyReplicas).toBe(1);
    expect(lws.status.conditions.find((c) => c.type === 'Available')?.status).toBe('True');
    expect((e.smoke as { status_code: number }).status_code).toBe(200);
    // A delete removes it; the controller's objects go with it, and so does the namespace.
    expect((await api('DELETE', `/api/v1/deployments/executions/${id}`)).statusCode).toBe(204);
    const left = await core.readNamespace({ name: ns }).catch(() => null);
    expect(left === null || !!left.metadata?.deletionTimestamp, 'the namespace is deleted').toBe(true);
  });
});

describe('durable', { timeout: 300_000 }, () => {
  it('survives a restart of ironlens in the middle of a deployment: the interrupted job is taken up again', async () => {
    writeFileSync(join(gate, 'hold'), '');
    const id = await deploy({ model: 'Qwen/Qwen3-0.6B-Base', deployment_name: 'restart', node: 'gpu-nv-0001' });
    await until('helm held', async () => existsSync(join(gate, 'waiting')));
    const firstJob = (await get(id)).job!;
    await t.restart();
    // The new process takes it up; helm is held again, then let go.
    await until('taken up by a new job', async () => {
      const e = await get(id);
      return e.job && (e.job as unknown as { id: string }).id !== (firstJob as unknown as { id: string }).id ? e : null;
    });
    rmSync(join(gate, 'hold'));
    const e = await reach(id, ['ready', 'failed']);
    expect(e.status, String(e.reason)).toBe('ready');
    const jobs = await t.services.runner.repository.list({ kind: 'deployments.deploy', subject: id });
    expect(jobs.map((j) => [j.status, j.error])).toEqual([
      ['success', null],
      ['failed', 'interrupted: the process stopped while the job was running'],
    ]);
    expect((await api('DELETE', `/api/v1/deployments/executions/${id}`)).statusCode).toBe(204);
  });
});

describe('two models on one gateway', { timeout: 300_000 }, () => {
  it('two HTTPRoutes, each matching its base model; deleting one leaves the other and every user object untouched', async () => {
    const second = await deploy({ model: 'ibm-granite/granite-3.3-2b-instruct', deployment_name: 'granite', accelerator: 'xpu', replicas: 1, tensor_parallel_size: 2 });
    const e2 = await reach(second, ['ready', 'failed']);
    expect(e2.status, String(e2.reason)).toBe('ready');
    expect(await nodesOf(e2.namespace)).toEqual(['gpu-intel-0002']);
    const routes = (await custom.listNamespacedCustomObject({ ...GW, namespace: gwNs, plural: 'httproutes' })).items as Array<{ metadata: { name: string }; spec: { rules: Array<{ matches: Array<{ headers: Array<{ value: string }> }> }> }; status: { parents: Array<{ conditions: Array<{ type: string; status: string }> }> } }>;
    expect(routes.map((r) => [r.metadata.name, r.spec.rules[0].matches[0].headers[0].value]).sort()).toEqual([
      [`ilm-${first}`, 'Qwen/Qwen3-0.6B'],
      [`ilm-${second}`, 'ibm-granite/granite-3.3-2b-instruct'],
    ].sort());
    for (const r of routes) expect(r.status.parents[0].conditions.filter((c) => c.status === 'True').map((c) => c.type).sort()).toEqual(['Accepted', 'ResolvedRefs']);
    // User objects: one in the gateway namespace, one in the second deployment's namespace, one elsewhere.
    await core.createNamespacedConfigMap({ namespace: gwNs, body: { metadata: { name: 'user-notes' }, data: { a: '1' } } });
    await core.createNamespacedConfigMap({ namespace: e2.namespace, body: { metadata: { name: 'user-notes' }, data: { a: '2' } } });
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'user-notes' }, data: { a: '3' } } });
    const before = {
      firstRoute: (await custom.getNamespacedCustomObject({ ...GW, namespace: gwNs, plural: 'httproutes', name: `ilm-${first}` })) as { metadata: { resourceVersion: string } },
      firstDeploy: await apps.readNamespacedDeployment({ name: 'qwen-small-decode', namespace: `ironlens-${first}` }),
    };
    // A user adopted one of its objects (took ironlens' label off its Service): the delete leaves it.
    await core.patchNamespacedService({ name: 'granite-decode', namespace: e2.namespace, body: [{ op: 'remove', path: '/metadata/labels/ironlens.dev~1deployment' }] });
    expect((await api('DELETE', `/api/v1/deployments/executions/${second}`)).statusCode).toBe(204);
    expect((await get(second)).status).toBe('cleaned');
    await until('the second route gone', async () => !(await custom.getNamespacedCustomObject({ ...GW, namespace: gwNs, plural: 'httproutes', name: `ilm-${second}` }).catch(() => null)));
    expect((await core.readNamespacedConfigMap({ name: `ilm-${second}-model-map`, namespace: gwNs }).catch(() => null))).toBeNull();
    // Its own objects are gone; the user's are all there, the namespace kept for theirs.
    expect(await apps.readNamespacedDeployment({ name: 'granite-decode', namespace: e2.namespace }).catch(() => null)).toBeNull();
    for (const ns of [gwNs, e2.namespace, 'default']) expect((await core.readNamespacedConfigMap({ name: 'user-notes', namespace: ns })).data).toBeDefined();
    expect((await core.readNamespacedService({ name: 'granite-decode', namespace: e2.namespace })).metadata?.labels?.['ironlens.dev/deployment']).toBeUndefined();
    // Its namespace holds the user's objects: kept, not going away.
    expect((await core.readNamespace({ name: e2.namespace })).metadata?.deletionTimestamp).toBeUndefined();
    // The first is untouched: same resourceVersions, still ready, its route still accepted.
    const after = (await custom.getNamespacedCustomObject({ ...GW, namespace: gwNs, plural: 'httproutes', name: `ilm-${first}` })) as { metadata: { resourceVersion: string } };
    expect(after.metadata.resourceVersion).toBe(before.firstRoute.metadata.resourceVersion);
    expect((await apps.readNamespacedDeployment({ name: 'qwen-small-decode', namespace: `ironlens-${first}` })).metadata?.resourceVersion).toBe(before.firstDeploy.metadata?.resourceVersion);
    expect((await get(first)).status).toBe('rolled_back');
  });
});
