/**
 * `ironlens backup` / `restore` (issue 23): a consistent copy of a live SQLite store under a bind
 * storm, with its secret key sealed under a passphrase; restore refuses a store in use, a wrong
 * passphrase and an existing store without --replace.
 */
import { createHash } from 'node:crypto';
import { existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackupError, backupStore, encodeBackup, KDF_BOUNDS, readBackup, restoreStore } from './backup';
import { main } from './main';
import { ALL_MIGRATIONS, serve } from './serve';
import { Store } from '@ironlens/core';
import { sleep } from '@ironlens/core/testing';

let dir: string;
const PASS = 'correct horse battery staple';
const env = (sub: string) => ({
  IRONLENS_DATA_DIR: join(dir, sub),
  IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
  IRONLENS_CONSOLE_LISTEN: 'off',
  IPXE_CP_DNSMASQ_RELOAD: 'false',
  // 300 machines report from one address: no registration limit.
  IRONLENS_REPORT_REGISTER_PER_MINUTE: '0',
  IRONLENS_REPORT_MAX_POOLED: '0',
});
const mac = (i: number) => `02:00:00:00:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-backup-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('backup and restore of the SQLite store', () => {
  it('a backup taken during a 300-bind storm restores every bind acknowledged before it began, one-to-one', { timeout: 240_000 }, async () => {
    const live = await serve(env('live'), () => {});
    const url = live.urls.boot;
    const N = 300;
    const acked: Array<{ i: number; at: number }> = [];
    let backupStartedAt = 0;
    try {
      for (let i = 0; i < N; i++) expect((await fetch(`${url}/devices/report?mac=${mac(i)}`)).status).toBe(200);
      const bind = async (i: number) => {
        const r = await fetch(`${url}/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ worker_id: `w${i}`, mac: mac(i) }) });
        expect(r.status).toBe(200);
        acked.push({ i, at: performance.now() });
      };
      // 300 binds, 8 at a time; the backup starts once a third of them are acknowledged.
      let next = 0;
      let failed: unknown;
      const storm = Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < N) await bind(next++);
        }),
      ).catch((err) => {
        failed = err;
      });
      while (acked.length < N / 3 && failed === undefined) await sleep(5);
      if (failed) throw failed;
      backupStartedAt = performance.now();
      const out = await backupStore(env('live'), join(dir, 'backup.ironlens'), PASS);
      await storm;
      if (failed) throw failed;
      expect(out.bytes).toBeGreaterThan(0);
      expect(statSync(out.file).mode & 0o777).toBe(0o600);
    } finally {
      await live.close();
    }
    const before = acked.filter((a) => a.at < backupStartedAt).map((a) => a.i);
    expect(before.length).toBeGreaterThanOrEqual(N / 3);
    expect(before.length).toBeLessThan(N); // the storm went on during the backup

    await restoreStore(env('restored'), join(dir, 'backup.ironlens'), PASS);
    const restored = await serve(env('restored'), () => {});
    try {
      const devices = (await (await fetch(`${restored.urls.boot}/devices`)).json()) as Array<{ mac: string; state: string; bound_worker_id: string | null }>;
      const workers = (await (await fetch(`${restored.urls.boot}/workers`)).json()) as Array<{ worker_id: string; mac: string | null }>;
      const byMac = new Map(devices.map((d) => [d.mac, d]));
      for (const i of before) expect(byMac.get(mac(i))).toMatchObject({ state: 'bound', bound_worker_id: `w${i}` });
      // One-to-one: every bound device's worker names that device, and no worker holds two.
      const bound = devices.filter((d) => d.state === 'bound');
      const workerMac = new Map(workers.map((w) => [w.worker_id, w.mac]));
      for (const d of bound) expect(workerMac.get(d.bound_worker_id as string)).toBe(d.mac);
      expect(new Set(bound.map((d) => d.bound_worker_id)).size).toBe(bound.length);
      expect(workers.filter((w) => w.mac !== null)).toHaveLength(bound.length);
    } finally {
      await restored.close();
    }
  });

  it('the backup file holds no secret key in plain text; a wrong passphrase is refused', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    const keyHex = readFileSync(join(dir, 'live', 'secret.key'), 'utf8').trim();
    await backupStore(env('live'), join(dir, 'b'), PASS);
    const raw = readFileSync(join(dir, 'b'));
    expect(raw.includes(Buffer.from(keyHex))).toBe(false);
    expect(raw.includes(Buffer.from(keyHex, 'hex'))).toBe(false);
    expect(readBackup(join(dir, 'b'), PASS).key.toString('hex')).toBe(keyHex);
    expect(() => readBackup(join(dir, 'b'), 'not the passphrase')).toThrow('wrong passphrase');
    await expect(restoreStore(env('other'), join(dir, 'b'), 'not the passphrase')).rejects.toThrow(BackupError);
    expect(existsSync(join(dir, 'other', 'ironlens.db'))).toBe(false);
  });

  it('restore refuses a data dir a serve is using, and an existing store without --replace', async () => {
    const live = await serve(env('live'), () => {});
    await backupStore(env('live'), join(dir, 'b'), PASS);
    try {
      await expect(restoreStore(env('live'), join(dir, 'b'), PASS, { replace: true })).rejects.toThrow(`refusing to restore into a store in use: another ironlens serve (pid ${process.pid})`);
    } finally {
      await live.close();
    }
    await expect(restoreStore(env('live'), join(dir, 'b'), PASS)).rejects.toThrow('already holds a store (ironlens.db): give --replace');
    await restoreStore(env('live'), join(dir, 'b'), PASS, { replace: true });
  });

  it('the command: passphrase from --key-file, exit codes, and the PostgreSQL reminder', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    const keyFile = join(dir, 'pass');
    writeFileSync(keyFile, `${PASS}\n`, { mode: 0o600 });
    const saved = { ...process.env };
    const out: string[] = [];
    const err: string[] = [];
    const [w1, w2] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
    try {
      Object.assign(process.env, env('live'));
      expect(await main(['backup', join(dir, 'c'), '--key-file', keyFile])).toBe(0);
      expect(out.join('')).toContain(`backup written to ${join(dir, 'c')}`);
      expect(await main(['backup', join(dir, 'c'), '--key-file', keyFile])).toBe(1); // exists
      expect(await main(['backup'])).toBe(2);
      Object.assign(process.env, env('fresh'));
      expect(await main(['restore', join(dir, 'c'), '--key-file', keyFile])).toBe(0);
      expect(out.join('')).toContain(`into ${join(dir, 'fresh')}`);
      process.env.IRONLENS_DATABASE_URL = 'postgres://u:p@127.0.0.1:1/db';
      expect(await main(['backup', join(dir, 'd'), '--key-file', keyFile])).toBe(1);
      expect(err.join('')).toContain('back it up with pg_dump');
      expect(err.join('')).toContain('keep the secret key with it');
    } finally {
      process.stdout.write = w1;
      process.stderr.write = w2;
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});

