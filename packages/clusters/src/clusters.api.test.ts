import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { OperationsLog, partOf } from '@ironlens/core';
import { dumpDatabase, sleep } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDirFor } from './software/software.service';
import { type ClustersTestApp, closedPort, kubeconfigWithKey, multipart, startClustersApp } from './testing/app';
import { LocalGithubMirror } from './testing/github-mirror';

// The API without a Kubernetes cluster: clusters here point at a closed port or at a server that
// never answers. What needs a live API server is in clusters.kube.test.ts.

let t: ClustersTestApp;
let mirror: LocalGithubMirror;
let deadServer: string;
let blackHole: Server;
const held = new Set<Socket>();
let hangingServer: string;
let keyPem: string;

const PROBLEM = 'application/problem+json';

async function register(fields: Record<string, string>, kubeconfig: string | Buffer = kubeconfigWithKey(deadServer).kubeconfig) {
  const { payload, headers } = multipart(fields, { content: kubeconfig });
  return t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
}

function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expect(String(res.headers['content-type'])).toContain(PROBLEM);
  const body = res.json();
  expect(body).toMatchObject({ type: 'about:blank', status, code });
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
}

beforeAll(async () => {
  deadServer = `https://127.0.0.1:${await closedPort()}`;
  blackHole = createServer((s) => {
    held.add(s);
    s.on('close', () => held.delete(s));
  });
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', () => r()));
  const a = blackHole.address();
  hangingServer = `https://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
  mirror = new LocalGithubMirror();
  mirror.addRepo('llm-d/llm-d', ['v0.9.0', 'v0.10.0'], { 'README.md': '# llm-d\n', 'guides/README.md': 'guides\n' });
  mirror.addRepo('llm-d/llm-d-benchmark', ['v0.7.0', 'v0.8.0'], { 'README.md': '# llm-d-benchmark\n' });
  await mirror.start();
  t = await startClustersApp({ env: { IRONLENS_GITHUB_MIRROR: mirror.url, IRONLENS_CLUSTER_READY_TIMEOUT_MS: '400', IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '2000' } });
  keyPem = kubeconfigWithKey(deadServer).keyPem;
});

afterAll(async () => {
  await t?.close();
  await mirror?.stop();
  for (const s of held) s.destroy();
  await new Promise<void>((r) => (blackHole ? blackHole.close(() => r()) : r()));
});

describe('GET /api/v1/versions', () => {
  it('serves exactly the stack profile of the document', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/versions' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      llm_d: 'v0.10.0',
      min_k8s_version: 'v1.32.0',
      llm_d_router: 'v0.11.0',
      llm_d_lensmark: 'v0.8.0',
      llm_d_inference_payload_processor: 'v0.1.0',
      k8s_gateway_api: 'v1.5.1',
      k8s_gateway_api_inference_extension: 'v1.5.0',
      gateway_providers: { istio: '1.29.4', envoy_gateway: 'v1.8.1', envoy_ai_gateway: 'v0.7.0', agentgateway: 'v1.5.0' },
    });
  });
});

describe('unknown paths', () => {
  it('answer 404 route_not_found in problem+json under /api/cluster', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: '/api/cluster/no-such-thing' }), 404, 'route_not_found');
    expectProblem(await t.app.inject({ method: 'POST', url: '/api/cluster-overview/x/y/z' }), 404, 'route_not_found');
  });
});

describe('lens-hosts', () => {
  it('lists the configured candidate addresses', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/cluster/lens-hosts' });
    expect(res.json()).toEqual({ items: ['192.0.2.10', 'lens.example'] });
  });
});

describe('POST /api/cluster/clusters', () => {
  it('registers from a multipart form: 201, 8-hex id, profile versions, defaults, a session', async () => {
    const res = await register({ name: 'Primary cluster', description: 'Shared GPU cluster', llmDRef: 'v0.3.0', llmDBenchmarkRef: 'main', draft: 'true' });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const c = body.cluster;
    expect(c.id).toMatch(/^[0-9a-f]{8}$/);
    expect(c.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(c).toMatchObject({
      name: 'Primary cluster',
      description: 'Shared GPU cluster',
      ready: false,
      draft: true,
      // No proxy settings: Lens' default, the process' own (auto) — issue 33.
      proxy: { mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null },
      llmDRef: 'v0.10.0',
      llmDBenchmarkRef: 'v0.8.0',
      llmDRepoPath: null,
      llmDBenchmarkRepoPath: null,
      hfTokenSecret: null,
      gatewayNamespace: `lens-gateway-${c.id}`,
      gatewayAuthzHost: '192.0.2.10',
      inotifyMaxUserInstances: 8192,
      routerVersion: 'v0.11.0',
      gieVersion: 'v1.5.0',
      ippVersion: 'v0.1.0',
    });
  });

  it('keeps a custom proxy, gateway fields and inotify value', async () => {
    const proxy = { mode: 'custom', httpProxy: 'http://proxy.example:3128', httpsProxy: 'http://proxy.example:3128', noProxy: '127.0.0.1,localhost,.svc' };
    const res = await register({
      name: 'proxied',
      proxy: JSON.stringify(proxy),
      gatewayProvider: 'istio',
      gatewayPort: '30080',
      gatewayAuthzHost: '10.0.0.5',
      gatewayPublicUrl: 'gw.example',
      inotifyMaxUserInstances: '1024',
      draft: 'true',
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().cluster).toMatchObject({ proxy, gatewayProvider: 'istio', gatewayPort: 30080, gatewayAuthzHost: '10.0.0.5', gatewayPublicUrl: 'gw.example', inotifyMaxUserInstances: 1024 });
  });

  it.each([
    ['an empty file', '', 'invalid_kubeconfig'],
    ['a file that is not UTF-8', Buffer.from([0xff, 0xfe, 0x00, 0x41]), 'invalid_kubeconfig'],
    ['a file that is not YAML', 'clusters: [\n  - {name: x\n', 'invalid_kubeconfig'],
    ['YAML that is not a kubeconfig', 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n', 'invalid_kubeconfig'],
  ])('refuses %s with 422 %s', async (_what, content, code) => {
    expectProblem(await register({ name: 'bad-kubeconfig' }, content as string | Buffer), 422, code);
  });

  it('refuses kubeconfigs that would run a command or read a file of this host (422 invalid_kubeconfig)', async () => {
    const base = (user: string, cluster = `server: ${deadServer}`) =>
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    ${cluster}\nusers:\n- name: u\n  user:\n    ${user}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`;
    expectProblem(await register({ name: 'exec' }, base('exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "id > /tmp/pwned"]}')), 422, 'invalid_kubeconfig');
    expectProblem(await register({ name: 'token-file' }, base('tokenFile: /etc/shadow')), 422, 'invalid_kubeconfig');
    expectProblem(await register({ name: 'key-file' }, base('client-key: /root/.ssh/id_rsa')), 422, 'invalid_kubeconfig');
    expectProblem(await register({ name: 'ca-file' }, base('token: abc', `server: ${deadServer}\n    certificate-authority: /etc/ssl/private/x.pem`)), 422, 'invalid_kubeconfig');
    const ok = await register({ name: 'token-ok' }, base('token: abc'));
    expect(ok.statusCode).toBe(201);
  });

  it('refuses a blank name, a bad proxy, a bad gateway port or provider', async () => {
    expectProblem(await register({ name: '   ' }), 422, 'invalid_cluster_name');
    expectProblem(await register({ name: 'p1', proxy: '{not json' }), 422, 'invalid_proxy_config');
    expectProblem(await register({ name: 'p2', proxy: '{"mode":"custom"}' }), 422, 'invalid_proxy_config');
    expectProblem(await register({ name: 'p3', gatewayPort: '8080' }), 422, 'invalid_gateway_port');
    expectProblem(await register({ name: 'p4', gatewayProvider: 'nginx' }), 422, 'invalid_gateway_provider');
  });

  it('refuses JSON instead of a multipart form with 422 validation_failed', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload: { name: 'x' } });
    expectProblem(res, 422, 'validation_failed');
  });

  it('409 cluster_name_conflict for the same name in another case among non-drafts; drafts do not conflict', async () => {
    expect((await register({ name: 'Prod East' })).statusCode).toBe(201);
    expectProblem(await register({ name: 'prod east' }), 409, 'cluster_name_conflict');
    expect((await register({ name: 'PROD EAST', draft: 'true' })).statusCode).toBe(201);
  });

  it('registers one of 20 simultaneous registrations of one name; the others get 409 cluster_name_conflict, never a 500', async () => {
    const kubeconfig = kubeconfigWithKey(deadServer).kubeconfig;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => register({ name: i % 2 ? 'Race West' : 'race west' }, kubeconfig)));
    expect(answers.filter((r) => r.statusCode === 201)).toHaveLength(1);
    for (const r of answers.filter((a) => a.statusCode !== 201)) expectProblem(r, 409, 'cluster_name_conflict');
    const listed = (await t.app.inject({ url: '/api/cluster/clusters' })).json();
    expect(listed.items.filter((c: { name: string }) => c.name.toLowerCase() === 'race west')).toHaveLength(1);
  });
});

