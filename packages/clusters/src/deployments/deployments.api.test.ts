import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClustersTestApp, multipart, startClustersApp } from '../testing/app';
import { emptyClusterAnswers, HostileApiServer } from '../testing/hostile-api-server';

// The deployments API without a real cluster (issue 28): a stand-in API server of the test's own
// answers the nodes and pods placement reads; every refusal happens before anything is applied
// (no request reaches a path of the deployment's namespace), with Lens' and ironlens' codes.

let t: ClustersTestApp;
let api: HostileApiServer;
let withGateway: string;
let sessionId: string;

const list = (kind: string, items: unknown[]) => ({ kind, apiVersion: 'v1', metadata: {}, items });
const gpuNode = (name: string, gpus: number, product: string) => ({
  metadata: { name, labels: { 'kubernetes.io/hostname': name, 'nvidia.com/gpu.product': product } },
  spec: {},
  status: { conditions: [{ type: 'Ready', status: 'True' }], capacity: { 'nvidia.com/gpu': String(gpus) }, allocatable: { 'nvidia.com/gpu': String(gpus) }, addresses: [] },
});
const gpuPod = (node: string, gpus: number) => ({ metadata: { name: `user-${node}`, namespace: 'default' }, spec: { nodeName: node, containers: [{ name: 'c', resources: { requests: { 'nvidia.com/gpu': String(gpus) } } }] }, status: { phase: 'Running' } });

async function register(name: string, fields: Record<string, string> = {}) {
  const { payload, headers } = multipart({ name, ...fields }, { content: api.kubeconfig() });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { cluster: { id: string }; sessionId: string };
}

const run = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/deployments/standard-vllm-runs', payload });
/** Nothing reached the deployment's namespace or a gateway route: nothing was applied. */
const nothingApplied = () => [...api.counts.keys()].filter((p) => /ironlens-|httproutes|referencegrants|\/namespaces\/[^/]+\/(deployments|services|configmaps)/.test(p));

beforeAll(async () => {
  api = new HostileApiServer({
    ...emptyClusterAnswers(),
    '/api/v1/nodes': { json: list('NodeList', [gpuNode('gpu-h100', 8, 'NVIDIA-H100-80GB-HBM3'), gpuNode('gpu-l4', 1, 'NVIDIA-L4')]) },
    '/api/v1/pods': { json: list('PodList', [gpuPod('gpu-h100', 6)]) },
    '/apis/resource.k8s.io/v1': { json: { kind: 'APIResourceList', apiVersion: 'v1', resources: [] } },
  });
  await api.start();
  t = await startClustersApp();
  // The gateway job of this registration runs against the stand-in and fails: no matter here.
  withGateway = (await register('gw', { gatewayProvider: 'envoy-ai-gateway' })).cluster.id;
  const plain = await register('plain');
  sessionId = plain.sessionId;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await api?.stop();
});

