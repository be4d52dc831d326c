import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp } from '@ironlens/core';
import { afterEach, describe, expect, it } from 'vitest';
import { kindPlugin } from './plugin';
import { newTestPanel, type TestPanel } from './testing/panel';
import { fakeDist } from './testing/web-dist';

const panels: TestPanel[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const p of panels.splice(0)) await p.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ironlens-kind-dist-'));
  dirs.push(d);
  return d;
}

describe('dashboard routes, standalone', () => {
  it('serves the page at / with data-api-base /api/v1 and assets under /static/', async () => {
    const p = await newTestPanel({ webDist: fakeDist(tempDir()) });
    panels.push(p);
    const r = await p.app.inject({ url: '/' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/html/);
    expect(r.body).toContain('data-api-base="/api/v1"');
    expect(r.body).toContain('src="/static/js/kind.js"');
    expect(r.body).toContain('href="/static/assets/kind-abc.css"');
    const js = await p.app.inject({ url: '/static/js/kind.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    const css = await p.app.inject({ url: '/static/assets/kind-abc.css' });
    expect(css.headers['content-type']).toMatch(/^text\/css/);
  });

  it('redirects /ui to / with 307', async () => {
    const p = await newTestPanel();
    panels.push(p);
    const r = await p.app.inject({ url: '/ui' });
    expect(r.statusCode).toBe(307);
    expect(r.headers.location).toBe('/');
  });

  it('answers a clear 503 page naming the build command when the web build is missing', async () => {
    const p = await newTestPanel();
    panels.push(p);
    const r = await p.app.inject({ url: '/' });
    expect(r.statusCode).toBe(503);
    expect(r.body).toContain('npm run build -w @ironlens/web');
    expect((await p.app.inject({ url: '/static/js/kind.js' })).statusCode).toBe(404);
  });

  it('refuses static paths that leave the assets directory', async () => {
    const p = await newTestPanel({ webDist: fakeDist(tempDir()) });
    panels.push(p);
    for (const url of ['/static/..%2F..%2Fetc%2Fpasswd', '/static/%2Fetc%2Fpasswd']) {
      const r = await p.app.inject({ url });
      expect(r.statusCode, url).toBe(404);
      expect(r.body).not.toContain('root:');
    }
  });
});

describe('the plugin mounted under /kind (inside ironlens serve)', () => {
  it('serves the API at /kind/api/v1, the dashboard at /kind/ with its own API base, and keeps the detail error shape', async () => {
    const p = await newTestPanel();
    panels.push(p);
    const dist = fakeDist(join(p.dir, 'web'));
    const app = await createHttpApp({ title: 'console' });
    // Another API owns /api/v1/versions on the console listener.
    app.get('/api/v1/versions', async () => ({ owner: 'cluster manager' }));
    await app.register(kindPlugin, { prefix: '/kind', services: p.runtime.services, webDist: dist });
    try {
      expect((await app.inject({ url: '/api/v1/versions' })).json()).toEqual({ owner: 'cluster manager' });
      expect((await app.inject({ url: '/kind/api/v1/versions' })).json()).toEqual({ tags: [], skipped: true, reason: 'KIND_K8S_SKIP_VERSION_LIST' });
      expect((await app.inject({ url: '/kind/api/v1/health' })).json().status).toBe('ok');

      const page = await app.inject({ url: '/kind/' });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('data-api-base="/kind/api/v1"');
      expect(page.body).toContain('src="/kind/static/js/kind.js"');
      expect((await app.inject({ url: '/kind' })).statusCode).toBe(200);
      expect((await app.inject({ url: '/kind/static/js/kind.js' })).statusCode).toBe(200);
      const ui = await app.inject({ url: '/kind/ui' });
      expect(ui.statusCode).toBe(307);
      expect(ui.headers.location).toBe('/kind/');

      const created = await app.inject({ method: 'POST', url: '/kind/api/v1/clusters', payload: { name: 'mounted', workers: 0 } });
      expect(created.statusCode).toBe(202);
      expect(created.json().message).toContain(`/kind/api/v1/jobs/${created.json().job_id}`);
      await p.runtime.runner.wait(created.json().job_id);

      const missing = await app.inject({ url: '/kind/api/v1/jobs/nope' });
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toEqual({ detail: 'Job not found' });
      const unknown = await app.inject({ url: '/kind/api/v1/nope' });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toHaveProperty('detail');
      const bad = await app.inject({ method: 'POST', url: '/kind/api/v1/clusters', payload: { name: 'NO' } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().detail).toBeTypeOf('string');
    } finally {
      await app.close();
    }
  });
});