describe('services.clusters.register (for the CLI and the Kubespray bootstrap)', () => {
  it('does what POST does: returns the id, refuses a name conflict with 409 and a bad kubeconfig with 422', async () => {
    const { id } = await t.services.clusters.register({ name: 'From Bootstrap', kubeconfig: kubeconfigWithKey(deadServer).kubeconfig });
    expect(id).toMatch(/^[0-9a-f]{8}$/);
    const listed = (await t.app.inject({ method: 'GET', url: '/api/cluster/clusters' })).json().items.find((c: { id: string }) => c.id === id);
    expect(listed).toMatchObject({ name: 'From Bootstrap', draft: false, llmDRef: 'v0.10.0', gatewayNamespace: `lens-gateway-${id}` });
    await expect(t.services.clusters.register({ name: 'from bootstrap', kubeconfig: kubeconfigWithKey(deadServer).kubeconfig })).rejects.toMatchObject({ code: 'cluster_name_conflict', status: 409 });
    await expect(t.services.clusters.register({ name: 'x', kubeconfig: 'not: [a kubeconfig' })).rejects.toMatchObject({ code: 'invalid_kubeconfig', status: 422 });
  });
});

describe('GET /api/cluster/clusters', () => {
  it('hides drafts unless includeDrafts=true', async () => {
    const all = (await t.app.inject({ method: 'GET', url: '/api/cluster/clusters?includeDrafts=true' })).json().items;
    const visible = (await t.app.inject({ method: 'GET', url: '/api/cluster/clusters' })).json().items;
    expect(all.some((c: { draft: boolean }) => c.draft)).toBe(true);
    expect(visible.every((c: { draft: boolean }) => !c.draft)).toBe(true);
    expect(visible.length).toBeLessThan(all.length);
  });

  it('probes all clusters at once: six API servers that never answer cost one probe timeout, not six', async () => {
    for (let i = 0; i < 6; i++) expect((await register({ name: `hanging-${i}` }, kubeconfigWithKey(hangingServer).kubeconfig)).statusCode).toBe(201);
    const t0 = Date.now();
    const res = await t.app.inject({ method: 'GET', url: '/api/cluster/clusters' });
    const ms = Date.now() - t0;
    const hanging = res.json().items.filter((c: { name: string }) => c.name.startsWith('hanging-'));
    expect(hanging).toHaveLength(6);
    expect(hanging.every((c: { ready: boolean }) => c.ready === false)).toBe(true);
    // 6 sequential probes would take >= 2,400 ms.
    expect(ms).toBeGreaterThanOrEqual(380);
    expect(ms).toBeLessThan(1500);
  });
});

