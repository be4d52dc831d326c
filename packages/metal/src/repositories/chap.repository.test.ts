/**
 * The per-worker CHAP accounts at rest (issue 13), on the store's real dialects: SQLite here,
 * PostgreSQL in the suite's `postgres` run (vitest.config.ts), so the migration and the
 * racing insert are checked on both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { operationsMigrations, SecretBox, Store } from '@ironlens/core';
import { testStoreTarget } from '@ironlens/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChapRepository, chapUserOf } from './chap.repository';
import { metalMigrations } from './metal.migrations';
import type { MetalDatabase, MetalStore } from './tables';

let dir: string;
let store: MetalStore;
const box = SecretBox.fromKey(Buffer.alloc(32, 7));

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-chap-'));
  store = await Store.open<MetalDatabase>({ ...(await testStoreTarget(join(dir, 'ironlens.db'))), migrations: [...operationsMigrations, ...metalMigrations] });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ChapRepository', () => {
  it('makes one account per worker, sealed for that worker, the same for racing callers', async () => {
    const repo = new ChapRepository(box);
    expect(await repo.get(store.db, 'w1')).toBeNull();
    const made = await Promise.all(Array.from({ length: 8 }, () => repo.ensure(store.db, 'w1')));
    expect(new Set(made.map((c) => c.password)).size).toBe(1);
    expect(made[0]).toEqual({ user: chapUserOf('w1'), password: expect.stringMatching(/^[A-Za-z0-9]{16}$/) });
    const rows = await store.db.selectFrom('worker_chap').selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0].secret_sealed.startsWith('v1:')).toBe(true);
    expect(rows[0].secret_sealed).not.toContain(made[0].password);
    // Bound to the worker: the same sealed text under another worker id does not open.
    await store.db.insertInto('worker_chap').values({ ...rows[0], worker_id: 'w2' }).execute();
    await expect(repo.get(store.db, 'w2')).rejects.toThrow();
    // Another key opens nothing.
    await expect(new ChapRepository(SecretBox.fromKey(Buffer.alloc(32, 8))).get(store.db, 'w1')).rejects.toThrow();
  });

  it('keeps an account until it is removed, then makes a new secret', async () => {
    const repo = new ChapRepository(box);
    const first = await repo.ensure(store.db, 'w1');
    await repo.ensure(store.db, 'w3');
    expect(await repo.ensure(store.db, 'w1')).toEqual(first);
    expect([...(await repo.many(store.db, ['w1', 'w3', 'nobody'])).keys()].sort()).toEqual(['w1', 'w3']);
    await repo.remove(store.db, 'w1');
    expect(await repo.get(store.db, 'w1')).toBeNull();
    expect((await repo.ensure(store.db, 'w1')).password).not.toBe(first.password);
  });
});
