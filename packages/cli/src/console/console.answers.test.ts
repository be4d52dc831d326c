import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registeredRoutes } from '@ironlens/core';
import { answerCheck } from '@ironlens/core/testing';
import { type StandIns, writeStandIns } from '@ironlens/kind/testing';
import { startTagsFixture } from '@ironlens/kind/testing/panel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';

// Issue 19: fast-json-stringify writes only what a response schema lists. The console
// listener's kind panel API (/kind/api/v1), access routes (/api/auth) and /healthz are called
// here through `ironlens serve` itself, with `answerCheck` installed on the console app: every
// JSON answer is compared with what its handler returned, and a field a schema drops or coerces
// is a drift. The kind CLI, kubectl and docker are the panel's stand-ins (this machine has no
// container engine); the states are chosen so that optional and nullable fields are filled: a
// cluster created through the API (saved kubeconfig, meta.json), one known to kind only, a
// finished job with its result, a cancelled one, a read tag list, named tokens used, expiring,
// revoked.

const TOKEN = 'answers-console-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const PREFIXES = /^(\/kind\/api\/v1\/|\/api\/auth\/|\/healthz$)/;

let dir: string;
let standins: StandIns;
let tags: Awaited<ReturnType<typeof startTagsFixture>>;
let running: Running;
const answers = answerCheck();
const called = new Set<string>();

async function call(method: 'GET' | 'POST' | 'DELETE', route: string, url: string, payload?: unknown, headers: Record<string, string> = auth) {
  const res = await running.apps.console.inject({ method, url, payload: payload as never, headers });
  called.add(`${method} ${route}`);
  return res;
}

