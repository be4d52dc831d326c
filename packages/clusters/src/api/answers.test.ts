import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHttpApp, type Job, type JobContext, registeredRoutes } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { bootstrapPlugin } from '../bootstrap/bootstrap.routes';
import type { BootstrapService } from '../bootstrap/bootstrap.service';
import { type ClustersTestApp, closedPort, multipart, startClustersApp } from '../testing/app';
import { HostileApiServer } from '../testing/hostile-api-server';
import type { BootstrapStatus, BootstrapSummary, HostKeyItem, PreflightResult } from './bootstrap';

// Issue 19: fast-json-stringify writes only what a response schema lists. Every route of the
// cluster manager is called here through Fastify, and the JSON it answers is compared with the
// object its service method returned (taken at the method, before serialization): a field a
// schema does not list, or lists under another name, fails its route. The cluster is a stand-in
// API server of the test's own on loopback (`HostileApiServer`, here with well-formed answers),
// answering objects with every field the services read filled in, so nullable figures come back
// non-null and optional fields present.

let t: ClustersTestApp;
let api: HostileApiServer;
let id: string;
let draftId: string;
let sessionId: string;

type ServiceName = 'clusters' | 'hfToken' | 'software' | 'prepull' | 'crds' | 'overview' | 'platform' | 'gateway' | 'deployments';

/**
 * Calls a route with `svc.fn` wrapped: the first value that method returns during the request
 * is what the service answered.
 */
async function answered(svc: ServiceName, fn: string, req: { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; url: string; payload?: unknown; headers?: Record<string, string> }) {
  const target = t.services[svc] as unknown as Record<string, (...a: unknown[]) => unknown>;
  const original = target[fn];
  expect(typeof original, `${svc}.${fn}`).toBe('function');
  const seen: unknown[] = [];
  target[fn] = function (this: unknown, ...args: unknown[]) {
    const out = original.apply(this, args);
    if (out instanceof Promise) return out.then((v) => (seen.push(v), v));
    seen.push(out);
    return out;
  };
  try {
    const res = await t.app.inject({ method: req.method, url: req.url, payload: req.payload as never, headers: req.headers });
    expect(seen.length, `${req.method} ${req.url} called ${svc}.${fn}`).toBeGreaterThan(0);
    return { res, returned: JSON.parse(JSON.stringify(seen[0] ?? null)) };
  } finally {
    target[fn] = original;
  }
}

/** The route answers exactly what the service returned: no field dropped, renamed or added. */
async function same(svc: ServiceName, fn: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, status = 200) {
  const { res, returned } = await answered(svc, fn, { method, url, payload });
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json()).toEqual(returned);
  covered.add(`${method} ${url.replace(/\?.*$/, '')}`);
  return returned;
}

/** Every route called, by method and concrete path (matched against the registered routes at the end). */
const covered = new Set<string>();

const list = (kind: string, items: unknown[]) => ({ kind, apiVersion: 'v1', metadata: {}, items });
const ready = [{ type: 'Ready', status: 'True' }];

function node(name: string, o: { controlPlane?: boolean; gpus?: number; unschedulable?: boolean } = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, ...(o.controlPlane ? { 'node-role.kubernetes.io/control-plane': '' } : {}), ...(o.gpus ? { 'nvidia.com/gpu.memory': '81559' } : {}) },
    },
    spec: { unschedulable: o.unschedulable ?? false },
    status: {
      // 7.5 cores: the overview's cpu figure is a quantity, not a count.
      capacity: { cpu: '7500m', memory: '64Gi', ...(o.gpus ? { 'nvidia.com/gpu': String(o.gpus) } : {}) },
      allocatable: { cpu: '7', memory: '63Gi', ...(o.gpus ? { 'nvidia.com/gpu': String(o.gpus) } : {}) },
      conditions: ready,
      nodeInfo: { kubeletVersion: 'v1.36.0', osImage: 'Debian GNU/Linux 13 (trixie)' },
      images: [{ names: ['ghcr.io/llm-d/llm-d-cuda@sha256:0123', 'ghcr.io/llm-d/llm-d-cuda:v0.9.0'] }],
      addresses: [{ type: 'InternalIP', address: name === 'cp-0' ? '127.0.0.11' : '127.0.0.12' }],
    },
  };
}

const resources = (items: Array<[string, string, boolean]>) => ({
  kind: 'APIResourceList',
  apiVersion: 'v1',
  resources: items.map(([name, kind, namespaced]) => ({ name, kind, namespaced, verbs: ['get', 'list', 'create', 'patch', 'delete'] })),
});

function prepullDaemonSet(cluster: string) {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: `prepull-${cluster}`, namespace: 'lens-images' },
    spec: { template: { spec: { containers: [{ name: 'img-0', env: [{ name: 'IMAGE', value: 'ghcr.io/llm-d/llm-d-cuda:v0.9.0' }] }] } } },
    status: { desiredNumberScheduled: 2, numberReady: 1 },
  };
}

