/**
 * The console and provisioning listeners of `ironlens serve` against what another web page or a
 * slow client can do (issue 18, h18b's findings 2, 8, 9 and 11), over real sockets: raw paths
 * that fetch would normalise go through `http.request`, foreign `Host`/`Origin` headers are sent
 * as a rebinding page's browser would send them, slow clients are real TCP connections.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep, testDatabaseEnv } from '@ironlens/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';

let dir: string;
let dist: string;
const running: Running[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-console-hardening-'));
  dist = join(dir, 'dist');
  mkdirSync(join(dist, 'js'), { recursive: true });
  writeFileSync(
    join(dist, 'index.html'),
    '<!doctype html><html lang="en"><head><script type="module" src="./js/index.js"></script></head><body data-metal-base="/api/metal" data-clusters-base="" data-kind-url="/kind/" data-docs-url="/docs" data-redoc-url="/redoc"><div id="root"></div></body></html>',
  );
  writeFileSync(join(dist, 'kind.html'), '<!doctype html><html><body data-api-base="/api/v1"><script src="./js/kind.js"></script></body></html>');
  writeFileSync(join(dist, 'js', 'index.js'), 'console.log("console")');
});
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
async function start(extra: Record<string, string> = {}): Promise<{ console: string; boot: string }> {
  const r = await serve(
    {
      IRONLENS_DATA_DIR: join(dir, `data-${++n}`),
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IRONLENS_WEB_DIST: dist,
      IPXE_CP_DNSMASQ_RELOAD: 'false',
      ...(await testDatabaseEnv()),
      ...extra,
    },
    () => {},
  );
  running.push(r);
  return { console: r.urls.console, boot: r.urls.boot };
}

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with the path and headers exactly as given (no normalisation of `..`, any `Host`). */
function raw(base: string, path: string, opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer; localAddress?: string } = {}): Promise<Raw> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: opts.method ?? 'GET', headers: opts.headers, localAddress: opts.localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const MAC = '02:00:00:00:00:2a';

