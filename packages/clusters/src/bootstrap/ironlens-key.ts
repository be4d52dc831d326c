import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createFileExclusiveSync, replaceFileSync, type SecretBox } from '@ironlens/core';
import ssh2 from 'ssh2';

const KEY_TYPE = 'ssh-ed25519';

/** SSH wire format: a uint32 length, then the bytes. */
function sshString(b: Buffer | string): Buffer {
  const body = typeof b === 'string' ? Buffer.from(b) : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/**
 * An ed25519 key in OpenSSH's own formats (`openssh-key-v1`, unencrypted, as `ssh-keygen`
 * writes it; PROTOCOL.key), from its 32-byte seed and 32-byte public key. Exported for the
 * tests, which also build a broken key with it (a public key one byte short, what ssh2 1.17's
 * generator sometimes produced).
 */
export function encodeEd25519(seed: Buffer, pub: Buffer, comment: string): { private: string; public: string } {
  const pubBlob = Buffer.concat([sshString(KEY_TYPE), sshString(pub)]);
  const check = randomBytes(4).readUInt32BE();
  let secret = Buffer.concat([uint32(check), uint32(check), sshString(KEY_TYPE), sshString(pub), sshString(Buffer.concat([seed, pub])), sshString(comment)]);
  const pad = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([Buffer.from('openssh-key-v1\0'), sshString('none'), sshString('none'), sshString(''), uint32(1), sshString(pubBlob), sshString(secret)]);
  const b64 = body.toString('base64').replace(/.{1,70}/g, '$&\n');
  return {
    private: `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}-----END OPENSSH PRIVATE KEY-----\n`,
    public: `${KEY_TYPE} ${pubBlob.toString('base64')} ${comment}`,
  };
}

/** A new ed25519 key pair made by `node:crypto` (OpenSSL), never by ssh2's generator (ssh2 #1390, #1513). */
export function generateEd25519Key(comment: string): { private: string; public: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d as string, 'base64url');
  return encodeEd25519(seed, pub, comment);
}

/**
 * The public key of a usable private key text (`ssh-ed25519 AAAA… comment`), or null when ssh2
 * (what ironlens connects with) cannot use it.
 */
export function usablePublicKey(privateKeyText: string, comment: string): string | null {
  const parsed = ssh2.utils.parseKey(privateKeyText);
  if (parsed instanceof Error) return null;
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key.type !== KEY_TYPE || !key.isPrivateKey()) return null;
  // A key ssh2 reads but cannot sign with is as useless.
  const data = randomBytes(32);
  const sig = key.sign(data);
  if (sig instanceof Error || key.verify(data, sig) !== true) return null;
  return `${KEY_TYPE} ${key.getPublicSSH().toString('base64')} ${comment}`;
}

/** Where ironlens keeps its SSH identity across restores and replicas: the store (sealed). */
export interface IdentityStore {
  identity(name: string): Promise<string | undefined>;
  putIdentity(name: string, sealed: string, opts?: { replace?: boolean }): Promise<void>;
}

const IDENTITY = 'ssh-ed25519';
const PURPOSE = 'bootstrap:ssh-identity';

/**
 * ironlens' own SSH key (ed25519), used for a node that gives neither a private key nor a
 * password: `<dataDir>/bootstrap/ssh/id_ed25519` (0600) and its `.pub`, created on first start
 * with `node:crypto`. At every start the key is checked with ssh2: one it cannot use (made by an
 * older ironlens with ssh2's generator, which sometimes drops a byte of the public key) is moved
 * aside to `id_ed25519.unusable-<time>` and replaced by a new one, and a `.pub` that does not
 * match the private key is written again. Operators put the public key
 * (`GET /api/cluster/bootstrap/ssh-public-key`) in the nodes' `authorized_keys`; after a
 * replacement they put in the new one (the old key could open no session anyway).
 */
export class IronlensKey {
  readonly privateKeyFile: string;
  readonly publicKey: string;
  /** True when this start replaced an unusable key. */
  readonly replaced: boolean = false;

  constructor(dataDir: string, now: () => Date = () => new Date()) {
    const dir = join(dataDir, 'bootstrap', 'ssh');
    this.privateKeyFile = join(dir, 'id_ed25519');
    const pubFile = `${this.privateKeyFile}.pub`;
    if (existsSync(this.privateKeyFile) && usablePublicKey(readFileSync(this.privateKeyFile, 'utf8'), 'ironlens') === null) {
      renameSync(this.privateKeyFile, `${this.privateKeyFile}.unusable-${now().toISOString().replace(/[:.]/g, '-')}`);
      this.replaced = true;
    }
    if (!existsSync(this.privateKeyFile)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const pair = generateEd25519Key('ironlens');
      try {
        createFileExclusiveSync(this.privateKeyFile, pair.private, 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    const mode = statSync(this.privateKeyFile).mode & 0o777;
    if (mode & 0o077) chmodSync(this.privateKeyFile, 0o600);
    const publicKey = usablePublicKey(readFileSync(this.privateKeyFile, 'utf8'), 'ironlens');
    if (!publicKey) throw new Error(`${this.privateKeyFile}: a key ssh2 cannot use, just made`);
    const onDisk = existsSync(pubFile) ? readFileSync(pubFile, 'utf8').trim() : '';
    if (onDisk.split(' ').slice(0, 2).join(' ') !== publicKey.split(' ').slice(0, 2).join(' ')) replaceFileSync(pubFile, `${publicKey}\n`, 0o644);
    this.publicKey = existsSync(pubFile) ? readFileSync(pubFile, 'utf8').trim() : publicKey;
  }

  /**
   * The key kept sealed in the store (issue 29, finding 10), so that a store restored on a new
   * machine, and every replica of one store, use one identity: at start the store's key is
   * written to `<dataDir>/bootstrap/ssh/id_ed25519` (Ansible reads a file), the file a data dir
   * already holds is moved into a store that has none (the first replica to start wins; the
   * others take its key), and a new key is made only when neither has one. A key ssh2 cannot use
   * is replaced as before, in the store too.
   */
  static async open(dataDir: string, store: IdentityStore, box: SecretBox, now: () => Date = () => new Date()): Promise<IronlensKey> {
    const dir = join(dataDir, 'bootstrap', 'ssh');
    const file = join(dir, 'id_ed25519');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if ((await store.identity(IDENTITY)) === undefined) {
      const onDisk = existsSync(file) ? readFileSync(file, 'utf8') : null;
      const text = onDisk !== null && usablePublicKey(onDisk, 'ironlens') !== null ? onDisk : generateEd25519Key('ironlens').private;
      await store.putIdentity(IDENTITY, box.seal(text, PURPOSE));
    }
    const sealed = (await store.identity(IDENTITY)) as string;
    const text = box.openText(sealed, PURPOSE);
    if (!existsSync(file) || readFileSync(file, 'utf8') !== text) {
      // The file this data dir held is not the store's identity: kept aside, never lost.
      if (existsSync(file)) renameSync(file, `${file}.replaced-${now().toISOString().replace(/[:.]/g, '-')}`);
      replaceFileSync(file, text, 0o600);
    }
    const key = new IronlensKey(dataDir, now);
    if (key.replaced) await store.putIdentity(IDENTITY, box.seal(key.privateKey(), PURPOSE), { replace: true });
    return key;
  }

  /** The private key's text (for a pinned ssh2 connection). */
  privateKey(): string {
    return readFileSync(this.privateKeyFile, 'utf8');
  }
}
