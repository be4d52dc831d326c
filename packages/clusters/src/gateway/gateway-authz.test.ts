import { AppError } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClustersTestApp, closedPort, kubeconfigWithKey, multipart, startClustersApp } from '../testing/app';
import { GatewayAuthorizer } from './gateway-authz.service';
import { GatewayRepository } from './gateway.repository';

// The hook's decision (GatewayAuthorizer.authorize), called directly: which key gives which
// fairness id, and every refusal with its code and status. Keys are made by the key service of a
// test app (two draft registrations, no cluster behind them).

let t: ClustersTestApp;
let a: string;
let b: string;
let keyA: string;
let keyB: string;

async function register(name: string): Promise<string> {
  const { payload, headers } = multipart({ name, draft: 'true' }, { content: kubeconfigWithKey(`https://127.0.0.1:${await closedPort()}`).kubeconfig });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster.id;
}

const authorizer = (rate = { perSecond: 0.001, burst: 1000 }) => new GatewayAuthorizer(t.store, new GatewayRepository(), rate);

/** The refusal of a call: `code status`. */
async function refusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e, 'the call was allowed').toBeInstanceOf(AppError);
  return `${(e as AppError).code} ${(e as AppError).status}`;
}

beforeAll(async () => {
  t = await startClustersApp();
  a = await register('authz-a');
  b = await register('authz-b');
  keyA = (await t.services.gateway.keys.createKey(a, 'team-a')).key;
  keyB = (await t.services.gateway.keys.createKey(b, 'team-b')).key;
});

afterAll(async () => {
  await t?.close();
});

describe('GatewayService.authorize (the hook’s decision)', () => {
  it('a current key of this very cluster: allowed, the fairness id is the key’s name', async () => {
    const z = authorizer();
    expect(await z.authorize(a, `Bearer ${keyA}`, '10.0.0.1')).toEqual({ headers: { 'x-llm-d-inference-fairness-id': 'team-a' } });
    expect(await z.authorize(b, `bearer   ${keyB}  `, '10.0.0.1')).toEqual({ headers: { 'x-llm-d-inference-fairness-id': 'team-b' } });
    // The facade answers the same.
    expect(await t.services.gateway.authorize(a, `Bearer ${keyA}`, '10.0.0.2')).toEqual({ headers: { 'x-llm-d-inference-fairness-id': 'team-a' } });
  });

  it('another cluster’s key is forbidden (403), never that cluster’s fairness id', async () => {
    const z = authorizer();
    expect(await refusal(z.authorize(a, `Bearer ${keyB}`, '10.0.0.1'))).toBe('gateway_forbidden 403');
    expect(await refusal(z.authorize(b, `Bearer ${keyA}`, '10.0.0.1'))).toBe('gateway_forbidden 403');
  });

  it('no key, another scheme or two tokens: 401 gateway_unauthorized', async () => {
    const z = authorizer();
    for (const h of [undefined, '', 'Basic dXNlcjpwYXNz', `Bearer ${keyA} extra`, 'Bearer', `${keyA}`]) {
      expect(await refusal(z.authorize(a, h, '10.0.0.1')), String(h)).toBe('gateway_unauthorized 401');
    }
  });

  it('an unknown key, a key without the prefix, an overlong one: 403 gateway_forbidden; only the first is looked up in the store', async () => {
    const lookups: string[] = [];
    const repo = new (class extends GatewayRepository {
      override keyByHash(...args: Parameters<GatewayRepository['keyByHash']>) {
        lookups.push(args[1]);
        return super.keyByHash(...args);
      }
    })();
    const z = new GatewayAuthorizer(t.store, repo, { perSecond: 0.001, burst: 1000 });
    for (const k of [`${keyA.slice(0, -1)}x`, keyA.slice('ilgw_'.length), `ilgw_${'A'.repeat(300)}`]) {
      expect(await refusal(z.authorize(a, `Bearer ${k}`, '10.0.0.1')), k.slice(0, 20)).toBe('gateway_forbidden 403');
    }
    expect(lookups).toHaveLength(1);
  });

  it('a revoked key is forbidden at once', async () => {
    const z = authorizer();
    const k = (await t.services.gateway.keys.createKey(a, 'short-lived')).key;
    expect((await z.authorize(a, `Bearer ${k}`, '10.0.0.1')).headers['x-llm-d-inference-fairness-id']).toBe('short-lived');
    await t.services.gateway.keys.deleteKey(a, 'short-lived');
    expect(await refusal(z.authorize(a, `Bearer ${k}`, '10.0.0.1'))).toBe('gateway_forbidden 403');
  });

  it('past its burst a source is refused with 429 gateway_rate_limited (before its key is looked at); another source is not', async () => {
    const z = authorizer({ perSecond: 0.001, burst: 3 });
    for (let i = 0; i < 3; i++) await z.authorize(a, `Bearer ${keyA}`, '10.0.0.7');
    expect(await refusal(z.authorize(a, `Bearer ${keyA}`, '10.0.0.7'))).toBe('gateway_rate_limited 429');
    expect(await refusal(z.authorize(a, undefined, '10.0.0.7'))).toBe('gateway_rate_limited 429');
    expect((await z.authorize(a, `Bearer ${keyA}`, '10.0.0.8')).headers['x-llm-d-inference-fairness-id']).toBe('team-a');
  });

  it('records when a key was last used, at most once a minute', async () => {
    const z = authorizer();
    const k = (await t.services.gateway.keys.createKey(b, 'touched')).key;
    const used = async () => (await t.services.gateway.keys.listKeys(b)).items.find((i) => i.name === 'touched')?.lastUsedAt;
    expect(await used()).toBeNull();
    await z.authorize(b, `Bearer ${k}`, '10.0.0.1');
    const first = await used();
    expect(first).toEqual(expect.any(String));
    await z.authorize(b, `Bearer ${k}`, '10.0.0.1');
    expect(await used()).toBe(first);
  });
});