describe('PATCH /api/cluster/clusters/{id}', () => {
  let id: string;
  beforeAll(async () => {
    id = (await register({ name: 'patch-me' })).json().cluster.id;
  });

  it('updates settings; version fields stay the profile’s', async () => {
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/cluster/clusters/${id}`,
      payload: { name: 'patched', description: 'd', llmDRef: 'v0.3.0', llmDBenchmarkRef: 'main', proxy: { mode: 'custom', httpsProxy: 'http://p.example:3128' } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      cluster: { id, name: 'patched', description: 'd', llmDRef: 'v0.10.0', llmDBenchmarkRef: 'v0.8.0', proxy: { mode: 'custom', httpsProxy: 'http://p.example:3128', httpProxy: null } },
      sessionId: null,
    });
  });

  it('suffixes the gateway namespace with the id, once, within 63 characters', async () => {
    const patch = async (gatewayNamespace: string) => t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { gatewayNamespace } });
    expect((await patch('custom')).json().cluster.gatewayNamespace).toBe(`custom-${id}`);
    expect((await patch(`custom-${id}`)).json().cluster.gatewayNamespace).toBe(`custom-${id}`);
    expect((await patch('')).json().cluster.gatewayNamespace).toBe(`lens-gateway-${id}`);
    expectProblem(await patch('x'.repeat(60)), 422, 'invalid_gateway_namespace');
    expectProblem(await patch('Not_A_Label'), 422, 'invalid_gateway_namespace');
  });

  it('refuses ports outside 30000-32767, schema errors and name conflicts', async () => {
    expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { gatewayPort: 29999 } }), 422, 'invalid_gateway_port');
    expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { inotifyMaxUserInstances: 'many' } }), 422, 'validation_failed');
    expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { name: 'PROD east' } }), 409, 'cluster_name_conflict');
    expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { name: ' ' } }), 422, 'invalid_cluster_name');
  });

  it('takes what Lens’ clients send (the seed’s body, the record’s five version fields as strings or null) and refuses anything else, as Lens does (422 validation_failed)', async () => {
    const patch = (payload: object) => t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload });
    // The seed's example body, and the version fields a client sends back from a record: accepted, ignored.
    const seed = { name: 'Primary cluster', description: 'Shared production GPU cluster', proxy: { mode: 'custom', httpProxy: 'http://proxy.example:3128', httpsProxy: 'http://proxy.example:3128', noProxy: '127.0.0.1,localhost,.svc' }, llmDRef: 'v0.3.0', llmDBenchmarkRef: 'main', draft: false };
    const ok = await patch({ ...seed, routerVersion: 'v0.1.0', gieVersion: null, ippVersion: 'v9.9.9' });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().cluster).toMatchObject({ name: 'Primary cluster', routerVersion: 'v0.11.0', gieVersion: 'v1.5.0', ippVersion: 'v0.1.0', llmDRef: 'v0.10.0' });
    expect((await patch({ name: 'patched' })).statusCode).toBe(200);
    // Anything else: a field Lens does not take, a version that is not a string, an unknown proxy mode or proxy field.
    expectProblem(await patch({ kubeconfig: 'apiVersion: v1' }), 422, 'validation_failed');
    expectProblem(await patch({ llmDRef: { ref: 'main' } }), 422, 'validation_failed');
    expectProblem(await patch({ gieVersion: 15 }), 422, 'validation_failed');
    expectProblem(await patch({ proxy: { mode: 'bogus' } }), 422, 'validation_failed');
    expectProblem(await patch({ proxy: { mode: 'custom', httpsProxy: 'http://p.example:3128', socks: 'x' } }), 422, 'validation_failed');
    // Each proxy mode is taken, and reads back as a mode Lens knows where it has one: `system` is `auto` (issue 33).
    const modeAfter = async (proxy: object) => {
      const r = await patch({ proxy });
      expect(r.statusCode, r.body).toBe(200);
      return r.json().cluster.proxy;
    };
    expect(await modeAfter({ mode: 'auto' })).toEqual({ mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null });
    expect(await modeAfter({ mode: 'system' })).toEqual({ mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null });
    expect(await modeAfter({ mode: 'none' })).toEqual({ mode: 'none', httpProxy: null, httpsProxy: null, noProxy: null });
    expect(await modeAfter({ mode: 'custom', httpsProxy: 'http://p.example:3128' })).toEqual({ mode: 'custom', httpProxy: null, httpsProxy: 'http://p.example:3128', noProxy: null });
    // Switching to auto clears the values, as Lens does; custom with NO_PROXY alone is taken (Lens' rule), with none of the three it is not.
    expect(await modeAfter({ mode: 'auto', httpsProxy: 'http://p.example:3128' })).toEqual({ mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null });
    expect(await modeAfter({ mode: 'custom', httpProxy: null, httpsProxy: null, noProxy: '.svc,10.0.0.0/8' })).toEqual({ mode: 'custom', httpProxy: null, httpsProxy: null, noProxy: '.svc,10.0.0.0/8' });
    expectProblem(await patch({ proxy: { mode: 'custom', httpProxy: null, httpsProxy: null, noProxy: null } }), 422, 'invalid_proxy_config');
    // inotifyMaxUserInstances null: Lens' editor with the field empty leaves the value as it is.
    const before = (await patch({ inotifyMaxUserInstances: 16384 })).json().cluster.inotifyMaxUserInstances;
    expect(before).toBe(16384);
    expect((await patch({ inotifyMaxUserInstances: null })).json().cluster.inotifyMaxUserInstances).toBe(16384);
  });

  it('pre-pull takes the seed’s body only: another field is 422 validation_failed (before the cluster is asked)', async () => {
    expectProblem(await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/images/prepull`, payload: { accelerators: ['nvidia'], images: ['evil:latest'] } }), 422, 'validation_failed');
  });

  it('needs the cluster to check a port against other Services: unreachable → 502 cluster_request_failed', async () => {
    expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/cluster/clusters/${id}`, payload: { gatewayPort: 30500 } }), 502, 'cluster_request_failed');
  });
});

describe('unknown clusters', () => {
  it.each([
    ['PATCH', '/api/cluster/clusters/deadbeef', {}],
    ['DELETE', '/api/cluster/clusters/deadbeef', undefined],
    ['POST', '/api/cluster/clusters/deadbeef/hf-token-secrets', { namespace: 'a', name: 'b', token: 'c' }],
    ['PUT', '/api/cluster/clusters/deadbeef/hf-token-secret', { token: 'c' }],
    ['GET', '/api/cluster/clusters/deadbeef/software-downloads', undefined],
    ['POST', '/api/cluster/clusters/deadbeef/images/prepull', { accelerators: [] }],
    ['GET', '/api/cluster/clusters/deadbeef/crds', undefined],
    ['GET', '/api/cluster/clusters/deadbeef/kubernetes-version', undefined],
    ['GET', '/api/cluster/clusters/deadbeef/gateway-port-check?port=30000', undefined],
    ['POST', '/api/cluster/clusters/deadbeef/nodes/cordon', { names: ['n1'] }],
    ['GET', '/api/cluster/session?clusterId=deadbeef', undefined],
    ['GET', '/api/cluster/overview?clusterId=deadbeef', undefined],
    ['GET', '/api/cluster/model-secrets?clusterId=deadbeef', undefined],
  ])('%s %s → 404 cluster_not_found', async (method, url, payload) => {
    expectProblem(await t.app.inject({ method: method as 'GET', url, payload: payload as object | undefined }), 404, 'cluster_not_found');
  });
});

/** The operations log's entries (the cluster manager writes its own into the shared log). */
const operations = async () => (await new OperationsLog(partOf(t.store)).list({})).entries as Array<Record<string, unknown>>;

describe('a cluster whose API server is down', () => {
  let id: string;
  beforeAll(async () => {
    id = (await register({ name: 'down' })).json().cluster.id;
  });

  it('kubernetes-version answers 200 reachable:false with the minimum version', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/kubernetes-version` });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ reachable: false, min_k8s_version: 'v1.32.0' });
    expect(body.error).toEqual(expect.any(String));
    expect(body.version).toBeUndefined();
  });

  it('calls that need it answer 502 cluster_request_failed; a hanging one 504', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: `/api/cluster/overview?clusterId=${id}` }), 502, 'cluster_request_failed');
    expectProblem(await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/crds` }), 502, 'cluster_request_failed');
    expectProblem(await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/hf-token-secrets`, payload: { namespace: 'ns', name: 'hf', token: 'hf_x' } }), 502, 'cluster_request_failed');
    const hanging = (await register({ name: 'hangs' }, kubeconfigWithKey(hangingServer).kubeconfig)).json().cluster.id;
    expectProblem(await t.app.inject({ method: 'GET', url: `/api/cluster/model-secrets?clusterId=${hanging}` }), 504, 'cluster_request_failed');
  });

  it('POST crds reports each bundle’s failure (here: the mirror has no such release asset)', async () => {
    const res = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/crds` });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({ gateway_api: { ok: false, message: expect.stringContaining('404') }, gateway_api_inference_extension: { ok: false, message: expect.stringContaining('404') } });
    expect(mirror.requests).toContain('/kubernetes-sigs/gateway-api/releases/download/v1.5.1/standard-install.yaml');
  });

  it('DELETE → 502 cluster_gateway_cleanup_failed and the record is kept for a retry; the attempt is a failed clusters.delete job', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${id}` });
    expectProblem(res, 502, 'cluster_gateway_cleanup_failed');
    const items = (await t.app.inject({ method: 'GET', url: '/api/cluster/clusters' })).json().items;
    expect(items.map((c: { id: string }) => c.id)).toContain(id);
    const jobs = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: id });
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ status: 'failed', error: res.json().detail, input: { name: 'down', draft: false } });
    expect(jobs[0].log).toContain('==> check that the cluster no longer serves');
  });

  it('DELETE of a draft no write ever reached removes it without a remote cleanup (Lens’ wizard Cancel frees the name), audited', async () => {
    const draft = (await register({ name: 'down-draft', draft: 'true' })).json().cluster.id;
    // Its reads failed (the version check above does for every record here): nothing was written.
    const res = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${draft}`, headers: { 'content-type': 'application/json' } });
    expect(res.statusCode, res.body).toBe(204);
    expect((await t.app.inject({ method: 'GET', url: '/api/cluster/clusters?includeDrafts=true' })).json().items.map((c: { id: string }) => c.id)).not.toContain(draft);
    const [job] = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: draft });
    expect(job).toMatchObject({ status: 'success' });
    expect(job.log).toContain('==> skip the remote cleanup: no write of ironlens ever reached this draft’s cluster');
    const entry = (await operations()).find((e) => e.op === 'cluster.delete' && e.cluster_id === draft);
    expect(entry).toMatchObject({ status: 'ok', remote_cleanup: 'skipped', reason: 'draft_never_reached' });
    // The name is free again.
    expect((await register({ name: 'down-draft', draft: 'true' })).statusCode).toBe(201);
  });

  it('a draft a write did reach keeps the seed’s rule: 502 cluster_gateway_cleanup_failed, record kept', async () => {
    const draft = (await register({ name: 'reached-draft', draft: 'true' })).json().cluster.id;
    await t.store.db.updateTable('clusters').set({ reached_at: '2026-01-01T00:00:00Z' }).where('id', '=', draft).execute();
    const res = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${draft}` });
    expectProblem(res, 502, 'cluster_gateway_cleanup_failed');
    const [job] = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: draft });
    expect(job).toMatchObject({ status: 'failed', stage: `delete the gateway namespace lens-gateway-${draft}`, error: res.json().detail });
    expect((await t.app.inject({ method: 'GET', url: '/api/cluster/clusters?includeDrafts=true' })).json().items.map((c: { id: string }) => c.id)).toContain(draft);
  });

  it('?force=true removes a cluster whose cleanup cannot be done, and the operations log says what may be left on it', async () => {
    const gone = (await register({ name: 'gone-for-good', gatewayProvider: 'istio' })).json().cluster.id;
    expectProblem(await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${gone}` }), 502, 'cluster_gateway_cleanup_failed');
    const res = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${gone}?force=true` });
    expect(res.statusCode, res.body).toBe(204);
    expect((await t.app.inject({ method: 'GET', url: '/api/cluster/clusters' })).json().items.map((c: { id: string }) => c.id)).not.toContain(gone);
    const entry = (await operations()).find((e) => e.op === 'cluster.delete' && e.cluster_id === gone && e.status === 'ok');
    expect(entry).toMatchObject({ forced: true, remote_cleanup: 'skipped', reason: expect.stringContaining(`gateway namespace lens-gateway-${gone} could not be deleted`) });
    expect(entry?.left_behind).toEqual([
      `namespace lens-gateway-${gone} (the gateway's)`,
      'the istio GatewayClass of this registration',
      `DaemonSet lens-node-tuning/inotify-${gone}`,
      `DaemonSet lens-images/prepull-${gone}`,
    ]);
    const jobs = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: gone });
    expect(jobs.map((j) => j.status).sort()).toEqual(['failed', 'success']);
  });
});