/** A backup file's parts: the magic line, the header (parsed and as written), the MAC line, the store's bytes. */
interface HeaderSeen {
  store: { bytes: number; sha256: string };
  kdf: { name: string; N: number; r: number; p: number; salt: string };
  [field: string]: unknown;
}

function partsOf(file: string): { magic: string; header: HeaderSeen; headerLine: string; macLine: string; db: Buffer } {
  const raw = readFileSync(file);
  const a = raw.indexOf(0x0a);
  const b = raw.indexOf(0x0a, a + 1);
  const c = raw.indexOf(0x0a, b + 1);
  const headerLine = raw.subarray(a + 1, b).toString('utf8');
  return { magic: raw.subarray(0, a + 1).toString(), header: JSON.parse(headerLine), headerLine, macLine: raw.subarray(b + 1, c + 1).toString(), db: raw.subarray(c + 1) };
}

/** The store's bytes after `change` ran on them (as SQLite writes them back, WAL checkpointed). */
function changedStore(db: Buffer, change: (d: Database.Database) => void): Buffer {
  const f = join(dir, `tamper-${Math.random().toString(36).slice(2)}.db`);
  writeFileSync(f, db);
  const d = new Database(f);
  change(d);
  d.pragma('wal_checkpoint(TRUNCATE)');
  d.close();
  return readFileSync(f);
}

