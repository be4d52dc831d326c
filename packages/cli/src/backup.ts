/**
 * `ironlens backup FILE` / `ironlens restore FILE` for the embedded SQLite store (issue 23).
 *
 * A backup file holds a consistent copy of the live store (SQLite's online backup API) and the
 * secret key that opens the secrets sealed in it, itself sealed under a passphrase: without the
 * key a restored store's kubeconfigs, agent tokens, CHAP secrets and ironlens' SSH identity could
 * not be opened, and with the key in plain text the backup would hand them out.
 *
 * Layout (format 2): the line `ironlens-backup v2`, one line of JSON (the header: when, the
 * store's size and sha256, the KDF's parameters and salt, the sealed key), the line
 * `mac <hex>`, then the SQLite database's bytes. scrypt derives 64 bytes from the passphrase:
 * the first 32 seal the secret key (AES-256-GCM), the other 32 key an HMAC-SHA256 over the
 * magic line, the header line and the store (issue 29, finding 2: the header and store of
 * format 1 carried an unkeyed hash, so anyone could change the store and the hash with it).
 * Restore refuses a file whose MAC does not verify, a KDF cost outside {@link KDF_BOUNDS}, and a
 * store with any schema object (trigger, view, table, index) that ironlens' migrations do not
 * create. Format 1 files are refused (`backup_format_unsupported`): nothing proves they were not
 * changed.
 *
 * Temporaries (the store's copy, the file being written, on restore the store being checked) live
 * in a directory of their own, mode 0700, made by `mkdtemp`, and every file is created
 * exclusively (`createFileExclusiveSync`, `replaceFileSync` for the key file): nothing is ever
 * opened at a name another user could have planted (issue 29, finding 9). The backup appears
 * under its name only once complete (a hard link, which refuses to replace anything), mode 0600.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { backupSqlite, createFileExclusiveSync, type Env, type ErrorCode, envOptional, migratedSqliteSchema, type NamedMigration, partOf, readSecretKey, replaceFileSync, SecretBox, Store, schemaDifferences, secretKeyMatches, sqliteAppliedMigrations, sqliteSchema } from '@ironlens/core';
import { dataDirFrom, lockDataDir } from './data-dir';
import { ALL_MIGRATIONS, type IronlensDatabase } from './serve';

const MAGIC = 'ironlens-backup v2\n';
const MAGIC_V1 = 'ironlens-backup v1\n';
/** scrypt's cost as written: 2^15 rounds, 32 MiB of memory, about 0.1 s: slow to guess, quick to use. */
const KDF = { N: 1 << 15, r: 8, p: 1 } as const;
/**
 * The costs a backup's header may ask for (issue 32, item 1): never below what this version
 * writes (a file asking less is not one of ours, or was made weaker), never so high that reading
 * a file could take minutes or gigabytes (its header is read before anything is authenticated).
 */
export const KDF_BOUNDS = { N: { min: 1 << 15, max: 1 << 17 }, r: { min: 8, max: 16 }, p: { min: 1, max: 4 } } as const;
/** The shortest passphrase taken. */
export const MIN_PASSPHRASE = 8;

interface Header {
  format: 2;
  created_at: string;
  store: { engine: 'sqlite'; bytes: number; sha256: string };
  kdf: { name: 'scrypt'; N: number; r: number; p: number; salt: string };
  key: { iv: string; tag: string; sealed: string; source: string };
}

/** A failure the operator can act on: the message is the whole story (with the code, where it has one), exit 1. */
export class BackupError extends Error {
  constructor(
    message: string,
    readonly code?: ErrorCode,
  ) {
    super(code ? `${message} (${code})` : message);
  }
}

function checkPassphrase(passphrase: string): void {
  if (passphrase.length < MIN_PASSPHRASE) throw new BackupError(`the passphrase must have at least ${MIN_PASSPHRASE} characters`);
}

/** The key that seals the secret key, and the key of the file's MAC: one scrypt run, 64 bytes. */
function deriveKeys(passphrase: string, salt: Buffer, k: { N: number; r: number; p: number }): { seal: Buffer; mac: Buffer } {
  const out = scryptSync(passphrase.normalize('NFC'), salt, 64, { N: k.N, r: k.r, p: k.p, maxmem: 256 * k.N * k.r + 128 * k.r * k.p });
  return { seal: out.subarray(0, 32), mac: out.subarray(32) };
}

function macOf(key: Buffer, headerLine: string, db: Buffer): Buffer {
  return createHmac('sha256', key).update(MAGIC).update(headerLine).update('\n').update(db).digest();
}

const PG_REMINDER =
  'the store is PostgreSQL (IRONLENS_DATABASE_URL): back it up with pg_dump (e.g. `pg_dump -Fc -f ironlens.dump "$IRONLENS_DATABASE_URL"`, restored with pg_restore), ' +
  'and keep the secret key with it (IRONLENS_SECRET_KEY, or secret.key in the data dir): without that key the sealed secrets in the dump cannot be opened';