describe('sessions', () => {
  it('get-or-create, legacy view, disconnect, then 404 cluster_session_inactive', async () => {
    const created = (await register({ name: 'sessions' })).json();
    const id = created.cluster.id;
    const s1 = (await t.app.inject({ method: 'GET', url: `/api/cluster/session?clusterId=${id}` })).json();
    expect(s1.sessionId).toBe(created.sessionId);
    expect(s1.cluster.id).toBe(id);
    const sid = s1.sessionId;
    expect((await t.app.inject({ method: 'GET', url: `/api/cluster/sessions/${sid}` })).json()).toMatchObject({ sessionId: sid, cluster: { id } });
    const legacy = await t.app.inject({ method: 'GET', url: `/api/cluster-overview/sessions/${sid}` });
    expect(legacy.statusCode).toBe(200);
    expect(legacy.json()).toEqual({ id: sid, serverId: id, createdAt: expect.stringMatching(/Z$/), status: 'connected' });
    // A failed read is {"result": null}; a resource outside the allow-list is 422.
    expect((await t.app.inject({ method: 'GET', url: `/api/cluster/sessions/${sid}/planning-discovery/nodes` })).json()).toEqual({ result: null });
    expectProblem(await t.app.inject({ method: 'GET', url: `/api/cluster/sessions/${sid}/planning-discovery/pods` }), 422, 'invalid_planning_resource');

    const bye = await t.app.inject({ method: 'POST', url: `/api/cluster-overview/sessions/${sid}/disconnect` });
    expect(bye.statusCode).toBe(204);
    expect(bye.body).toBe('');
    expectProblem(await t.app.inject({ method: 'GET', url: `/api/cluster-overview/sessions/${sid}` }), 404, 'cluster_session_inactive');
    expectProblem(await t.app.inject({ method: 'GET', url: `/api/cluster/sessions/${sid}` }), 404, 'cluster_session_inactive');
    expectProblem(await t.app.inject({ method: 'GET', url: `/api/cluster/sessions/${sid}/planning-discovery/nodes` }), 404, 'cluster_session_inactive');
    expectProblem(await t.app.inject({ method: 'POST', url: `/api/cluster-overview/sessions/${sid}/disconnect` }), 404, 'cluster_session_inactive');
    const s2 = (await t.app.inject({ method: 'GET', url: `/api/cluster/session?clusterId=${id}` })).json();
    expect(s2.sessionId).not.toBe(sid);
  });

  it('cordon body: 1 to 256 names, else 422 validation_failed', async () => {
    const id = (await register({ name: 'cordon-schema' })).json().cluster.id;
    expectProblem(await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/nodes/cordon`, payload: { names: [] } }), 422, 'validation_failed');
    const many = Array.from({ length: 257 }, (_, i) => `n${i}`);
    expectProblem(await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/nodes/uncordon`, payload: { names: many } }), 422, 'validation_failed');
  });
});

