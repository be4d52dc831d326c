import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp } from '@ironlens/core';
import { afterEach, describe, expect, it } from 'vitest';
import { kindPlugin } from './plugin';
import { newTestPanel, type TestPanel } from './testing/panel';
import { fakeDist } from './testing/web-dist';

const TOKEN = 's3cret-console-token';
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

const panels: TestPanel[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const p of panels.splice(0)) await p.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function panel(opts: { token?: string } = {}): Promise<TestPanel> {
  const p = await newTestPanel({ token: opts.token });
  panels.push(p);
  return p;
}

// Every API route of the seed, with a method and a path the route accepts.
const API_ROUTES: Array<[method: 'GET' | 'POST' | 'DELETE', url: string]> = [
  ['GET', '/api/v1/health'],
  ['GET', '/api/v1/versions'],
  ['GET', '/api/v1/stats'],
  ['GET', '/api/v1/clusters'],
  ['POST', '/api/v1/clusters'],
  ['GET', '/api/v1/clusters/c1'],
  ['GET', '/api/v1/clusters/c1/kubeconfig'],
  ['GET', '/api/v1/clusters/c1/workloads'],
  ['DELETE', '/api/v1/clusters/c1'],
  ['GET', '/api/v1/jobs?limit=5'],
  ['GET', '/api/v1/jobs/nope'],
  ['POST', '/api/v1/jobs/nope/cancel'],
];

describe('kind API with a token (KIND_K8S_TOKEN / IRONLENS_CONSOLE_TOKEN)', () => {
  it('answers 401 with the detail shape on every API route without a bearer token, before the route runs', async () => {
    const p = await panel({ token: TOKEN });
    for (const [method, url] of API_ROUTES) {
      const r = await p.app.inject({ method, url, payload: method === 'POST' ? { name: 'c1' } : undefined });
      expect(r.statusCode, `${method} ${url}`).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer');
      expect(typeof r.json().detail, `${method} ${url}`).toBe('string');
      expect(r.body).not.toContain(TOKEN);
    }
    // Nothing reached kind: no cluster was created or deleted.
    expect(p.standins.calls('kind').filter((c) => c.args[0] === 'create' || c.args[0] === 'delete')).toEqual([]);
  });

  it('answers 401 to a wrong token, another scheme, or the token with a different length', async () => {
    const p = await panel({ token: TOKEN });
    for (const authorization of [`Bearer wrong`, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, 'Bearer ']) {
      const r = await p.app.inject({ url: '/api/v1/clusters', headers: { authorization } });
      expect(r.statusCode, authorization).toBe(401);
    }
  });

  it('serves the API with the right bearer token', async () => {
    const p = await panel({ token: TOKEN });
    const list = await p.app.inject({ url: '/api/v1/clusters', headers: bearer(TOKEN) });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([]);
    expect((await p.app.inject({ url: '/api/v1/health', headers: bearer(TOKEN) })).json().status).toBe('ok');
    // Past the guard, the route's own answers are unchanged.
    expect((await p.app.inject({ url: '/api/v1/clusters/c1/kubeconfig', headers: bearer(TOKEN) })).statusCode).toBe(404);
    const created = await p.app.inject({ method: 'POST', url: '/api/v1/clusters', headers: bearer(TOKEN), payload: { name: 'c1' } });
    expect(created.statusCode).toBe(202);
    const { final } = await p.waitJob(created.json().job_id);
    expect(final.status).toBe('success');
    const kubeconfig = await p.app.inject({ url: '/api/v1/clusters/c1/kubeconfig', headers: bearer(TOKEN) });
    expect(kubeconfig.statusCode).toBe(200);
    expect(kubeconfig.headers['content-disposition']).toContain('kubeconfig-c1.yaml');
  });

  it('keeps the dashboard, its assets and the docs open', async () => {
    const web = mkdtempSync(join(tmpdir(), 'ironlens-kind-web-'));
    dirs.push(web);
    const p = await newTestPanel({ token: TOKEN, webDist: fakeDist(web) });
    panels.push(p);
    for (const url of ['/', '/static/js/kind.js', '/docs', '/redoc/redoc.standalone.js', '/redoc', '/openapi.json']) {
      const r = await p.app.inject({ url });
      expect(r.statusCode, url).toBe(200);
    }
    expect((await p.app.inject({ url: '/ui' })).statusCode).toBe(307);
    // The OpenAPI document marks the API as bearer-protected.
    const doc = (await p.app.inject({ url: '/openapi.json' })).json();
    expect(doc.paths['/api/v1/clusters'].get.security).toEqual([{ bearer: [] }]);
  });

  it('leaves the API open when no token is configured, as the seed does', async () => {
    const p = await panel();
    expect((await p.app.inject({ url: '/api/v1/clusters' })).statusCode).toBe(200);
    expect((await p.app.inject({ url: '/api/v1/clusters', headers: bearer('anything') })).statusCode).toBe(200);
    expect((await p.app.inject({ url: '/api/v1/stats' })).statusCode).toBe(200);
    const doc = (await p.app.inject({ url: '/openapi.json' })).json();
    expect(doc.paths['/api/v1/clusters'].get.security).toBeUndefined();
  });

  it('guards only the panel’s API when mounted under /kind beside other routes', async () => {
    const p = await panel();
    const app = await createHttpApp({ title: 'console' });
    app.get('/api/v1/versions', async () => ({ owner: 'cluster manager' }));
    await app.register(kindPlugin, { prefix: '/kind', services: p.runtime.services, webDist: fakeDist(join(p.dir, 'web')), token: TOKEN });
    try {
      expect((await app.inject({ url: '/kind/api/v1/clusters' })).statusCode).toBe(401);
      expect((await app.inject({ url: '/kind/api/v1/clusters', headers: bearer(TOKEN) })).statusCode).toBe(200);
      expect((await app.inject({ url: '/kind/' })).statusCode).toBe(200);
      expect((await app.inject({ url: '/kind/static/js/kind.js' })).statusCode).toBe(200);
      expect((await app.inject({ url: '/api/v1/versions' })).json()).toEqual({ owner: 'cluster manager' });
      expect((await app.inject({ url: '/openapi.json' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
