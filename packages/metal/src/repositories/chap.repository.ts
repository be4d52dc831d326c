import { type ChapCredential, newChapSecret, type SecretBox } from '@ironlens/core';
import type { MetalDb } from './tables';

const purposeOf = (workerId: string) => `worker:${workerId}:chap`;

/** The CHAP user of a worker: `il-<worker id>` (worker ids are lower-case letters, digits, `.`, `_`, `-`). */
export function chapUserOf(workerId: string): string {
  return `il-${workerId}`;
}

/**
 * The per-worker iSCSI CHAP accounts (issue 13): the only SQL of `worker_chap`. The secret is
 * generated here (`newChapSecret`), sealed with the store's `SecretBox` bound to the worker
 * id on write and opened on read (a row that does not open throws). What it opens is checked
 * where it is used: the agent's and the adapters' grammars, and the boot-vars renderer's.
 */
export class ChapRepository {
  constructor(private readonly secrets: SecretBox) {}

  async get(db: MetalDb, workerId: string): Promise<ChapCredential | null> {
    const r = await db.selectFrom('worker_chap').selectAll().where('worker_id', '=', workerId).executeTakeFirst();
    if (!r) return null;
    return { user: r.chap_user, password: this.secrets.openText(r.secret_sealed, purposeOf(workerId)) };
  }

  /** The worker's account; made (a new random secret) when it has none. Two racing callers get the same one. */
  async ensure(db: MetalDb, workerId: string): Promise<ChapCredential> {
    const have = await this.get(db, workerId);
    if (have) return have;
    const cred = { user: chapUserOf(workerId), password: newChapSecret() };
    // ON CONFLICT DO NOTHING (SQLite and PostgreSQL alike): the first writer's secret stays.
    await db
      .insertInto('worker_chap')
      .values({ worker_id: workerId, chap_user: cred.user, secret_sealed: this.secrets.seal(cred.password, purposeOf(workerId)), created_at: new Date().toISOString() })
      .onConflict((oc) => oc.column('worker_id').doNothing())
      .execute();
    const stored = await this.get(db, workerId);
    if (!stored) throw new Error(`worker ${workerId}: the CHAP account was not stored`);
    return stored;
  }

  /** The accounts of these workers (those that have one). */
  async many(db: MetalDb, workerIds: string[]): Promise<Map<string, ChapCredential>> {
    const out = new Map<string, ChapCredential>();
    for (const id of new Set(workerIds)) {
      const c = await this.get(db, id);
      if (c) out.set(id, c);
    }
    return out;
  }

  async remove(db: MetalDb, workerId: string): Promise<void> {
    await db.deleteFrom('worker_chap').where('worker_id', '=', workerId).execute();
  }
}
