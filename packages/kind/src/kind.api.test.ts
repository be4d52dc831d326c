import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processAlive as alive, JobsRepository } from '@ironlens/core';
import { waitFor, waitUntil } from '@ironlens/core/testing';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { CREATE_CLUSTER_JOB } from './services/kind-jobs.service';
import { newTestPanel, startTagsFixture, type TestPanel } from './testing/panel';

const panels: TestPanel[] = [];
async function panel(opts: Parameters<typeof newTestPanel>[0] = {}) {
  const p = await newTestPanel(opts);
  panels.push(p);
  return p;
}
afterEach(async () => {
  for (const p of panels.splice(0)) await p.close();
});

const until = (fn: () => Promise<boolean> | boolean, ms = 10_000) => waitUntil('the condition', fn, ms, 10);

const create = (p: TestPanel, payload: unknown) => p.app.inject({ method: 'POST', url: '/api/v1/clusters', payload: payload as object });

describe('GET /api/v1/health', () => {
  it('is ok when kind and kubectl are on PATH and docker answers info', async () => {
    const p = await panel();
    const r = await p.app.inject({ url: '/api/v1/health' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ status: 'ok', kind_in_path: true, kubectl_in_path: true, container_cli: 'docker', container_engine_ok: true, container_engine_detail: null });
    expect(p.standins.calls('docker').map((c) => c.args)).toEqual([['info']]);
  });

  it('is degraded with the engine’s own words when the docker daemon is down', async () => {
    const p = await panel({ env: { STANDIN_ENGINE_DOWN: '1' } });
    const body = (await p.app.inject({ url: '/api/v1/health' })).json();
    expect(body.status).toBe('degraded');
    expect(body.container_engine_ok).toBe(false);
    expect(body.container_engine_detail).toMatch(/Cannot connect to the Docker daemon/);
  });

  it('is degraded, not crashed, when kind, kubectl and the engine are all missing', async () => {
    const p = await panel({ tools: [] });
    const r = await p.app.inject({ url: '/api/v1/health' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ status: 'degraded', kind_in_path: false, kubectl_in_path: false, container_engine_ok: false });
    expect(r.json().container_engine_detail).toMatch(/docker/);
  });

  it('asks podman when CONTAINER_CLI=podman', async () => {
    const p = await panel({ env: { CONTAINER_CLI: 'podman' } });
    const body = (await p.app.inject({ url: '/api/v1/health' })).json();
    expect(body).toMatchObject({ status: 'ok', container_cli: 'podman' });
    expect(p.standins.calls('podman').map((c) => c.args)).toEqual([['info']]);
    expect(p.standins.calls('docker')).toEqual([]);
  });
});

describe('GET /api/v1/versions', () => {
  it('lists stable kindest/node tags from every registry page, newest first, without duplicates', async () => {
    const fixture = await startTagsFixture([
      ['latest', 'v1.31.0', 'v1.30.4', 'v1.31.0-rc.1'],
      ['v1.29.12', 'v1.31.0', 'v1.9.11', 'v1.32.0-alpha.1', 'v1.32.0'],
    ]);
    try {
      const p = await panel({ env: { KIND_K8S_SKIP_VERSION_LIST: '0', KIND_K8S_TAGS_URL: fixture.url } });
      const r = await p.app.inject({ url: '/api/v1/versions' });
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ tags: ['v1.32.0', 'v1.31.0', 'v1.30.4', 'v1.29.12', 'v1.9.11'], skipped: false });
      expect(fixture.requests).toHaveLength(2);
    } finally {
      await fixture.close();
    }
  });

  it('answers an empty, skipped list without asking the registry when KIND_K8S_SKIP_VERSION_LIST=1', async () => {
    const fixture = await startTagsFixture([['v1.31.0']]);
    try {
      const p = await panel({ env: { KIND_K8S_SKIP_VERSION_LIST: '1', KIND_K8S_TAGS_URL: fixture.url } });
      expect((await p.app.inject({ url: '/api/v1/versions' })).json()).toEqual({ tags: [], skipped: true, reason: 'KIND_K8S_SKIP_VERSION_LIST' });
      expect(fixture.requests).toHaveLength(0);
    } finally {
      await fixture.close();
    }
  });

  it('answers an empty list with the error when the registry fails', async () => {
    const fixture = await startTagsFixture([], { status: 429 });
    try {
      const p = await panel({ env: { KIND_K8S_SKIP_VERSION_LIST: '0', KIND_K8S_TAGS_URL: fixture.url } });
      const r = await p.app.inject({ url: '/api/v1/versions' });
      expect(r.statusCode).toBe(200);
      expect(r.json()).toMatchObject({ tags: [], skipped: false });
      expect(r.json().error).toMatch(/429/);
    } finally {
      await fixture.close();
    }
  });
});

