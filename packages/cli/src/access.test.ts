/**
 * Issue 20 end to end through `serve`: every route of every listener (enumerated from the apps,
 * never a hand list) declares a permission and answers each role as its table says; the
 * console's /api/metal proxy applies the caller's role; tokens are stored only as hashes;
 * revoked and expired tokens stop working; the actor reaches the operations log.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AgentDeps, buildAgentApp, type IscsiTargets } from '@ironlens/agent';
import { PERMISSION_PATTERN, PERMISSION_ROLES, PUBLIC, type RegisteredRoute, type Role, registeredRoutes } from '@ironlens/core';
import { dumpDatabase, startPostgres, testDatabaseEnv } from '@ironlens/core/testing';
import { buildKindApp, createKindServices, kindMigrations } from '@ironlens/kind';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderAccessDoc } from './access-doc';
import { LEAST_ROLE } from './access.expected';
import { isProxiedMetalPath } from './console/metal-proxy.routes';
import { type Running, serve } from './serve';
import { tokenCommand } from './token';

let dir: string;
let dbEnv: Record<string, string>;
let running: Running;
const tokens: Record<Role, string> = { viewer: '', operator: '', admin: '' };
const LIMITS = { IRONLENS_AUTH_FAIL_SLOW_AFTER: '100000', IRONLENS_AUTH_FAIL_BLOCK_AFTER: '100000' };

const envFor = (extra: Record<string, string> = {}) => ({
  IRONLENS_DATA_DIR: join(dir, 'data'),
  IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
  IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
  IPXE_CP_DNSMASQ_RELOAD: 'false',
  KIND_K8S_SKIP_VERSION_LIST: '1',
  // One key for every serve of this file: on PostgreSQL they share one database across data dirs.
  IRONLENS_SECRET_KEY: 'cd'.repeat(32),
  ...LIMITS,
  ...dbEnv,
  ...extra,
});

async function cli(args: string[], env = envFor()): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await tokenCommand(args, env, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `ironlens-access-${process.pid}-`));
  dbEnv = await testDatabaseEnv();
  for (const role of ['viewer', 'operator', 'admin'] as const) {
    const r = await cli(['create', '--name', `t-${role}`, '--role', role]);
    expect(r.code).toBe(0);
    tokens[role] = r.out.trim();
  }
  running = await serve(envFor(), () => {});
});
afterAll(async () => {
  await running?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A request for `route` with placeholder parameters (`:mac` → a valid MAC, others `x`). */
function urlOf(route: RegisteredRoute): string {
  return route.url.replace(/:mac/g, '02:00:00:00:00:99').replace(/:[a-z_]+/g, 'x').replace(/\*/g, 'x');
}

const SKIP_METHODS = new Set(['HEAD', 'OPTIONS', 'TRACE', 'QUERY']);

async function call(app: FastifyInstance, method: string, url: string, token?: string, remoteAddress = '127.0.0.1') {
  const withBody = !['GET', 'DELETE'].includes(method);
  return app.inject({
    method: method as HTTPMethods,
    url,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(withBody ? { 'content-type': 'application/json' } : {}) },
    // An empty object: every body schema with a required field refuses it (422/400), after the access check.
    payload: withBody ? '{}' : undefined,
    remoteAddress,
  });
}

function listenerRoutes(): Array<{ listener: string; app: FastifyInstance; route: RegisteredRoute }> {
  return Object.entries(running.apps).flatMap(([listener, app]) => registeredRoutes(app).map((route) => ({ listener, app, route })));
}

const RANK = { viewer: 0, operator: 1, admin: 2 } as const;

/** Whether `role` may call the route, by the checked-in table (never by the code under test). */
function tableAllows(listener: string, route: RegisteredRoute, role: Role): boolean {
  const least = LEAST_ROLE[`${listener} ${route.method} ${route.url}`];
  if (least === undefined) throw new Error(`${listener} ${route.method} ${route.url} is not in access.expected.ts`);
  return least === 'public' || RANK[role] >= RANK[least];
}

