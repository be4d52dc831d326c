import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostileApiServer } from '@ironlens/clusters/testing';
import { parsePrometheusText, sampleValue, sleep, testDatabaseEnv } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from './serve';

// Issue 18, finding 4: whatever a registered cluster answers, `ironlens serve` keeps running
// and its provisioning listener keeps answering /boot-vars within 100 ms. The cluster is an API
// server of the test's own on loopback; the client is the real @kubernetes/client-node adapter.
const dir = mkdtempSync(join(tmpdir(), `ironlens-hostile-serve-${process.pid}-`));
const TOKEN = `console-${process.pid}`;
let running: Running;
let api: HostileApiServer;
let clusterId: string;
let sessionId: string;
let ours: ((reason: unknown, p: Promise<unknown>) => void) | undefined;
const logs: string[] = [];

const auth = { authorization: `Bearer ${TOKEN}` };
const consoleGet = (path: string) => fetch(`${running.urls.console}${path}`, { headers: auth });

/** /boot-vars answers (any non-5xx status) within 100 ms. */
async function bootVarsAnswersFast(): Promise<void> {
  const started = performance.now();
  const res = await fetch(`${running.urls.boot}/boot-vars?mac=000c29000001&hostname=worker-01&format=json`);
  await res.text();
  const ms = performance.now() - started;
  expect(res.status).toBeLessThan(500);
  expect(ms, `/boot-vars took ${ms.toFixed(1)} ms`).toBeLessThan(100);
}

async function unhandledCount(): Promise<number> {
  const text = await (await consoleGet('/metrics')).text();
  return sampleValue(parsePrometheusText(text), 'ironlens_unhandled_rejections_total') ?? 0;
}

beforeAll(async () => {
  api = new HostileApiServer();
  await api.start();
  const before = process.listeners('unhandledRejection');
  running = await serve(
    {
      ...(await testDatabaseEnv()),
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IRONLENS_DATA_DIR: join(dir, 'data'),
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_TOKEN: TOKEN,
      IPXE_CP_DNSMASQ_RELOAD: 'false',
    },
    (m) => logs.push(m),
  );
  ours = process.listeners('unhandledRejection').find((l) => !before.includes(l)) as typeof ours;
  const form = new FormData();
  form.set('name', 'hostile');
  form.set('draft', 'true');
  form.set('file', new Blob([api.kubeconfig()]), 'kubeconfig.yaml');
  const res = await fetch(`${running.urls.console}/api/cluster/clusters`, { method: 'POST', headers: auth, body: form });
  const body = (await res.json()) as { cluster: { id: string }; sessionId: string };
  expect(res.status, JSON.stringify(body)).toBe(201);
  clusterId = body.cluster.id;
  sessionId = body.sessionId;
}, 120_000);

afterAll(async () => {
  await running?.close();
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens serve and a hostile cluster', () => {
  it('a Service with "ports": "x" and a Prometheus label, also with the other lists failing: no rejection leaks, /boot-vars answers', async () => {
    api.set('/api/v1/services', {
      json: { kind: 'ServiceList', items: [{ metadata: { name: 'prometheus', namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'prometheus' } }, spec: { ports: 'x' } }] },
    });
    expect((await consoleGet(`/api/cluster/overview?clusterId=${clusterId}`)).status).toBe(200);
    await bootVarsAnswersFast();
    api.set('/api/v1/pods', { status: 503, raw: 'unavailable' });
    for (let i = 0; i < 5; i++) expect((await consoleGet(`/api/cluster/overview?clusterId=${clusterId}`)).status).toBe(502);
    await sleep(200);
    await bootVarsAnswersFast();
    expect(await unhandledCount()).toBe(0);
    api.set('/api/v1/pods', { json: { kind: 'PodList', items: [] } });
    api.set('/api/v1/services', { json: { kind: 'ServiceList', items: [] } });
  });

  it('a 600 MB /version: answered as unreachable, /boot-vars answers while it streams and after', async () => {
    api.set('/version', { streamBytes: 600 * 1024 * 1024, prefix: '{"gitVersion":"' });
    const pending = consoleGet(`/api/cluster/clusters/${clusterId}/kubernetes-version`);
    await bootVarsAnswersFast();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ reachable: false });
    await bootVarsAnswersFast();
    api.set('/version', { json: { major: '1', minor: '36', gitVersion: 'v1.36.0' } });
  });

  it('deep JSON, JSON of another kind and error bodies: planning answers {result: null}, /boot-vars answers', async () => {
    api.set('/api/v1/nodes', { raw: `{"kind":"NodeList","items":[],"x":${'['.repeat(200_000)}${']'.repeat(200_000)}}` });
    const deep = await consoleGet(`/api/cluster/sessions/${sessionId}/planning-discovery/nodes`);
    expect(deep.status).toBe(200);
    expect(await deep.json()).toEqual({ result: null });
    await bootVarsAnswersFast();
    api.set('/api/v1/nodes', { json: { devices: [{ mac: '52:54:00:00:00:01' }] } });
    expect(await (await consoleGet(`/api/cluster/sessions/${sessionId}/planning-discovery/nodes`)).json()).toEqual({ result: null });
    await bootVarsAnswersFast();
    api.set('/api/v1/nodes', { json: { kind: 'NodeList', items: [] } });
  });

  it('200 concurrent overviews: a handful of list requests reach the cluster, /boot-vars answers after', async () => {
    api.set('/api/v1/nodes', { json: { kind: 'NodeList', items: [] }, delayMs: 300 });
    const before = api.count('/api/v1/nodes');
    // (The test's own 200 clients share this process' event loop, so /boot-vars is timed after them.)
    const answers = await Promise.all(Array.from({ length: 200 }, () => consoleGet(`/api/cluster/overview?clusterId=${clusterId}`)));
    await bootVarsAnswersFast();
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(api.count('/api/v1/nodes') - before).toBeLessThanOrEqual(4);
    api.set('/api/v1/nodes', { json: { kind: 'NodeList', items: [] } });
  });

  it('a rejection nobody handled is logged and counted (ironlens_unhandled_rejections_total), and the process goes on', async () => {
    expect(ours, 'serve installs an unhandledRejection listener').toBeTypeOf('function');
    const before = await unhandledCount();
    const p = Promise.reject(new Error('a bug somewhere'));
    p.catch(() => {}); // handled here, so that the test runner itself does not report it
    ours!(new Error('a bug somewhere'), p);
    expect(await unhandledCount()).toBe(before + 1);
    expect(logs.some((l) => l.includes('unhandled promise rejection was caught') && l.includes('a bug somewhere'))).toBe(true);
    await bootVarsAnswersFast();
  });
});