async function waitJob(id: string, done: (status: string) => boolean) {
  const end = Date.now() + 30_000;
  for (;;) {
    const j = (await running.apps.console.inject({ url: `/kind/api/v1/jobs/${id}`, headers: auth })).json();
    if (done(j.status)) return j;
    if (Date.now() > end) throw new Error(`job ${id} still ${j.status} at ${j.progress_stage}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `ironlens-console-answers-${process.pid}-`));
  standins = writeStandIns();
  tags = await startTagsFixture([['v1.32.0', 'v1.31.0', 'latest', 'v1.30.4-rc.0', 'v1.30.4']]);
  const env = standins.env({
    PATH: `${standins.binDir}:${process.env.PATH ?? ''}`,
    IRONLENS_DATA_DIR: join(dir, 'data'),
    IRONLENS_BOOT_LISTEN: 'off',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: TOKEN,
    IPXE_CP_DNSMASQ_RELOAD: 'false',
    KIND_K8S_SKIP_VERSION_LIST: '0',
    KIND_K8S_TAGS_URL: tags.url,
    STANDIN_KIND_STEP_MS: '5',
    STANDIN_KIND_HANG_AT: 'Starting control-plane',
    STANDIN_KIND_HANG_NAME: 'stuck',
  });
  running = await serve(env, () => {}, { instrumentConsole: answers.install });
}, 60_000);

afterAll(async () => {
  await running?.close();
  await tags?.close();
  standins?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('console listener: every kind panel, access and health answer is what its handler returned', () => {
  it('calls every route of /kind/api/v1, /api/auth and /healthz in states that fill their answers', async () => {
    const health = await call('GET', '/healthz', '/healthz', undefined, {});
    expect(health.statusCode).toBe(200);

    // Access: the environment token, named tokens (one used, one expiring, one revoked).
    expect((await call('GET', '/api/auth/whoami', '/api/auth/whoami')).json()).toMatchObject({ name: 'env:IRONLENS_CONSOLE_TOKEN', role: 'admin' });
    const created = await call('POST', '/api/auth/tokens', '/api/auth/tokens', { name: 'ops', role: 'operator', expires: '30d' });
    expect(created.statusCode, created.body).toBe(201);
    const opsToken = created.json().token as string;
    expect((await call('POST', '/api/auth/tokens', '/api/auth/tokens', { name: 'gone', role: 'viewer' })).statusCode).toBe(201);
    expect((await call('GET', '/api/auth/whoami', '/api/auth/whoami', undefined, { authorization: `Bearer ${opsToken}` })).json()).toMatchObject({ name: 'ops', role: 'operator' });
    const revoked = await call('DELETE', '/api/auth/tokens/:name', '/api/auth/tokens/gone');
    expect(revoked.json()).toEqual({ revoked: 'gone' });
    const list = (await call('GET', '/api/auth/tokens', '/api/auth/tokens')).json().tokens as Array<Record<string, unknown>>;
    expect(list.find((t) => t.name === 'ops')).toMatchObject({ expires_at: expect.any(String), last_used_at: expect.any(String), revoked_at: null });
    expect(list.find((t) => t.name === 'gone')).toMatchObject({ revoked_at: expect.any(String) });

    // The kind panel: environment, tags read from the (stand-in) registry.
    expect((await call('GET', '/kind/api/v1/health', '/kind/api/v1/health')).json()).toMatchObject({ status: 'ok', kind_in_path: true, container_engine_ok: true });
    expect((await call('GET', '/kind/api/v1/versions', '/kind/api/v1/versions')).json().tags.length).toBeGreaterThan(0);

    // A cluster made through the API (kubeconfig and meta.json saved), one kind alone knows.
    const accepted = await call('POST', '/kind/api/v1/clusters', '/kind/api/v1/clusters', { name: 'alpha', kubernetes_version: '1.31.0', workers: 2 });
    expect(accepted.statusCode, accepted.body).toBe(202);
    const done = await waitJob(accepted.json().job_id, (s) => s !== 'queued' && s !== 'running');
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(done.result).not.toBeNull();
    standins.addCluster('kind-only', 1);

    // A creation that hangs, cancelled.
    const stuck = await call('POST', '/kind/api/v1/clusters', '/kind/api/v1/clusters', { name: 'stuck', workers: 0 });
    expect(stuck.statusCode, stuck.body).toBe(202);
    const stuckId = stuck.json().job_id as string;
    await waitJob(stuckId, (s) => s === 'running');
    const cancel = await call('POST', '/kind/api/v1/jobs/:job_id/cancel', `/kind/api/v1/jobs/${stuckId}/cancel`);
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect((await waitJob(stuckId, (s) => s === 'cancelled')).error).not.toBeNull();

    const clusters = (await call('GET', '/kind/api/v1/clusters', '/kind/api/v1/clusters')).json() as Array<{ name: string; meta: unknown }>;
    expect(clusters.map((c) => c.name)).toEqual(expect.arrayContaining(['alpha', 'kind-only']));
    expect(clusters.find((c) => c.name === 'alpha')?.meta).toMatchObject({ cluster_name: 'alpha', worker_nodes: 2 });
    expect((await call('GET', '/kind/api/v1/stats', '/kind/api/v1/stats')).json()).toMatchObject({ total_workers_from_meta: 2, jobs_total: 2 });
    const details = (await call('GET', '/kind/api/v1/clusters/:name', '/kind/api/v1/clusters/alpha')).json();
    expect(details).toMatchObject({ kubectl_get_nodes_rc: 0, kubeconfig_path: expect.any(String) });
    const kubeconfig = await call('GET', '/kind/api/v1/clusters/:name/kubeconfig', '/kind/api/v1/clusters/alpha/kubeconfig');
    expect(kubeconfig.statusCode).toBe(200);
    expect(kubeconfig.body).toContain('current-context: kind-alpha');
    expect((await call('GET', '/kind/api/v1/clusters/:name/workloads', '/kind/api/v1/clusters/alpha/workloads')).json()).toMatchObject({ nodes_rc: 0, pods_rc: 0 });
    const jobs = (await call('GET', '/kind/api/v1/jobs', '/kind/api/v1/jobs?limit=10')).json() as Array<{ status: string }>;
    expect(jobs.map((j) => j.status).sort()).toEqual(['cancelled', 'success']);
    expect((await call('GET', '/kind/api/v1/jobs/:job_id', `/kind/api/v1/jobs/${accepted.json().job_id}`)).json()).toMatchObject({ status: 'success', actor: expect.any(String) });
    const deleted = await call('DELETE', '/kind/api/v1/clusters/:name', '/kind/api/v1/clusters/alpha');
    expect(deleted.json()).toMatchObject({ name: 'alpha', kind_delete_ok: true });

    // Every route of those prefixes was called.
    const routes = registeredRoutes(running.apps.console)
      .filter((r) => PREFIXES.test(r.url))
      .map((r) => `${r.method} ${r.url}`);
    expect(routes.length).toBeGreaterThan(12);
    expect(routes.filter((r) => !called.has(r)), 'routes this test did not call').toEqual([]);
    // Every JSON answer was compared (all but the kubeconfig, which is YAML), and none differed.
    const checked = new Set([...answers.checked].map((c) => c.replace(/ \d+$/, '')));
    expect(routes.filter((r) => !checked.has(r) && r !== 'GET /kind/api/v1/clusters/:name/kubeconfig'), 'routes whose JSON answer was not compared').toEqual([]);
    expect(answers.drifts, 'answers that differ from what their handler returned').toEqual([]);
  }, 90_000);
});
