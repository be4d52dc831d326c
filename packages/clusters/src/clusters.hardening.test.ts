import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterRepository } from './registry/cluster.repository';
import { kubeconfigPurpose } from './registry/cluster-access';
import { PlanningParams } from './api/clusters';
import { PLANNING_RESOURCES } from './overview/platform.service';
import { type ClustersTestApp, multipart, startClustersApp } from './testing/app';
import { HostileApiServer } from './testing/hostile-api-server';
import { sleep } from '@ironlens/core/testing';

// Issue 18 (h18a): the cluster manager against a hostile API server of the test's own on
// loopback, through the real @kubernetes/client-node and the real HTTP adapter.
const dir = mkdtempSync(join(tmpdir(), `ironlens-hostile-${process.pid}-`));
const marker = join(dir, 'PWNED');
let t: ClustersTestApp;
let api: HostileApiServer;

async function register(kubeconfig: string, name = `c-${Math.random().toString(36).slice(2, 8)}`, fields: Record<string, string> = {}) {
  const { payload, headers } = multipart({ name, ...fields }, { content: kubeconfig });
  return t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
}

async function registered(kubeconfig = api.kubeconfig()): Promise<{ id: string; sessionId: string }> {
  const res = await register(kubeconfig);
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().cluster.id, sessionId: res.json().sessionId };
}

const get = (url: string) => t.app.inject({ method: 'GET', url });

/** The merge-key exec: a user whose `exec` comes in through `<<`. */
const mergeExecKubeconfig = (server: string) => `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server}"}}]
users:
- name: u
  user:
    <<:
      exec:
        apiVersion: client.authentication.k8s.io/v1
        command: /bin/sh
        args: [-c, "touch ${marker}; echo '{\\"apiVersion\\":\\"client.authentication.k8s.io/v1\\",\\"kind\\":\\"ExecCredential\\",\\"status\\":{\\"token\\":\\"x\\"}}'"]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;

beforeAll(async () => {
  api = new HostileApiServer();
  await api.start();
  t = await startClustersApp({ env: { IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '20000' } });
});

afterAll(async () => {
  await t?.close();
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('kubeconfigs that would run a command (finding 1)', () => {
  it('refuses the merge-key exec at registration, and the command never runs', async () => {
    const res = await register(mergeExecKubeconfig(api.url));
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('invalid_kubeconfig');
    await get('/api/cluster/clusters');
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses token-file alike for a file that exists, one that does not and a FIFO: no oracle, no frozen event loop (finding 3)', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const withTokenFile = (path: string) => api.kubeconfig().replace('{token: hostile-token}', `{token-file: ${path}}`);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = Date.now();
    const answers = await Promise.all(['/etc/hostname', join(dir, 'no-such-file'), fifo].map((p) => register(withTokenFile(p), 'token-file')));
    await sleep(50);
    clearInterval(timer);
    expect(Date.now() - started).toBeLessThan(5000);
    // A blocking read of the FIFO would never return (the test would time out); the timer ticking at all shows the loop ran meanwhile (a count above 1 depends on the machine's load).
    expect(ticks).toBeGreaterThan(0);
    for (const a of answers) {
      expect(a.statusCode).toBe(422);
      expect(a.json().code).toBe('invalid_kubeconfig');
    }
    // The same answer whether the file exists or not.
    expect(new Set(answers.map((a) => a.json().detail)).size).toBe(1);
  });

  it('never runs the exec of a kubeconfig already in the store (ready probes, overview, after a restart)', async () => {
    // A record written before the check existed: sealed and stored as registration did.
    const id = 'deadbeef';
    const box = SecretBox.fromEnv({}, t.dataDir);
    const now = new Date().toISOString();
    await new ClusterRepository().insert(t.store.db, {
      id,
      name: 'stored-before',
      description: '',
      createdAt: now,
      updatedAt: now,
      draft: false,
      proxy: { mode: 'none', httpProxy: null, httpsProxy: null, noProxy: null },
      kubeconfigSealed: box.seal(mergeExecKubeconfig(api.url), kubeconfigPurpose(id)),
      gatewayProvider: null,
      gatewayNamespace: `llm-d-gateway-${id}`,
      gatewayName: 'llm-d-gateway',
      gatewayPublicUrl: null,
      gatewayPort: null,
      gatewayAuthzHost: null,
      inotifyMaxUserInstances: 8192,
      hfTokenSecret: null,
    });
    const list = await get('/api/cluster/clusters');
    expect(list.json().items.find((c: { id: string }) => c.id === id)).toMatchObject({ ready: false });
    const overview = await get(`/api/cluster/overview?clusterId=${id}`);
    expect(overview.statusCode).toBe(422);
    expect(overview.json().code).toBe('invalid_kubeconfig');
    expect((await get(`/api/cluster/clusters/${id}/kubernetes-version`)).json()).toMatchObject({ reachable: false });
    await t.restart();
    await get('/api/cluster/clusters');
    expect(existsSync(marker)).toBe(false);
  });
});

describe('a hostile API server (finding 4)', () => {
  it('a Service with "ports": "x" and a Prometheus label: the overview answers, memory is null', async () => {
    const { id } = await registered();
    api.set('/api/v1/services', {
      json: {
        kind: 'ServiceList',
        apiVersion: 'v1',
        items: [{ metadata: { name: 'prometheus', namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'prometheus' } }, spec: { ports: 'x' } }],
      },
    });
    try {
      const res = await get(`/api/cluster/overview?clusterId=${id}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().kubernetes.hardware.memoryUsagePercent).toBeNull();
      // and again with every other list failing, so the Prometheus chain is left behind unawaited
      api.set('/api/v1/nodes', { status: 500, raw: 'boom' });
      const failed = await get(`/api/cluster/overview?clusterId=${id}`);
      expect(failed.statusCode).toBe(502);
      await sleep(100);
    } finally {
      api.set('/api/v1/services', { json: { kind: 'ServiceList', apiVersion: 'v1', items: [] } });
      api.set('/api/v1/nodes', { json: { kind: 'NodeList', apiVersion: 'v1', items: [] } });
    }
  });

  it('objects of a shape no API server sends make a 502 cluster_response_invalid, never a 500', async () => {
    const { id } = await registered();
    api.set('/api/v1/nodes', { json: { kind: 'NodeList', apiVersion: 'v1', items: [{ metadata: { name: 'n' }, status: { images: 'x', capacity: 7 } }] } });
    try {
      const res = await get(`/api/cluster/overview?clusterId=${id}`);
      expect(res.statusCode).toBe(502);
      expect(res.json().code).toBe('cluster_response_invalid');
    } finally {
      api.set('/api/v1/nodes', { json: { kind: 'NodeList', apiVersion: 'v1', items: [] } });
    }
  });

  it('a 600 MB /version is cut off at the cap while streaming: reachable false, the process keeps its memory', async () => {
    const { id } = await registered();
    api.set('/version', { streamBytes: 600 * 1024 * 1024, prefix: '{"gitVersion":"' });
    try {
      const before = process.memoryUsage().rss;
      const res = await get(`/api/cluster/clusters/${id}/kubernetes-version`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ reachable: false });
      expect(res.json().error).toMatch(/larger than 4194304 bytes/);
      expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
    } finally {
      api.set('/version', { json: { major: '1', minor: '36', gitVersion: 'v1.36.0' } });
    }
  });
});

