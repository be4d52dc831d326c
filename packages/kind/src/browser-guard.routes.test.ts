/**
 * The standalone panel (`ironlens kind`) against other web pages and slow clients, on a real
 * listener (issue 18, findings 2, 9 and 11): only its own host names (`KIND_K8S_HOSTS` adds some),
 * no cross-site writes, the security headers, and the IRONLENS_HTTP_* limits.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningKindPanel, startKindPanel } from './main';
import { fakeDist } from './testing/web-dist';
import { sleep } from '@ironlens/core/testing';

let dir: string;
let panel: RunningKindPanel;

function raw(path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const u = new URL(panel.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-kind-guard-'));
  panel = await startKindPanel(
    {
      KIND_K8S_WEB_HOST: '127.0.0.1',
      KIND_K8S_WEB_PORT: '0',
      KIND_K8S_DB: join(dir, 'kind.sqlite'),
      KIND_K8S_CLUSTERS_DIR: join(dir, 'clusters'),
      KIND_K8S_SKIP_VERSION_LIST: 'true',
      KIND_K8S_HOSTS: 'panel.lab.example',
      IRONLENS_HTTP_REQUEST_TIMEOUT_MS: '1000',
      IRONLENS_HTTP_MAX_CONNECTIONS_PER_SOURCE: '5',
      PATH: join(dir, 'no-tools'),
    },
    { logger: false, webDist: fakeDist(dir) },
  );
});
afterAll(async () => {
  await panel?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the standalone kind panel', () => {
  it('serves only its own host names: 421 for a rebinding name, KIND_K8S_HOSTS adds names', async () => {
    const port = new URL(panel.url).port;
    for (const path of ['/', '/api/v1/jobs', '/api/v1/clusters', '/docs']) {
      expect((await raw(path, { headers: { host: `rebind.attacker.example:${port}` } })).status, path).toBe(421);
    }
    expect((await raw('/api/v1/jobs', { headers: { host: `panel.lab.example:${port}` } })).status).toBe(200);
    expect((await raw('/api/v1/jobs', { headers: { host: `localhost:${port}` } })).status).toBe(200);
  });

  it('refuses a cross-site create and a browser form body, lets curl through', async () => {
    const create = (headers: Record<string, string>) => raw('/api/v1/clusters', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"name":"x"}' });
    expect((await create({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await create({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    const host = new URL(panel.url).host;
    // A form body from a browser that proves no origin (a navigation: Sec-Fetch-Site none) needs X-Ironlens-Request;
    // the panel's own page (same origin) writes as it is.
    expect((await raw('/api/v1/clusters', { method: 'POST', headers: { 'content-type': 'text/plain', 'sec-fetch-site': 'none' }, body: '{"name":"x"}' })).status).toBe(403);
    expect((await raw('/api/v1/clusters', { method: 'POST', headers: { 'content-type': 'text/plain', origin: `http://${host}` }, body: '{"name":"x"}' })).status).not.toBe(403);
    // curl: not refused by the guard (the stand-in-less panel answers what the API answers).
    expect([403, 421]).not.toContain((await create({})).status);
  });

  it('sends nosniff, same-origin framing only and a CSP', async () => {
    for (const path of ['/', '/api/v1/jobs', '/static/missing.js', '/docs/']) {
      const res = await raw(path);
      expect(res.headers['x-content-type-options'], path).toBe('nosniff');
      expect(res.headers['x-frame-options'], path).toBe('SAMEORIGIN');
      expect(String(res.headers['content-security-policy']), path).toContain("frame-ancestors 'self'");
    }
  });

  it('caps one source at IRONLENS_HTTP_MAX_CONNECTIONS_PER_SOURCE and cuts a slow request after the timeout', async () => {
    const u = new URL(panel.url);
    const closedAll: Array<Promise<unknown>> = [];
    const sockets = Array.from({ length: 12 }, () => {
      const s = connect({ host: u.hostname, port: Number(u.port) });
      closedAll.push(new Promise((r) => s.once('close', r)));
      // Read what the server sends (its 408), so its close is seen.
      s.resume();
      s.on('error', () => {});
      s.on('connect', () => s.write(`POST /api/v1/clusters HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`));
      return s;
    });
    try {
      await sleep(300);
      expect(sockets.filter((s) => !s.destroyed).length).toBeLessThanOrEqual(5);
      const closed = await Promise.race([Promise.all(closedAll).then(() => true), new Promise((r) => setTimeout(() => r(false), 4000))]);
      expect(closed).toBe(true);
      expect((await raw('/api/v1/jobs')).status).toBe(200);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });
});
