/**
 * Whose `X-Forwarded-For` `ironlens serve` believes (issue 29, finding 5), over real sockets on
 * both listeners: with `IRONLENS_TRUSTED_PROXIES=127.0.0.1` a request from 127.0.0.1 is a proxy's,
 * which appended the address it saw to whatever the client wrote; any other peer is a client whose
 * header means nothing. The same client address then feeds the failed-auth limiter, the
 * registration limiter, the host-report refusal tally and the operations log's `client`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trustedProxiesFromEnv } from '@ironlens/core';
import { testDatabaseEnv } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from './serve';
import { tokenCommand } from './token';

const PROXY = '127.0.0.1';
let dir: string;
let running: Running;
let admin = '';
const logs: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `ironlens-trusted-proxies-${process.pid}-`));
  const env = {
    IRONLENS_DATA_DIR: join(dir, 'data'),
    IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IPXE_CP_DNSMASQ_RELOAD: 'false',
    KIND_K8S_SKIP_VERSION_LIST: '1',
    IRONLENS_SECRET_KEY: 'ef'.repeat(32),
    IRONLENS_TRUSTED_PROXIES: `${PROXY}, 10.9.0.0/16`,
    // Five refused tokens from one client lock it out; no slowing, so the test runs at once.
    IRONLENS_AUTH_FAIL_SLOW_AFTER: '1000',
    IRONLENS_AUTH_FAIL_BLOCK_AFTER: '5',
    IRONLENS_REPORT_REGISTER_PER_MINUTE: '3',
    ...(await testDatabaseEnv()),
  };
  let out = '';
  expect(await tokenCommand(['create', '--name', 'xff-admin', '--role', 'admin'], env, { out: (s) => (out += s), err: () => {} })).toBe(0);
  admin = out.trim();
  running = await serve(env, (l) => logs.push(l));
});
afterAll(async () => {
  await running?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One request from the local address `from`, with an `X-Forwarded-For` header when given. */
