import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../http';
import { JobRunner, JobsRepository, type JobsTables, jobsMigrations } from '../jobs';
import { type NamedMigration, Store } from '../store';
import { parsePrometheusText, sampleValue, sleep, testStoreTarget, waitUntil } from '../testing';
import { Metrics } from './metrics';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function appWith(metrics: Metrics, token?: string) {
  const app = await createHttpApp({ title: 'test', metrics: { metrics, listener: 'test', token } });
  app.get('/devices/:mac', async (req) => ({ mac: (req.params as { mac: string }).mac }));
  return app;
}

async function scrape(app: Awaited<ReturnType<typeof appWith>>, token?: string) {
  const r = await app.inject({ url: '/metrics', headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(r.statusCode).toBe(200);
  expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return { text: r.body, samples: parsePrometheusText(r.body) };
}

describe('metrics', () => {
  it('counts requests by route pattern and status, never by URL, MAC or query string', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const app = await appWith(metrics);
    await app.inject({ url: '/devices/02:00:00:00:00:01?token=s3cret' });
    await app.inject({ url: '/devices/02:00:00:00:00:02' });
    await app.inject({ url: '/nowhere/02:00:00:00:00:03' });
    const { text, samples } = await scrape(app);
    const route = { listener: 'test', method: 'GET', route: '/devices/:mac', status: '200' };
    expect(sampleValue(samples, 'ironlens_http_requests_total', route)).toBe(2);
    expect(sampleValue(samples, 'ironlens_http_request_duration_seconds_count', route)).toBe(2);
    expect(sampleValue(samples, 'ironlens_http_request_duration_seconds_bucket', { ...route, le: '+Inf' })).toBe(2);
    expect(sampleValue(samples, 'ironlens_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
    expect(text).not.toMatch(/02:00:00|s3cret|nowhere/);
    await app.close();
  });

  it('puts /metrics behind the listener’s bearer token when one is set', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const app = await appWith(metrics, 'scrape-token');
    const anonymous = await app.inject({ url: '/metrics' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer');
    expect(anonymous.json()).toEqual({ detail: 'Unauthorized' });
    expect((await app.inject({ url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401);
    const { samples, text } = await scrape(app, 'scrape-token');
    expect(sampleValue(samples, 'ironlens_http_requests_total', { route: '/metrics', status: '401' })).toBe(2);
    expect(text).not.toContain('scrape-token');
    const spec = (await app.inject({ url: '/openapi.json' })).json();
    expect(spec.paths['/metrics'].get.security).toEqual([{ bearer: [] }]);
    await app.close();
  });

  it('keeps the registries of two apps in one process apart, and exports process metrics when asked', async () => {
    const a = new Metrics();
    const b = new Metrics({ processMetrics: false });
    const appA = await appWith(a);
    const appB = await appWith(b);
    await appA.inject({ url: '/devices/x' });
    const fromB = await scrape(appB);
    expect(sampleValue(fromB.samples, 'ironlens_http_requests_total', { route: '/devices/:mac' })).toBe(0);
    expect(fromB.samples.some((s) => s.name.startsWith('process_'))).toBe(false);
    const fromA = await scrape(appA);
    expect(sampleValue(fromA.samples, 'ironlens_http_requests_total', { route: '/devices/:mac' })).toBe(1);
    expect(sampleValue(fromA.samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    await appA.close();
    await appB.close();
  });

  // On SQLite, and on PostgreSQL in the suite's PostgreSQL run (vitest project `postgres`).
  it('times store queries by operation, and counts the failed ones', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-metrics-'));
    dirs.push(dir);
    const table: NamedMigration = {
      name: 'test-0001-things',
      up: async (db) => {
        await db.schema.createTable('things').addColumn('name', 'text', (c) => c.primaryKey()).execute();
      },
    };
    const store = await Store.open<{ things: { name: string } }>({ ...(await testStoreTarget(join(dir, 'db.sqlite'))), migrations: [table], onQuery: metrics.storeQuery });
    const before = parsePrometheusText(await metrics.text());
    await store.db.insertInto('things').values({ name: 'a' }).execute();
    await store.db.selectFrom('things').selectAll().execute();
    await store.db.selectFrom('things').selectAll().execute();
    await expect(store.db.insertInto('things').values({ name: 'a' }).execute()).rejects.toThrow();
    await store.db.updateTable('things').set({ name: 'b' }).execute();
    await store.db.deleteFrom('things').execute();
    const after = parsePrometheusText(await metrics.text());
    const delta = (name: string, labels: Record<string, string>) => sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta('ironlens_store_query_duration_seconds_count', { operation: 'select' })).toBe(2);
    expect(delta('ironlens_store_query_duration_seconds_count', { operation: 'insert' })).toBe(2);
    expect(delta('ironlens_store_query_duration_seconds_count', { operation: 'update' })).toBe(1);
    expect(delta('ironlens_store_query_duration_seconds_count', { operation: 'delete' })).toBe(1);
    expect(delta('ironlens_store_query_errors_total', { operation: 'insert' })).toBe(1);
    expect(delta('ironlens_store_query_errors_total', { operation: 'select' })).toBe(0);
    expect(sampleValue(after, 'ironlens_store_query_duration_seconds_sum', { operation: 'select' })).toBeGreaterThan(0);
    // The migration's DDL is timed too, under `other`.
    expect(sampleValue(after, 'ironlens_store_query_duration_seconds_count', { operation: 'other' })).toBeGreaterThan(0);
    await store.close();
  });

  it('counts finished jobs by kind and outcome, with their durations, and the running ones', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-metrics-'));
    dirs.push(dir);
    const store = await Store.open<JobsTables>({ ...(await testStoreTarget(join(dir, 'db.sqlite'))), migrations: jobsMigrations });
    const runner = new JobRunner(new JobsRepository(store), { observer: metrics.jobs, cancelPollMs: 0 });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const slow = await runner.start({ kind: 'test.slow' }, async () => {
      await gate;
      return {};
    });
    const ok = await runner.start({ kind: 'test.quick' }, async () => ({}));
    const bad = await runner.start({ kind: 'test.quick' }, async () => {
      throw new Error('boom');
    });
    await runner.wait(ok.id);
    await runner.wait(bad.id);
    // On PostgreSQL the three jobs' claims run at once: the quick ones may finish before the slow one is claimed.
    await waitUntil('the slow job to run', async () => (await runner.repository.get(slow.id))?.status === 'running');
    let samples = parsePrometheusText(await metrics.text());
    expect(sampleValue(samples, 'ironlens_jobs_running', { kind: 'test.slow' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_jobs_running', { kind: 'test.quick' })).toBe(0);
    expect(sampleValue(samples, 'ironlens_jobs_finished_total', { kind: 'test.quick', outcome: 'success' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_jobs_finished_total', { kind: 'test.quick', outcome: 'failed' })).toBe(1);
    await sleep(50);
    release();
    await runner.wait(slow.id);
    samples = parsePrometheusText(await metrics.text());
    expect(sampleValue(samples, 'ironlens_jobs_running', { kind: 'test.slow' })).toBe(0);
    expect(sampleValue(samples, 'ironlens_job_duration_seconds_count', { kind: 'test.slow', outcome: 'success' })).toBe(1);
    expect(sampleValue(samples, 'ironlens_job_duration_seconds_sum', { kind: 'test.slow', outcome: 'success' })).toBeGreaterThanOrEqual(0.05);
    await runner.stop();
    await store.close();
  });
});