const PLANTED = 'ilt_planted-admin-token-29f2';
/** What the attacker adds: an admin token of theirs, and a trigger that undoes its revocation. */
const plantBackdoor = (d: Database.Database) => {
  d.prepare('INSERT INTO auth_tokens (name, role, hash, created_at) VALUES (?, ?, ?, ?)').run('planted', 'admin', createHash('sha256').update(PLANTED).digest('hex'), new Date().toISOString());
  d.exec("CREATE TRIGGER keep_planted AFTER UPDATE OF revoked_at ON auth_tokens WHEN NEW.name = 'planted' BEGIN UPDATE auth_tokens SET revoked_at = NULL WHERE name = 'planted'; END");
};

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BackupError) return err.code;
    throw err;
  }
  return 'restored';
}

describe('a backup that was changed is not restored (issue 29, finding 2)', () => {
  it('the issue\'s tampering (an admin row and a trigger, header size and sha256 recomputed, sealed key kept) is refused: backup_tampered', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    await backupStore(env('live'), join(dir, 'b'), PASS);
    const p = partsOf(join(dir, 'b'));
    const db = changedStore(p.db, plantBackdoor);
    const header = { ...p.header, store: { ...p.header.store, bytes: db.length, sha256: createHash('sha256').update(db).digest('hex') } };
    writeFileSync(join(dir, 'tampered'), Buffer.concat([Buffer.from(`${p.magic}${JSON.stringify(header)}\n${p.macLine}`), db]));
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'tampered'), PASS))).toBe('backup_tampered');
    expect(existsSync(join(dir, 'fresh', 'ironlens.db'))).toBe(false);
    // The untouched file restores.
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'b'), PASS))).toBe('restored');
  });

  it('even sealed with the passphrase, a store with a trigger, a view, or a table or index of anyone else\'s is refused: backup_schema_foreign', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    await backupStore(env('live'), join(dir, 'b'), PASS);
    const { db } = partsOf(join(dir, 'b'));
    const key = { key: readBackup(join(dir, 'b'), PASS).key, source: 'test' };
    const variants: Array<[string, (d: Database.Database) => void]> = [
      ['the issue\'s backdoor', plantBackdoor],
      ['a trigger alone', (d) => d.exec('CREATE TRIGGER t AFTER INSERT ON operations BEGIN DELETE FROM operations; END')],
      ['a view', (d) => d.exec('CREATE VIEW v AS SELECT name, hash FROM auth_tokens')],
      ['a table', (d) => d.exec('CREATE TABLE extra (x TEXT)')],
      ['an index', (d) => d.exec('CREATE INDEX extra_idx ON auth_tokens (role)')],
      ['a table made otherwise', (d) => d.exec('DROP TABLE store_meta; CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT \'x\')')],
    ];
    for (const [what, change] of variants) {
      writeFileSync(join(dir, 'resealed'), encodeBackup(changedStore(db, change), key, PASS));
      expect(await codeOf(restoreStore(env('fresh'), join(dir, 'resealed'), PASS)), what).toBe('backup_schema_foreign');
      expect(existsSync(join(dir, 'fresh', 'ironlens.db')), what).toBe(false);
    }
    // The same store unchanged, sealed the same way, restores: the check is of the schema, not of the sealing.
    writeFileSync(join(dir, 'resealed'), encodeBackup(changedStore(db, () => {}), key, PASS));
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'resealed'), PASS))).toBe('restored');
  });

  it('format 1 files, and key-derivation costs outside the bounds, are refused before any key is derived', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    await backupStore(env('live'), join(dir, 'b'), PASS);
    const p = partsOf(join(dir, 'b'));
    // What this version writes is within what it reads (issue 32, item 1: a writer made weaker fails here).
    expect(p.header.kdf).toMatchObject({ name: 'scrypt', N: 1 << 15, r: 8, p: 1 });
    expect(p.header.kdf.N).toBeGreaterThanOrEqual(KDF_BOUNDS.N.min);
    for (const [N, r, pp] of [[16, 8, 1], [1 << 14, 8, 1], [1 << 20, 8, 1], [(1 << 15) + 1, 8, 1], [1 << 15, 1, 1], [1 << 15, 8, 64]]) {
      const header = { ...p.header, kdf: { ...p.header.kdf, N, r, p: pp } };
      writeFileSync(join(dir, 'kdf'), Buffer.concat([Buffer.from(`${p.magic}${JSON.stringify(header)}\n${p.macLine}`), p.db]));
      expect(() => readBackup(join(dir, 'kdf'), PASS), `N=${N} r=${r} p=${pp}`).toThrow(/backup_kdf_out_of_range/);
    }
    writeFileSync(join(dir, 'v1'), Buffer.concat([Buffer.from(`ironlens-backup v1\n${JSON.stringify({ format: 1 })}\n`), p.db]));
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'v1'), PASS))).toBe('backup_format_unsupported');
  });
});