describe('every route of every listener', () => {
  it('declares exactly one permission (area:object:verb or public); the standalone kind app and the storage agent too', async () => {
    const all = listenerRoutes();
    expect(all.length).toBeGreaterThan(150);
    for (const l of ['boot', 'console', 'consoleMetal']) expect(all.some((r) => r.listener === l)).toBe(true);
    const kindRuntime = await createKindServices({ KIND_K8S_CLUSTERS_DIR: join(dir, 'kind-alone'), KIND_K8S_SKIP_VERSION_LIST: '1' }, await (await import('@ironlens/core')).Store.open({ file: ':memory:', migrations: [...(await import('@ironlens/core')).jobsMigrations, ...kindMigrations] }));
    const kindApp = await buildKindApp({ services: kindRuntime.services, webDist: join(dir, 'none') });
    await kindApp.ready();
    const kindRoutes = registeredRoutes(kindApp).map((route) => ({ listener: 'kind', route }));
    expect(kindRoutes.length).toBeGreaterThan(15);
    // The storage agent keeps its own token; its routes declare permissions too. (Targets are never called: routes are only listed.)
    mkdirSync(join(dir, 'disks'), { recursive: true });
    const agentApp = await buildAgentApp({ diskDir: join(dir, 'disks'), baseIqn: 'iqn.2026-07.test', cd: false, targets: {} as IscsiTargets } as AgentDeps);
    await agentApp.ready();
    const agentRoutes = registeredRoutes(agentApp)
      .filter((route) => !route.hidden && !['/metrics'].includes(route.url))
      .map((route) => ({ listener: 'agent', route }));
    expect(agentRoutes.length).toBeGreaterThanOrEqual(8);
    await agentApp.close();
    const missing = [...all, ...kindRoutes, ...agentRoutes].filter(({ route }) => !route.permission || !(route.permission === PUBLIC || PERMISSION_PATTERN.test(route.permission)));
    expect(missing.map(({ listener, route }) => `${listener} ${route.method} ${route.url}`)).toEqual([]);
    // Only the machines' paths, health, pages, assets, docs and the proxy (which defers to the API behind it) are public.
    // The model gateway's authorization hook is authenticated by the gateway's own access keys (not a token of ours).
    const publicApi = all.filter(({ route }) => route.permission === PUBLIC && !route.hidden && !route.url.startsWith('/api/v1/internal/model-gateway/authorize/')).map(({ listener, route }) => `${listener} ${route.method} ${route.url}`);
    expect(publicApi.sort()).toEqual(
      [
        'boot GET /boot-vars',
        'boot GET /devices/report',
        // The booted machine's host reporter (issue 24), open like /devices/report.
        'boot POST /hosts/report',
        'boot GET /healthz',
        // The boot script iPXE chains over HTTP (issue 30).
        'boot GET /boot.ipxe',
        'consoleMetal GET /boot.ipxe',
        'console GET /healthz',
        // The OpenAI-style model list (issue 28) answers a gateway access key, as the hook does (not a token of ours).
        'console GET /v1/models',
        'consoleMetal GET /boot-vars',
        'consoleMetal GET /devices/report',
        'consoleMetal POST /hosts/report',
        'consoleMetal GET /healthz',
      ].sort(),
    );
    // Every permission of the role table is one some route declares (or requires by what its body carries): no dead entries.
    const declared = new Set([...all, ...kindRoutes, ...agentRoutes].flatMap(({ route }) => [route.permission, ...route.bodyPermissions.map((b) => b.permission)]));
    expect(Object.keys(PERMISSION_ROLES).filter((p) => !declared.has(p))).toEqual([]);
    await kindApp.close();
    await kindRuntime.close();
  });

  it('is in the checked-in table of least roles (access.expected.ts), which names no other route: a changed permission or role fails here', () => {
    const actual = new Map<string, string>();
    for (const { listener, route } of listenerRoutes()) {
      if (SKIP_METHODS.has(route.method)) continue;
      actual.set(`${listener} ${route.method} ${route.url}`, route.permission === PUBLIC ? 'public' : (route.permission ?? 'undeclared'));
    }
    expect([...actual.keys()].filter((k) => !(k in LEAST_ROLE)).sort(), 'routes missing from access.expected.ts').toEqual([]);
    expect(Object.keys(LEAST_ROLE).filter((k) => !actual.has(k)).sort(), 'routes in access.expected.ts that no listener has').toEqual([]);
    // Public in the table exactly where the route says public.
    expect([...actual].filter(([k, p]) => (p === 'public') !== (LEAST_ROLE[k] === 'public')).map(([k]) => k)).toEqual([]);
  });

  it('docs/access.md is the table generated from these apps (node --import tsx scripts/gen-access-doc.ts)', () => {
    const doc = readFileSync(new URL('../../../docs/access.md', import.meta.url), 'utf8');
    expect(doc).toBe(renderAccessDoc(running.apps));
    expect(doc).toContain('| POST | `/devices/:mac/bind` | `metal:device:bind` | — | ✓ | ✓ |');
  });

  it('no token → 401, viewer → 403 exactly on writes, operator → 403 exactly on admin routes, admin → never 403', async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const { listener, app, route } of listenerRoutes()) {
      if (route.permission === PUBLIC || SKIP_METHODS.has(route.method)) continue;
      const url = urlOf(route);
      const where = `${listener} ${route.method} ${route.url}`;
      const anonymous = await call(app, route.method, url);
      if (anonymous.statusCode !== 401) problems.push(`${where}: no token → ${anonymous.statusCode}`);
      for (const role of ['viewer', 'operator', 'admin'] as const) {
        const r = await call(app, route.method, url, tokens[role]);
        const allowed = tableAllows(listener, route, role);
        if (allowed && (r.statusCode === 401 || r.statusCode === 403)) problems.push(`${where}: ${role} → ${r.statusCode} ${r.body.slice(0, 120)}`);
        if (!allowed && r.statusCode !== 403) problems.push(`${where}: ${role} → ${r.statusCode}, wanted 403`);
        if (!allowed && r.statusCode === 403 && !r.body.includes(route.permission as string)) problems.push(`${where}: 403 does not name ${route.permission}`);
        // Reads answer (a 422 where the placeholder misses a required query parameter), never fail.
        if (role === 'viewer' && allowed && route.method === 'GET' && ![200, 404, 422].includes(r.statusCode)) problems.push(`${where}: viewer read → ${r.statusCode}`);
      }
      checked++;
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(90);
    // The table is what the issue says: viewers read, operators write day to day, admins hold the keys.
    expect(LEAST_ROLE['boot POST /devices/:mac/bind']).toBe('operator');
    expect(LEAST_ROLE['boot POST /agents']).toBe('admin');
    expect(LEAST_ROLE['boot GET /devices/:mac/bmc']).toBe('operator');
    expect(LEAST_ROLE['console POST /api/auth/tokens']).toBe('admin');
  }, 300_000);

  it('through the console’s /api/metal proxy the caller’s role applies, not the proxy’s', async () => {
    const app = running.apps.console;
    const problems: string[] = [];
    let checked = 0;
    for (const route of registeredRoutes(running.apps.consoleMetal)) {
      if (route.permission === PUBLIC || SKIP_METHODS.has(route.method) || !isProxiedMetalPath(route.url)) continue;
      const url = `/api/metal${urlOf(route)}`;
      const where = `proxy ${route.method} ${route.url}`;
      if ((await call(app, route.method, url)).statusCode !== 401) problems.push(`${where}: no token not 401`);
      for (const role of ['viewer', 'operator', 'admin'] as const) {
        const r = await call(app, route.method, url, tokens[role]);
        const allowed = tableAllows('consoleMetal', route, role);
        if (allowed === (r.statusCode === 403) || r.statusCode === 401) problems.push(`${where}: ${role} → ${r.statusCode}`);
      }
      checked++;
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(30);
  }, 300_000);

  it('a refusal names its code in every API’s shape: seed 004’s and the kind panel’s detail, /api/auth, seed 000’s problem+json (issue 33)', async () => {
    const viewer = { authorization: `Bearer ${tokens.viewer}`, 'content-type': 'application/json' };
    const refused = async (base: string, method: string, path: string) => {
      const r = await fetch(`${base}${path}`, { method, headers: viewer, body: '{}' });
      expect(r.status, path).toBe(403);
      return (await r.json()) as Record<string, unknown>;
    };
    const detail = { code: 'permission_denied', actor: 't-viewer', role: 'viewer' };
    expect(await refused(running.urls.boot, 'POST', '/workers')).toEqual({ detail: 'token t-viewer (viewer) may not metal:worker:write', ...detail, permission: 'metal:worker:write' });
    expect(await refused(running.urls.console, 'POST', '/api/metal/workers')).toMatchObject({ ...detail, permission: 'metal:worker:write' });
    expect(await refused(running.urls.console, 'POST', '/kind/api/v1/clusters')).toMatchObject({ ...detail, detail: expect.any(String) });
    expect(await refused(running.urls.boot, 'POST', '/api/auth/tokens')).toMatchObject({ ...detail, permission: 'auth:token:admin' });
    const problem = await refused(running.urls.console, 'POST', '/api/cluster/clusters');
    expect(problem).toEqual({ type: 'about:blank', title: 'Forbidden', status: 403, detail: 'token t-viewer (viewer) may not cluster:cluster:create', code: 'permission_denied', permission: 'cluster:cluster:create', actor: 't-viewer', role: 'viewer' });
  });
});

