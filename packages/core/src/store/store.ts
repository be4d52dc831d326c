import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type Kysely as KyselyType, Kysely, type Migration, Migrator, SqliteDialect, type SqliteDatabase, type Transaction } from 'kysely';
import { queryLogger, type StoreQuery } from './query-log';

/** A named schema change. Names are global across packages: `<package>-<NNNN>-<what>`. */
export interface NamedMigration extends Migration {
  name: string;
}

export interface StoreOptions {
  /** SQLite file path, or `:memory:`. */
  file: string;
  /** Every package's migrations; applied in name order, each once. */
  migrations: NamedMigration[];
  /** Told the duration of every query (for the store latency metric). Default: nothing. */
  onQuery?: (q: StoreQuery) => void;
}

/**
 * The one store for every subsystem. Embedded default: SQLite (better-sqlite3, WAL).
 * Queries go through Kysely so a PostgreSQL dialect can take over; SQLite-only SQL is not
 * used outside this file.
 *
 * `DB` is the table interface the caller queries (`Store<MetalDatabase>`), so the compiler
 * checks every query against it. It is a claim about the migrations passed to `open`, which
 * create those tables. Default is `any` (untyped), for callers that have no table types yet.
 */
// biome-ignore lint/suspicious/noExplicitAny: the default keeps untyped callers compiling.
export class Store<DB = any> {
  readonly db: KyselyType<DB>;

  private constructor(sqlite: Database.Database, onQuery?: (q: StoreQuery) => void) {
    this.db = new Kysely<DB>({ dialect: new SqliteDialect({ database: reusingStatements(sqlite) }), log: onQuery && queryLogger(onQuery) });
  }

  // biome-ignore lint/suspicious/noExplicitAny: see the class comment.
  static async open<DB = any>(opts: StoreOptions): Promise<Store<DB>> {
    if (opts.file !== ':memory:') mkdirSync(dirname(opts.file), { recursive: true });
    const sqlite = new Database(opts.file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    const store = new Store<DB>(sqlite, opts.onQuery);
    await store.migrate(opts.migrations);
    return store;
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

  async close(): Promise<void> {
    await this.db.destroy();
  }
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
      return stmt as unknown as ReturnType<SqliteDatabase['prepare']>;
    },
  };
}

/** True when `err` is a unique-constraint violation from the driver. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}
