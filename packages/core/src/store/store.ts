import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import {
  type ColumnDefinitionBuilder,
  type Kysely as KyselyType,
  Kysely,
  type Migration,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  type QueryExecutorProvider,
  SqliteDialect,
  type SqliteDatabase,
  sql,
  type Transaction,
} from 'kysely';
import type pg from 'pg';
import { pgDriver } from './pg-module';
import { queryLogger, type StoreQuery } from './query-log';

/** A named schema change. Names are global across packages: `<package>-<NNNN>-<what>`. */
export interface NamedMigration extends Migration {
  name: string;
}

/** Which engine a store runs on. */
export type Dialect = 'sqlite' | 'postgres';

export interface StoreOptions {
  /** SQLite file path, or `:memory:`. Used when `url` is not given. */
  file?: string;
  /** `postgres://user:pass@host:port/db`: the store runs on PostgreSQL instead of SQLite. */
  url?: string;
  /** Every package's migrations; applied in name order, each once. */
  migrations: NamedMigration[];
  /** Apply the pending migrations at open. Default is `true`; `false` for {@link Store.migrationStatus}. */
  migrate?: boolean;
  /** PostgreSQL: connections in the pool (default 10). */
  poolSize?: number;
  /** Told the duration of every query, on either engine (the store latency metric). Default: nothing. */
  onQuery?: (q: StoreQuery) => void;
}

/**
 * The one store for every subsystem. Embedded default: SQLite (better-sqlite3, WAL); with a
 * `postgres://` URL, PostgreSQL (node-postgres pool), so that several replicas share one
 * database. Queries go through Kysely; engine-specific SQL lives only in this file
 * ({@link autoIncrementId}, {@link Store.advanceSequence}, {@link isUniqueViolation},
 * {@link lockInTransaction}).
 *
 * `DB` is the table interface the caller queries (`Store<MetalDatabase>`), so the compiler
 * checks every query against it: a wrong table or column name fails `tsc`. It is a claim about
 * the migrations passed to `open`, which create those tables. There is no default: every caller
 * names its tables, and a subsystem that queries only some of a shared store's tables gets the
 * store typed by those ({@link partOf}).
 */
export class Store<DB> {
  readonly db: KyselyType<DB>;

  /** PostgreSQL: the server as `host:port/database` (never the user or password); SQLite: null. */
  displayTarget: string | null = null;

  private constructor(
    db: KyselyType<DB>,
    readonly dialect: Dialect,
    /** PostgreSQL: the pool, for LISTEN/NOTIFY and advisory locks on a dedicated client. */
    readonly pool: pg.Pool | null,
  ) {
    this.db = db;
  }