describe('permissions by what a body carries (issue 29, finding 3)', () => {
  const bmc = { driver: 'ipmi', host: 'bmc-29-3.example', username: 'admin', password: 'bmc-pass-29-3' };
  const send = (app: FastifyInstance, url: string, token: string, payload: unknown) =>
    app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: JSON.stringify(payload) });

  it('an operator may not set BMC credentials through POST /devices or POST /devices/import (403 metal:bmc:write), on the listener and through /api/metal; an admin may', async () => {
    for (const [where, app, prefix] of [
      ['boot', running.apps.boot, ''],
      ['proxy', running.apps.console, '/api/metal'],
    ] as const) {
      const mac = where === 'boot' ? '02:00:00:29:03:01' : '02:00:00:29:03:02';
      const plain = where === 'boot' ? '02:00:00:29:03:08' : '02:00:00:29:03:09';
      const withBmc = await send(app, `${prefix}/devices`, tokens.operator, { mac, bmc });
      expect(withBmc.statusCode, `${where} ${withBmc.body}`).toBe(403);
      expect(withBmc.json().permission).toBe('metal:bmc:write');
      const imported = await send(app, `${prefix}/devices/import`, tokens.operator, { entries: [{ mac: plain }, { mac, bmc }] });
      expect(imported.statusCode, where).toBe(403);
      expect(imported.json().permission).toBe('metal:bmc:write');
      // Nothing of either was written.
      const admin = { authorization: `Bearer ${tokens.admin}` };
      expect((await app.inject({ url: `${prefix}/devices/${mac}`, headers: admin })).statusCode).toBe(404);
      expect((await app.inject({ url: `${prefix}/devices/${plain}`, headers: admin })).statusCode).toBe(404);
      // The same bodies without a bmc (or with "bmc": null) are an operator's; with it, an admin's.
      expect((await send(app, `${prefix}/devices/import`, tokens.operator, { entries: [{ mac: plain, bmc: null }] })).statusCode, where).toBe(200);
      expect((await send(app, `${prefix}/devices`, tokens.admin, { mac, bmc })).statusCode, where).toBe(201);
      expect((await app.inject({ url: `${prefix}/devices/${mac}/bmc`, headers: admin })).json()).toMatchObject({ driver: 'ipmi', host: bmc.host, password_set: true });
    }
  });
});

