import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dumpDatabase } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClustersTestApp, closedPort, kubeconfigWithKey, multipart, startClustersApp } from '../testing/app';

// The gateway's access keys and its authorization hook, with the console token on (the hook must
// not need it) and clusters whose API server is a closed port (the hook never calls the cluster).

const TOKEN = 'console-token-for-the-gateway-suite';
const AUTH = { authorization: `Bearer ${TOKEN}` };
let t: ClustersTestApp;
let a: string;
let b: string;

async function register(name: string, fields: Record<string, string> = {}) {
  const { payload, headers } = multipart({ name, ...fields }, { content: kubeconfigWithKey(`https://127.0.0.1:${await closedPort()}`).kubeconfig });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers: { ...headers, ...AUTH } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster.id as string;
}

const hook = (id: string, key?: string, o: { method?: 'GET' | 'POST' | 'PUT'; path?: string; ip?: string } = {}) =>
  t.app.inject({
    method: o.method ?? 'POST',
    url: `/api/v1/internal/model-gateway/authorize/cluster/${id}${o.path ?? ''}`,
    headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    remoteAddress: o.ip ?? '127.0.0.9',
  });

beforeAll(async () => {
  t = await startClustersApp({ token: TOKEN, env: { IRONLENS_GATEWAY_AUTHZ_RATE: '5', IRONLENS_GATEWAY_AUTHZ_BURST: '40' } });
  a = await register('gw-a');
  b = await register('gw-b');
});

afterAll(async () => {
  await t?.close();
});

describe('gateway access keys and the authorization hook', () => {
  let keyA = '';
  let keyB = '';

  it('creates a key shown once (201), lists names without the key, refuses a duplicate name and a bad one', async () => {
    const res = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${a}/gateway/keys`, payload: { name: 'team-a' }, headers: AUTH });
    expect(res.statusCode, res.body).toBe(201);
    keyA = res.json().key;
    expect(res.json()).toMatchObject({ name: 'team-a' });
    expect(keyA).toMatch(/^ilgw_[A-Za-z0-9_-]{43}$/);
    const list = await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${a}/gateway/keys`, headers: AUTH });
    expect(list.statusCode).toBe(200);
    expect(list.json().items).toEqual([{ name: 'team-a', createdAt: expect.any(String), lastUsedAt: null }]);
    expect(list.body).not.toContain(keyA);
    const dup = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${a}/gateway/keys`, payload: { name: 'team-a' }, headers: AUTH });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().code).toBe('gateway_key_exists');
    const bad = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${a}/gateway/keys`, payload: { name: 'Team A\r\nx-evil: 1' }, headers: AUTH });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().code).toBe('gateway_key_name_invalid');
    const noToken = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${a}/gateway/keys`, payload: { name: 'x' } });
    expect(noToken.statusCode).toBe(401);
    keyB = (await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${b}/gateway/keys`, payload: { name: 'team-b' }, headers: AUTH })).json().key;
  });

  it('allows a valid key of that cluster (200 + fairness id), on any method and any path below, without the console token', async () => {
    for (const o of [{}, { method: 'GET' as const, path: '/v1/chat/completions' }, { method: 'PUT' as const, path: '/v1/models/x/y' }]) {
      const res = await hook(a, keyA, o);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['x-llm-d-inference-fairness-id']).toBe('team-a');
    }
    const list = await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${a}/gateway/keys`, headers: AUTH });
    expect(list.json().items[0].lastUsedAt).toEqual(expect.any(String));
  });

  it('denies no key (401), another cluster’s key, a forged key and the console token (403), and says nothing of why', async () => {
    const none = await hook(a);
    expect(none.statusCode).toBe(401);
    expect(none.headers['x-llm-d-inference-fairness-id']).toBeUndefined();
    const denied = [await hook(a, keyB), await hook(a, `${keyA.slice(0, -2)}xx`), await hook(a, TOKEN), await hook('ffffffff', keyA)];
    for (const d of denied) {
      expect(d.statusCode).toBe(403);
      expect(d.headers['x-llm-d-inference-fairness-id']).toBeUndefined();
      expect(d.json()).toMatchObject({ code: 'gateway_forbidden', detail: 'access denied' });
    }
    expect(denied[0].body).not.toContain('team-b');
    // b's key works on b.
    expect((await hook(b, keyB)).headers['x-llm-d-inference-fairness-id']).toBe('team-b');
  });

  it('denies a revoked key (403); revoking an unknown key is 404', async () => {
    const del = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${a}/gateway/keys/team-a`, headers: AUTH });
    expect(del.statusCode).toBe(204);
    expect((await hook(a, keyA)).statusCode).toBe(403);
    const again = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${a}/gateway/keys/team-a`, headers: AUTH });
    expect(again.statusCode).toBe(404);
    expect(again.json().code).toBe('gateway_key_not_found');
  });

  it('rate limits per source: one source past its burst gets 429, another source is still answered', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 60; i++) codes.push((await hook(b, keyB, { ip: '127.0.0.77' })).statusCode);
    expect(codes.filter((c) => c === 200).length).toBeGreaterThanOrEqual(40);
    expect(codes.filter((c) => c === 200).length).toBeLessThan(50);
    expect(codes.at(-1)).toBe(429);
    expect((await hook(b, keyB, { ip: '127.0.0.78' })).statusCode).toBe(200);
  });

  it('keeps keys only as hashes: no key is in the store in readable form', async () => {
    // Flush SQLite's WAL into its file, then read every file of the data dir (and, on PostgreSQL, every row).
    await t.restart();
    let dump = t.target.url ? dumpDatabase(t.target.url) : '';
    for (const f of readdirSync(t.dataDir, { recursive: true }) as string[]) {
      const p = join(t.dataDir, f);
      if (statSync(p).isFile()) dump += readFileSync(p).toString('latin1');
    }
    expect(dump).toContain('team-b');
    expect(dump).not.toContain(keyA);
    expect(dump).not.toContain(keyB);
    expect(dump).not.toContain(keyB.slice(5, 30));
  });

  it('a registration without a provider starts no gateway job, and its status says there is nothing', async () => {
    const jobs = await t.services.runner.repository.list({ kind: 'clusters.gateway' });
    expect(jobs).toEqual([]);
    const st = await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${a}/gateway/status`, headers: AUTH });
    expect(st.statusCode, st.body).toBe(200);
    expect(st.json()).toMatchObject({ clusterId: a, gatewayProvider: null, gatewayState: 'missing', lastOperation: null, authz: { state: 'disabled' } });
    const rec = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${a}/gateway/reconcile`, headers: AUTH });
    expect(rec.statusCode).toBe(409);
    expect(rec.json().code).toBe('gateway_not_configured');
    const all = await t.app.inject({ method: 'GET', url: '/api/v1/model-service/admin/gateway/status', headers: AUTH });
    expect(all.statusCode).toBe(200);
    expect(all.json().clusters.map((c: { clusterId: string }) => c.clusterId).sort()).toEqual([a, b].sort());
  });
});
