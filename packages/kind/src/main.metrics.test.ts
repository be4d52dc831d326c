/**
 * `ironlens kind`'s `/metrics` over real HTTP: a cluster created as a job (kind, kubectl and
 * docker are stand-in executables, the edge that cannot run here) shows up in the job metrics.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePrometheusText, sampleValue, waitFor } from '@ironlens/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningKindPanel, startKindPanel } from './main';
import { type StandIns, writeStandIns } from './testing/standins';

const TOKEN = 'kind-metrics-token';
let standins: StandIns | undefined;
let panel: RunningKindPanel | undefined;
let dir: string | undefined;

afterEach(async () => {
  await panel?.close();
  standins?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
  panel = standins = dir = undefined;
});

describe('ironlens kind /metrics', () => {
  it('is behind KIND_K8S_TOKEN and counts the creation job by kind and outcome', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ironlens-kind-metrics-'));
    standins = writeStandIns();
    const env = standins.env({
      KIND_K8S_DB: join(dir, 'kind.sqlite'),
      KIND_K8S_CLUSTERS_DIR: join(dir, 'clusters'),
      KIND_K8S_WEB_HOST: '127.0.0.1',
      KIND_K8S_WEB_PORT: '0',
      KIND_K8S_SKIP_VERSION_LIST: '1',
      KIND_K8S_TOKEN: TOKEN,
    });
    panel = await startKindPanel(env, { webDist: join(dir, 'no-web-build'), logger: false });
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${panel.url}/metrics`)).status).toBe(401);

    const created = await fetch(`${panel.url}/api/v1/clusters`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'dev', workers: 0 }) });
    expect(created.status).toBe(202);
    const jobId = (await created.json()).job_id as string;
    const url = panel.url;
    const job = await waitFor(
      'the creation job to finish',
      async () => (await fetch(`${url}/api/v1/jobs/${jobId}`, { headers: auth })).json(),
      (j) => j.status === 'success' || j.status === 'failed',
      20_000,
    );
    expect(job.status).toBe('success');

    const res = await fetch(`${panel.url}/metrics`, { headers: auth });
    expect(res.status).toBe(200);
    const text = await res.text();
    const samples = parsePrometheusText(text);
    expect(sampleValue(samples, 'ironlens_jobs_finished_total', { kind: 'kind.create_cluster', outcome: 'success' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_job_duration_seconds_count', { kind: 'kind.create_cluster', outcome: 'success' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_jobs_running', { kind: 'kind.create_cluster' })).toBe(0);
    expect(sampleValue(samples, 'ironlens_http_requests_total', { listener: 'kind', method: 'POST', route: '/api/v1/clusters', status: '202' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_http_requests_total', { listener: 'kind', method: 'GET', route: '/api/v1/jobs/:job_id', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(samples, 'ironlens_store_query_duration_seconds_count', { operation: 'insert' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(jobId);
    expect(text).not.toContain(TOKEN);
  });
});