describe('named tokens', () => {
  it('the access API: whoami, create (shown once), list without secrets, revoke; on both listeners', async () => {
    for (const base of [running.urls.boot, running.urls.console]) {
      const who = await fetch(`${base}/api/auth/whoami`, { headers: { authorization: `Bearer ${tokens.viewer}` } });
      expect(await who.json()).toMatchObject({ name: 't-viewer', role: 'viewer' });
    }
    const admin = { authorization: `Bearer ${tokens.admin}`, 'content-type': 'application/json' };
    const created = await fetch(`${running.urls.console}/api/auth/tokens`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'api-made', role: 'operator', expires: '1h' }) });
    expect(created.status).toBe(201);
    const body = await created.json();
    expect(body.token).toMatch(/^ilt_/);
    // Usable at once on the other listener.
    expect((await fetch(`${running.urls.boot}/workers`, { headers: { authorization: `Bearer ${body.token}` } })).status).toBe(200);
    const listed = await (await fetch(`${running.urls.boot}/api/auth/tokens`, { headers: admin })).text();
    expect(listed).toContain('"api-made"');
    expect(listed).not.toContain(body.token);
    expect(listed).not.toContain('hash');
    expect(JSON.parse(listed).tokens.find((t: { name: string }) => t.name === 'api-made').last_used_at).not.toBeNull();
    const deleted = await fetch(`${running.urls.boot}/api/auth/tokens/api-made`, { method: 'DELETE', headers: { authorization: `Bearer ${tokens.admin}` } });
    expect(deleted.status).toBe(200);
    expect((await fetch(`${running.urls.boot}/workers`, { headers: { authorization: `Bearer ${body.token}` } })).status).toBe(401);
    expect((await fetch(`${running.urls.boot}/api/auth/tokens/api-made`, { method: 'DELETE', headers: { authorization: `Bearer ${tokens.admin}` } })).status).toBe(404);
    // An operator may not.
    const op = await fetch(`${running.urls.console}/api/auth/tokens`, { headers: { authorization: `Bearer ${tokens.operator}` } });
    expect(op.status).toBe(403);
    expect((await op.json()).permission).toBe('auth:token:admin');
  });

  it('an expired token answers 401', async () => {
    const r = await cli(['create', '--name', 'brief', '--role', 'admin', '--expires', '1s']);
    const t = r.out.trim();
    expect((await fetch(`${running.urls.boot}/workers`, { headers: { authorization: `Bearer ${t}` } })).status).toBe(200);
    await new Promise((res) => setTimeout(res, 1200));
    expect((await fetch(`${running.urls.boot}/workers`, { headers: { authorization: `Bearer ${t}` } })).status).toBe(401);
  });

  it('records the actor of writes through each listener and the proxy; ironlens itself for its own entries', async () => {
    const op = (t: string) => ({ authorization: `Bearer ${t}`, 'content-type': 'application/json' });
    expect((await fetch(`${running.urls.boot}/workers`, { method: 'POST', headers: op(tokens.operator), body: JSON.stringify({ worker_id: 'actor-boot' }) })).status).toBe(200);
    expect((await fetch(`${running.urls.console}/api/metal/workers`, { method: 'POST', headers: op(tokens.admin), body: JSON.stringify({ worker_id: 'actor-proxy' }) })).status).toBe(200);
    expect((await fetch(`${running.urls.boot}/devices/report?mac=02:00:00:00:00:77&serial=S1`)).status).toBe(200);
    const ops = await (await fetch(`${running.urls.boot}/operations`, { headers: { authorization: `Bearer ${tokens.viewer}` } })).json();
    const by = (pred: (e: Record<string, unknown>) => boolean) => ops.entries.filter(pred).map((e: Record<string, unknown>) => e.actor);
    expect(by((e) => e.worker_id === 'actor-boot')).toEqual(['t-operator']);
    expect(by((e) => e.worker_id === 'actor-proxy')).toEqual(['t-admin']);
    // Jobs record who started them (a kind creation, refused later for want of kind: the job exists).
    const created = await fetch(`${running.urls.console}/kind/api/v1/clusters`, { method: 'POST', headers: op(tokens.operator), body: JSON.stringify({ name: 'actor-kind' }) });
    expect(created.status).toBe(202);
    const { job_id } = await created.json();
    const job = await (await fetch(`${running.urls.console}/kind/api/v1/jobs/${job_id}`, { headers: op(tokens.viewer) })).json();
    expect(job.actor).toBe('t-operator');
    // A machine's report carries no token.
    expect(by((e) => e.mac === '02:00:00:00:00:77')).toEqual(['anonymous']);
    // The CLI's token entries are ironlens' own.
    expect(by((e) => e.op === 'auth.token.create' && e.name === 't-viewer')).toEqual(['ironlens']);
    // The API's are the admin's, on either listener (created on the console, revoked on the provisioning listener).
    expect(by((e) => e.op === 'auth.token.create' && e.name === 'api-made')).toEqual(['t-admin']);
    expect(by((e) => e.op === 'auth.token.revoke' && e.name === 'api-made')).toEqual(['t-admin']);
    // Secrets never reach the log.
    expect(JSON.stringify(ops)).not.toMatch(/ilt_/);
  });

  it('the environment tokens are admins named env:IPXE_CP_TOKEN / env:IRONLENS_CONSOLE_TOKEN, each on its listener', async () => {
    // A serve of its own (one serve per SQLite data dir), with a named token of its own beside the environment's.
    const secondEnv = envFor({ IRONLENS_DATA_DIR: join(dir, 'data-env'), IPXE_CP_TOKEN: 'cp-env-secret', IRONLENS_CONSOLE_TOKEN: 'console-env-secret' });
    const namedThere = (await cli(['create', '--name', 'env-side-viewer', '--role', 'viewer'], secondEnv)).out.trim();
    const second = await serve(secondEnv, () => {});
    try {
      const who = async (base: string, t: string) => (await fetch(`${base}/api/auth/whoami`, { headers: { authorization: `Bearer ${t}` } })).json();
      expect(await who(second.urls.boot, 'cp-env-secret')).toMatchObject({ name: 'env:IPXE_CP_TOKEN', role: 'admin' });
      expect(await who(second.urls.console, 'console-env-secret')).toMatchObject({ name: 'env:IRONLENS_CONSOLE_TOKEN', role: 'admin' });
      expect((await fetch(`${second.urls.boot}/workers`, { headers: { authorization: 'Bearer console-env-secret' } })).status).toBe(401);
      // Named tokens work beside them.
      expect((await fetch(`${second.urls.boot}/workers`, { headers: { authorization: `Bearer ${namedThere}` } })).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('is not in the store in any readable form (the SQLite file and its WAL, or a pg_dump)', async () => {
    const places: Array<{ where: string; text: string }> = [];
    if (dbEnv.IRONLENS_DATABASE_URL) places.push({ where: 'pg_dump', text: dumpDatabase(dbEnv.IRONLENS_DATABASE_URL) });
    else {
      const files = readdirSync(join(dir, 'data')).filter((f) => f.startsWith('ironlens.db'));
      expect(files).toContain('ironlens.db-wal');
      for (const f of files) places.push({ where: f, text: readFileSync(join(dir, 'data', f)).toString('latin1') });
      expect(statSync(join(dir, 'data', 'ironlens.db-wal')).size).toBeGreaterThan(0);
    }
    // The rows are there (so an empty place cannot pass)…
    expect(places.some((p) => p.text.includes('t-operator'))).toBe(true);
    // …the tokens are not, whole or in part.
    const leaks = places.flatMap((p) => Object.values(tokens).filter((t) => p.text.includes(t) || p.text.includes(t.slice(4, 24))).map((t) => `${t.slice(0, 8)}… in ${p.where}`));
    expect(leaks).toEqual([]);
  });
});

/** A GET from a chosen loopback source address (127.0.0.x), so the limiter sees two clients. */
async function getFrom(base: string, path: string, source: string, token: string): Promise<number> {
  return (await fetchFrom(base, path, source, token)).status;
}

function fetchFrom(base: string, path: string, source: string, token: string): Promise<{ status: number; body: string }> {
  const u = new URL(base + path);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, localAddress: source, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the failed-auth limiter (default settings)', () => {
  it('200 bad tokens from one address are slowed, then 429; a good token from another address is unaffected', async () => {
    const limitedEnv = { ...envFor({ IRONLENS_DATA_DIR: join(dir, 'data-limiter') }), IRONLENS_AUTH_FAIL_SLOW_AFTER: '', IRONLENS_AUTH_FAIL_BLOCK_AFTER: '', IRONLENS_CONSOLE_LISTEN: 'off' };
    const good = (await cli(['create', '--name', 'limiter-viewer', '--role', 'viewer'], limitedEnv)).out.trim();
    const limited = await serve(limitedEnv, () => {});
    try {
      const base = limited.urls.boot;
      const statuses: number[] = [];
      const times: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t0 = Date.now();
        statuses.push(await getFrom(base, '/workers', '127.0.0.1', `ilt_bad${i}`));
        times.push(Date.now() - t0);
      }
      const count = (s: number) => statuses.filter((x) => x === s).length;
      console.log(`failed-auth limiter: ${count(401)}×401 then ${count(429)}×429; first 5 answered in ${Math.max(...times.slice(0, 5))} ms at most, the slowed ones in ${Math.min(...times.slice(5, 19))} ms at least`);
      expect(statuses.slice(0, 19).every((s) => s === 401)).toBe(true);
      expect(statuses.slice(20).every((s) => s === 429)).toBe(true);
      expect(Math.min(...times.slice(5, 19))).toBeGreaterThanOrEqual(240);
      expect(await getFrom(base, '/workers', '127.0.0.1', good)).toBe(429);
      const t0 = Date.now();
      expect(await getFrom(base, '/workers', '127.0.0.2', good)).toBe(200);
      expect(Date.now() - t0).toBeLessThan(200);
      const metrics = (await fetchFrom(base, '/metrics', '127.0.0.2', good)).body;
      expect(metrics).toMatch(/ironlens_auth_failures_total\{listener="boot",outcome="limited"\} 181/);
      expect(metrics).toMatch(/ironlens_auth_failures_total\{listener="boot",outcome="invalid"\} 20/);
    } finally {
      await limited.close();
    }
  }, 60_000);
});