describe('bearer token', () => {
  it('answers 401 problem+json without the console token, 200 with it', async () => {
    const guarded = await startClustersApp({ token: 's3cret-token' });
    try {
      const no = await guarded.app.inject({ method: 'GET', url: '/api/cluster/clusters' });
      expectProblem(no, 401, 'auth_required');
      expectProblem(await guarded.app.inject({ method: 'GET', url: '/api/v1/versions' }), 401, 'auth_required');
      const yes = await guarded.app.inject({ method: 'GET', url: '/api/cluster/clusters', headers: { authorization: 'Bearer s3cret-token' } });
      expect(yes.statusCode).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});

describe('software downloads (real git over smart HTTP from the local mirror)', () => {
  it('clones the profile tags into the cache, reports ready with paths, and keeps the state across a restart', async () => {
    const id = (await register({ name: 'downloads' })).json().cluster.id;
    const res = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/software-downloads`, payload: { llmDRef: 'main' } });
    expect(res.statusCode).toBe(202);
    const first = res.json();
    expect(first.llmD.ref).toBe('v0.10.0');
    expect(first.llmDBenchmark.ref).toBe('v0.8.0');
    expect(['downloading', 'ready']).toContain(first.llmD.state);
    let status = first;
    for (let i = 0; i < 100 && !(status.llmD.state === 'ready' && status.llmDBenchmark.state === 'ready'); i++) {
      await sleep(100);
      status = (await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/software-downloads` })).json();
    }
    expect(status.llmD).toMatchObject({ ref: 'v0.10.0', state: 'ready', error: null });
    expect(status.llmDBenchmark).toMatchObject({ ref: 'v0.8.0', state: 'ready', error: null });
    expect(readFileSync(join(status.llmD.path, 'VERSION'), 'utf8')).toBe('v0.10.0\n');
    expect(readFileSync(join(status.llmDBenchmark.path, 'VERSION'), 'utf8')).toBe('v0.8.0\n');
    expect(status.llmD.path.startsWith(t.dataDir)).toBe(true);
    expect(mirror.requests.some((p) => p.startsWith('/llm-d/llm-d.git/'))).toBe(true);
    const rec = (await t.app.inject({ method: 'GET', url: '/api/cluster/clusters' })).json().items.find((c: { id: string }) => c.id === id);
    expect(rec).toMatchObject({ llmDRepoPath: status.llmD.path, llmDBenchmarkRepoPath: status.llmDBenchmark.path });

    await t.restart();
    const after = (await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/software-downloads` })).json();
    expect(after).toEqual(status);
  });

  it('reports failed with the error when the mirror lacks the repository', async () => {
    const empty = new LocalGithubMirror();
    await empty.start();
    const other = await startClustersApp({ env: { IRONLENS_GITHUB_MIRROR: empty.url } });
    try {
      const { payload, headers } = multipart({ name: 'no-repo' }, { content: kubeconfigWithKey(deadServer).kubeconfig });
      const id = (await other.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers })).json().cluster.id;
      await other.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/software-downloads`, payload: {} });
      let s = { llmD: { state: 'downloading', error: null as string | null } };
      for (let i = 0; i < 100 && s.llmD.state === 'downloading'; i++) {
        await sleep(100);
        s = (await other.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/software-downloads` })).json();
      }
      expect(s.llmD.state).toBe('failed');
      expect(s.llmD.error).toEqual(expect.any(String));
    } finally {
      await other.close();
      await empty.stop();
    }
  });

  it('a clone cut short by a restart reads failed (interrupted) afterwards, never downloading forever', async () => {
    const slow = new LocalGithubMirror();
    slow.stallGit = true;
    await slow.start();
    const other = await startClustersApp({ env: { IRONLENS_GITHUB_MIRROR: slow.url } });
    try {
      const { payload, headers } = multipart({ name: 'interrupted' }, { content: kubeconfigWithKey(deadServer).kubeconfig });
      const id = (await other.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers })).json().cluster.id;
      const started = (await other.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/software-downloads`, payload: {} })).json();
      expect(started.llmD.state).toBe('downloading');
      await sleep(300);
      expect((await other.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/software-downloads` })).json().llmD.state).toBe('downloading');
      await other.restart();
      const after = (await other.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/software-downloads` })).json();
      expect(after.llmD).toMatchObject({ ref: 'v0.10.0', state: 'failed', path: null, error: expect.stringContaining('interrupted') });
      expect(after.llmDBenchmark.state).toBe('failed');
    } finally {
      await other.close();
      await slow.stop();
    }
  });

  it('keys the cache so that two refs never share a directory', () => {
    expect(cacheDirFor('/c', 'llm-d/llm-d', 'a/b')).not.toBe(cacheDirFor('/c', 'llm-d/llm-d', 'a_b'));
    expect(cacheDirFor('/c', 'llm-d/llm-d', 'v0.10.0')).not.toBe(cacheDirFor('/c', 'llm-d/llm-d-benchmark', 'v0.10.0'));
  });
});

