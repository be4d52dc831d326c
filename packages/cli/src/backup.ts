/**
 * `ironlens backup FILE` / `ironlens restore FILE` for the embedded SQLite store (issue 23).
 *
 * A backup file holds a consistent copy of the live store (SQLite's online backup API) and the
 * secret key that opens the secrets sealed in it, itself sealed under a passphrase (scrypt,
 * then AES-256-GCM): without the key a restored store's kubeconfigs, agent tokens and CHAP
 * secrets could not be opened, and with the key in plain text the backup would hand them out.
 *
 * Layout: the line `ironlens-backup v1`, one line of JSON (the header: when, the store's size
 * and sha256, the sealed key and its KDF parameters), then the SQLite database's bytes.
 * Written 0600, to a temporary name renamed at the end: a failed backup leaves no file.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { backupSqlite, type Env, envOptional, partOf, readSecretKey, SecretBox, Store, secretKeyMatches } from '@ironlens/core';
import { dataDirFrom, lockDataDir } from './data-dir';
import { ALL_MIGRATIONS, type IronlensDatabase } from './serve';

const MAGIC = 'ironlens-backup v1\n';
/** scrypt's cost: 2^15 rounds, 32 MiB of memory, about 0.1 s: slow to guess, quick to use. */
const KDF = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
/** The shortest passphrase taken. */
export const MIN_PASSPHRASE = 8;

interface Header {
  format: 1;
  created_at: string;
  store: { engine: 'sqlite'; bytes: number; sha256: string };
  key: { kdf: 'scrypt'; N: number; r: number; p: number; salt: string; iv: string; tag: string; sealed: string; source: string };
}

/** A failure the operator can act on: the message is the whole story, exit 1. */
export class BackupError extends Error {}

function checkPassphrase(passphrase: string): void {
  if (passphrase.length < MIN_PASSPHRASE) throw new BackupError(`the passphrase must have at least ${MIN_PASSPHRASE} characters`);
}

function deriveKey(passphrase: string, salt: Buffer, k: { N: number; r: number; p: number }): Buffer {
  return scryptSync(passphrase.normalize('NFC'), salt, 32, { N: k.N, r: k.r, p: k.p, maxmem: KDF.maxmem });
}

const PG_REMINDER =
  'the store is PostgreSQL (IRONLENS_DATABASE_URL): back it up with pg_dump (e.g. `pg_dump -Fc -f ironlens.dump "$IRONLENS_DATABASE_URL"`, restored with pg_restore), ' +
  'and keep the secret key with it (IRONLENS_SECRET_KEY, or secret.key in the data dir): without that key the sealed secrets in the dump cannot be opened';

/** Takes the backup; answers what was written. */
export async function backupStore(env: Env, file: string, passphrase: string): Promise<{ file: string; bytes: number; key: string }> {
  if (envOptional(env, 'IRONLENS_DATABASE_URL') !== undefined) throw new BackupError(PG_REMINDER);
  checkPassphrase(passphrase);
  const dataDir = dataDirFrom(env);
  const db = join(dataDir, 'ironlens.db');
  if (!existsSync(db)) throw new BackupError(`no store in ${dataDir} (ironlens.db): nothing to back up`);
  const secret = readSecretKey(env, dataDir);
  if (!secret) throw new BackupError(`no secret key: neither IRONLENS_SECRET_KEY nor ${join(dataDir, 'secret.key')}`);
  const out = resolve(file);
  if (existsSync(out)) throw new BackupError(`${out} exists: give a new file name`);
  mkdirSync(dirname(out), { recursive: true });
  const tmpDb = `${out}.db.partial`;
  const tmp = `${out}.partial`;
  try {
    await backupSqlite(db, tmpDb);
    const bytes = readFileSync(tmpDb);
    const salt = randomBytes(16);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', deriveKey(passphrase, salt, KDF), iv);
    cipher.setAAD(Buffer.from(MAGIC));
    const sealed = Buffer.concat([cipher.update(secret.key), cipher.final()]);
    const header: Header = {
      format: 1,
      created_at: new Date().toISOString(),
      store: { engine: 'sqlite', bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') },
      key: { kdf: 'scrypt', N: KDF.N, r: KDF.r, p: KDF.p, salt: salt.toString('base64'), iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), sealed: sealed.toString('base64'), source: secret.source },
    };
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, `${MAGIC}${JSON.stringify(header)}\n`);
      writeSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, out);
    return { file: out, bytes: statSync(out).size, key: secret.source };
  } finally {
    rmSync(tmpDb, { force: true });
    rmSync(tmp, { force: true });
  }
}

