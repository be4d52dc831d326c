/**
 * The SQLite store's files are the operator's secrets' neighbours (sealed kubeconfigs, redacted
 * log tails): its directory is created 0700 and the database, -wal and -shm files are 0600
 * (issue 18, finding 6). SQLite alone: PostgreSQL keeps no files of ours.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { Store } from './store';

const root = mkdtempSync(join(tmpdir(), 'ironlens-store-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const mode = (f: string) => (statSync(f).mode & 0o777).toString(8);

describe('the SQLite store files', () => {
  it('creates the directory 0700 and the database, -wal and -shm 0600, whatever the umask', async () => {
    const old = process.umask(0o022);
    try {
      const file = join(root, 'fresh', 'data', 'ironlens.db');
      const store = await Store.open({ file, migrations: [] });
      await sql`CREATE TABLE t (x TEXT)`.execute(store.db);
      await sql`INSERT INTO t VALUES ('tail of a log')`.execute(store.db);
      expect(mode(join(root, 'fresh', 'data'))).toBe('700');
      expect(mode(join(root, 'fresh'))).toBe('700');
      for (const f of [file, `${file}-wal`, `${file}-shm`]) expect(mode(f), f).toBe('600');
      await store.close();
    } finally {
      process.umask(old);
    }
  });

  it('tightens database files an older version left 0644', async () => {
    const dir = join(root, 'old');
    mkdirSync(dir, { mode: 0o755 });
    const file = join(dir, 'ironlens.db');
    const first = await Store.open({ file, migrations: [] });
    await sql`CREATE TABLE t (x TEXT)`.execute(first.db);
    await first.close();
    chmodSync(file, 0o644);
    writeFileSync(`${file}-wal`, '');
    chmodSync(`${file}-wal`, 0o644);
    const store = await Store.open({ file, migrations: [] });
    await sql`INSERT INTO t VALUES ('x')`.execute(store.db);
    for (const f of [file, `${file}-wal`, `${file}-shm`]) expect(mode(f), f).toBe('600');
    // A directory that was there keeps its mode: it may be shared.
    expect(mode(dir)).toBe('755');
    await store.close();
  });
});

describe('displayTargetOf (GET /api/v1/system/database)', () => {
  it('shows host, port and database of a PostgreSQL URL, never its user, password or options', async () => {
    const { displayTargetOf } = await import('./store');
    expect(displayTargetOf('postgres://ironlens:s3cret@db.lab.example:6543/ironlens?sslmode=require')).toBe('db.lab.example:6543/ironlens');
    expect(displayTargetOf('postgresql://u@10.0.0.5/lab')).toBe('10.0.0.5:5432/lab');
    expect(displayTargetOf('not a url')).toBeNull();
  });
});
