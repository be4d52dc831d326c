/**
 * The console listener of `ironlens serve` (real listeners, real store, real HTTP): the page
 * at `/` and at every deep link, its assets, the kind panel and docs untouched, and the
 * provisioning API under `/api/metal` with the token rules of docs/console.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseEnv } from '@ironlens/core/testing';
import { type Running, serve } from '../serve';

let dir: string;
let dist: string;
const running: Running[] = [];

// A stand-in of Vite's output: the same attributes and relative asset URLs the real build has.
const INDEX = `<!doctype html><html lang="en"><head><script type="module" crossorigin src="./js/index.js"></script><link rel="stylesheet" href="./assets/index-x.css"></head>
<body data-metal-base="/api/metal" data-clusters-base="" data-kind-url="/kind/" data-docs-url="/docs" data-redoc-url="/redoc"><div id="root"></div></body></html>`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-console-'));
  dist = join(dir, 'dist');
  mkdirSync(join(dist, 'js'), { recursive: true });
  writeFileSync(join(dist, 'index.html'), INDEX);
  writeFileSync(join(dist, 'kind.html'), '<!doctype html><html><body data-api-base="/api/v1"><script src="./js/kind.js"></script></body></html>');
  writeFileSync(join(dist, 'js', 'index.js'), 'console.log("console")');
});
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
async function start(extra: Record<string, string> = {}): Promise<{ console: string; boot: string }> {
  const r = await serve({
    IRONLENS_DATA_DIR: join(dir, `data-${++n}`),
    IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_WEB_DIST: dist,
    IPXE_CP_DNSMASQ_RELOAD: 'false',
    ...(await testDatabaseEnv()),
    ...extra,
  });
  running.push(r);
  return { console: r.urls.console, boot: r.urls.boot };
}

describe('the console page', () => {
  it('answers index.html at / and at every page path, with asset URLs under /static/', async () => {
    const { console: base } = await start();
    for (const path of ['/', '/machines/devices', '/machines/workers', '/machines/workers/worker-01', '/machines/storage', '/machines/operations', '/clusters', '/clusters/c1', '/clusters/new', '/bootstrap', '/bootstrap/b1', '/local-clusters']) {
      const res = await fetch(base + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await res.text();
      expect(html).toContain('<script type="module" crossorigin src="/static/js/index.js">');
      expect(html).toContain('href="/static/assets/index-x.css"');
      expect(html).toContain('data-metal-base="/api/metal"');
    }
    const js = await fetch(`${base}/static/js/index.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await fetch(`${base}/static/../index.html`)).status).toBe(404);
  });

  it('leaves /kind/, the docs and unknown API paths to their owners', async () => {
    const { console: base } = await start();
    const kind = await fetch(`${base}/kind/`);
    expect(kind.status).toBe(200);
    expect(await kind.text()).toContain('data-api-base="/kind/api/v1"');
    expect((await fetch(`${base}/kind/api/v1/jobs?limit=1`)).status).toBe(200);
    expect((await fetch(`${base}/docs`)).status).toBe(200);
    expect((await fetch(`${base}/redoc`)).status).toBe(200);
    const spec = await (await fetch(`${base}/openapi.json`)).json();
    expect(Object.keys(spec.paths).some((p) => p.startsWith('/api/metal'))).toBe(false);
    const unknown = await fetch(`${base}/api/nothing-here`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/json');
  });

  it('answers 503 with the build command when the assets are missing', async () => {
    const { console: base } = await start({ IRONLENS_WEB_DIST: join(dir, 'no-build') });
    const res = await fetch(`${base}/machines/devices`);
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('npm run build -w @ironlens/web');
  });
});

describe('the provisioning API under /api/metal', () => {
  it('reaches the same store as the provisioning listener, records the browser’s address, keeps /boot-vars and /devices/report off', async () => {
    const { console: base, boot } = await start();
    expect((await fetch(`${boot}/devices/report?mac=02:00:00:00:00:0a&serial=SN-A`)).status).toBe(200);
    const list = await fetch(`${base}/api/metal/devices`);
    expect(list.status).toBe(200);
    expect(list.headers.get('cache-control')).toBe('no-store');
    expect((await list.json()).map((d: { mac: string }) => d.mac)).toEqual(['02:00:00:00:00:0a']);

    const created = await fetch(`${base}/api/metal/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ worker_id: 'w1' }) });
    expect(created.status).toBe(200);
    const bound = await fetch(`${base}/api/metal/devices/02:00:00:00:00:0a/bind?worker_id=w1`, { method: 'POST' });
    expect(bound.status).toBe(200);
    expect((await bound.json()).bound_worker_id).toBe('w1');
    // Errors keep the API's own shape and status.
    const conflict = await fetch(`${base}/api/metal/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ worker_id: 'w1' }) });
    expect(conflict.status).toBe(409);
    expect(typeof (await conflict.json()).detail).toBe('string');
    const invalid = await fetch(`${base}/api/metal/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(invalid.status).toBe(422);

    const ops = await (await fetch(`${base}/api/metal/operations?mac=02:00:00:00:00:0a`)).json();
    expect(ops.entries.find((e: { op: string }) => e.op === 'device.bind')).toMatchObject({ worker_id: 'w1', client: '127.0.0.1' });

    // Rollouts and drift (issue 31) are reached too.
    expect((await fetch(`${base}/api/metal/rollouts`)).status).toBe(200);
    expect((await fetch(`${base}/api/metal/drift`)).status).toBe(200);
    expect((await fetch(`${base}/api/metal/boot-vars?mac=02:00:00:00:00:0a`)).status).toBe(404);
    expect((await fetch(`${base}/api/metal/devices/report?mac=02:00:00:00:00:0b`)).status).toBe(404);
    expect((await fetch(`${base}/api/metal/docs`)).status).toBe(404);
    expect((await (await fetch(`${boot}/devices`)).json()).map((d: { mac: string }) => d.mac)).toEqual(['02:00:00:00:00:0a']);
  });

  it('asks for the console token, and adds the provisioning token itself: the browser never holds it', async () => {
    const { console: base, boot } = await start({ IRONLENS_CONSOLE_TOKEN: 'console-secret', IPXE_CP_TOKEN: 'metal-secret' });
    const anonymous = await fetch(`${base}/api/metal/workers`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    // The provisioning token is not the console's: it does not open the proxy.
    expect((await fetch(`${base}/api/metal/workers`, { headers: { authorization: 'Bearer metal-secret' } })).status).toBe(401);
    const ok = await fetch(`${base}/api/metal/workers`, { headers: { authorization: 'Bearer console-secret' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('[]');
    // …and the console's token does not open the provisioning listener.
    expect((await fetch(`${boot}/workers`, { headers: { authorization: 'Bearer console-secret' } })).status).toBe(401);
    // The page itself stays open (it holds no state).
    expect((await fetch(`${base}/machines/devices`)).status).toBe(200);
  });

  it('refuses everything while the provisioning API has a token and the console has none', async () => {
    const { console: base } = await start({ IPXE_CP_TOKEN: 'metal-secret' });
    for (const auth of [undefined, 'Bearer metal-secret']) {
      const res = await fetch(`${base}/api/metal/workers`, { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(403);
      expect((await res.json()).detail).toContain('IRONLENS_CONSOLE_TOKEN');
    }
  });
});
