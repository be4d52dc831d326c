/**
 * `reached_at` (issue 33, item 8): the first write ironlens sent a cluster that its API server
 * answered, recorded before the write's caller goes on. A draft without one has nothing of
 * ironlens' on its cluster, so its delete needs no remote cleanup; so the rule must not mark a
 * read, nor a write that never got there. The Kube
 * here is a scripted stand-in at the adapter's interface (each call resolves or throws what the
 * test says); the store and repository are real.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jobsMigrations, operationsMigrations, SecretBox, Store } from '@ironlens/core';
import { testStoreTarget } from '@ironlens/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Kube, KubeApiError, type KubeConnector, KubeUnreachableError } from '../adapters/kube.adapter';
import { clustersMigrations } from '../shared/clusters.migrations';
import type { ClustersDatabase } from '../shared/tables';
import { ClusterAccess, kubeconfigPurpose } from './cluster-access';
import { ClusterRepository, type ClusterRow } from './cluster.repository';

let dir: string;
let store: Store<ClustersDatabase>;
const repo = new ClusterRepository();
const box = SecretBox.fromKey(Buffer.alloc(32, 7));
/** What the next call of each method does: resolve with a value, or throw. */
const script = new Map<string, () => Promise<unknown>>();
const stand: KubeConnector = () =>
  new Proxy({} as Kube, {
    get: (_t, prop) => (prop === 'close' ? () => {} : (..._args: unknown[]) => (script.get(String(prop)) ?? (() => Promise.resolve(null)))()),
  });
let access: ClusterAccess;

async function row(id: string): Promise<ClusterRow> {
  const r: ClusterRow = {
    id,
    name: id,
    description: '',
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:00Z',
    draft: true,
    proxy: { mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null },
    kubeconfigSealed: box.seal('apiVersion: v1', kubeconfigPurpose(id)),
    gatewayProvider: null,
    gatewayNamespace: `lens-gateway-${id}`,
    gatewayName: 'lens-gateway',
    gatewayPublicUrl: null,
    gatewayPort: null,
    gatewayAuthzHost: null,
    inotifyMaxUserInstances: 8192,
    hfTokenSecret: null,
  };
  await repo.insert(store.db, r);
  return (await repo.get(store.db, id))!;
}
const reachedAt = async (id: string) => (await repo.get(store.db, id))?.reachedAt ?? null;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-access-'));
  store = await Store.open<ClustersDatabase>({ ...(await testStoreTarget(join(dir, 'store.db'))), migrations: [...operationsMigrations, ...jobsMigrations, ...clustersMigrations] });
  access = new ClusterAccess(store, repo, box, stand, { requestTimeoutMs: 1000, env: {} });
  script.clear();
});
afterEach(async () => {
  access.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('reached_at: the first write the cluster answered', () => {
  it('is not set by reads, answered or not, nor by a write that never got there', async () => {
    const r = await row('aaaaaaaa');
    const kube = access.kube(r);
    await kube.version();
    await kube.listNodes();
    script.set('createNamespace', () => Promise.reject(new KubeUnreachableError('connect ECONNREFUSED', false)));
    await expect(kube.createNamespace('ns', {})).rejects.toBeInstanceOf(KubeUnreachableError);
    script.set('getSecret', () => Promise.reject(new KubeApiError(403, 'Forbidden', 'forbidden')));
    await expect(kube.getSecret('ns', 's')).rejects.toBeInstanceOf(KubeApiError);
    expect(await reachedAt('aaaaaaaa')).toBeNull();
  });

  it('is set by a write the API server answered, done or refused, once', async () => {
    const done = await row('bbbbbbbb');
    await access.kube(done).createSecret({ metadata: { name: 's', namespace: 'ns' } } as never);
    expect(await reachedAt('bbbbbbbb')).toMatch(/^\d{4}-/);
    const refused = await row('cccccccc');
    script.set('apply', () => Promise.reject(new KubeApiError(403, 'Forbidden', 'forbidden')));
    await expect(access.kube(refused).apply({} as never, 'ironlens', true)).rejects.toBeInstanceOf(KubeApiError);
    expect(await reachedAt('cccccccc')).toMatch(/^\d{4}-/);
    const first = await reachedAt('bbbbbbbb');
    await access.kube(done).deleteNamespace('ns');
    expect(await reachedAt('bbbbbbbb')).toBe(first);
  });
});
