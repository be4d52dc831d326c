import type { NamedMigration, Store } from '../store';
import type { SecretBox } from './secret-box';

/** `store_meta`: facts about the store itself (one row per key). */
export const storeMetaMigrations: NamedMigration[] = [
  {
    name: 'core-0003-store-meta',
    async up(db) {
      await db.schema
        .createTable('store_meta')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
];

/** The tables {@link secretKeyMatches} queries (`storeMetaMigrations`). */
export interface StoreMetaTables {
  store_meta: { key: string; value: string };
}

const CHECK_KEY = 'secret_key_check';
const CHECK_PURPOSE = 'store:secret-key-check';
const CHECK_TEXT = 'ironlens';

/**
 * Every process that shares a store must seal and open secrets with the same key (replicas on
 * one PostgreSQL each have their own data dir, so each would create its own `secret.key`).
 * The first process to start seals a known text into `store_meta`; every later one must open
 * it. Answers `true` when this key matches (or was the first), `false` when the store's secrets
 * were sealed with another key.
 */
export async function secretKeyMatches(store: Store<StoreMetaTables>, box: SecretBox): Promise<boolean> {
  const db = store.db;
  await db
    .insertInto('store_meta')
    .values({ key: CHECK_KEY, value: box.seal(CHECK_TEXT, CHECK_PURPOSE) })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const row = await db.selectFrom('store_meta').select('value').where('key', '=', CHECK_KEY).executeTakeFirstOrThrow();
  try {
    return box.openText(row.value, CHECK_PURPOSE) === CHECK_TEXT;
  } catch {
    return false;
  }
}