function prepullPod(nodeName: string, ok: boolean) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `prepull-${nodeName}`, namespace: 'lens-images' },
    spec: { nodeName },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ok ? 'True' : 'False' }], containerStatuses: [{ name: 'img-0', ready: ok, restartCount: ok ? 0 : 1 }] },
  };
}

beforeAll(async () => {
  api = new HostileApiServer({
    '/readyz': { raw: 'ok', contentType: 'text/plain' },
    '/version': { json: { major: '1', minor: '36', gitVersion: 'v1.36.0' } },
    '/api/v1': { json: resources([['namespaces', 'Namespace', false], ['secrets', 'Secret', true], ['nodes', 'Node', false], ['services', 'Service', true]]) },
    '/apis/apps/v1': { json: resources([['daemonsets', 'DaemonSet', true], ['deployments', 'Deployment', true]]) },
    '/apis/gateway.networking.k8s.io/v1': { json: resources([['gatewayclasses', 'GatewayClass', false], ['gateways', 'Gateway', true]]) },
    '/api/v1/nodes': { json: list('NodeList', [node('cp-0', { controlPlane: true }), node('gpu-0', { gpus: 8 })]) },
    '/api/v1/nodes/gpu-0': { json: node('gpu-0', { gpus: 8, unschedulable: true }) },
    '/api/v1/nodes/cp-0/proxy/stats/summary': { json: { node: { fs: { capacityBytes: 100e9, usedBytes: 40e9, availableBytes: 60e9 } } } },
    '/api/v1/nodes/gpu-0/proxy/stats/summary': { json: { node: { fs: { capacityBytes: 200e9, usedBytes: 50e9, availableBytes: 150e9 } } } },
    '/api/v1/namespaces': { json: list('NamespaceList', [{ metadata: { name: 'default' } }, { metadata: { name: 'monitoring' } }]) },
    '/api/v1/namespaces/models': { json: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'models' } } },
    '/api/v1/namespaces/lens-images': { json: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lens-images' } } },
    '/api/v1/namespaces/lens-node-tuning': { json: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lens-node-tuning' } } },
    '/api/v1/namespaces/models/secrets': { json: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'hf', namespace: 'models' } } },
    '/api/v1/namespaces/models/secrets/hf': { json: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'hf', namespace: 'models' } } },
    '/apis/apps/v1/deployments': {
      json: list('DeploymentList', [{ metadata: { name: 'web', namespace: 'default' }, spec: { replicas: 2 }, status: { readyReplicas: 2, availableReplicas: 2 } }]),
    },
    '/apis/apps/v1/daemonsets': {
      json: list('DaemonSetList', [{ metadata: { name: 'nvidia-device-plugin-daemonset', namespace: 'kube-system' }, status: { numberReady: 1, desiredNumberScheduled: 1 } }]),
    },
    '/apis/apps/v1/statefulsets': { json: list('StatefulSetList', [{ metadata: { name: 'prometheus-k8s', namespace: 'monitoring' }, spec: { replicas: 1 }, status: { readyReplicas: 1 } }]) },
    '/api/v1/pods': {
      json: list('PodList', [{ metadata: { name: 'llm', namespace: 'default' }, spec: { nodeName: 'gpu-0', containers: [{ name: 'c', resources: { requests: { 'nvidia.com/gpu': '2' } } }] }, status: { phase: 'Running' } }]),
    },
    '/api/v1/services': {
      json: list('ServiceList', [
        { metadata: { name: 'prometheus', namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'prometheus' } }, spec: { ports: [{ name: 'web', port: 9090, nodePort: 30090 }] } },
      ]),
    },
    '/api/v1/namespaces/monitoring/services/prometheus:web/proxy/api/v1/query': {
      json: { status: 'success', data: { result: [{ metric: { instance: 'gpu-0' }, value: [0, '34359738368'] }] } },
    },
    '/apis/resource.k8s.io/v1/resourceslices': { json: list('ResourceSliceList', []) },
    '/apis/resource.k8s.io/v1/resourceclaims': { json: list('ResourceClaimList', []) },
    '/api/v1/secrets': {
      json: list('SecretList', [
        { metadata: { name: 'hf', namespace: 'models' }, data: { HF_TOKEN: 'aGZfeA==' } },
        { metadata: { name: 'other', namespace: 'default' }, data: { password: 'eA==' } },
      ]),
    },
    '/api/v1/namespaces/lens-images/pods': { json: list('PodList', [prepullPod('cp-0', true), prepullPod('gpu-0', false)]) },
    ...Object.fromEntries(
      ['gatewayclasses.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io', 'httproutes.gateway.networking.k8s.io', 'inferencepools.inference.networking.k8s.io'].map((n) => [
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}`,
        { json: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: n }, status: { conditions: [{ type: 'Established', status: 'True' }] } } },
      ]),
    ),
  });
  await api.start();
  t = await startClustersApp({
    env: { IRONLENS_GITHUB_MIRROR: `http://127.0.0.1:${await closedPort()}`, IRONLENS_CLUSTER_SUMMARY_BUDGET_MS: '10000', IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '5000' },
  });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await api?.stop();
});