describe('creating a cluster', () => {
  it('runs every stage as a job and leaves kubeconfig, kind config and meta.json in the cluster directory', async () => {
    // Each of kind's stages waits until the test saw it as the job's stage, so polling cannot miss one.
    const gates = mkdtempSync(join(tmpdir(), 'ironlens-kind-gates-'));
    onTestFinished(() => rmSync(gates, { recursive: true, force: true }));
    const p = await panel({ env: { STANDIN_KIND_STEP_MS: '80', STANDIN_KIND_GATE_DIR: gates } });
    const r = await create(p, { name: 'dev', kubernetes_version: '1.29.4', workers: 2 });
    expect(r.statusCode).toBe(202);
    const accepted = r.json();
    expect(accepted).toMatchObject({ status: 'queued' });
    expect(accepted.job_id).toMatch(/^[0-9a-f]{32}$/);
    expect(accepted.message).toContain(`/api/v1/jobs/${accepted.job_id}`);

    // Every stage the job's log tail records, in order; kind's own are the ones held at a gate.
    const logStages = [
      'Checking kind, kubectl and the container engine',
      'Writing kind config (2 workers, kindest/node:v1.29.4)',
      'kind create cluster',
      'kind create cluster: Ensuring node image (kindest/node:v1.29.4)',
      'kind create cluster: Preparing nodes',
      'kind create cluster: Writing configuration',
      'kind create cluster: Starting control-plane',
      'kind create cluster: Installing CNI',
      'kind create cluster: Installing StorageClass',
      'kind create cluster: Joining worker nodes',
      'Exporting kubeconfig',
      'Patching kubeconfig for the host',
      'Waiting for nodes Ready',
      'Writing meta.json',
    ];
    const held: Array<{ status: string; stage: string | null; percent: number | null }> = [];
    const kindStages = logStages.filter((l) => l.startsWith('kind create cluster: '));
    for (const [i, stage] of kindStages.entries()) {
      const j = await waitFor(
        `the job at ${stage}`,
        async () => (await p.app.inject({ url: `/api/v1/jobs/${accepted.job_id}` })).json(),
        (x) => x.status === 'running' && x.progress_stage === stage,
      );
      held.push({ status: j.status, stage: j.progress_stage, percent: j.progress_percent });
      writeFileSync(join(gates, String(i)), '');
    }
    const after = await p.waitJob(accepted.job_id);
    const { final } = after;
    const seen = [...held, ...after.seen];
    expect(final).toMatchObject({ job_id: accepted.job_id, kind: 'create_cluster', status: 'success', cluster_name: 'dev', message: 'Cluster created', progress_stage: null, progress_percent: null, error: null });
    expect(final.created_at_utc).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    const dir = join(p.clustersDir, 'dev');
    expect(final.result).toEqual({
      cluster_name: 'dev',
      kubernetes_version_tag: 'v1.29.4',
      node_image: 'kindest/node:v1.29.4',
      workers: 2,
      kubeconfig_path: join(dir, 'kubeconfig'),
      kubeconfig_patched_for_host: true,
      nodes_ready: true,
      nodes_ready_message: expect.stringContaining('node/dev-worker2 condition met'),
    });

    // Every stage is recorded in order in the job's log tail.
    const stages = final.log_tail.filter((l: string) => l.startsWith('==> ')).map((l: string) => l.slice(4));
    expect(stages).toEqual(logStages);
    // Polling saw the job move through kind's stages while it ran, its percent never going back.
    const running = seen.filter((x) => x.status === 'running');
    expect(new Set(running.map((x) => x.stage)).size).toBeGreaterThanOrEqual(4);
    expect(running.some((x) => x.stage === 'kind create cluster: Starting control-plane')).toBe(true);
    const percents = running.filter((x) => x.percent !== null).map((x) => x.percent as number);
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
    expect(seen[seen.length - 1].status).toBe('success');
    // kind's own lines are in the log tail.
    expect(final.log_tail).toContain(' ✓ Starting control-plane 🕹️');

    // The exact argument lists the real tools receive.
    const kindCalls = p.standins.calls('kind').map((c) => c.args);
    expect(kindCalls).toEqual([
      ['get', 'clusters'],
      ['create', 'cluster', '--name', 'dev', '--config', join(dir, 'kind-config.yaml')],
      ['export', 'kubeconfig', '--name', 'dev', '--kubeconfig', join(dir, 'kubeconfig')],
    ]);
    expect(p.standins.calls('kubectl').map((c) => c.args)).toEqual([['--kubeconfig', join(dir, 'kubeconfig'), 'wait', '--for=condition=Ready', 'nodes', '--all', '--timeout=180s']]);
    expect(p.standins.calls('docker').map((c) => c.args)).toEqual([['info']]);

    expect(readFileSync(join(dir, 'kind-config.yaml'), 'utf8')).toBe(
      '# Written by ironlens (kind panel).\nkind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n' +
        '  - role: control-plane\n    image: kindest/node:v1.29.4\n' +
        '  - role: worker\n    image: kindest/node:v1.29.4\n' +
        '  - role: worker\n    image: kindest/node:v1.29.4\n',
    );
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
    expect(meta).toMatchObject({ cluster_name: 'dev', kubernetes_version_tag: 'v1.29.4', node_image: 'kindest/node:v1.29.4', worker_nodes: 2, kubeconfig_patched_for_host: true });
    expect(statSync(join(dir, 'kubeconfig')).mode & 0o777).toBe(0o600);
    expect(p.standins.clusters()).toEqual(['dev']);
  });

  it('uses kind’s default node image when no version is given, and one worker by default', async () => {
    const p = await panel();
    const r = await create(p, { name: 'plain' });
    const { final } = await p.waitJob(r.json().job_id);
    expect(final.status).toBe('success');
    expect(final.result).toMatchObject({ kubernetes_version_tag: null, node_image: null, workers: 1 });
    expect(readFileSync(join(p.clustersDir, 'plain', 'kind-config.yaml'), 'utf8')).not.toContain('image:');
  });

  it('tells kind to use podman through KIND_EXPERIMENTAL_PROVIDER when CONTAINER_CLI=podman', async () => {
    const p = await panel({ env: { CONTAINER_CLI: 'podman' } });
    const { final } = await p.waitJob((await create(p, { name: 'pod', workers: 0 })).json().job_id);
    expect(final.status).toBe('success');
    const kindCalls = p.standins.calls('kind');
    expect(kindCalls.length).toBeGreaterThan(0);
    expect(kindCalls.every((c) => c.provider === 'podman')).toBe(true);
    expect(p.standins.calls('podman').map((c) => c.args)).toEqual([['info']]);
  });

  it('patches a kubeconfig that points at 0.0.0.0 to the host loopback', async () => {
    const p = await panel({ env: { STANDIN_KIND_API_ADDR: '0.0.0.0' } });
    const { final } = await p.waitJob((await create(p, { name: 'lo', workers: 0 })).json().job_id);
    expect(final.status).toBe('success');
    const kc = readFileSync(join(p.clustersDir, 'lo', 'kubeconfig'), 'utf8');
    expect(kc).toMatch(/server: https:\/\/127\.0\.0\.1:\d+/);
    expect(kc).not.toContain('0.0.0.0');
  });

  it('writes KIND_K8S_API_SERVER_HOST into the kubeconfig with a TLS name kind’s certificate holds', async () => {
    const p = await panel({ env: { KIND_K8S_API_SERVER_HOST: 'host.docker.internal' } });
    const { final } = await p.waitJob((await create(p, { name: 'incontainer', workers: 0 })).json().job_id);
    expect(final.status).toBe('success');
    const kc = readFileSync(join(p.clustersDir, 'incontainer', 'kubeconfig'), 'utf8');
    expect(kc).toMatch(/server: https:\/\/host\.docker\.internal:\d+/);
    expect(kc).toContain('tls-server-name: localhost');
  });

  it('succeeds with nodes_ready false when the nodes do not become Ready in time', async () => {
    const p = await panel({ env: { STANDIN_KUBECTL_NOT_READY: '1' } });
    const { final } = await p.waitJob((await create(p, { name: 'slow' })).json().job_id);
    expect(final.status).toBe('success');
    expect(final.result).toMatchObject({ nodes_ready: false });
    expect((final.result as { nodes_ready_message: string }).nodes_ready_message).toMatch(/timed out waiting for the condition/);
    expect(JSON.parse(readFileSync(join(p.clustersDir, 'slow', 'meta.json'), 'utf8')).nodes_ready).toBe(false);
  });

  it('answers 409 when kind already has a cluster of that name, and runs no create', async () => {
    const p = await panel();
    p.standins.addCluster('taken');
    const r = await create(p, { name: 'taken' });
    expect(r.statusCode).toBe(409);
    expect(r.json().detail).toBeTypeOf('string');
    expect(p.standins.calls('kind').map((c) => c.args)).toEqual([['get', 'clusters']]);
  });

  it('lets exactly one of two simultaneous creates of the same name win; the other gets 409', async () => {
    const p = await panel({ env: { STANDIN_KIND_STEP_MS: '100' } });
    const [a, b] = await Promise.all([create(p, { name: 'race', workers: 0 }), create(p, { name: 'race', workers: 0 })]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([202, 409]);
    const winner = a.statusCode === 202 ? a : b;
    expect((await p.waitJob(winner.json().job_id)).final.status).toBe('success');
    expect(p.standins.calls('kind').filter((c) => c.args[0] === 'create')).toHaveLength(1);
  });

  it.each([
    ['an upper-case name', { name: 'Dev' }],
    ['a path', { name: '../etc' }],
    ['a flag-like name', { name: '-rf' }],
    ['a dot', { name: '.' }],
    ['a name with a space', { name: 'a b' }],
    ['a 51-character name', { name: 'a'.repeat(51) }],
    ['no name', { workers: 1 }],
    ['a non-integer worker count', { name: 'ok', workers: 'many' }],
    ['too many workers', { name: 'ok', workers: 99 }],
    ['negative workers', { name: 'ok', workers: -1 }],
    ['a version that is not x.y.z', { name: 'ok', kubernetes_version: 'latest' }],
  ])('refuses %s with 400 before any command runs', async (_label, body) => {
    const p = await panel();
    const r = await create(p, body);
    expect(r.statusCode).toBe(400);
    expect(r.json()).toHaveProperty('detail');
    expect(p.standins.calls()).toEqual([]);
  });

  it('refuses a body that is not JSON with 400', async () => {
    const p = await panel();
    const r = await p.app.inject({ method: 'POST', url: '/api/v1/clusters', payload: '{"name":', headers: { 'content-type': 'application/json' } });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toHaveProperty('detail');
  });

  it('fails clearly and cleans up when kind create fails at a stage', async () => {
    const p = await panel({ env: { STANDIN_KIND_FAIL_AT: 'Starting control-plane' } });
    const { final, seen } = await p.waitJob((await create(p, { name: 'broken', workers: 1 })).json().job_id);
    expect(final.status).toBe('failed');
    expect(final.error).toMatch(/^kind create cluster failed: ERROR: failed to create cluster/);
    expect(final.message).toBe(final.error);
    expect(seen.some((s) => s.stage === 'Failed: cleaning up')).toBe(true);
    expect(final.progress_stage).toBe('Failed at: kind create cluster: Starting control-plane (cleaned up)');
    const kindCalls = p.standins.calls('kind').map((c) => c.args);
    expect(kindCalls[kindCalls.length - 1]).toEqual(['delete', 'cluster', '--name', 'broken']);
    expect(existsSync(join(p.clustersDir, 'broken'))).toBe(false);
    expect(p.standins.clusters()).toEqual([]);
    expect(final.log_tail).toContain(' ✗ Starting control-plane 🕹️');
  });

  it('fails clearly, without running kind, when the container engine is down', async () => {
    const p = await panel({ env: { STANDIN_ENGINE_DOWN: '1' } });
    const { final } = await p.waitJob((await create(p, { name: 'nodocker' })).json().job_id);
    expect(final.status).toBe('failed');
    expect(final.error).toMatch(/container engine \(docker\) is not answering: Cannot connect to the Docker daemon/);
    expect(p.standins.calls('kind').filter((c) => c.args[0] !== 'get')).toEqual([]);
    expect(existsSync(join(p.clustersDir, 'nodocker'))).toBe(false);
  });

  it('accepts the create and fails the job clearly when kind is not installed', async () => {
    const p = await panel({ tools: ['kubectl', 'docker'] });
    const r = await create(p, { name: 'nokind' });
    expect(r.statusCode).toBe(202);
    const { final } = await p.waitJob(r.json().job_id);
    expect(final.status).toBe('failed');
    expect(final.error).toBe('kind is not installed or not on PATH');
    const list = await p.app.inject({ url: '/api/v1/clusters' });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([]);
  });

  it('fails the job clearly when kubectl is not installed', async () => {
    const p = await panel({ tools: ['kind', 'docker'] });
    const { final } = await p.waitJob((await create(p, { name: 'nokubectl' })).json().job_id);
    expect(final.status).toBe('failed');
    expect(final.error).toBe('kubectl is not installed or not on PATH');
  });
});

describe('cancelling a creation', () => {
  it('kills a running kind create with its children, deletes the half-made cluster, and ends cancelled', async () => {
    const p = await panel({ env: { STANDIN_KIND_HANG_AT: 'Starting control-plane' } });
    const id = (await create(p, { name: 'stopme', workers: 1 })).json().job_id;
    await until(async () => (await p.app.inject({ url: `/api/v1/jobs/${id}` })).json().progress_stage === 'kind create cluster: Starting control-plane');
    const pidFile = join(p.standins.stateDir, 'kind-child.pid');
    await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '');
    const childPid = Number(readFileSync(pidFile, 'utf8'));
    expect(alive(childPid)).toBe(true);
    expect(p.standins.clusters()).toEqual(['stopme']);

    const c = await p.app.inject({ method: 'POST', url: `/api/v1/jobs/${id}/cancel` });
    expect(c.statusCode).toBe(200);
    expect(c.json()).toMatchObject({ job_id: id, cancel_requested: true });
    expect(c.json().message).toBeTypeOf('string');

    const { final, seen } = await p.waitJob(id);
    expect(final.status).toBe('cancelled');
    expect(final.cancel_requested).toBe(true);
    expect(seen.some((s) => s.stage === 'Cancelled: cleaning up')).toBe(true);
    expect(final.progress_stage).toBe('Cancelled at: kind create cluster: Starting control-plane (cleaned up)');
    await until(() => !alive(childPid), 5000);
    const kindCalls = p.standins.calls('kind').map((x) => x.args);
    expect(kindCalls[kindCalls.length - 1]).toEqual(['delete', 'cluster', '--name', 'stopme']);
    expect(p.standins.clusters()).toEqual([]);
    expect(existsSync(join(p.clustersDir, 'stopme'))).toBe(false);
    expect(p.standins.calls('kubectl')).toEqual([]);

    const again = await p.app.inject({ method: 'POST', url: `/api/v1/jobs/${id}/cancel` });
    expect(again.statusCode).toBe(400);
    expect(again.json()).toHaveProperty('detail');
  });

  it('answers 404 with a detail for an unknown job', async () => {
    const p = await panel();
    const r = await p.app.inject({ method: 'POST', url: '/api/v1/jobs/0123456789abcdef/cancel' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ detail: 'Job not found' });
    const g = await p.app.inject({ url: '/api/v1/jobs/0123456789abcdef' });
    expect(g.statusCode).toBe(404);
    expect(g.json()).toEqual({ detail: 'Job not found' });
  });
});