function send(base: string, path: string, from: string, opts: { xff?: string; token?: string; method?: string; body?: string } = {}): Promise<{ status: number; body: string }> {
  const u = new URL(base + path);
  const headers: Record<string, string> = {};
  if (opts.xff !== undefined) headers['x-forwarded-for'] = opts.xff;
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: opts.method ?? 'GET', localAddress: from, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

describe('X-Forwarded-For with IRONLENS_TRUSTED_PROXIES', () => {
  it('a client that writes a new address per request through the proxy is still limited (both listeners)', async () => {
    for (const [listener, base, path] of [
      ['boot', running.urls.boot, '/workers'],
      ['console', running.urls.console, '/api/cluster/clusters'],
    ] as const) {
      const real = listener === 'boot' ? '203.0.113.7' : '203.0.113.8';
      const statuses: number[] = [];
      // What nginx's $proxy_add_x_forwarded_for sends: the client's own header, then the peer it saw.
      for (let i = 1; i <= 8; i++) statuses.push((await send(base, path, PROXY, { xff: `198.51.100.${i}, ${real}`, token: 'ilt_wrong' })).status);
      expect(statuses, listener).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    }
  });

  it('a client that claims an admin’s address locks itself out, not the admin', async () => {
    const adminAt = '192.0.2.10';
    for (let i = 0; i < 6; i++) await send(running.urls.boot, '/workers', PROXY, { xff: `${adminAt}, 203.0.113.66`, token: 'ilt_wrong' });
    expect((await send(running.urls.boot, '/workers', PROXY, { xff: '203.0.113.66', token: admin })).status).toBe(429);
    expect((await send(running.urls.boot, '/workers', PROXY, { xff: adminAt, token: admin })).status).toBe(200);
  });

  it('ignores the header from a peer that is not a trusted proxy', async () => {
    // 127.0.0.2 is a client, not the proxy: its header is not believed, whatever it says.
    for (let i = 0; i < 5; i++) await send(running.urls.boot, '/workers', '127.0.0.2', { xff: `198.51.100.${100 + i}`, token: 'ilt_wrong' });
    expect((await send(running.urls.boot, '/workers', '127.0.0.2', { xff: '198.51.100.200', token: admin })).status).toBe(429);
    expect((await send(running.urls.boot, '/workers', '127.0.0.3', { token: admin })).status).toBe(200);
  });

  it('behind the proxy, console users are each their own client: one locked out, the other not', async () => {
    for (let i = 0; i < 5; i++) await send(running.urls.console, '/api/cluster/clusters', PROXY, { xff: '192.0.2.21', token: 'ilt_wrong' });
    expect((await send(running.urls.console, '/api/cluster/clusters', PROXY, { xff: '192.0.2.21', token: admin })).status).toBe(429);
    expect((await send(running.urls.console, '/api/cluster/clusters', PROXY, { xff: '192.0.2.22', token: admin })).status).toBe(200);
  });

  it('the registration limiter and the operations log see the address the proxy saw, not the one the client wrote', async () => {
    const statuses: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const r = await send(running.urls.boot, `/devices/report?mac=02:00:00:29:05:0${i}`, PROXY, { xff: `198.51.100.${50 + i}, 192.0.2.77` });
      statuses.push(r.body.includes('menu-default reboot') ? 'limited' : r.status === 200 ? 'ok' : String(r.status));
    }
    expect(statuses).toEqual(['ok', 'ok', 'ok', 'limited', 'limited']);
    const ops = JSON.parse((await send(running.urls.boot, '/operations?limit=1000', PROXY, { token: admin })).body).entries as Array<{ op: string; client?: string; reason?: string }>;
    expect(ops.filter((o) => o.op === 'device.register').map((o) => o.client)).toEqual(['192.0.2.77', '192.0.2.77', '192.0.2.77']);
    expect(ops.find((o) => o.op === 'device.report.limited')).toMatchObject({ client: '192.0.2.77', reason: 'rate' });
    // A refused host report (no timestamp) is tallied under the same address.
    const refused = await send(running.urls.boot, '/hosts/report', PROXY, {
      method: 'POST',
      xff: '198.51.100.99, 192.0.2.78',
      body: JSON.stringify({ mac: '02:00:00:29:05:09', hostname: 'nobody', addresses: [], ssh_host_keys: [], os: { id: 'x', version_id: '1', pretty_name: 'x' }, kernel: '6.1', hardware: { cpu_model: 'x', cpus: 1, memory_bytes: 1, disks: [], nics: [], accelerators: [] } }),
    });
    expect(refused.status).toBe(422);
    const after = JSON.parse((await send(running.urls.boot, '/operations?limit=1000', PROXY, { token: admin })).body).entries as Array<{ op: string; status?: string; client?: string }>;
    expect(after.find((o) => o.op === 'host.report' && o.status === 'refused')).toMatchObject({ client: '192.0.2.78' });
  });
});

describe('trustedProxiesFromEnv', () => {
  it('takes addresses, CIDRs and range names, or a number of hops; refuses anything else at start', () => {
    expect(trustedProxiesFromEnv({ IRONLENS_TRUSTED_PROXIES: '10.0.0.5, 10.1.0.0/16 ,fd00::/8, loopback' })).toEqual({ trustProxy: ['10.0.0.5', '10.1.0.0/16', 'fd00::/8', 'loopback'], note: null });
    expect(trustedProxiesFromEnv({ IRONLENS_TRUSTED_PROXIES: '2' }).trustProxy).toBe(2);
    expect(trustedProxiesFromEnv({}).trustProxy).toBe(false);
    for (const bad of ['*', 'proxy.example', '10.0.0.0/33', 'fd00::/129', '10.0.0.1/8/1', '0', '99']) expect(() => trustedProxiesFromEnv({ IRONLENS_TRUSTED_PROXIES: bad }), bad).toThrow(/IRONLENS_TRUSTED_PROXIES/);
  });

  it('IRONLENS_TRUST_PROXY=1 trusts a proxy on this machine only (loopback), and says it is deprecated', () => {
    const legacy = trustedProxiesFromEnv({ IRONLENS_TRUST_PROXY: '1' });
    expect(legacy.trustProxy).toEqual(['loopback']);
    expect(legacy.note).toContain('deprecated');
    expect(trustedProxiesFromEnv({ IRONLENS_TRUST_PROXY: '1', IRONLENS_TRUSTED_PROXIES: '10.0.0.5' })).toMatchObject({ trustProxy: ['10.0.0.5'], note: expect.stringContaining('ignored') });
    expect(logs.some((l) => l.includes('IRONLENS_TRUST'))).toBe(false);
  });
});
