import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OperationsLog, type OperationsTables, operationsMigrations } from '../audit';
import type { AppError } from '../errors';
import { createHttpApp, installErrorHandling, registeredRoutes } from '../http';
import { Metrics } from '../metrics';
import { partOf, Store } from '../store';
import { sleep, testStoreTarget } from '../testing';
import { JobsRepository, type JobsTables, jobsMigrations } from '../jobs';
import { currentActor, runAsActor } from '../actor';
import { Authenticator, AuthLimiter, NamedTokens } from './access';
import { permissionsOf, roleAllows } from './permissions';
import { type AuthTokensTables, authTokensMigrations, hashToken, TOKEN_PREFIX, TokensRepository } from './tokens';

let dir: string;
let store: Store<AuthTokensTables & OperationsTables>;
let repo: TokensRepository;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), `ironlens-access-${process.pid}-`));
  store = await Store.open<AuthTokensTables & OperationsTables>({ ...(await testStoreTarget(join(dir, 'db.sqlite'))), migrations: [...authTokensMigrations, ...operationsMigrations] });
  repo = new TokensRepository(partOf(store));
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function build(opts: { env?: string; cacheMs?: number; limiter?: AuthLimiter; metrics?: Metrics } = {}) {
  const named = new NamedTokens(repo, { cacheMs: opts.cacheMs ?? 0 });
  const authenticator = new Authenticator([{ variable: 'IPXE_CP_TOKEN', token: opts.env }], named);
  const app = await createHttpApp({ title: 't', access: { authenticator, limiter: opts.limiter }, metrics: opts.metrics ? { metrics: opts.metrics, listener: 'test' } : undefined });
  const log = new OperationsLog(partOf(store));
  app.get('/open', { config: { permission: 'public' } }, async () => ({ actor: currentActor() }));
  app.get('/devices', { config: { permission: 'metal:device:read' } }, async () => ({ actor: currentActor() }));
  app.post('/devices/:mac/bind', { config: { permission: 'metal:device:bind' } }, async () => {
    await log.append({ op: 'device.bind', mac: 'aa' });
    return { ok: true };
  });
  app.post('/settings', { config: { permission: 'metal:setting:write' } }, async () => ({ ok: true }));
  app.get('/undeclared', async () => ({ ok: true }));
  // Another API's shape in its own context: the hook's errors are rendered by it.
  await app.register(
    async (api) => {
      installErrorHandling(api, (e: AppError) => ({ type: 'about:blank', status: e.status, code: e.code, detail: e.message }), { contentType: 'application/problem+json' });
      api.post('/thing', { config: { permission: 'cluster:cluster:delete' } }, async () => ({ ok: true }));
    },
    { prefix: '/api' },
  );
  return { app, named };
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe('access control', () => {
  it('with no token anywhere everything stays open, as before, and acts as anonymous', async () => {
    const { app } = await build();
    expect((await app.inject({ url: '/devices' })).json()).toEqual({ actor: 'anonymous' });
    expect((await app.inject({ method: 'POST', url: '/settings' })).statusCode).toBe(200);
  });

  it('the environment token is an admin named env:IPXE_CP_TOKEN; a wrong one is 401 in the detail shape', async () => {
    const { app } = await build({ env: 's3cret' });
    expect((await app.inject({ url: '/devices', headers: bearer('s3cret') })).json()).toEqual({ actor: 'env:IPXE_CP_TOKEN' });
    const r = await app.inject({ url: '/devices', headers: bearer('nope') });
    expect(r.statusCode).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Bearer');
    expect(r.json()).toEqual({ detail: 'Unauthorized' });
    expect((await app.inject({ url: '/open' })).statusCode).toBe(200);
  });

  it('a named token requires a token on the listener; roles decide, 403 names the permission', async () => {
    const { app } = await build();
    const viewer = await repo.create({ name: 'ci-view', role: 'viewer' });
    const op = await repo.create({ name: 'ops', role: 'operator' });
    expect(viewer.token).toMatch(/^ilt_[A-Za-z0-9_-]{43}$/);
    expect((await app.inject({ url: '/devices' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/devices', headers: bearer(viewer.token) })).json()).toEqual({ actor: 'ci-view' });
    const denied = await app.inject({ method: 'POST', url: '/devices/aa/bind', headers: bearer(viewer.token) });
    expect(denied.statusCode).toBe(403);
    // The seed-004 shape names its code too (issue 33), as the problem+json shape does.
    expect(denied.json()).toEqual({ detail: 'token ci-view (viewer) may not metal:device:bind', code: 'permission_denied', permission: 'metal:device:bind', actor: 'ci-view', role: 'viewer' });
    expect((await app.inject({ method: 'POST', url: '/devices/aa/bind', headers: bearer(op.token) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: '/settings', headers: bearer(op.token) })).statusCode).toBe(403);
    // Problem+json in the other API's context.
    const p = await app.inject({ method: 'POST', url: '/api/thing', headers: bearer(op.token) });
    expect(p.statusCode).toBe(403);
    expect(p.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(p.json()).toMatchObject({ code: 'permission_denied', detail: 'token ops (operator) may not cluster:cluster:delete' });
    const p401 = await app.inject({ method: 'POST', url: '/api/thing' });
    expect(p401.statusCode).toBe(401);
    expect(p401.json()).toMatchObject({ code: 'auth_required' });
    // The operations log records the actor.
    const entries = (await new OperationsLog(partOf(store)).list({})).entries;
    expect(entries.map((e) => e.actor)).toEqual(['ops']);
  });

  it('a route without a permission is refused to everyone, admins included', async () => {
    const { app } = await build({ env: 'adm' });
    const r = await app.inject({ url: '/undeclared', headers: bearer('adm') });
    expect(r.statusCode).toBe(403);
    expect(r.json().permission).toBe('undeclared');
    expect(registeredRoutes(app).find((x) => x.url === '/undeclared')?.permission).toBeUndefined();
    expect(registeredRoutes(app).find((x) => x.url === '/docs')?.permission).toBe('public');
  });

  it('revoked and expired tokens answer 401; cached for at most cacheMs', async () => {
    const { app } = await build({ cacheMs: 300 });
    const t = await repo.create({ name: 'short', role: 'admin', expires: '1s' });
    const keep = await repo.create({ name: 'keep', role: 'viewer' });
    expect((await app.inject({ url: '/devices', headers: bearer(t.token) })).statusCode).toBe(200);
    await sleep(1100);
    expect((await app.inject({ url: '/devices', headers: bearer(t.token) })).statusCode).toBe(401);
    expect((await app.inject({ url: '/devices', headers: bearer(keep.token) })).statusCode).toBe(200);
    expect(await repo.revoke('keep')).toBe(true);
    expect(await repo.revoke('keep')).toBe(false);
    await sleep(350);
    expect((await app.inject({ url: '/devices', headers: bearer(keep.token) })).statusCode).toBe(401);
    // Every named token revoked or expired: the listener still requires one (never reopened by a revocation).
    expect((await app.inject({ url: '/devices' })).statusCode).toBe(401);
    // A revoked name may be given again, to a new token.
    const again = await repo.create({ name: 'keep', role: 'viewer' });
    expect((await app.inject({ url: '/devices', headers: bearer(again.token) })).statusCode).toBe(200);
  });

  it('lists tokens without secrets, with last_used_at, a use just made included', async () => {
    const { app, named } = await build();
    const t = await repo.create({ name: 'used', role: 'viewer' });
    // The write of last_used_at is slowed: the list still waits for it, never shows null.
    const touch = repo.touch.bind(repo);
    repo.touch = async (name, at) => {
      await sleep(300);
      return touch(name, at);
    };
    try {
      await app.inject({ url: '/devices', headers: bearer(t.token) });
    } finally {
      repo.touch = touch;
    }
    const [info] = await named.list();
    expect(Object.keys(info).sort()).toEqual(['created_at', 'expires_at', 'last_used_at', 'name', 'revoked_at', 'role']);
    expect(info.last_used_at).not.toBeNull();
    await expect(repo.create({ name: 'used', role: 'viewer' })).rejects.toMatchObject({ code: 'token_exists' });
    await expect(repo.create({ name: 'x', role: 'root' })).rejects.toMatchObject({ code: 'token_role_invalid' });
    await expect(repo.create({ name: 'x y', role: 'admin' })).rejects.toMatchObject({ code: 'token_name_invalid' });
    // The actors ironlens writes under (issue 29, finding 11): reserved, in any case.
    for (const name of ['env:IPXE_CP_TOKEN', 'ironlens', 'anonymous', 'Anonymous', 'IRONLENS']) await expect(repo.create({ name, role: 'admin' })).rejects.toMatchObject({ code: 'token_name_reserved' });
    await expect(repo.create({ name: 'x', role: 'admin', expires: '3 weeks' })).rejects.toMatchObject({ code: 'token_expiry_invalid' });
    // A duration past ten years is refused before any date is made of it (it was a 500: "Invalid time value").
    for (const expires of ['99999999999d', '3651d', `${'9'.repeat(400)}s`]) await expect(repo.create({ name: 'far', role: 'admin', expires })).rejects.toMatchObject({ code: 'token_expiry_out_of_range' });
    expect((await repo.create({ name: 'far', role: 'admin', expires: '3650d' })).expires_at).not.toBeNull();
  });

  it('a token stored under a reserved actor name (made before those names were refused) signs in as nobody: 401', async () => {
    const { app } = await build();
    // A token of an ordinary name, so named tokens are in force.
    const ok = await repo.create({ name: 'alice', role: 'admin' });
    expect((await app.inject({ url: '/devices', headers: bearer(ok.token) })).json()).toEqual({ actor: 'alice' });
    for (const [i, name] of ['ironlens', 'anonymous', 'Anonymous', 'env:IPXE_CP_TOKEN', 'env:X'].entries()) {
      const token = `${TOKEN_PREFIX}reserved-${i}-${'x'.repeat(32)}`;
      await store.db.insertInto('auth_tokens').values({ name, role: 'admin', hash: hashToken(token), created_at: new Date().toISOString(), expires_at: null, last_used_at: null, revoked_at: null }).execute();
      const r = await app.inject({ url: '/devices', headers: bearer(token) });
      expect(r.statusCode, name).toBe(401);
      expect((await app.inject({ method: 'POST', url: '/settings', headers: bearer(token) })).statusCode, name).toBe(401);
    }
  });

  it('the failed-auth limiter slows then answers 429 one source, never another; counted in metrics', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const limiter = new AuthLimiter({ slowAfter: 5, delayMs: 20, blockAfter: 20, blockMs: 60_000 });
    const { app } = await build({ env: 'good', limiter, metrics });
    const statuses: number[] = [];
    const started = Date.now();
    for (let i = 0; i < 200; i++) statuses.push((await app.inject({ url: '/devices', headers: bearer(`bad-${i}`), remoteAddress: '192.0.2.7' })).statusCode);
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(20).every((s) => s === 429)).toBe(true);
    // 15 slowed failures of 20 ms each.
    expect(Date.now() - started).toBeGreaterThanOrEqual(15 * 20);
    // Even the good token is refused from the blocked address, with Retry-After…
    const blocked = await app.inject({ url: '/devices', headers: bearer('good'), remoteAddress: '192.0.2.7' });
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    // …but another address is unaffected, and public routes stay open for the blocked one.
    expect((await app.inject({ url: '/devices', headers: bearer('good'), remoteAddress: '192.0.2.8' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/open', remoteAddress: '192.0.2.7' })).statusCode).toBe(200);
    // Requests without any token (a page before sign-in) are told 401 and never count.
    for (let i = 0; i < 50; i++) expect((await app.inject({ url: '/devices', remoteAddress: '192.0.2.9' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/devices', headers: bearer('good'), remoteAddress: '192.0.2.9' })).statusCode).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/ironlens_auth_failures_total\{listener="test",outcome="invalid"\} 70/);
    expect(text).toMatch(/ironlens_auth_failures_total\{listener="test",outcome="limited"\} 181/);
  });

  it('jobs record who started them: the request’s actor, ironlens outside a request', async () => {
    const s2 = await Store.open<JobsTables>({ file: ':memory:', migrations: [...jobsMigrations] });
    try {
      const jobs = new JobsRepository(s2);
      await runAsActor('ops-alice', () => jobs.create({ id: 'j1', kind: 'kind.create_cluster' }));
      await jobs.create({ id: 'j2', kind: 'clusters.kubespray' });
      expect((await jobs.get('j1'))?.actor).toBe('ops-alice');
      expect((await jobs.get('j2'))?.actor).toBe('ironlens');
    } finally {
      await s2.close();
    }
  });

  it('roles nest: viewer ⊂ operator ⊂ admin; unknown writes are admin-only', () => {
    expect(roleAllows('viewer', 'metal:device:read')).toBe(true);
    expect(roleAllows('viewer', 'metal:device:bind')).toBe(false);
    expect(roleAllows('operator', 'metal:agent:write')).toBe(false);
    expect(roleAllows('operator', 'something:new:write')).toBe(false);
    expect(roleAllows('viewer', 'something:new:read')).toBe(true);
    expect(permissionsOf('viewer').every((p) => permissionsOf('operator').includes(p))).toBe(true);
    expect(permissionsOf('admin')).toContain('auth:token:admin');
  });
});
