import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Env, envOptional } from '../config';
import { createFileExclusiveSync } from '../fs';

const PREFIX = 'v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypts secrets at rest (kubeconfigs, iSCSI CHAP secrets) with AES-256-GCM. The key lives
 * outside the database: `IRONLENS_SECRET_KEY` (32 bytes as 64 hex characters or base64), or a
 * key file `secret.key` in the data dir, created with mode 0600 on first start.
 *
 * A sealed value is `v1:<base64(iv | tag | ciphertext)>`; `purpose` is bound as additional
 * authenticated data, so a value sealed for one record cannot be replayed into another
 * (pass e.g. `cluster:<id>:kubeconfig`).
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** A box over a raw 32-byte key. */
  static fromKey(key: Buffer): SecretBox {
    if (key.length !== 32) throw new Error(`secret key must be 32 bytes, got ${key.length}`);
    return new SecretBox(Buffer.from(key));
  }

  /**
   * `IRONLENS_SECRET_KEY` when set; otherwise `<dataDir>/secret.key`, created (0600) when
   * missing. A key file readable by group or others is refused.
   */
  static fromEnv(env: Env, dataDir: string): SecretBox {
    const given = envOptional(env, 'IRONLENS_SECRET_KEY');
    if (given !== undefined) return SecretBox.fromKey(parseKey(given, 'IRONLENS_SECRET_KEY'));
    return SecretBox.fromKey(loadOrCreateKeyFile(join(dataDir, 'secret.key')));
  }

  seal(plaintext: string | Buffer, purpose = ''): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(purpose, 'utf8'));
    const ct = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
  }

  open(sealed: string, purpose = ''): Buffer {
    if (typeof sealed !== 'string' || !sealed.startsWith(PREFIX)) throw new Error('not a sealed secret');
    const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('sealed secret is truncated');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(purpose, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw new Error('sealed secret cannot be opened with this key (wrong key, wrong purpose or tampered)');
    }
  }

  openText(sealed: string, purpose = ''): string {
    return this.open(sealed, purpose).toString('utf8');
  }
}

/**
 * The raw secret key `SecretBox.fromEnv` would use, for a backup: `IRONLENS_SECRET_KEY` when
 * set, else the key file in the data dir (never created here: `null` when there is none).
 * `source` says which, for messages.
 */
export function readSecretKey(env: Env, dataDir: string): { key: Buffer; source: string } | null {
  const given = envOptional(env, 'IRONLENS_SECRET_KEY');
  if (given !== undefined) return { key: parseKey(given, 'IRONLENS_SECRET_KEY'), source: 'IRONLENS_SECRET_KEY' };
  const file = join(dataDir, 'secret.key');
  if (!existsSync(file)) return null;
  return { key: loadOrCreateKeyFile(file), source: file };
}

function parseKey(text: string, name: string): Buffer {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(t)) {
    const b = Buffer.from(t, 'base64');
    if (b.length === 32) return b;
  }
  throw new Error(`${name} must be 32 bytes written as 64 hex characters or base64`);
}

function loadOrCreateKeyFile(file: string): Buffer {
  if (existsSync(file)) {
    const mode = statSync(file).mode & 0o777;
    if (mode & 0o077) throw new Error(`${file} is readable by others (mode ${mode.toString(8)}); chmod 600 it`);
    return parseKey(readFileSync(file, 'utf8'), file);
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  // `wx`: two processes starting at once never overwrite each other's key.
  try {
    createFileExclusiveSync(file, `${key.toString('hex')}\n`, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateKeyFile(file);
    throw err;
  }
  chmodSync(file, 0o600);
  return key;
}
