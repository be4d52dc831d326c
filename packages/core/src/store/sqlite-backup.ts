import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { type NamedMigration, Store } from './store';

/**
 * A consistent copy of a live SQLite store through SQLite's online backup API (never a file
 * copy, which could catch the database file and its WAL at different moments). It reads through
 * a connection of its own, so the store's writers go on meanwhile: the copy is the database as
 * one committed state, from a moment during the call. The destination must not exist, in a
 * directory only this user can enter (SQLite creates it with the process' umask).
 */
export async function backupSqlite(source: string, destination: string): Promise<{ pages: number }> {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // After the first step, the rest in one step: a write by another connection between two
    // steps restarts the copy, so one step under one read lock always completes.
    const r = await db.backup(destination, { progress: () => 1 << 30 });
    return { pages: r.totalPages };
  } finally {
    db.close();
  }
}

/** One row of `sqlite_master`: a table, index, trigger or view, with the SQL that created it. */
export interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

const SCHEMA_QUERY = 'SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name';

/** The schema objects of the SQLite file `file` (which must exist), read without running anything of it. */
export function sqliteSchema(file: string): SchemaObject[] {
  const db = new Database(file, { fileMustExist: true });
  try {
    return db.prepare(SCHEMA_QUERY).all() as SchemaObject[];
  } finally {
    db.close();
  }
}

/**
 * The names of the migrations the SQLite file `file` records as applied (Kysely's
 * `kysely_migration` table), read without running anything of it: nothing when it has no such
 * table. What the store says of itself: compare its schema with what those migrations create.
 */
export function sqliteAppliedMigrations(file: string): string[] {
  const db = new Database(file, { fileMustExist: true });
  try {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'").get();
    if (!table) return [];
    return (db.prepare('SELECT name FROM kysely_migration ORDER BY name').all() as Array<{ name: unknown }>).map((r) => String(r.name));
  } finally {
    db.close();
  }
}

/** The schema objects `migrations` create in an empty SQLite store: what a store of this version holds. */
export async function migratedSqliteSchema(migrations: NamedMigration[]): Promise<SchemaObject[]> {
  const store = await Store.open<Record<string, never>>({ file: ':memory:', migrations });
  try {
    return (await sql.raw<SchemaObject>(SCHEMA_QUERY).execute(store.db)).rows;
  } finally {
    await store.close();
  }
}

/** Tables SQLite itself keeps (`AUTOINCREMENT`'s counters, `ANALYZE`'s statistics): no code of anyone's. */
const SQLITE_OWN = /^sqlite_(sequence|stat[1-4])$/;

/**
 * How the schema of a store differs from what `expected` (the migrations' own) holds, one line
 * per object: each trigger, view, table or index the migrations did not create, or created
 * otherwise, and each they create that is missing. Empty when it matches. (A store of an older
 * version is compared with what the migrations it records as applied create:
 * {@link sqliteAppliedMigrations}.)
 */
export function schemaDifferences(actual: SchemaObject[], expected: SchemaObject[]): string[] {
  const norm = (s: string | null) => (s === null ? null : s.replace(/\s+/g, ' ').trim());
  const key = (o: SchemaObject) => `${o.type} ${o.name}`;
  const want = new Map(expected.map((o) => [key(o), o]));
  const out: string[] = [];
  for (const o of actual) {
    if (o.type === 'table' && SQLITE_OWN.test(o.name)) continue;
    const w = want.get(key(o));
    if (!w) out.push(`${key(o)} (on ${o.tbl_name}): not created by any migration`);
    else if (w.tbl_name !== o.tbl_name || norm(w.sql) !== norm(o.sql)) out.push(`${key(o)}: not as the migrations create it`);
  }
  const have = new Set(actual.map(key));
  for (const o of expected) if (!have.has(key(o)) && !(o.type === 'table' && SQLITE_OWN.test(o.name))) out.push(`${key(o)}: missing`);
  return out;
}