/** The migrations of issue 20, which alter two tables (`operations`, `jobs`) that earlier migrations created. */
const ALTERING = new Set(['core-0011-actor', 'core-0011-actor-jobs']);

/**
 * The bytes of a store as a version before those migrations left it (the migration list without
 * them), with a row in each table they alter, after `change` ran on it.
 */
async function olderStore(change: (d: Database.Database) => void = () => {}): Promise<Buffer> {
  const f = join(dir, `older-${Math.random().toString(36).slice(2)}.db`);
  const older = ALL_MIGRATIONS.filter((m) => !ALTERING.has(m.name));
  expect(older.length).toBe(ALL_MIGRATIONS.length - 2);
  const store = await Store.open<Record<string, never>>({ file: f, migrations: older });
  await store.close();
  return changedStore(readFileSync(f), (d) => {
    d.prepare("INSERT INTO operations (ts, op, status, data) VALUES ('2026-01-01T00:00:00+00:00', 'device.register', 'ok', '{}')").run();
    expect((d.prepare('PRAGMA table_info(operations)').all() as Array<{ name: string }>).map((c) => c.name)).not.toContain('actor');
    change(d);
  });
}

describe('a backup of an older version (review 1, S3, S4)', () => {
  const key = { key: Buffer.alloc(32, 7), source: 'test' };

  it('restores a store at an older migration level, whose tables later migrations altered, and its pending migrations upgrade it', async () => {
    writeFileSync(join(dir, 'older'), encodeBackup(await olderStore(), key, PASS));
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'older'), PASS))).toBe('restored');
    const d = new Database(join(dir, 'fresh', 'ironlens.db'), { readonly: true });
    try {
      expect((d.prepare('PRAGMA table_info(operations)').all() as Array<{ name: string }>).map((c) => c.name)).toContain('actor');
      expect((d.prepare('PRAGMA table_info(jobs)').all() as Array<{ name: string }>).map((c) => c.name)).toContain('actor');
      expect(d.prepare('SELECT op, actor FROM operations').all()).toEqual([{ op: 'device.register', actor: null }]);
      const applied = (d.prepare('SELECT name FROM kysely_migration').all() as Array<{ name: string }>).map((r) => r.name);
      expect(applied.filter((n) => ALTERING.has(n)).sort()).toEqual(['core-0011-actor', 'core-0011-actor-jobs']);
    } finally {
      d.close();
    }
  });

  it('refuses a trigger that would fire during the pending migrations before they run: backup_schema_foreign, not the trigger\'s own failure', async () => {
    const trap = (d: Database.Database) => d.exec("CREATE TRIGGER trap BEFORE INSERT ON kysely_migration BEGIN SELECT RAISE(FAIL, 'trap fired'); END");
    writeFileSync(join(dir, 'trapped'), encodeBackup(await olderStore(trap), key, PASS));
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'trapped'), PASS))).toBe('backup_schema_foreign');
    expect(existsSync(join(dir, 'fresh', 'ironlens.db'))).toBe(false);
  });

  it('refuses a store that records a migration this version does not have (a newer version\'s), and one that lacks a table its migrations create', async () => {
    const newer = (d: Database.Database) => d.prepare("INSERT INTO kysely_migration (name, timestamp) VALUES ('zz-9999-from-the-future', '2030-01-01T00:00:00.000Z')").run();
    writeFileSync(join(dir, 'newer'), encodeBackup(await olderStore(newer), key, PASS));
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'newer'), PASS))).toBe('backup_schema_foreign');
    writeFileSync(join(dir, 'less'), encodeBackup(await olderStore((d) => d.exec('DROP TABLE store_meta')), key, PASS));
    expect(await codeOf(restoreStore(env('fresh'), join(dir, 'less'), PASS))).toBe('backup_schema_foreign');
    expect(existsSync(join(dir, 'fresh', 'ironlens.db'))).toBe(false);
  });
});