describe('replicas', () => {
  it('a token revoked on one replica answers 401 on the other within a second (PostgreSQL)', async () => {
    const pg = await startPostgres();
    const rdir = mkdtempSync(join(tmpdir(), `ironlens-access-replicas-${process.pid}-`));
    const url = await pg.createDatabase();
    const env = (n: number) => ({ ...envFor(), IRONLENS_DATA_DIR: join(rdir, `r${n}`), IRONLENS_DATABASE_URL: url, IRONLENS_REPLICA_ID: `r${n}`, IRONLENS_CONSOLE_LISTEN: 'off', IRONLENS_SECRET_KEY: 'ab'.repeat(32) });
    const created = await cli(['create', '--name', 'shared', '--role', 'viewer'], env(1));
    const t = created.out.trim();
    const [a, b] = [await serve(env(1), () => {}), await serve(env(2), () => {})];
    try {
      const get = (r: Running) => fetch(`${r.urls.boot}/workers`, { headers: { authorization: `Bearer ${t}` } });
      expect((await get(a)).status).toBe(200);
      expect((await get(b)).status).toBe(200);
      const del = await fetch(`${a.urls.boot}/api/auth/tokens/shared`, { method: 'DELETE', headers: { authorization: `Bearer ${t}` } });
      // A viewer may not revoke; the CLI (an admin at the store) does.
      expect(del.status).toBe(403);
      expect((await cli(['revoke', 'shared'], env(1))).code).toBe(0);
      const revokedAt = Date.now();
      let statusB = 200;
      while (Date.now() - revokedAt < 1000 && statusB !== 401) statusB = (await get(b)).status;
      const took = Date.now() - revokedAt;
      expect(statusB).toBe(401);
      expect(took).toBeLessThan(1000);
      expect((await get(a)).status).toBe(401);
      console.log(`revocation reached the other replica in ${took} ms`);
    } finally {
      await a.close();
      await b.close();
      pg.stop();
      rmSync(rdir, { recursive: true, force: true });
    }
  }, 120_000);
});