describe('the caps are settings (finding 4)', () => {
  it('lists may be larger than one answer (6 MB of nodes pass the 4 MiB answer cap); both caps follow their settings', async () => {
    const big = { kind: 'NodeList', apiVersion: 'v1', items: Array.from({ length: 3000 }, (_, i) => ({ metadata: { name: `n${i}`, annotations: { pad: 'x'.repeat(2000) } } })) };
    expect(JSON.stringify(big).length).toBeGreaterThan(6_000_000);
    const { id } = await registered();
    api.set('/api/v1/nodes', { json: big });
    try {
      const res = await get(`/api/cluster/overview?clusterId=${id}`);
      expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
      expect(res.json().kubernetes.nodes).toHaveLength(3000);
      const small = await startClustersApp({ env: { IRONLENS_CLUSTER_MAX_LIST_BYTES: '1048576', IRONLENS_CLUSTER_MAX_RESPONSE_BYTES: '4096' } });
      try {
        const { payload, headers } = multipart({ name: 'small-caps' }, { content: api.kubeconfig() });
        const sid = (await small.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers })).json().cluster.id;
        const capped = await small.app.inject({ method: 'GET', url: `/api/cluster/overview?clusterId=${sid}` });
        expect(capped.statusCode).toBe(502);
        expect(capped.json().code).toBe('cluster_response_too_large');
        api.set('/version', { json: { major: '1', minor: '36', gitVersion: `v1.36.0+${'x'.repeat(5000)}` } });
        expect((await small.app.inject({ method: 'GET', url: `/api/cluster/clusters/${sid}/kubernetes-version` })).json()).toMatchObject({ reachable: false });
      } finally {
        await small.close();
      }
    } finally {
      api.set('/api/v1/nodes', { json: { kind: 'NodeList', apiVersion: 'v1', items: [] } });
      api.set('/version', { json: { major: '1', minor: '36', gitVersion: 'v1.36.0' } });
    }
  });
});