/** A directory of this process' own beside `near` (mode 0700, a fresh name): where temporaries go. */
function privateDir(near: string): string {
  return mkdtempSync(join(near, '.ironlens-tmp-'));
}

/**
 * The bytes of a backup file of `db` (a SQLite database) and `key` (the store's secret key),
 * under `passphrase`. Exported for the tests, which build files a tamperer would.
 */
export function encodeBackup(db: Buffer, key: { key: Buffer; source: string }, passphrase: string, createdAt = new Date()): Buffer {
  checkPassphrase(passphrase);
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const keys = deriveKeys(passphrase, salt, KDF);
  const cipher = createCipheriv('aes-256-gcm', keys.seal, iv);
  cipher.setAAD(Buffer.from(MAGIC));
  const sealed = Buffer.concat([cipher.update(key.key), cipher.final()]);
  const header: Header = {
    format: 2,
    created_at: createdAt.toISOString(),
    store: { engine: 'sqlite', bytes: db.length, sha256: createHash('sha256').update(db).digest('hex') },
    kdf: { name: 'scrypt', N: KDF.N, r: KDF.r, p: KDF.p, salt: salt.toString('base64') },
    key: { iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), sealed: sealed.toString('base64'), source: key.source },
  };
  const headerLine = JSON.stringify(header);
  return Buffer.concat([Buffer.from(`${MAGIC}${headerLine}\nmac ${macOf(keys.mac, headerLine, db).toString('hex')}\n`), db]);
}

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
  const tmp = privateDir(dirname(out));
  try {
    const copy = join(tmp, 'store.db');
    await backupSqlite(db, copy);
    const written = join(tmp, 'backup');
    createFileExclusiveSync(written, encodeBackup(readFileSync(copy), secret, passphrase), 0o600);
    try {
      linkSync(written, out);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new BackupError(`${out} exists: give a new file name`);
      throw err;
    }
    return { file: out, bytes: statSync(out).size, key: secret.source };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const isBase64 = (v: unknown): v is string => typeof v === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(v);
const within = (n: unknown, b: { min: number; max: number }): n is number => Number.isInteger(n) && (n as number) >= b.min && (n as number) <= b.max;

/**
 * Reads and checks a backup file: its format, the KDF cost it asks for (before deriving
 * anything), the key under the passphrase, and the MAC over header and store.
 */
export function readBackup(file: string, passphrase: string): { header: Header; db: Buffer; key: Buffer } {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch (err) {
    throw new BackupError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (raw.subarray(0, MAGIC_V1.length).equals(Buffer.from(MAGIC_V1))) {
    throw new BackupError(
      `${file} was written by an earlier ironlens (backup format 1), whose store carries no authentication: it is not restored. Restore it with the version that wrote it (on a machine of its own), then take a new backup`,
      'backup_format_unsupported',
    );
  }
  if (!raw.subarray(0, MAGIC.length).equals(Buffer.from(MAGIC))) throw new BackupError(`${file} is not an ironlens backup`, 'backup_format_unsupported');
  const headerEnd = raw.indexOf(0x0a, MAGIC.length);
  if (headerEnd < 0 || headerEnd - MAGIC.length > 64 * 1024) throw new BackupError(`${file}: the header is damaged`, 'backup_tampered');
  const headerLine = raw.subarray(MAGIC.length, headerEnd).toString('utf8');
  let header: Header;
  try {
    header = JSON.parse(headerLine) as Header;
  } catch {
    throw new BackupError(`${file}: the header is damaged`, 'backup_tampered');
  }
  const k = header?.kdf;
  const sealedKey = header?.key;
  if (header?.format !== 2 || header.store?.engine !== 'sqlite' || k?.name !== 'scrypt' || !isBase64(k.salt) || ![sealedKey?.iv, sealedKey?.tag, sealedKey?.sealed].every(isBase64)) {
    throw new BackupError(`${file}: a backup format this version cannot read`, 'backup_format_unsupported');
  }
  // Bounded before scrypt runs: the header is not authenticated yet.
  if (!within(k.N, KDF_BOUNDS.N) || (k.N & (k.N - 1)) !== 0 || !within(k.r, KDF_BOUNDS.r) || !within(k.p, KDF_BOUNDS.p)) {
    throw new BackupError(
      `${file}: its key derivation asks for scrypt N=${k.N} r=${k.r} p=${k.p}; this version takes N a power of two in [${KDF_BOUNDS.N.min}, ${KDF_BOUNDS.N.max}], r in [${KDF_BOUNDS.r.min}, ${KDF_BOUNDS.r.max}], p in [${KDF_BOUNDS.p.min}, ${KDF_BOUNDS.p.max}]`,
      'backup_kdf_out_of_range',
    );
  }
  const macEnd = raw.indexOf(0x0a, headerEnd + 1);
  const macLine = macEnd < 0 ? '' : raw.subarray(headerEnd + 1, macEnd).toString('latin1');
  if (!/^mac [0-9a-f]{64}$/.test(macLine)) throw new BackupError(`${file}: the header is damaged (no MAC)`, 'backup_tampered');
  const db = raw.subarray(macEnd + 1);
  const keys = deriveKeys(passphrase, Buffer.from(k.salt, 'base64'), k);
  let key: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keys.seal, Buffer.from(sealedKey.iv, 'base64'));
    decipher.setAAD(Buffer.from(MAGIC));
    decipher.setAuthTag(Buffer.from(sealedKey.tag, 'base64'));
    key = Buffer.concat([decipher.update(Buffer.from(sealedKey.sealed, 'base64')), decipher.final()]);
  } catch {
    throw new BackupError('wrong passphrase: the secret key in the backup cannot be opened with it', 'backup_passphrase_wrong');
  }
  // The passphrase is right: a MAC that differs means the header or the store was changed.
  if (!timingSafeEqual(macOf(keys.mac, headerLine, db), Buffer.from(macLine.slice(4), 'hex'))) {
    throw new BackupError(`${file}: the header or the store was altered after the backup was written (its MAC does not verify): refusing it`, 'backup_tampered');
  }
  if (db.length !== header.store.bytes || createHash('sha256').update(db).digest('hex') !== header.store.sha256) throw new BackupError(`${file}: the store in it is damaged (size or sha256 differ)`, 'backup_tampered');
  if (key.length !== 32) throw new BackupError(`${file}: the secret key in it is damaged`, 'backup_tampered');
  return { header, db, key };
}

