import { JobsRepository, jobsMigrations, partOf, Store } from '@ironlens/core';
import { testStoreTarget } from '@ironlens/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type BootstrapDatabase, BootstrapRepository, bootstrapMigrations } from './bootstrap.repository';

let store: Store<BootstrapDatabase> | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

async function open() {
  store = await Store.open<BootstrapDatabase>({ ...(await testStoreTarget(':memory:')), migrations: [...jobsMigrations, ...bootstrapMigrations] });
  return { jobs: new JobsRepository(partOf(store)), repo: new BootstrapRepository(store) };
}

const nodes = [{ host: '10.0.0.1', port: 22, roles: ['control-plane' as const], username: 'root', auth: 'ironlens_key' as const }];

describe('BootstrapRepository', () => {
  it('hands a held kubeconfig out exactly once, even to readers racing for it', async () => {
    const { jobs, repo } = await open();
    await jobs.create({ id: 'j1', kind: 'clusters.bootstrap' });
    await repo.create({ id: 'bootstrap-0123456789ab', jobId: 'j1', nodes, register: null });
    expect(await repo.takeKubeconfig('bootstrap-0123456789ab')).toBeUndefined();
    await repo.holdKubeconfig('bootstrap-0123456789ab', 'v1:sealed');
    const got = await Promise.all([1, 2, 3, 4].map(() => repo.takeKubeconfig('bootstrap-0123456789ab')));
    expect(got.filter((g) => g !== undefined)).toEqual(['v1:sealed']);
    expect((await repo.get('bootstrap-0123456789ab'))?.kubeconfigState).toBe('delivered');
  });

  it('drops the rows whose core job was pruned, and only those', async () => {
    const { jobs, repo } = await open();
    for (const j of ['j1', 'j2']) {
      await jobs.create({ id: j, kind: 'clusters.bootstrap' });
      await jobs.update(j, { status: 'success' });
    }
    await repo.create({ id: 'bootstrap-000000000001', jobId: 'j1', nodes, register: { name: 'x' } });
    await repo.create({ id: 'bootstrap-000000000002', jobId: 'j2', nodes, register: null });
    await repo.holdKubeconfig('bootstrap-000000000001', 'v1:old');
    expect(await jobs.prune('clusters.bootstrap', 1)).toBe(1);
    expect(await repo.pruneOrphans()).toBe(1);
    expect((await repo.list()).map((r) => r.id)).toEqual(['bootstrap-000000000002']);
  });
});