describe('POST /api/v1/deployments/standard-vllm-runs refuses before anything is applied', () => {
  it('422 insufficient_accelerators naming what is free where', async () => {
    const res = await run({ cluster_id: withGateway, model: 'Qwen/Qwen3-8B', deployment_name: 'too big', replicas: 2, tensor_parallel_size: 2 });
    expect(res.statusCode, res.body).toBe(422);
    const body = res.json();
    expect(body.code).toBe('insufficient_accelerators');
    expect(body.detail).toBe(
      "4 nvidia accelerator(s) needed (2 decode × 2, each pod's on one node) do not fit: no room for decode replica 1 (2); free: gpu-h100 (NVIDIA-H100-80GB-HBM3) 2 of 8 free; gpu-l4 (NVIDIA-L4) 1 of 1 free",
    );
    expect(body.free).toEqual([
      { node: 'gpu-h100', product: 'NVIDIA-H100-80GB-HBM3', resource: 'nvidia.com/gpu', allocatable: 8, requested: 6, free: 2, reported: null, mismatch: null },
      { node: 'gpu-l4', product: 'NVIDIA-L4', resource: 'nvidia.com/gpu', allocatable: 1, requested: 0, free: 1, reported: null, mismatch: null },
    ]);
    expect(nothingApplied()).toEqual([]);
    expect((await t.app.inject({ url: '/api/v1/deployments/executions' })).json()).toEqual({ items: [] });
  });

  it('the placement preview says the same without the 422', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/deployments/placement', payload: { cluster_id: withGateway, model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 3, tensor_parallel_size: 1, gpu_product: 'NVIDIA-H100-80GB-HBM3' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ fits: false, placement: { needed: 3, nodes: [{ node: 'gpu-h100', free: 2 }] } });
    const ok = await t.app.inject({ method: 'POST', url: '/api/v1/deployments/placement', payload: { cluster_id: withGateway, model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1, gpu_product: 'NVIDIA-L4' } });
    expect(ok.json()).toMatchObject({ fits: true, detail: null, placement: { assignments: [{ role: 'decode', replica: 0, node: 'gpu-l4', devices: 1 }] } });
  });

  it('a pin the cluster does not have: 422 accelerator_not_found', async () => {
    expect((await run({ cluster_id: withGateway, model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1, gpu_product: 'NVIDIA-B200' })).json()).toMatchObject({
      status: 422,
      code: 'accelerator_not_found',
    });
    expect((await run({ cluster_id: withGateway, model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1, node: 'gpu-nowhere' })).json().code).toBe('accelerator_not_found');
    expect(nothingApplied()).toEqual([]);
  });

  it('wide-EP without the LeaderWorkerSet CRD: 422 lws_not_installed', async () => {
    const res = await run({ cluster_id: withGateway, model: 'deepseek-ai/DeepSeek-R1', deployment_name: 'wide', replicas: 1, tensor_parallel_size: 1, path: 'wide-ep', wide_ep: { group_size: 1, data_parallel_local: 1 } });
    expect(res.json()).toMatchObject({ status: 422, code: 'lws_not_installed' });
    expect(nothingApplied()).toEqual([]);
  });

  it('a published path on a cluster without a shared gateway: 409 gateway_not_configured; by a Lens session id', async () => {
    const res = await run({ cluster_session_id: sessionId, model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1 });
    expect(res.json()).toMatchObject({ status: 409, code: 'gateway_not_configured' });
    const stale = await run({ cluster_session_id: '00000000-0000-4000-8000-000000000000', model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1 });
    expect(stale.json()).toMatchObject({ status: 404, code: 'cluster_session_inactive' });
    expect((await run({ model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1 })).json().code).toBe('deployment_request_invalid');
    expect((await run({ cluster_id: 'deadbeef', model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1 })).json().code).toBe('cluster_not_found');
  });

  it('fields outside their grammar are 422 validation_failed: a model that is not an id, an argument ironlens sets, an unknown field', async () => {
    const bad = [
      { model: 'Qwen/Qwen3 --trust-remote-code', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1 },
      { model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 0, tensor_parallel_size: 1 },
      { model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1, vllm_arguments: [{ name: 'x', value: 'a\nb' }] },
      { model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1, image: 'evil' },
    ];
    for (const b of bad) expect((await run({ cluster_id: withGateway, ...b })).json()).toMatchObject({ status: 422, code: 'validation_failed' });
    expect((await run({ cluster_id: withGateway, model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1, vllm_arguments: [{ name: 'port', value: '1' }] })).json().code).toBe('deployment_request_invalid');
    expect((await run({ cluster_id: withGateway, model: 'Qwen/Qwen3-8B', deployment_name: 'x', replicas: 1, tensor_parallel_size: 1, storage_type: 'pvc', pvc_name: 'x' })).json().code).toBe('storage_type_unsupported');
    expect(nothingApplied()).toEqual([]);
  });
});

describe('executions, runs and the model service without deployments', () => {
  it('404 for an unknown execution, run, pod; 401/403 for /v1/models without a current gateway key', async () => {
    for (const url of ['/api/v1/deployments/executions/0123456789ab', '/api/v1/deployments/executions/0123456789ab/pods', '/api/v1/deployments/executions/not-an-id']) {
      expect((await t.app.inject({ url })).json()).toMatchObject({ status: 404, code: 'deployment_not_found' });
    }
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/deployments/runs/run-0123456789ab/cancel' })).json()).toMatchObject({ status: 404, code: 'deployment_run_not_found' });
    expect((await t.app.inject({ method: 'DELETE', url: '/api/v1/deployments/executions/0123456789ab' })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'PATCH', url: '/api/v1/deployments/executions/0123456789ab', payload: {} })).json().code).toBe('validation_failed');
    expect((await t.app.inject({ url: '/v1/models' })).json()).toMatchObject({ status: 401, code: 'gateway_unauthorized' });
    expect((await t.app.inject({ url: '/v1/models', headers: { authorization: 'Bearer ilgw_forged' } })).json()).toMatchObject({ status: 403, code: 'gateway_forbidden' });
    expect((await t.app.inject({ url: '/api/v1/model-service/models' })).json()).toEqual({ items: [] });
  });

  it('a gateway key lists its cluster’s published models (none yet), by Authorization or x-api-key', async () => {
    const key = (await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${withGateway}/gateway/keys`, payload: { name: 'team-a' } })).json().key as string;
    expect((await t.app.inject({ url: '/v1/models', headers: { authorization: `Bearer ${key}` } })).json()).toEqual({ object: 'list', data: [] });
    expect((await t.app.inject({ url: '/v1/models', headers: { 'x-api-key': key } })).json()).toEqual({ object: 'list', data: [] });
  });

  it('the accelerators of a cluster, per node', async () => {
    const res = await t.app.inject({ url: `/api/cluster/clusters/${withGateway}/accelerators` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      clusterId: withGateway,
      lws: false,
      accelerators: [
        {
          accelerator: 'nvidia',
          resource: 'nvidia.com/gpu',
          products: ['NVIDIA-H100-80GB-HBM3', 'NVIDIA-L4'],
          nodes: [
            { node: 'gpu-h100', product: 'NVIDIA-H100-80GB-HBM3', resource: 'nvidia.com/gpu', allocatable: 8, requested: 6, free: 2, reported: null, mismatch: null },
            { node: 'gpu-l4', product: 'NVIDIA-L4', resource: 'nvidia.com/gpu', allocatable: 1, requested: 0, free: 1, reported: null, mismatch: null },
          ],
        },
      ],
    });
  });
});
