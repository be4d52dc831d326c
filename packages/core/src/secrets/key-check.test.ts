import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../store';
import { testStoreTarget } from '../testing';
import { type StoreMetaTables, secretKeyMatches, storeMetaMigrations } from './key-check';
import { SecretBox } from './secret-box';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('secretKeyMatches', () => {
  it('accepts the first key and the same key again, and refuses another key on the same store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-keycheck-'));
    dirs.push(dir);
    const target = await testStoreTarget(join(dir, 'ironlens.db'));
    const key = randomBytes(32);
    const a = await Store.open<StoreMetaTables>({ ...target, migrations: storeMetaMigrations });
    expect(await secretKeyMatches(a, SecretBox.fromKey(key))).toBe(true);
    await a.close();
    // A second process (a replica, or a restart) with the same key, then one with its own key.
    const b = await Store.open<StoreMetaTables>({ ...target, migrations: storeMetaMigrations });
    expect(await secretKeyMatches(b, SecretBox.fromKey(Buffer.from(key)))).toBe(true);
    expect(await secretKeyMatches(b, SecretBox.fromKey(randomBytes(32)))).toBe(false);
    await b.close();
  });
});