describe('the /api/metal allow-list (finding 8)', () => {
  it('refuses dot segments, encoded dots and slashes and backslashes instead of reaching /boot-vars or /devices/report', async () => {
    const { console: base, boot } = await start();
    expect((await fetch(`${boot}/devices/report?mac=${MAC}&serial=SN-1`)).status).toBe(200);
    expect((await fetch(`${boot}/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ worker_id: 'w1' }) })).status).toBe(200);
    expect((await fetch(`${boot}/devices/${MAC}/bind?worker_id=w1`, { method: 'POST' })).status).toBe(200);
    // The provisioning listener itself answers iPXE for the bound MAC: what the bypass reached.
    expect((await raw(boot, `/boot-vars?mac=${MAC}`)).status).toBe(200);

    for (const path of [
      `/api/metal/devices/../boot-vars?mac=${MAC}`,
      `/api/metal/devices/x/../../boot-vars?mac=${MAC}`,
      `/api/metal/devices/%2e%2e/boot-vars?mac=${MAC}`,
      `/api/metal/devices/%2E%2E/boot-vars?mac=${MAC}`,
      `/api/metal/devices/.%2E/boot-vars?mac=${MAC}`,
      `/api/metal/devices/%2e./boot-vars?mac=${MAC}`,
      `/api/metal/devices/./../boot-vars?mac=${MAC}`,
      `/api/metal/devices%2f..%2fboot-vars?mac=${MAC}`,
      `/api/metal/devices/..%2Fboot-vars?mac=${MAC}`,
      `/api/metal/devices\\..\\boot-vars?mac=${MAC}`,
      `/api/metal/devices/x/../report?mac=02:00:00:00:00:2b&serial=SN-2`,
      `/api/metal/workers/%2e%2e/devices/report?mac=02:00:00:00:00:2b&serial=SN-2`,
    ]) {
      const res = await raw(base, path);
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body).detail, path).toBeTypeOf('string');
      expect(res.body).not.toContain('#!ipxe');
    }
    // Nothing was pooled by the report attempts.
    const devices = (await (await fetch(`${boot}/devices`)).json()) as Array<{ mac: string }>;
    expect(devices.map((d) => d.mac)).toEqual([MAC]);
    // Plain paths keep working, with their own percent-encoding.
    expect((await raw(base, `/api/metal/devices/${encodeURIComponent(MAC)}`)).status).toBe(200);
    expect((await raw(base, '/api/metal/workers/w1')).status).toBe(200);
  });
});

describe('the console against other web pages (finding 2)', () => {
  it('serves only its own host names: a rebinding page’s Host is a 421; IRONLENS_CONSOLE_HOSTS adds names', async () => {
    const { console: base } = await start({ IRONLENS_CONSOLE_HOSTS: 'console.lab.example, ironlens.internal' });
    const port = new URL(base).port;
    for (const path of ['/', '/api/cluster/clusters', '/kind/api/v1/clusters', '/api/metal/devices', '/docs', '/api/cluster/bootstrap/jobs/x']) {
      const res = await raw(base, path, { headers: { host: `rebind.attacker.example:${port}` } });
      expect(res.status, path).toBe(421);
      // Each API's own error shape (seed 000's problem document with its code, FastAPI's detail).
      expect(res.body, path).toContain('does not serve that host name');
      if (path.startsWith('/api/cluster')) expect(JSON.parse(res.body).code, path).toBe('host_not_allowed');
    }
    expect((await raw(base, '/healthz', { headers: { host: 'rebind.attacker.example:8080' } })).status).toBe(421);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST.:${port}`, `app.localhost:${port}`, `[::1]:${port}`, `console.lab.example:${port}`, 'ironlens.internal']) {
      expect((await raw(base, '/api/cluster/clusters', { headers: { host } })).status, host).toBe(200);
    }
  });

  it('refuses writes from another origin, lets same-origin pages and curl through, and a browser’s form body that proves no origin needs X-Ironlens-Request', async () => {
    const { console: base, boot } = await start();
    const host = new URL(base).host;
    const worker = (id: string, headers: Record<string, string>) =>
      raw(base, '/api/metal/workers', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ worker_id: id }) });

    for (const headers of <Array<Record<string, string>>>[{ origin: 'http://evil.example' }, { origin: 'null' }, { origin: `http://${host}.evil.example` }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }]) {
      const res = await worker('refused', headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(JSON.parse(res.body).detail).toContain('another site');
    }
    // The seed's curl lines: no Origin, no Sec-Fetch-*.
    expect((await worker('curl', {})).status).toBe(200);
    // The console's own fetch: same origin.
    expect((await worker('page', { origin: `http://${host}`, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    // A form body from a browser that proves its origin reaches the route (issue 33: Lens' wizard
    // posts its multipart form so); the register form takes `file` only as a file part (422).
    const sameOrigin = { 'content-type': 'application/x-www-form-urlencoded', origin: `http://${host}`, 'sec-fetch-site': 'same-origin' };
    const proven = await raw(base, '/api/cluster/clusters', { method: 'POST', headers: sameOrigin, body: 'name=x&file=y' });
    expect(JSON.parse(proven.body).code).not.toMatch(/request_header_required|cross_site_request_refused/);
    // One that proves none (typed in the address bar, Sec-Fetch-Site: none) still needs the header the console sends.
    const unproven = await raw(base, '/api/cluster/clusters', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'none' }, body: 'name=x&file=y' });
    expect(unproven.status).toBe(403);
    expect(JSON.parse(unproven.body).code).toBe('request_header_required');
    const navigate = await raw(base, '/api/metal/workers', { method: 'POST', headers: { 'content-type': 'application/json', 'sec-fetch-mode': 'navigate' }, body: '{"worker_id":"nav"}' });
    expect(navigate.status).toBe(403);
    const list = (await (await fetch(`${base}/api/metal/workers`)).json()) as Array<{ worker_id: string }>;
    expect(list.map((w) => w.worker_id).sort()).toEqual(['curl', 'page']);
    // The boot listener is reached by machines under any name: no Host check there.
    expect((await raw(boot, '/healthz', { headers: { host: 'pxe.lab.example:4839' } })).status).toBe(200);
  });
});