describe('every cluster-manager route answers exactly what its service returned', () => {
  it('POST /api/cluster/clusters (201) and PATCH', async () => {
    const { payload, headers } = multipart(
      {
        name: 'answers',
        description: 'every field filled',
        proxy: JSON.stringify({ mode: 'custom', httpProxy: 'http://proxy.example:3128', httpsProxy: 'http://proxy.example:3128', noProxy: '127.0.0.1,.svc' }),
        gatewayProvider: 'gke',
        gatewayPort: '30100',
        gatewayPublicUrl: '',
      },
      { content: api.kubeconfig() },
    );
    const { res, returned } = await answered('clusters', 'create', { method: 'POST', url: '/api/cluster/clusters', payload, headers });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual(returned);
    expect(Object.keys(res.json().cluster)).toHaveLength(22);
    covered.add('POST /api/cluster/clusters');
    id = returned.cluster.id;
    sessionId = returned.sessionId;
    const draft = multipart({ name: 'answers-draft', draft: 'true' }, { content: api.kubeconfig() });
    draftId = (await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', ...draft })).json().cluster.id;
    api.set(`/apis/apps/v1/namespaces/lens-images/daemonsets/prepull-${id}`, { json: prepullDaemonSet(id) });

    const patched = await same('clusters', 'update', 'PATCH', `/api/cluster/clusters/${id}`, { description: 'patched', gatewayPublicUrl: 'http://gw.example/v1' });
    expect(patched.sessionId).toBeNull();
  });

  it('the reads without a cluster: versions, lens-hosts, the list', async () => {
    expect(Object.keys(await same('clusters', 'lensHosts', 'GET', '/api/cluster/lens-hosts'))).toEqual(['items']);
    const listed = await same('clusters', 'list', 'GET', '/api/cluster/clusters?includeDrafts=true');
    expect(listed.items.length).toBe(2);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/versions' });
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(t.services.profile)));
    covered.add('GET /api/v1/versions');
    // Lens' database check: the store this suite runs on (SQLite, or the PostgreSQL run's), never its user or password.
    const db = (await t.app.inject({ method: 'GET', url: '/api/v1/system/database' })).json();
    expect(db).toEqual(t.target.url ? { configured: true, mode: 'external', engine: 'postgresql', displayTarget: expect.stringMatching(/^[^@:/]+:\d+\/[^/]+$/) } : { configured: true, mode: 'embedded', engine: 'sqlite', displayTarget: null });
    if (t.target.url) expect(JSON.stringify(db)).not.toContain(new URL(t.target.url).password || '\u0000');
    expect(db).toEqual(JSON.parse(JSON.stringify(t.services.database)));
    covered.add('GET /api/v1/system/database');
  });

  it('HF token secret: create (201) and rotate', async () => {
    await same('hfToken', 'create', 'POST', `/api/cluster/clusters/${id}/hf-token-secrets`, { namespace: 'models', name: 'hf', token: 'hf_x' }, 201);
    await same('hfToken', 'rotate', 'PUT', `/api/cluster/clusters/${id}/hf-token-secret`, { token: 'hf_y' });
  });

  it('software downloads (202) and their state', async () => {
    await same('software', 'start', 'POST', `/api/cluster/clusters/${id}/software-downloads`, {}, 202);
    await same('software', 'status', 'GET', `/api/cluster/clusters/${id}/software-downloads`);
  });

  it('image pre-pull: start and state, with images and nodes', async () => {
    await same('prepull', 'start', 'POST', `/api/cluster/clusters/${id}/images/prepull`, { accelerators: ['nvidia'] });
    const state = await same('prepull', 'status', 'GET', `/api/cluster/clusters/${id}/images/prepull`);
    expect(state.images.length).toBeGreaterThan(0);
    expect(state.nodes).toHaveLength(2);
  });

  it('image pre-pull state of pods whose restart counts are not numbers (`"many"`, -3) answers 200 with finite counts', async () => {
    const odd = prepullPod('gpu-0', false);
    (odd.status.containerStatuses[0] as { restartCount: unknown }).restartCount = 'many';
    const neg = prepullPod('cp-0', false);
    (neg.status.containerStatuses[0] as { restartCount: unknown }).restartCount = -3;
    api.set('/api/v1/namespaces/lens-images/pods', { json: list('PodList', [neg, odd]) });
    try {
      const state = await same('prepull', 'status', 'GET', `/api/cluster/clusters/${id}/images/prepull`);
      expect(state.nodes.map((n: { restarts: number }) => n.restarts)).toEqual([0, 0]);
    } finally {
      api.set('/api/v1/namespaces/lens-images/pods', { json: list('PodList', [prepullPod('cp-0', true), prepullPod('gpu-0', false)]) });
    }
  });

  it('CRDs: apply (each bundle’s outcome) and state', async () => {
    await same('crds', 'apply', 'POST', `/api/cluster/clusters/${id}/crds`);
    expect(await same('crds', 'status', 'GET', `/api/cluster/clusters/${id}/crds`)).toEqual({ gateway_api: 'ready', gateway_api_inference_extension: 'ready' });
  });

  it('kubernetes-version, reachable and not', async () => {
    expect((await same('platform', 'kubernetesVersion', 'GET', `/api/cluster/clusters/${id}/kubernetes-version`)).reachable).toBe(true);
    api.set('/version', { status: 500, json: { kind: 'Status', code: 500 } });
    try {
      expect((await same('platform', 'kubernetesVersion', 'GET', `/api/cluster/clusters/${id}/kubernetes-version`)).reachable).toBe(false);
    } finally {
      api.set('/version', { json: { major: '1', minor: '36', gitVersion: 'v1.36.0' } });
    }
  });

  it('gateway-port-check: free, held (with the owner and the reason) and out of range', async () => {
    expect((await same('clusters', 'gatewayPortCheck', 'GET', `/api/cluster/clusters/${id}/gateway-port-check?port=30200`)).available).toBe(true);
    expect(await same('clusters', 'gatewayPortCheck', 'GET', `/api/cluster/clusters/${id}/gateway-port-check?port=30090`)).toMatchObject({ owner: 'monitoring/prometheus', reason: expect.any(String) });
    expect((await same('clusters', 'gatewayPortCheck', 'GET', `/api/cluster/clusters/${id}/gateway-port-check?port=80`)).reason).toEqual(expect.any(String));
  });

  it('cordon and uncordon: a worker, a control-plane node, an unknown name', async () => {
    for (const verb of ['cordon', 'uncordon']) {
      const out = await same('platform', 'setSchedulable', 'POST', `/api/cluster/clusters/${id}/nodes/${verb}`, { names: ['gpu-0', 'cp-0', 'nope'] });
      expect(out.items).toHaveLength(3);
    }
  });

  it('model secrets, the session, the session info and the legacy session', async () => {
    expect((await same('platform', 'modelSecrets', 'GET', `/api/cluster/model-secrets?clusterId=${id}`)).items).toEqual([{ namespace: 'models', name: 'hf', hostManaged: true }]);
    expect((await same('clusters', 'session', 'GET', `/api/cluster/session?clusterId=${id}`)).sessionId).toBe(sessionId);
    await same('clusters', 'sessionInfo', 'GET', `/api/cluster/sessions/${sessionId}`);
    await same('clusters', 'legacySession', 'GET', `/api/cluster-overview/sessions/${sessionId}`);
  });

  it('planning discovery: a list and the version passed through whole, null when the read fails', async () => {
    const nodes = await same('platform', 'planningDiscovery', 'GET', `/api/cluster/sessions/${sessionId}/planning-discovery/nodes`);
    expect(nodes.result.items[0].status.capacity.cpu).toBe('7500m');
    expect((await same('platform', 'planningDiscovery', 'GET', `/api/cluster/sessions/${sessionId}/planning-discovery/version`)).result).toEqual({ major: '1', minor: '36', gitVersion: 'v1.36.0' });
    expect((await same('platform', 'planningDiscovery', 'GET', `/api/cluster/sessions/${sessionId}/planning-discovery/runtimeclasses`)).result).toBeNull();
  });

  it('the shared gateway: its status (with conditions), every cluster’s, keys, a reconcile job', async () => {
    const first = await same('gateway', 'status', 'GET', `/api/cluster/clusters/${id}/gateway/status`);
    const ns = first.gatewayNamespace as string;
    const cond = (type: string) => ({ type, status: 'True', reason: type, message: `${type} by the stand-in`, lastTransitionTime: '2026-09-23T09:00:00Z' });
    api.set(`/apis/gateway.networking.k8s.io/v1/gatewayclasses/${first.gatewayClassName}`, { json: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: first.gatewayClassName }, status: { conditions: [cond('Accepted')] } } });
    api.set(`/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways/${first.gatewayName}`, {
      json: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name: first.gatewayName, namespace: ns }, status: { conditions: [cond('Programmed')], addresses: [{ value: '127.0.0.50' }] } },
    });
    const view = await same('gateway', 'status', 'GET', `/api/cluster/clusters/${id}/gateway/status`);
    expect(view.gatewayClassConditions[0].lastTransitionTime).toBe('2026-09-23T09:00:00Z');
    expect(view.gatewayReady).toBe(true);
    expect((await same('gateway', 'allStatus', 'GET', '/api/v1/model-service/admin/gateway/status')).clusters).toHaveLength(1);

    const created = await same('gateway', 'createKey', 'POST', `/api/cluster/clusters/${id}/gateway/keys`, { name: 'team-a' }, 201);
    expect(created.key).toEqual(expect.any(String));
    expect((await same('gateway', 'listKeys', 'GET', `/api/cluster/clusters/${id}/gateway/keys`)).items).toHaveLength(1);
    const hook = await t.app.inject({ method: 'POST', url: `/api/v1/internal/model-gateway/authorize/cluster/${id}/v1/models`, headers: { authorization: `Bearer ${created.key}` } });
    expect(hook.json()).toEqual({ allowed: true });
    const root = await t.app.inject({ method: 'GET', url: `/api/v1/internal/model-gateway/authorize/cluster/${id}`, headers: { authorization: `Bearer ${created.key}` } });
    expect(root.json()).toEqual({ allowed: true });
    covered.add(`POST /api/v1/internal/model-gateway/authorize/cluster/${id}/v1/models`).add(`GET /api/v1/internal/model-gateway/authorize/cluster/${id}`);
    const del = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${id}/gateway/keys/team-a` });
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    covered.add(`DELETE /api/cluster/clusters/${id}/gateway/keys/team-a`);

    // The job routes answer `{job}`: the job's fields, exactly these (input, actor and the lease stay inside).
    const jobFields = (j: Job) => JSON.parse(JSON.stringify({ id: j.id, kind: j.kind, subject: j.subject, status: j.status, stage: j.stage, percent: j.percent, message: j.message, log: j.log, result: j.result, error: j.error, createdAt: j.createdAt, startedAt: j.startedAt, finishedAt: j.finishedAt }));
    // The job's work is held until it is cancelled, so the cancel below always finds it running
    // (a reconcile against the stand-in ends in milliseconds, and on PostgreSQL it could end
    // before the cancel arrived: 409 job_finished, and no answer of gateway.cancel to compare).
    const gw = t.services.gateway as unknown as { work: (clusterId: string, force: boolean, ctx: JobContext) => Promise<unknown> };
    const work = gw.work;
    gw.work = (_clusterId, _force, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true }));
    onTestFinished(() => {
      gw.work = work;
    });
    const started = await answered('gateway', 'reconcile', { method: 'POST', url: `/api/cluster/clusters/${id}/gateway/reconcile` });
    expect(started.res.statusCode, started.res.body).toBe(202);
    expect(started.res.json()).toEqual({ job: jobFields(started.returned) });
    const jobId = started.returned.id as string;
    const read = await answered('gateway', 'job', { method: 'GET', url: `/api/cluster/clusters/${id}/gateway/jobs/${jobId}` });
    expect(read.res.json()).toEqual({ job: jobFields(read.returned) });
    const cancelled = await answered('gateway', 'cancel', { method: 'POST', url: `/api/cluster/clusters/${id}/gateway/jobs/${jobId}/cancel` });
    expect(cancelled.res.statusCode, cancelled.res.body).toBe(200);
    expect(cancelled.res.json()).toEqual({ job: jobFields(cancelled.returned) });
    covered
      .add(`POST /api/cluster/clusters/${id}/gateway/reconcile`)
      .add(`GET /api/cluster/clusters/${id}/gateway/jobs/${jobId}`)
      .add(`POST /api/cluster/clusters/${id}/gateway/jobs/${jobId}/cancel`);
  });

  it('model deployments: create (its job held), executions, pods, events, a log, PATCH, both cancels, the model service, accelerators, delete', async () => {
    const dep = t.services.deployments as unknown as { job: { run: (id: string, mode: string, ctx: JobContext) => Promise<unknown> }; repo: { update: (db: unknown, id: string, p: unknown, at: string) => Promise<void> } };
    const run = dep.job.run;
    // The job's work is held until cancelled: the routes answer from the record, a cancel always finds it running.
    dep.job.run = (_id, _mode, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true }));
    onTestFinished(() => {
      dep.job.run = run;
    });
    const body = { cluster_id: id, model: 'Qwen/Qwen3-0.6B', deployment_name: 'answers', description: 'every field', replicas: 1, tensor_parallel_size: 2, vllm_arguments: [{ name: 'enable-lora', value: 'true' }] };
    const preview = await same('deployments', 'preview', 'POST', '/api/v1/deployments/placement', body);
    expect(preview.fits, preview.detail).toBe(true);
    const created = await same('deployments', 'create', 'POST', '/api/v1/deployments/standard-vllm-runs', body);
    const exec = created.execution_id as string;
    const ns = `ironlens-${exec}`;
    // Every nullable field of the execution filled, as a deployment that became ready has them.
    const readiness = { pods: { ok: true, reason: null, by: 'kubelet' }, inferencePool: { ok: true, reason: 'checked', by: 'ironlens' }, httpRoute: { ok: true, reason: null, by: 'gke' }, smoke: { ok: true, reason: null, by: 'model-server' }, verdict: 'ready', checkedAt: '2026-09-23T10:00:00Z' };
    await dep.repo.update(t.store.db, exec, { readiness, reason: 'a reason', logs: 'last lines', failure: { title: 't', detail: 'd', code: 'deployment_failed', status: 'failed' }, smoke: { latency_ms: 12.5, at: '2026-09-23T10:00:00Z', status_code: 200, text: ' pong' }, endpoint: 'http://gw.example/v1', readySpec: null }, '2026-09-23T10:00:00Z');
    const one = await same('deployments', 'get', 'GET', `/api/v1/deployments/executions/${exec}`);
    expect(one.curl).toContain('X-Gateway-Base-Model-Name: Qwen/Qwen3-0.6B');
    expect(one.job.status).toMatch(/queued|running/);
    expect((await same('deployments', 'list', 'GET', `/api/v1/deployments/executions?statuses=validated&statuses=ready&query=answers&limit=5&cluster_id=${id}`)).items).toHaveLength(1);
    api.set(`/api/v1/namespaces/${ns}/pods`, {
      json: list('PodList', [
        {
          metadata: { name: 'answers-decode-0', namespace: ns, labels: { 'llm-d.ai/role': 'decode' }, creationTimestamp: '2026-09-23T10:00:00Z' },
          spec: { nodeName: 'gpu-0', containers: [{ name: 'vllm', image: 'ghcr.io/llm-d/llm-d-cuda:v0.10.0' }] },
          status: { phase: 'Running', podIP: '10.244.0.9', conditions: ready, containerStatuses: [{ name: 'vllm', image: 'ghcr.io/llm-d/llm-d-cuda:v0.10.0', ready: true, restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off' } } }] },
        },
      ]),
    });
    api.set(`/api/v1/namespaces/${ns}/events`, { json: list('EventList', [{ type: 'Warning', reason: 'BackOff', message: 'Back-off restarting', count: 3, lastTimestamp: '2026-09-23T10:00:00Z', involvedObject: { kind: 'Pod', name: 'answers-decode-0' } }]) });
    api.set(`/api/v1/namespaces/${ns}/pods/answers-decode-0/log`, { raw: 'INFO starting\nERROR bad\n', contentType: 'text/plain' });
    expect((await same('deployments', 'pods', 'GET', `/api/v1/deployments/executions/${exec}/pods`)).pods[0].status_reason).toBe('CrashLoopBackOff');
    expect((await same('deployments', 'events', 'GET', `/api/v1/deployments/executions/${exec}/events`)).events).toHaveLength(1);
    expect((await same('deployments', 'logs', 'GET', `/api/v1/deployments/executions/${exec}/pods/answers-decode-0/logs?tail=10&previous=true`)).logs).toBe('INFO starting\nERROR bad\n');
    await same('deployments', 'patch', 'PATCH', `/api/v1/deployments/executions/${exec}`, { display_name: 'Answers', description: 'patched' });
    const cancelled = await answered('deployments', 'cancelRun', { method: 'POST', url: `/api/v1/deployments/runs/${created.id}/cancel` });
    expect(cancelled.res.statusCode, cancelled.res.body).toBe(202);
    expect(cancelled.res.json()).toEqual(cancelled.returned);
    covered.add(`POST /api/v1/deployments/runs/${created.id}/cancel`);
    await t.services.runner.wait(one.job.id);
    // A new revision (a runtime PATCH) starts a job again; the execution's own cancel stops it.
    await same('deployments', 'patch', 'PATCH', `/api/v1/deployments/executions/${exec}`, { replicas: 2 });
    const again = await answered('deployments', 'cancelExecution', { method: 'POST', url: `/api/v1/deployments/executions/${exec}/cancel` });
    expect(again.res.statusCode, again.res.body).toBe(202);
    expect(again.res.json()).toEqual(again.returned);
    covered.add(`POST /api/v1/deployments/executions/${exec}/cancel`);

    await dep.repo.update(t.store.db, exec, { status: 'ready' }, '2026-09-23T10:00:00Z');
    const models = await same('deployments', 'models', 'GET', '/api/v1/model-service/models');
    expect(models.items[0]).toMatchObject({ id: exec, baseModel: 'Qwen/Qwen3-0.6B', baseUrl: 'http://gw.example/v1' });
    const key = (await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/gateway/keys`, payload: { name: 'models' } })).json().key as string;
    const openai = await answered('deployments', 'openAiModels', { method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${key}` } });
    expect(openai.res.json()).toEqual(openai.returned);
    expect(openai.returned.data).toEqual([{ id: 'Qwen/Qwen3-0.6B', object: 'model', created: expect.any(Number), owned_by: 'ironlens' }]);
    covered.add('GET /v1/models');
    expect((await same('deployments', 'inventory', 'GET', `/api/cluster/clusters/${id}/accelerators`)).accelerators[0].nodes[0]).toMatchObject({ node: 'gpu-0', allocatable: 8, requested: 2, free: 6 });

    const gone = await t.app.inject({ method: 'DELETE', url: `/api/v1/deployments/executions/${exec}?delete_namespace=false` });
    expect(gone.statusCode, gone.body).toBe(204);
    expect(gone.body).toBe('');
    covered.add(`DELETE /api/v1/deployments/executions/${exec}`);
  });

  it('the live overview: every node, component, namespace and hardware figure, and the gateway', async () => {
    const o = await same('overview', 'overview', 'GET', `/api/cluster/overview?clusterId=${id}`);
    expect(o.kubernetes.nodes).toHaveLength(2);
    expect(o.kubernetes.nodes[0].cpu).toBe(7.5);
    // The figures that are null when their source is unavailable are all known here.
    for (const k of ['memoryUsagePercent', 'memoryAvailableBytes', 'diskBytes', 'diskUsedBytes', 'diskAvailableBytes', 'diskUsagePercent']) expect(o.kubernetes.hardware[k], k).not.toBeNull();
    expect(o.kubernetes.hardware.accelerators).toEqual([{ id: 'nvidia-cuda', gpuCount: 8 }]);
    expect(o.gateway.clusterId).toBe(id);
  });

  it('the overview of a node whose figures are not numbers (`cpu: 1.2.3`, a GPU memory label `lots`) answers 200 with finite numbers', async () => {
    const odd = node('odd-0', { gpus: 2 });
    odd.status.capacity.cpu = '1.2.3';
    odd.metadata.labels['nvidia.com/gpu.memory'] = 'lots';
    api.set('/api/v1/nodes', { json: list('NodeList', [node('cp-0', { controlPlane: true }), odd]) });
    try {
      const o = await same('overview', 'overview', 'GET', `/api/cluster/overview?clusterId=${id}`);
      const n = o.kubernetes.nodes.find((x: { name: string }) => x.name === 'odd-0');
      expect(n).toMatchObject({ cpu: 0, gpuCount: 2, vramBytes: 0 });
      expect(o.kubernetes.hardware.cpuCores).toBe(7.5);
    } finally {
      api.set('/api/v1/nodes', { json: list('NodeList', [node('cp-0', { controlPlane: true }), node('gpu-0', { gpus: 8 })]) });
    }
  });

  it('disconnect and delete answer 204 without a body', async () => {
    const off = await t.app.inject({ method: 'POST', url: `/api/cluster-overview/sessions/${sessionId}/disconnect` });
    expect(off.statusCode).toBe(204);
    expect(off.body).toBe('');
    const gone = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${draftId}` });
    expect(gone.statusCode, gone.body).toBe(204);
    expect(gone.body).toBe('');
    covered.add(`POST /api/cluster-overview/sessions/${sessionId}/disconnect`).add(`DELETE /api/cluster/clusters/${draftId}`);
  });

  it('errors keep every problem+json field: a schema violation lists its errors', async () => {
    const res = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/nodes/cordon`, payload: { names: [] } });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ type: 'about:blank', title: 'Unprocessable Entity', status: 422, detail: expect.any(String), code: 'validation_failed', errors: [expect.objectContaining({ loc: ['body', 'names'] })] });
  });

  it('no route of the plugin was left out', () => {
    const pattern = (url: string) => new RegExp(`^${url.replace(/:[a-z_]+/g, '[^/]+').replace(/\*/g, '.+')}$`);
    const routes = registeredRoutes(t.app).filter((r) => !r.hidden && ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method));
    const calls = [...covered];
    // The gateway's authorization hook is one handler on every method (`app.all`): called with two of them.
    const anyMethod = (r: { url: string }) => r.url.startsWith('/api/v1/internal/model-gateway/authorize/');
    const missing = routes
      .filter((r) => !calls.some((c) => (anyMethod(r) || c.startsWith(`${r.method} `)) && pattern(r.url).test(c.slice(c.indexOf(' ') + 1))))
      .map((r) => `${r.method} ${r.url}`);
    expect(routes.length).toBeGreaterThan(25);
    expect(missing).toEqual([]);
  });
});

describe('the bootstrap routes answer every field of the service’s answers (seed 000’s examples and ironlens’ additions)', () => {
  // A stand-in of the service answering the seed's examples with every optional field present.
  const hostKeys: { items: HostKeyItem[] } = {
    items: [
      { host: '10.0.0.10', port: 22, algorithm: 'ssh-ed25519', fingerprint: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', workerId: 'w1' },
      { host: '10.0.0.12', port: 22, error: 'Connection timed out' },
    ],
  };
  const preflight: PreflightResult = {
    items: [
      { host: '10.0.0.1', workerId: 'w1', roles: ['control-plane'], state: 'passed', checks: [{ id: 'ssh', label: 'SSH connectivity', status: 'passed', detail: 'reachable' }, { id: 'sudo', label: 'Passwordless sudo', status: 'passed' }] },
      { host: '10.0.0.2', roles: ['worker'], state: 'failed', error: 'unreachable', checks: [{ id: 'ssh', label: 'SSH connectivity', status: 'failed', detail: 'timed out' }] },
    ],
    allPassed: false,
  };
  const summaries: { items: BootstrapSummary[] } = {
    items: [
      {
        id: 'bootstrap-5b7fd3a81290',
        phase: 'succeeded',
        error: null,
        nodes: [{ host: '10.0.0.1', port: 22, roles: ['control-plane'], username: 'root', workerId: 'w1' }],
        register: { name: 'lab', description: 'from the bootstrap' },
        clusterId: '1234abcd',
        kubeconfigDelivered: true,
        createdAt: '2026-09-23T09:00:00Z',
        finishedAt: '2026-09-23T09:30:00Z',
        actor: 'ops',
      },
      { id: 'bootstrap-000000000001', phase: 'failed', error: 'boom', nodes: [], register: null, clusterId: null, kubeconfigDelivered: false, createdAt: '2026-09-23T08:00:00Z', finishedAt: null },
    ],
  };
  const status: BootstrapStatus = { id: 'bootstrap-5b7fd3a81290', phase: 'succeeded', logTail: 'PLAY [all]\nok: [10-0-0-1]', error: null, kubeconfig: 'apiVersion: v1\nkind: Config\n', clusterId: null };
  const stub = {
    hostKeys: async () => hostKeys,
    preflight: async () => preflight,
    publicKey: () => ({ publicKey: 'ssh-ed25519 AAAA ironlens' }),
    list: async () => summaries,
    start: async () => ({ bootstrapId: 'bootstrap-5b7fd3a81290' }),
    status: async () => status,
    cancel: async () => {},
  };
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await createHttpApp({ title: 'bootstrap answers', docs: false });
    await app.register(bootstrapPlugin, { services: { bootstrap: stub as unknown as BootstrapService } });
    await app.ready();
  });
  afterAll(() => app?.close());

  const pin = { host: '10.0.0.1', port: 22, fingerprint: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' };
  const nodes = [{ host: '10.0.0.1', roles: ['control-plane'] }];
  for (const [method, url, payload, expected] of [
    ['POST', '/api/cluster/bootstrap/host-keys', { nodes: [{ host: '10.0.0.10-12' }] }, hostKeys],
    ['POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys: [pin] }, preflight],
    ['GET', '/api/cluster/bootstrap/ssh-public-key', undefined, { publicKey: 'ssh-ed25519 AAAA ironlens' }],
    ['GET', '/api/cluster/bootstrap', undefined, summaries],
    ['POST', '/api/cluster/bootstrap', { nodes, hostKeys: [pin] }, { bootstrapId: 'bootstrap-5b7fd3a81290' }],
    ['GET', '/api/cluster/bootstrap/bootstrap-5b7fd3a81290', undefined, status],
  ] as const) {
    it(`${method} ${url}`, async () => {
      const res = await app.inject({ method, url, payload: payload as never });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual(expected);
    });
  }

  it('POST …/cancel answers 204 without a body; a schema violation keeps its errors list', async () => {
    const res = await app.inject({ method: 'POST', url: '/api/cluster/bootstrap/bootstrap-5b7fd3a81290/cancel' });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    const bad = await app.inject({ method: 'POST', url: '/api/cluster/bootstrap/host-keys', payload: { nodes: [] } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ code: 'validation_failed', errors: [expect.objectContaining({ loc: ['body', 'nodes'] })] });
  });
});

describe('@ironlens/clusters/api', () => {
  it('imports TypeBox, core’s TypeBox helpers, its own files and the phase list only: nothing of the server reaches the console', () => {
    const dir = new URL('.', import.meta.url).pathname;
    const allowed = new Set(['@sinclair/typebox', '@ironlens/core/typebox', './bootstrap', './clusters', './deployments', './gateway', './problem', './phases']);
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))) {
      const src = readFileSync(join(dir, f), 'utf8');
      const from = [...src.matchAll(/\bfrom\s+'([^']+)'/g)].map((m) => m[1]);
      expect(from.filter((m) => !allowed.has(m)), f).toEqual([]);
    }
    const phases = readFileSync(join(dir, 'phases.ts'), 'utf8');
    expect(phases).not.toMatch(/\bimport\b/);
  });
});