/** Reads and checks a backup file: its header, the store's checksum, the key under the passphrase. */
export function readBackup(file: string, passphrase: string): { header: Header; db: Buffer; key: Buffer } {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch (err) {
    throw new BackupError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!raw.subarray(0, MAGIC.length).equals(Buffer.from(MAGIC))) throw new BackupError(`${file} is not an ironlens backup`);
  const end = raw.indexOf(0x0a, MAGIC.length);
  if (end < 0 || end - MAGIC.length > 64 * 1024) throw new BackupError(`${file}: the header is damaged`);
  let header: Header;
  try {
    header = JSON.parse(raw.subarray(MAGIC.length, end).toString('utf8')) as Header;
  } catch {
    throw new BackupError(`${file}: the header is damaged`);
  }
  const k = header?.key;
  if (header?.format !== 1 || header.store?.engine !== 'sqlite' || k?.kdf !== 'scrypt' || ![k.N, k.r, k.p].every((n) => Number.isInteger(n) && n > 0) || k.N > 1 << 20 || k.r > 32 || k.p > 16) {
    throw new BackupError(`${file}: a backup format this version cannot read`);
  }
  const db = raw.subarray(end + 1);
  if (db.length !== header.store.bytes || createHash('sha256').update(db).digest('hex') !== header.store.sha256) throw new BackupError(`${file}: the store in it is damaged (size or sha256 differ)`);
  let key: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', deriveKey(passphrase, Buffer.from(k.salt, 'base64'), k), Buffer.from(k.iv, 'base64'));
    decipher.setAAD(Buffer.from(MAGIC));
    decipher.setAuthTag(Buffer.from(k.tag, 'base64'));
    key = Buffer.concat([decipher.update(Buffer.from(k.sealed, 'base64')), decipher.final()]);
  } catch {
    throw new BackupError('wrong passphrase: the secret key in the backup cannot be opened with it');
  }
  if (key.length !== 32) throw new BackupError(`${file}: the secret key in it is damaged`);
  return { header, db, key };
}

/**
 * Restores a backup into the data dir. Refused while a serve uses the data dir (its lock), over
 * an existing store unless `replace`, with a wrong passphrase, and when the key does not open the
 * store's secrets. With `IRONLENS_SECRET_KEY` set, the backup's key must be that key; otherwise
 * it is written as the data dir's `secret.key` (0600).
 */
export async function restoreStore(env: Env, file: string, passphrase: string, opts: { replace?: boolean } = {}): Promise<{ dataDir: string; created_at: string }> {
  if (envOptional(env, 'IRONLENS_DATABASE_URL') !== undefined) throw new BackupError(PG_REMINDER);
  const { header, db, key } = readBackup(file, passphrase);
  const dataDir = dataDirFrom(env);
  let unlock: () => void;
  try {
    unlock = lockDataDir(dataDir);
  } catch (err) {
    throw new BackupError(`refusing to restore into a store in use: ${(err as Error).message}`);
  }
  try {
    const target = join(dataDir, 'ironlens.db');
    if (existsSync(target) && !opts.replace) throw new BackupError(`${dataDir} already holds a store (ironlens.db): give --replace to overwrite it`);
    const envKey = envOptional(env, 'IRONLENS_SECRET_KEY');
    if (envKey !== undefined && !readSecretKey(env, dataDir)?.key.equals(key)) {
      throw new BackupError('IRONLENS_SECRET_KEY is set and is not the key of this backup: unset it (the backup\'s key is then written to secret.key) or set it to the backup\'s key');
    }
    const partial = `${target}.restore-partial`;
    rmSync(partial, { force: true });
    writeFileSync(partial, db, { mode: 0o600 });
    // The key must open what the store holds sealed, before anything is replaced.
    const store = await Store.open<IronlensDatabase>({ file: partial, migrations: ALL_MIGRATIONS });
    try {
      if (!(await secretKeyMatches(partOf(store), SecretBox.fromKey(key)))) throw new BackupError('the secret key in the backup does not open the secrets of its store');
    } finally {
      await store.close();
    }
    for (const suffix of ['-wal', '-shm']) {
      rmSync(`${target}${suffix}`, { force: true });
      rmSync(`${partial}${suffix}`, { force: true });
    }
    renameSync(partial, target);
    if (envKey === undefined) {
      const keyFile = join(dataDir, 'secret.key');
      writeFileSync(`${keyFile}.partial`, `${key.toString('hex')}\n`, { mode: 0o600 });
      renameSync(`${keyFile}.partial`, keyFile);
    }
    return { dataDir, created_at: header.created_at };
  } finally {
    unlock();
  }
}

/** The passphrase: the `--key-file`'s first line, else standard input's (never an argument). */
export function readPassphrase(keyFile: string | undefined): string {
  let text: string;
  if (keyFile) {
    text = readFileSync(keyFile, 'utf8');
  } else {
    const chunks: Buffer[] = [];
    const buf = Buffer.alloc(4096);
    for (;;) {
      let n = 0;
      try {
        n = readSync(0, buf, 0, buf.length, null);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') continue;
        if ((err as NodeJS.ErrnoException).code === 'EOF') break;
        throw err;
      }
      if (n === 0) break;
      chunks.push(Buffer.from(buf.subarray(0, n)));
      if (chunks.reduce((a, c) => a + c.length, 0) > 64 * 1024) break;
    }
    text = Buffer.concat(chunks).toString('utf8');
  }
  return text.split(/\r?\n/)[0] ?? '';
}