describe('the backup\'s temporary files (issue 29, finding 9)', () => {
  it('a file planted at the old temporary names receives nothing; the backup is written 0600 all the same', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    const out = join(dir, 'out', 'b');
    const { mkdirSync, chmodSync } = await import('node:fs');
    mkdirSync(join(dir, 'out'));
    chmodSync(join(dir, 'out'), 0o1777); // a shared directory, as /tmp is
    // Another user's files at the names the backup used, each with a second name kept elsewhere.
    for (const name of [`${out}.db.partial`, `${out}.partial`]) {
      writeFileSync(name, '', { mode: 0o666 });
      chmodSync(name, 0o666);
      linkSync(name, `${name}.kept`);
    }
    const written = await backupStore(env('live'), out, PASS);
    expect(statSync(written.file).mode & 0o777).toBe(0o600);
    for (const name of [`${out}.db.partial`, `${out}.partial`]) {
      expect(readFileSync(`${name}.kept`).length, name).toBe(0);
      expect(existsSync(name), name).toBe(true);
    }
    // Nothing else is left beside it.
    expect(readdirSync(join(dir, 'out')).sort()).toEqual(['b', 'b.db.partial', 'b.db.partial.kept', 'b.partial', 'b.partial.kept']);
    expect(await codeOf(restoreStore(env('fresh'), out, PASS))).toBe('restored');
  });
});

describe('ironlens\' SSH identity (issue 29, finding 10)', () => {
  const withConsole = (sub: string) => ({ ...env(sub), IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', KIND_K8S_SKIP_VERSION_LIST: '1' });
  const publicKey = async (running: Awaited<ReturnType<typeof serve>>) => (await (await fetch(`${running.urls.console}/api/cluster/bootstrap/ssh-public-key`)).json()).publicKey as string;

  it('a restore onto a fresh data dir keeps the public key nodes trust; the key is in the store sealed, not in plain text', async () => {
    const live = await serve(withConsole('live'), () => {});
    const before = await publicKey(live);
    await live.close();
    expect(before).toMatch(/^ssh-ed25519 /);
    const privateKey = readFileSync(join(dir, 'live', 'bootstrap', 'ssh', 'id_ed25519'), 'utf8');
    await backupStore(env('live'), join(dir, 'b'), PASS);
    const keyLines = privateKey.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'));
    expect(keyLines.length).toBeGreaterThan(0);
    const raw = readFileSync(join(dir, 'b')).toString('latin1');
    expect(keyLines.filter((l) => raw.includes(l))).toEqual([]);
    await restoreStore(withConsole('fresh'), join(dir, 'b'), PASS);
    expect(existsSync(join(dir, 'fresh', 'bootstrap'))).toBe(false);
    const restored = await serve(withConsole('fresh'), () => {});
    try {
      expect(await publicKey(restored)).toBe(before);
      expect(readFileSync(join(dir, 'fresh', 'bootstrap', 'ssh', 'id_ed25519'), 'utf8')).toBe(privateKey);
      expect(statSync(join(dir, 'fresh', 'bootstrap', 'ssh', 'id_ed25519')).mode & 0o777).toBe(0o600);
    } finally {
      await restored.close();
    }
  });
});
