import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../store';
import { sleep, testStoreTarget } from '../testing';
import { OperationsLog, type OperationsTables, operationsMigrations } from './operations';

const opened: Array<{ store: Store<OperationsTables>; dir: string }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) {
    await o.store.close();
    rmSync(o.dir, { recursive: true, force: true });
  }
});

async function open() {
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-ops-'));
  const store = await Store.open<OperationsTables>({ ...(await testStoreTarget(join(dir, 'ironlens.db'))), migrations: operationsMigrations });
  opened.push({ store, dir });
  return { store, log: new OperationsLog(store) };
}

describe('OperationsLog', () => {
  it('never shows a later id before an earlier one commits, so a reader paging by cursor misses nothing', async () => {
    const { store, log } = await open();
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let firstIn!: () => void;
    const inserted = new Promise<void>((r) => {
      firstIn = r;
    });
    // A slow transaction takes id 1 and stays open; an append outside it comes next.
    const slow = store.transaction(async (trx) => {
      await log.append({ op: 'slow', status: 'ok' }, trx);
      firstIn();
      await held;
    });
    await inserted;
    const quick = log.append({ op: 'quick', status: 'ok' });
    await sleep(300);
    // A reader tailing the log now must not be handed the quick entry (id 2) and a cursor past
    // id 1. (PostgreSQL answers at once, without either; SQLite's one connection answers once
    // the transaction ended, with both.)
    const reading = log.list({ since: 0 });
    await Promise.race([reading, sleep(300)]);
    release();
    const [seen] = await Promise.all([reading, slow, quick]);
    expect([[], ['slow', 'quick']]).toContainEqual(seen.entries.map((e) => e.op));
    // The reader's next page, after its cursor: between the two pages, nothing was skipped.
    const after = await log.list({ since: seen.next_cursor });
    expect([...seen.entries, ...after.entries].map((e) => [e.id, e.op])).toEqual([
      [1, 'slow'],
      [2, 'quick'],
    ]);
  });

  it('continues numbering after imported ids', async () => {
    const { log } = await open();
    await log.importRaw([
      { id: 3, ts: '2026-01-01T00:00:00+00:00', op: 'imported', status: 'ok' },
      { id: 9, ts: '2026-01-01T00:00:01+00:00', op: 'imported', status: 'ok' },
    ]);
    await log.append({ op: 'next' });
    expect((await log.list({ since: 9 })).entries.map((e) => [e.id, e.op])).toEqual([[10, 'next']]);
  });
});
