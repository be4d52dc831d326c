import { type Generated, type Kysely, sql, type Transaction } from 'kysely';
import { currentActor } from '../actor';
import { autoIncrementId, lockInTransaction, type NamedMigration, partOf, type Store } from '../store';
import { redact } from './redact';

/**
 * The operations log (seed 004 §12): one append-only table used by every subsystem.
 * An entry is `{id, ts, op, status, ...fields}`; `mac` and `worker_id` are columns so
 * they can be filtered, everything else is kept as JSON. Secrets are redacted on write.
 */
export interface OperationEntry {
  id: number;
  ts: string;
  op: string;
  status: string;
  [field: string]: unknown;
}

export interface OperationInput {
  op: string;
  status?: string;
  mac?: string | null;
  worker_id?: string | null;
  client?: string | null;
  [field: string]: unknown;
}

export const operationsMigrations: NamedMigration[] = [
  {
    name: 'core-0001-operations',
    async up(db) {
      await db.schema
        .createTable('operations')
        .addColumn('id', 'integer', autoIncrementId(db))
        .addColumn('ts', 'text', (c) => c.notNull())
        .addColumn('op', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('mac', 'text')
        .addColumn('worker_id', 'text')
        .addColumn('data', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('operations_mac').on('operations').column('mac').execute();
    },
  },
  {
    // issue 20: who did it (the token's name; `ironlens` for entries written by ironlens itself).
    // The jobs' column is `core-0011-actor-jobs` (jobsMigrations), for stores without this table.
    name: 'core-0011-actor',
    async up(db) {
      await db.schema.alterTable('operations').addColumn('actor', 'text').execute();
    },
  },
];

/** A timestamp in the seed's shape: `2026-07-27T14:20:00+00:00`. */
export function isoSeconds(d = new Date()): string {
  return d.toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** The operations table as stored: a package's table interface adds it to its own. */
export interface OperationsTable {
  id: Generated<number>;
  ts: string;
  op: string;
  status: string;
  mac: string | null;
  worker_id: string | null;
  actor: string | null;
  data: string;
}
export interface OperationsTables {
  operations: OperationsTable;
}

/**
 * Readers page the log by id (`since`). On PostgreSQL ids come from a sequence when a row is
 * inserted, and concurrent transactions may commit out of that order: a reader could see id 8,
 * move its cursor past it, and never see id 7 committed a moment later. Appends therefore take
 * this transaction-level lock (held until their transaction commits), so ids become visible in
 * order. Metal transactions take the ledger lock before it, never after. SQLite: one writer anyway.
 */
const OPERATIONS_LOCK = 'ironlens.operations';

export class OperationsLog {
  private readonly db: Kysely<OperationsTables>;

  constructor(private readonly store: Store<OperationsTables>) {
    this.db = store.db;
  }

  /** Appends entries; pass a transaction (of any package's tables that include `operations`) to make them part of it. */
  async append<DB extends OperationsTables>(entries: OperationInput | OperationInput[], trx?: Kysely<DB> | Transaction<DB>): Promise<void> {
    const list = Array.isArray(entries) ? entries : [entries];
    if (list.length === 0) return;
    const ts = isoSeconds();
    const actorNow = currentActor();
    const rows = list.map((e) => {
      const { op, status = 'ok', mac = null, worker_id = null, actor = actorNow, ...rest } = redact(e);
      for (const k of Object.keys(rest)) if (rest[k] === undefined) delete rest[k];
      return { ts, op, status, mac, worker_id, actor: typeof actor === 'string' ? actor : actorNow, data: JSON.stringify(rest) };
    });
    const insert = async (db: Kysely<OperationsTables>) => {
      await lockInTransaction(db, OPERATIONS_LOCK);
      await db.insertInto('operations').values(rows).execute();
    };
    if (trx) await insert(partOf(trx));
    else if (this.store.dialect === 'postgres') await this.db.transaction().execute(insert);
    else await this.db.insertInto('operations').values(rows).execute();
  }

  async list(q: { since?: number; limit?: number; mac?: string }): Promise<{ next_cursor: number; entries: OperationEntry[] }> {
    const since = q.since ?? 0;
    let query = this.db
      .selectFrom('operations')
      .selectAll()
      .where('id', '>', since)
      .orderBy('id')
      .limit(q.limit ?? 1000);
    if (q.mac) query = query.where('mac', '=', q.mac);
    const rows = await query.execute();
    const entries = rows.map((r) => {
      const e: OperationEntry = { id: r.id, ts: r.ts, op: r.op, status: r.status };
      if (r.worker_id != null) e.worker_id = r.worker_id;
      if (r.mac != null) e.mac = r.mac;
      Object.assign(e, JSON.parse(r.data));
      if (r.actor != null) e.actor = r.actor;
      return e;
    });
    const next = entries.length ? entries[entries.length - 1].id : since;
    return { next_cursor: next, entries };
  }

  /** Imports entries with their original id and ts (used by `ironlens import`). */
  async importRaw<DB extends OperationsTables>(entries: OperationEntry[], trx?: Kysely<DB> | Transaction<DB>): Promise<void> {
    const db: Kysely<OperationsTables> = trx ? partOf(trx) : this.db;
    for (const e of entries) {
      const { id, ts, op, status, mac = null, worker_id = null, actor = null, ...rest } = redact(e);
      await db
        .insertInto('operations')
        .values({ id, ts, op, status: status ?? 'ok', mac: (mac as string) ?? null, worker_id: (worker_id as string) ?? null, actor: typeof actor === 'string' ? actor : null, data: JSON.stringify(rest) })
        .execute();
    }
    // PostgreSQL numbers ids with a sequence, which explicit ids do not move.
    if (entries.length) await this.store.advanceSequence('operations', 'id', db);
  }

  /** Removes every entry (`ironlens import --replace`); pass a transaction to make it part of it. */
  async deleteAll<DB extends OperationsTables>(trx?: Kysely<DB> | Transaction<DB>): Promise<void> {
    await (trx ? partOf<DB, OperationsTables>(trx) : this.db).deleteFrom('operations').execute();
  }

  async count(): Promise<number> {
    const r = await this.db.selectFrom('operations').select(sql<number>`count(*)`.as('n')).executeTakeFirst();
    return Number(r?.n ?? 0);
  }
}