describe('secrets at rest', () => {
  it('no credential of an uploaded kubeconfig is in plain text anywhere under the data dir', async () => {
    const kc = kubeconfigWithKey(deadServer, 'grep-me');
    keyPem = kc.keyPem;
    expect((await register({ name: 'grep' }, kc.kubeconfig)).statusCode).toBe(201);
    // Flush the WAL into the database file too, then read every file (and, on PostgreSQL, every row).
    await t.restart();
    const stored = t.target.url ? dumpDatabase(t.target.url) : null;
    const needles = [
      keyPem.split('\n').filter((l) => l && !l.startsWith('-----'))[0],
      Buffer.from(keyPem).toString('base64').slice(0, 40),
      'client-key-data',
    ];
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d)) {
        const p = join(d, e);
        if (statSync(p).isDirectory()) walk(p);
        else files.push(p);
      }
    };
    walk(t.dataDir);
    if (stored !== null) {
      // The state is in PostgreSQL, not in the data dir; the dump holds the registered cluster.
      expect(files.some((f) => f.endsWith('ironlens.db'))).toBe(false);
      expect(stored).toMatch(/INSERT INTO public\.clusters .*'grep'/);
      for (const n of needles) expect(stored.includes(n), `${n.slice(0, 12)}… found in the database`).toBe(false);
    } else {
      expect(files.some((f) => f.endsWith('ironlens.db'))).toBe(true);
    }
    expect(existsSync(join(t.dataDir, 'secret.key'))).toBe(true);
    expect(statSync(join(t.dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
    for (const f of files) {
      const content = readFileSync(f).toString('latin1');
      for (const n of needles) expect(content.includes(n), `${n.slice(0, 12)}… found in ${f}`).toBe(false);
    }
  });
});