describe('clusters after creation', () => {
  it('lists, details, downloads the kubeconfig, shows workloads, counts stats, and deletes', async () => {
    const p = await panel();
    await p.waitJob((await create(p, { name: 'dev', kubernetes_version: 'v1.31.0', workers: 2 })).json().job_id);
    p.standins.addCluster('orphan-in-kind', 0);

    const list = (await p.app.inject({ url: '/api/v1/clusters' })).json();
    expect(list).toEqual([
      {
        name: 'dev',
        registered_in_kind: true,
        has_local_kubeconfig: true,
        meta: expect.objectContaining({ cluster_name: 'dev', kubernetes_version_tag: 'v1.31.0', node_image: 'kindest/node:v1.31.0', worker_nodes: 2, kubeconfig_patched_for_host: true }),
      },
      { name: 'orphan-in-kind', registered_in_kind: true, has_local_kubeconfig: false, meta: null },
    ]);

    const details = await p.app.inject({ url: '/api/v1/clusters/dev' });
    expect(details.statusCode).toBe(200);
    expect(details.json()).toMatchObject({ name: 'dev', registered_in_kind: true, has_local_kubeconfig: true, kubeconfig_path: join(p.clustersDir, 'dev', 'kubeconfig'), kubectl_get_nodes_rc: 0 });
    expect(details.json().kubectl_get_nodes).toMatch(/^NAME\s+STATUS\s+ROLES/);
    expect(details.json().kubectl_get_nodes).toContain('dev-worker2');

    const orphan = (await p.app.inject({ url: '/api/v1/clusters/orphan-in-kind' })).json();
    expect(orphan).toMatchObject({ registered_in_kind: true, has_local_kubeconfig: false, kubeconfig_path: null, kubectl_get_nodes_rc: null, kubectl_get_nodes: null });

    const kc = await p.app.inject({ url: '/api/v1/clusters/dev/kubeconfig' });
    expect(kc.statusCode).toBe(200);
    expect(kc.headers['content-disposition']).toBe('attachment; filename="kubeconfig-dev.yaml"');
    expect(kc.body).toContain('current-context: kind-dev');

    const wl = (await p.app.inject({ url: '/api/v1/clusters/dev/workloads' })).json();
    expect(wl).toMatchObject({ cluster_name: 'dev', nodes_rc: 0, pods_rc: 0, error: null });
    expect(wl.pods_output).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS/);
    expect(wl.pods_output).toContain('etcd-dev-control-plane');

    const kubectlArgs = p.standins.calls('kubectl').map((c) => c.args);
    const kcPath = join(p.clustersDir, 'dev', 'kubeconfig');
    expect(kubectlArgs).toContainEqual(['--kubeconfig', kcPath, 'get', 'nodes', '-o', 'wide']);
    expect(kubectlArgs).toContainEqual(['--kubeconfig', kcPath, 'get', 'pods', '-A']);

    expect((await p.app.inject({ url: '/api/v1/stats' })).json()).toEqual({
      kind_clusters_count: 2,
      local_cluster_dirs_count: 1,
      total_workers_from_meta: 2,
      jobs_total: 1,
      jobs_recent_failed: 0,
    });

    const del = await p.app.inject({ method: 'DELETE', url: '/api/v1/clusters/dev' });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toMatchObject({ name: 'dev', kind_delete_ok: true });
    expect(del.json().summary).toContain(join(p.clustersDir, 'dev'));
    expect(p.standins.calls('kind').map((c) => c.args)).toContainEqual(['delete', 'cluster', '--name', 'dev']);
    expect(existsSync(join(p.clustersDir, 'dev'))).toBe(false);
    expect(p.standins.clusters()).toEqual(['orphan-in-kind']);
    expect((await p.app.inject({ url: '/api/v1/clusters/dev' })).statusCode).toBe(404);
  });

  it('reports a missing kubeconfig: 404 on download, an error string on workloads', async () => {
    const p = await panel();
    p.standins.addCluster('bare', 0);
    const kc = await p.app.inject({ url: '/api/v1/clusters/bare/kubeconfig' });
    expect(kc.statusCode).toBe(404);
    expect(kc.json()).toHaveProperty('detail');
    const wl = await p.app.inject({ url: '/api/v1/clusters/bare/workloads' });
    expect(wl.statusCode).toBe(200);
    expect(wl.json()).toEqual({ cluster_name: 'bare', nodes_rc: null, nodes_output: null, pods_rc: null, pods_output: null, error: 'No saved kubeconfig in clusters/bare/' });
  });

  it.each([
    ['GET', '/api/v1/clusters/Bad_Name'],
    ['GET', '/api/v1/clusters/Bad_Name/kubeconfig'],
    ['GET', '/api/v1/clusters/Bad_Name/workloads'],
    ['DELETE', '/api/v1/clusters/Bad_Name'],
    ['GET', '/api/v1/clusters/..%2Fetc/kubeconfig'],
  ])('answers 400 to %s %s before any command runs', async (method, url) => {
    const p = await panel();
    const r = await p.app.inject({ method: method as 'GET', url });
    expect(r.statusCode).toBe(400);
    expect(r.json().detail).toBeTypeOf('string');
    expect(p.standins.calls()).toEqual([]);
  });

  it('answers 404 when deleting a cluster neither kind nor the directory knows', async () => {
    const p = await panel();
    const r = await p.app.inject({ method: 'DELETE', url: '/api/v1/clusters/ghost' });
    expect(r.statusCode).toBe(404);
    expect(p.standins.calls('kind').map((c) => c.args)).toEqual([['get', 'clusters']]);
  });

  it('refuses with 409 to delete a cluster whose creation is still running', async () => {
    const p = await panel({ env: { STANDIN_KIND_HANG_AT: 'Writing configuration' } });
    const id = (await create(p, { name: 'busy', workers: 0 })).json().job_id;
    await until(async () => (await p.app.inject({ url: `/api/v1/jobs/${id}` })).json().progress_stage?.includes('Writing configuration') ?? false);
    const r = await p.app.inject({ method: 'DELETE', url: '/api/v1/clusters/busy' });
    expect(r.statusCode).toBe(409);
    await p.app.inject({ method: 'POST', url: `/api/v1/jobs/${id}/cancel` });
    expect((await p.waitJob(id)).final.status).toBe('cancelled');
  });

  it('deletes a cluster that only has a directory, reporting that kind did not know it', async () => {
    const p = await panel();
    await p.waitJob((await create(p, { name: 'gone', workers: 0 })).json().job_id);
    // kind lost it (docker restarted, say): the directory remains.
    const kindState = join(p.standins.stateDir, 'clusters', 'gone.json');
    rmSync(kindState);
    const r = await p.app.inject({ method: 'DELETE', url: '/api/v1/clusters/gone' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ name: 'gone', kind_delete_ok: true });
    expect(existsSync(join(p.clustersDir, 'gone'))).toBe(false);
    expect(p.standins.calls('kind').filter((c) => c.args[0] === 'delete')).toEqual([]);
  });
});