  static async open<DB>(opts: StoreOptions): Promise<Store<DB>> {
    const log = opts.onQuery && queryLogger(opts.onQuery);
    let store: Store<DB>;
    if (opts.url) {
      const pool = new (pgDriver().Pool)({ connectionString: opts.url, max: opts.poolSize ?? 10, types: { getTypeParser: typeParser } });
      // An idle client that loses its server (a restart) must not crash the process; the pool
      // drops it and the next query opens a new connection.
      pool.on('error', () => {});
      store = new Store<DB>(new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log }), 'postgres', pool);
      store.displayTarget = displayTargetOf(opts.url);
    } else {
      const file = opts.file ?? ':memory:';
      if (file !== ':memory:') prepareSqliteFiles(file);
      const sqlite = new Database(file);
      sqlite.pragma('journal_mode = WAL');
      // SQLite gives the -wal and -shm files the database file's mode; these are older ones.
      if (file !== ':memory:') tightenSqliteFiles(file);
      sqlite.pragma('synchronous = NORMAL');
      sqlite.pragma('foreign_keys = ON');
      sqlite.pragma('busy_timeout = 5000');
      store = new Store<DB>(new Kysely<DB>({ dialect: new SqliteDialect({ database: reusingStatements(sqlite) }), log }), 'sqlite', null);
    }
    try {
      if (opts.migrate !== false) await store.migrate(opts.migrations);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /**
   * Which of `migrations` this store has applied (with when) and which a start would apply,
   * in the order they would run; nothing is applied (open the store with `migrate: false`).
   */
  async migrationStatus(migrations: NamedMigration[]): Promise<Array<{ name: string; applied_at: Date | null }>> {
    const migrator = new Migrator({
      db: this.db as KyselyType<unknown>,
      allowUnorderedMigrations: true,
      provider: { getMigrations: async () => Object.fromEntries(migrations.map((m) => [m.name, m])) },
    });
    return (await migrator.getMigrations()).map((m) => ({ name: m.name, applied_at: m.executedAt ?? null }));
  }

  private async migrate(migrations: NamedMigration[]): Promise<void> {
    const seen = new Set<string>();
    for (const m of migrations) {
      if (seen.has(m.name)) throw new Error(`duplicate migration name ${m.name}`);
      seen.add(m.name);
    }
    const migrator = new Migrator({
      // Migrations run before the tables exist: they see the store untyped.
      db: this.db as KyselyType<unknown>,
      allowUnorderedMigrations: true,
      provider: {
        getMigrations: async () => Object.fromEntries(migrations.map((m) => [m.name, m])),
      },
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
      const failed = results?.find((r) => r.status === 'Error');
      throw new Error(`migration ${failed?.migrationName ?? '?'} failed: ${(error as Error).message ?? error}`);
    }
  }

  /** Runs `fn` in one transaction: all of its writes land, or none do. */
  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }

  /**
   * After rows were inserted with explicit values in an {@link autoIncrementId} column (an
   * import), moves PostgreSQL's sequence past the largest one so the next generated id does not
   * collide. SQLite's AUTOINCREMENT follows by itself.
   */
  async advanceSequence(table: string, column: string, trx?: QueryExecutorProvider): Promise<void> {
    if (this.dialect !== 'postgres') return;
    const db = trx ?? this.db;
    await sql`select setval(pg_get_serial_sequence(${table}, ${column}), coalesce((select max(${sql.ref(column)}) from ${sql.table(table)}), 0) + 1, false)`.execute(db);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

/**
 * `store` (or a handle on it: its `db`, an open transaction) typed by a part of its tables, for a
 * subsystem that queries only those: `new JobsRepository(partOf(store))` with `store` a
 * `Store<IronlensDatabase>`. `Part` is inferred from where the result goes, and the compiler
 * checks that `DB` includes it (every table, every column with its type); a store that lacks a
 * table the callee needs does not compile.
 *
 * Kysely's handles are invariant in their table type (a `Kysely<A & B>` is no `Kysely<A>` to the
 * compiler, through its transaction callbacks), although a query written against `A` runs the same
 * on a database that has more tables: this is the one place that says so to the compiler.
 */
export function partOf<DB extends Part, Part>(store: Store<DB>): Store<Part>;
export function partOf<DB extends Part, Part>(db: KyselyType<DB>): KyselyType<Part>;
export function partOf<DB extends Part, Part>(x: Store<DB> | KyselyType<DB>): Store<Part> | KyselyType<Part> {
  return x as unknown as Store<Part> | KyselyType<Part>;
}

/**
 * PostgreSQL answers `bigint` (what `count(*)` and `sum` give) as a string; the store's callers
 * expect numbers, as SQLite gives them. Counts here stay far below 2^53.
 */
const typeParser = ((oid: number, format?: 'text' | 'binary') =>
  oid === pgDriver().types.builtins.INT8 ? (v: string) => Number(v) : pgDriver().types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser;

/**
 * An integer primary key the engine numbers: SQLite `INTEGER PRIMARY KEY AUTOINCREMENT`,
 * PostgreSQL `integer GENERATED BY DEFAULT AS IDENTITY` (explicit values still allowed, for
 * imports; see {@link Store.advanceSequence}). For use in migrations.
 */
export function autoIncrementId(db: KyselyType<unknown>): (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  return (c) => (postgres ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement());
}

/**
 * Kysely's SQLite driver prepares every statement anew; preparing is most of the cost of a
 * small write. This keeps the prepared statements by SQL text (the last `max` used), which
 * is safe on the one connection Kysely serializes, and which SQLite re-prepares by itself
 * after a schema change.
 */
function reusingStatements(db: Database.Database, max = 1000): SqliteDatabase {
  const cache = new Map<string, Database.Statement>();
  return {
    close: () => db.close(),
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (stmt) {
        cache.delete(sql);
      } else {
        stmt = db.prepare(sql);
        if (cache.size >= max) cache.delete(cache.keys().next().value as string);
      }
      cache.set(sql, stmt);
      return stmt;
    },
  };
}

/**
 * Inside a transaction: waits until no other transaction holds the lock `name`, then holds it
 * until this one commits or rolls back, in every process on the database. PostgreSQL:
 * `pg_advisory_xact_lock`. SQLite runs one write transaction at a time anyway: nothing to do.
 * For read-decide-write transactions whose rule spans rows they cannot all lock up front (the
 * one-to-one device binding): without it, PostgreSQL's concurrent transactions would decide on
 * a stale read or deadlock on rows taken in different orders. While it holds the lock, the
 * transaction must query through `trx` only: a query on the pool could wait for a connection
 * that a transaction waiting for the same lock holds.
 */
export async function lockInTransaction(trx: QueryExecutorProvider & { readonly isTransaction: boolean }, name: string): Promise<void> {
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) return;
  if (!trx.isTransaction) throw new Error(`lockInTransaction(${name}) outside a transaction would release the lock at once`);
  await sql`select pg_advisory_xact_lock(hashtext(${name}))`.execute(trx);
}

/** True when `err` is a unique-constraint violation from either engine. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/**
 * The SQLite file's directory is created 0700 and the file itself 0600 before SQLite opens it
 * (issue 18, finding 6: the jobs table holds log tails, the WAL file was 0644), so its -wal and
 * -shm files, which SQLite creates with the database file's mode, are 0600 too. A directory that
 * already exists keeps its mode (it may be shared); the database's own files are tightened.
 */
function prepareSqliteFiles(file: string): void {
  const dir = dirname(file);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  closeSync(openSync(file, 'a', 0o600));
  tightenSqliteFiles(file);
}

function tightenSqliteFiles(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      chmodSync(f, 0o600);
    } catch {
      // not there
    }
  }
}

/** `host:port/database` of a PostgreSQL URL: what may be shown of it (no user, no password, no options). */
export function displayTargetOf(url: string): string | null {
  try {
    const u = new URL(url);
    const db = decodeURIComponent(u.pathname.replace(/^\//, ''));
    return `${u.hostname}:${u.port || '5432'}/${db}`;
  } catch {
    return null;
  }
}