describe('answers of another kind, and bodies never echoed (finding 7)', () => {
  it('refuses a kubeconfig server with a fragment (the /devices# of the issue)', async () => {
    const res = await register(api.kubeconfig(`${api.url}/devices#`));
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('invalid_kubeconfig');
  });

  it('planning discovery answers {result: null} for JSON that is not the kind asked for', async () => {
    const { sessionId } = await registered();
    api.set('/api/v1/nodes', { json: { items: [{ mac: '52:54:00:00:00:01', hostname: 'a device of another service' }] } });
    try {
      const res = await get(`/api/cluster/sessions/${sessionId}/planning-discovery/nodes`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ result: null });
      api.set('/version', { json: [{ mac: '52:54:00:00:00:01' }] });
      expect((await get(`/api/cluster/sessions/${sessionId}/planning-discovery/version`)).json()).toEqual({ result: null });
    } finally {
      api.set('/api/v1/nodes', { json: { kind: 'NodeList', apiVersion: 'v1', items: [] } });
      api.set('/version', { json: { major: '1', minor: '36', gitVersion: 'v1.36.0' } });
    }
  });

  it('never repeats the body of an error answer', async () => {
    const { id } = await registered();
    api.set('/api/v1/services', { status: 500, raw: '{"devices":[{"mac":"52:54:00:aa:bb:cc","token":"SECRET-OF-ANOTHER-SERVICE"}]}' });
    try {
      const res = await get(`/api/cluster/clusters/${id}/gateway-port-check?port=30080`);
      expect(res.statusCode).toBe(502);
      expect(res.body).not.toContain('SECRET-OF-ANOTHER-SERVICE');
      expect(res.body).not.toContain('52:54:00');
      expect(res.json().code).toBe('cluster_request_failed');
    } finally {
      api.set('/api/v1/services', { json: { kind: 'ServiceList', apiVersion: 'v1', items: [] } });
    }
  });
});

describe('planning discovery (finding 12, issue 19 allow-list)', () => {
  it('answers {result: null} for JSON nested deeper than any Kubernetes object', async () => {
    const { sessionId } = await registered();
    const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    api.set('/api/v1/nodes', { raw: deep.replace(/^\{/, '{"kind":"NodeList","items":[],') });
    try {
      const res = await get(`/api/cluster/sessions/${sessionId}/planning-discovery/nodes`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ result: null });
    } finally {
      api.set('/api/v1/nodes', { json: { kind: 'NodeList', apiVersion: 'v1', items: [] } });
    }
  });

  it('reads exactly the five allow-listed resources: no secrets, configmaps or tokens', () => {
    expect(PLANNING_RESOURCES).toEqual({
      version: '/version',
      nodes: '/api/v1/nodes',
      deviceclasses: '/apis/resource.k8s.io/v1/deviceclasses',
      resourceslices: '/apis/resource.k8s.io/v1/resourceslices',
      runtimeclasses: '/apis/node.k8s.io/v1/runtimeclasses',
    });
    for (const path of Object.values(PLANNING_RESOURCES)) expect(path).not.toMatch(/secret|configmap|token|serviceaccount/i);
    // The route's parameter (and so the OpenAPI document) is an enum of exactly these.
    expect((PlanningParams.properties.resource as unknown as { anyOf: Array<{ const: string }> }).anyOf.map((x) => x.const)).toEqual(Object.keys(PLANNING_RESOURCES));
  });

  it('docs/clusters.md names the same list, and anything else is 422 invalid_planning_resource', async () => {
    const doc = readFileSync(new URL('../../../docs/clusters.md', import.meta.url), 'utf8');
    const line = doc.split('\n').find((l) => l.includes('planning-discovery/{resource}'))!;
    const named = [...line.matchAll(/`([a-z]+)`/g)].map((m) => m[1]).filter((w) => w !== 'result');
    expect(named).toEqual(Object.keys(PLANNING_RESOURCES));
    const { sessionId } = await registered();
    const res = await get(`/api/cluster/sessions/${sessionId}/planning-discovery/secrets`);
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('invalid_planning_resource');
  });
});

describe('PATCH description (finding 12)', () => {
  it('accepts 4096 characters and refuses more with 422 invalid_cluster_description', async () => {
    const { id } = await registered();
    const ok = await t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { description: 'd'.repeat(4096) } });
    expect(ok.statusCode, ok.body).toBe(200);
    const big = await t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { description: 'd'.repeat(4097) } });
    expect(big.statusCode).toBe(422);
    expect(big.json().code).toBe('invalid_cluster_description');
    const form = await register(api.kubeconfig(), 'long-description', { description: 'd'.repeat(5000) });
    expect(form.statusCode).toBe(422);
    expect(form.json().code).toBe('invalid_cluster_description');
  });
});

describe('concurrent overviews (finding 10)', () => {
  it('200 overviews at once share one in-flight read per kind', async () => {
    const { id } = await registered();
    const kinds = ['/api/v1/nodes', '/api/v1/namespaces', '/apis/apps/v1/deployments', '/apis/apps/v1/daemonsets', '/apis/apps/v1/statefulsets', '/api/v1/pods', '/api/v1/services'];
    for (const k of kinds) api.set(k, { ...(api.answers.get(k) as { json: unknown }), delayMs: 300 });
    try {
      const before = new Map(kinds.map((k) => [k, api.count(k)]));
      const answers = await Promise.all(Array.from({ length: 200 }, () => get(`/api/cluster/overview?clusterId=${id}`)));
      expect(answers.every((a) => a.statusCode === 200)).toBe(true);
      const sent = kinds.map((k) => api.count(k) - before.get(k)!);
      // Without sharing: 200 of each. With it: the reads of those that arrive while one is in flight are one.
      for (const n of sent) expect(n).toBeLessThanOrEqual(4);
      expect(sent.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(kinds.length * 4);
    } finally {
      for (const k of kinds) api.set(k, { json: (api.answers.get(k) as { json: unknown }).json });
    }
  });
});