describe('GET /api/v1/jobs', () => {
  it('lists creation jobs newest first, 30 by default, with limit 1–200', async () => {
    const p = await panel();
    const ids: string[] = [];
    for (const name of ['j1', 'j2', 'j3']) {
      const id = (await create(p, { name, workers: 0 })).json().job_id;
      await p.waitJob(id);
      ids.push(id);
    }
    const all = (await p.app.inject({ url: '/api/v1/jobs' })).json();
    expect(all.map((j: { job_id: string }) => j.job_id)).toEqual([...ids].reverse());
    expect(all[0]).toMatchObject({ kind: 'create_cluster', cluster_name: 'j3', status: 'success' });
    const one = (await p.app.inject({ url: '/api/v1/jobs?limit=1' })).json();
    expect(one.map((j: { job_id: string }) => j.job_id)).toEqual([ids[2]]);
    for (const bad of ['0', '201', 'x']) {
      const r = await p.app.inject({ url: `/api/v1/jobs?limit=${bad}` });
      expect(r.statusCode, `limit=${bad}`).toBe(422);
      expect(Array.isArray(r.json().detail)).toBe(true);
    }
  });

  it('keeps jobs across a restart and marks one that was running as failed (interrupted)', async () => {
    const p = await panel();
    const done = (await create(p, { name: 'kept', workers: 0 })).json().job_id;
    await p.waitJob(done);
    // A job the previous process was running when it died.
    await new JobsRepository(p.store).create({ id: 'deadbeefdeadbeefdeadbeefdeadbeef', kind: CREATE_CLUSTER_JOB, subject: 'halfway', exclusive: true });
    await new JobsRepository(p.store).update('deadbeefdeadbeefdeadbeefdeadbeef', { status: 'running', stage: 'kind create cluster: Preparing nodes', percent: 20 });

    await p.restart();
    const kept = (await p.app.inject({ url: `/api/v1/jobs/${done}` })).json();
    expect(kept.status).toBe('success');
    const dead = (await p.app.inject({ url: '/api/v1/jobs/deadbeefdeadbeefdeadbeefdeadbeef' })).json();
    expect(dead.status).toBe('failed');
    expect(dead.error).toMatch(/interrupted/);
    expect(dead.progress_stage).toBe('kind create cluster: Preparing nodes');
    expect((await p.app.inject({ url: '/api/v1/stats' })).json()).toMatchObject({ jobs_total: 2, jobs_recent_failed: 1 });
    // Its name is free again.
    expect((await create(p, { name: 'halfway', workers: 0 })).statusCode).toBe(202);
  });

  it('keeps at most KIND_K8S_JOBS_KEEP creation jobs', async () => {
    const p = await panel({ env: { KIND_K8S_JOBS_KEEP: '2' } });
    for (const name of ['k1', 'k2', 'k3']) await p.waitJob((await create(p, { name, workers: 0 })).json().job_id);
    const all = (await p.app.inject({ url: '/api/v1/jobs?limit=200' })).json();
    expect(all.map((j: { cluster_name: string }) => j.cluster_name)).toEqual(['k3', 'k2']);
  });
});

describe('documentation', () => {
  it('serves Swagger UI, ReDoc and an OpenAPI document listing the seed’s routes', async () => {
    const p = await panel();
    const spec = (await p.app.inject({ url: '/openapi.json' })).json();
    for (const path of ['/api/v1/health', '/api/v1/versions', '/api/v1/stats', '/api/v1/clusters', '/api/v1/clusters/{name}', '/api/v1/clusters/{name}/kubeconfig', '/api/v1/clusters/{name}/workloads', '/api/v1/jobs', '/api/v1/jobs/{job_id}', '/api/v1/jobs/{job_id}/cancel']) {
      expect(Object.keys(spec.paths)).toContain(path);
    }
    expect((await p.app.inject({ url: '/docs/' })).statusCode).toBe(200);
    expect((await p.app.inject({ url: '/redoc' })).statusCode).toBe(200);
  });
});