describe('security headers (finding 11)', () => {
  it('sends nosniff, same-origin framing only and a CSP on every answer of both listeners', async () => {
    const { console: base, boot } = await start();
    for (const url of [`${base}/`, `${base}/machines`, `${base}/kind/`, `${base}/kind/api/v1/clusters`, `${base}/api/metal/devices`, `${base}/api/cluster/clusters`, `${base}/docs/`, `${base}/redoc`, `${base}/static/js/index.js`, `${base}/nothing`, `${boot}/healthz`, `${boot}/docs/`]) {
      const res = await fetch(url);
      expect(res.headers.get('x-content-type-options'), url).toBe('nosniff');
      expect(res.headers.get('x-frame-options'), url).toBe('SAMEORIGIN');
      expect(res.headers.get('content-security-policy') ?? '', url).toContain("frame-ancestors 'self'");
    }
    const csp = (await fetch(`${base}/`)).headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("'unsafe-eval'");
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
  });
});

/** A client that sends a POST's headers, then one byte of its 100 kB body every `everyMs`. */
function slowUpload(base: string, everyMs: number): Promise<{ socket: Socket; closedAt: Promise<number> }> {
  const u = new URL(base);
  return new Promise((resolve) => {
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    const closedAt = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
    socket.on('error', () => {});
    // Read what the server sends (its 408), so its close is seen.
    socket.resume();
    socket.once('connect', () => {
      socket.write(`POST /api/metal/workers HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`);
      const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(' ')), everyMs);
      socket.once('close', () => clearInterval(timer));
    });
    // Resolves at once: a refused connection closes right after connecting.
    resolve({ socket, closedAt });
  });
}

describe('slow clients (finding 9)', () => {
  it('cuts slow uploads after IRONLENS_HTTP_REQUEST_TIMEOUT_MS and caps one source’s connections, while another client gets /healthz', async () => {
    const urls = await start({ IRONLENS_HTTP_REQUEST_TIMEOUT_MS: '1500', IRONLENS_HTTP_HEADERS_TIMEOUT_MS: '1000', IRONLENS_HTTP_MAX_CONNECTIONS_PER_SOURCE: '20' });
    for (const base of [urls.console, urls.boot]) {
      const t0 = Date.now();
      const slow = await Promise.all(Array.from({ length: 60 }, () => slowUpload(base, 200)));
      try {
      await sleep(400);
      // Over the cap: closed on arrival.
      const open = slow.filter((s) => !s.socket.destroyed).length;
      expect(open, base).toBeLessThanOrEqual(20);
      expect(open, base).toBeGreaterThan(0);
      // Another source (127.0.0.2 is loopback too) is answered while they trickle.
      const h0 = Date.now();
      const health = await raw(base, '/healthz', { localAddress: '127.0.0.2' });
      expect(health.status).toBe(200);
      expect(Date.now() - h0).toBeLessThan(1000);
      // Every slow upload is cut within the timeout and Node's check period.
      const closed = await Promise.all(slow.map((s) => s.closedAt));
      expect(Math.max(...closed) - t0, base).toBeLessThan(4000);
      // …and the same source is served again.
      expect((await raw(base, '/healthz')).status).toBe(200);
      } finally {
        for (const s of slow) s.socket.destroy();
      }
    }
  }, 20_000);
});

describe('the data dir (finding 6)', () => {
  it('is created 0700, with the key file and the SQLite database, -wal and -shm 0600', async () => {
    const data = join(dir, 'fresh-data-dir');
    const r = await serve({ IRONLENS_DATA_DIR: data, IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: 'off', IPXE_CP_DNSMASQ_RELOAD: 'false' }, () => {});
    running.push(r);
    expect((await fetch(`${r.urls.boot}/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"worker_id":"w-mode"}' })).status).toBe(200);
    const mode = (f: string) => (statSync(f).mode & 0o777).toString(8);
    expect(mode(data)).toBe('700');
    for (const f of ['secret.key', 'ironlens.db', 'ironlens.db-wal', 'ironlens.db-shm']) expect(mode(join(data, f)), f).toBe('600');
  });
});