/** Refuses a store whose schema is not exactly what `migrations` make (a trigger, a view, a table or index of anyone else's, or one made otherwise). */
async function checkSchema(file: string, migrations: NamedMigration[]): Promise<void> {
  const diff = schemaDifferences(sqliteSchema(file), await migratedSqliteSchema(migrations));
  if (diff.length > 0) {
    throw new BackupError(`the store in the backup holds schema objects ironlens' migrations do not create, refusing it: ${diff.slice(0, 5).join('; ')}${diff.length > 5 ? `; and ${diff.length - 5} more` : ''}`, 'backup_schema_foreign');
  }
}

/**
 * Restores a backup into the data dir. Refused while a serve uses the data dir (its lock), over
 * an existing store unless `replace`, with a wrong passphrase, a file whose MAC does not verify,
 * a store with schema objects the migrations did not create (checked before its pending
 * migrations run, against the migrations it records as applied, and after them, against all), and when the key does not open the store's secrets. With
 * `IRONLENS_SECRET_KEY` set, the backup's key must be that key; otherwise it is written as the
 * data dir's `secret.key` (0600).
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
  const tmp = privateDir(dataDir);
  try {
    const target = join(dataDir, 'ironlens.db');
    if (existsSync(target) && !opts.replace) throw new BackupError(`${dataDir} already holds a store (ironlens.db): give --replace to overwrite it`);
    const envKey = envOptional(env, 'IRONLENS_SECRET_KEY');
    if (envKey !== undefined && !readSecretKey(env, dataDir)?.key.equals(key)) {
      throw new BackupError('IRONLENS_SECRET_KEY is set and is not the key of this backup: unset it (the backup\'s key is then written to secret.key) or set it to the backup\'s key');
    }
    const partial = join(tmp, 'ironlens.db');
    createFileExclusiveSync(partial, db, 0o600);
    // Nothing of the store runs before its schema is known to be ironlens' own (a trigger would
    // fire during the migrations): exactly what the migrations it records as applied create (a
    // backup of an older version has fewer, and tables they altered since look otherwise then).
    // After its pending migrations ran, it must be exactly what all of them create.
    const applied = new Set(sqliteAppliedMigrations(partial));
    const unknown = [...applied].filter((n) => !ALL_MIGRATIONS.some((m) => m.name === n));
    if (unknown.length > 0) {
      throw new BackupError(`the store in the backup records migrations this version does not have (${unknown.slice(0, 3).join(', ')}): a backup of a newer ironlens? Restore it with that version`, 'backup_schema_foreign');
    }
    await checkSchema(partial, ALL_MIGRATIONS.filter((m) => applied.has(m.name)));
    // The key must open what the store holds sealed, before anything is replaced.
    const store = await Store.open<IronlensDatabase>({ file: partial, migrations: ALL_MIGRATIONS });
    try {
      if (!(await secretKeyMatches(partOf(store), SecretBox.fromKey(key)))) throw new BackupError('the secret key in the backup does not open the secrets of its store');
    } finally {
      await store.close();
    }
    await checkSchema(partial, ALL_MIGRATIONS);
    for (const suffix of ['-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
    renameSync(partial, target);
    if (envKey === undefined) replaceFileSync(join(dataDir, 'secret.key'), `${key.toString('hex')}\n`, 0o600);
    return { dataDir, created_at: header.created_at };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
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
