/**
 * ironlens' own bootstrap SSH key (issue 19, defect 6): made with node:crypto, every key is one
 * ssh2 (what ironlens connects with) and OpenSSH (`ssh-keygen -y`) both read; a key ssh2 cannot
 * use, as ssh2 1.17's generator sometimes made (a public key one byte short), is replaced at start.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execStreaming, SecretBox } from '@ironlens/core';
import ssh2 from 'ssh2';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeEd25519, type IdentityStore, IronlensKey, usablePublicKey } from './ironlens-key';

const root = mkdtempSync(join(tmpdir(), `ironlens-key-${process.pid}-`));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * OpenSSH's reading of a private key file: `ssh-keygen -y` through core's `execStreaming`, so
 * bounded (10 s, its process group killed) and with nothing to ask a passphrase on: no standard
 * input and, in a session of its own, no terminal. A key it cannot read unencrypted makes it
 * prompt, and a prompt on a terminal would wait for good (under execFileSync, out of reach of
 * every vitest timeout).
 */
async function sshKeygenPublic(file: string): Promise<string> {
  try {
    const { stdout } = await execStreaming(['ssh-keygen', '-y', '-f', file], { timeoutMs: 10_000 });
    // Type and key; OpenSSH 9 also prints the comment, older ones do not.
    return stdout.trim().split(' ').slice(0, 2).join(' ');
  } catch (err) {
    if ((err as { notFound?: boolean }).notFound) throw new Error('ssh-keygen is missing: apt-get install openssh-client (scripts/install-test-deps.sh)');
    throw err;
  }
}

describe('IronlensKey', () => {
  it('makes keys that ssh2 and ssh-keygen both read, every time (400 data dirs)', async () => {
    for (let i = 0; i < 400; i++) {
      const dataDir = join(root, `d${i}`);
      const key = new IronlensKey(dataDir);
      expect(key.replaced).toBe(false);
      const text = key.privateKey();
      const parsed = ssh2.utils.parseKey(text);
      expect(parsed, `key ${i}`).not.toBeInstanceOf(Error);
      expect(usablePublicKey(text, 'ironlens'), `key ${i}`).toBe(key.publicKey);
      expect(key.publicKey).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/=]+ ironlens$/);
      // OpenSSH derives the same public key from the private key file.
      expect(await sshKeygenPublic(key.privateKeyFile), `key ${i}`).toBe(key.publicKey.split(' ').slice(0, 2).join(' '));
      expect(statSync(key.privateKeyFile).mode & 0o777).toBe(0o600);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('keeps a usable key across starts', () => {
    const dataDir = join(root, 'keep');
    const first = new IronlensKey(dataDir);
    const second = new IronlensKey(dataDir);
    expect(second.replaced).toBe(false);
    expect(second.publicKey).toBe(first.publicKey);
    expect(second.privateKey()).toBe(first.privateKey());
  });

  it('replaces at start a planted key that ssh2 cannot use, and keeps the old one aside', async () => {
    const dataDir = join(root, 'broken');
    const dir = join(dataDir, 'bootstrap', 'ssh');
    mkdirSync(dir, { recursive: true });
    // What ssh2 1.17's generator sometimes wrote: the public key's leading zero byte dropped (31 bytes).
    const pub = Buffer.concat([Buffer.from([0]), randomBytes(31)]);
    const broken = encodeEd25519(randomBytes(32), pub.subarray(1), 'ironlens');
    writeFileSync(join(dir, 'id_ed25519'), broken.private, { mode: 0o600 });
    writeFileSync(join(dir, 'id_ed25519.pub'), `${broken.public}\n`);
    expect(usablePublicKey(broken.private, 'ironlens')).toBeNull();

    const key = new IronlensKey(dataDir);
    expect(key.replaced).toBe(true);
    expect(key.privateKey()).not.toBe(broken.private);
    expect(ssh2.utils.parseKey(key.privateKey())).not.toBeInstanceOf(Error);
    expect(key.publicKey).not.toBe(broken.public);
    expect(readFileSync(join(dir, 'id_ed25519.pub'), 'utf8').trim()).toBe(key.publicKey);
    expect(await sshKeygenPublic(key.privateKeyFile)).toBe(key.publicKey.split(' ').slice(0, 2).join(' '));
    const aside = readdirSync(dir).filter((n) => n.startsWith('id_ed25519.unusable-'));
    expect(aside).toHaveLength(1);
    expect(readFileSync(join(dir, aside[0]), 'utf8')).toBe(broken.private);
  });

  it('writes the .pub again when it does not match the private key', () => {
    const dataDir = join(root, 'pub');
    const key = new IronlensKey(dataDir);
    const pubFile = `${key.privateKeyFile}.pub`;
    rmSync(pubFile);
    expect(new IronlensKey(dataDir).publicKey).toBe(key.publicKey);
    expect(existsSync(pubFile)).toBe(true);
  });
});

/** The store's side of the identity, in memory (the repository's two calls; its SQL is run by the bootstrap suites). */
class MemoryIdentities implements IdentityStore {
  readonly rows = new Map<string, string>();
  async identity(name: string) {
    return this.rows.get(name);
  }
  async putIdentity(name: string, sealed: string, opts: { replace?: boolean } = {}) {
    if (opts.replace || !this.rows.has(name)) this.rows.set(name, sealed);
  }
}

describe('IronlensKey kept in the store (issue 29, finding 10)', () => {
  const box = SecretBox.fromKey(Buffer.alloc(32, 7));

  it("moves a data dir's key into a store that has none, sealed: the public key stays", async () => {
    const dataDir = join(root, 'migrate');
    const before = new IronlensKey(dataDir).publicKey;
    const store = new MemoryIdentities();
    const key = await IronlensKey.open(dataDir, store, box);
    expect(key.publicKey).toBe(before);
    const sealed = [...store.rows.values()];
    expect(sealed).toHaveLength(1);
    expect(sealed[0]).toMatch(/^v1:/);
    expect(sealed[0]).not.toContain('PRIVATE KEY');
    expect(box.openText(sealed[0], 'bootstrap:ssh-identity')).toBe(key.privateKey());
  });

  it('gives a fresh data dir (a restore, another replica) the identity of the store, and keeps the key it had aside', async () => {
    const store = new MemoryIdentities();
    const first = await IronlensKey.open(join(root, 'replica-a'), store, box);
    const fresh = await IronlensKey.open(join(root, 'replica-b'), store, box);
    expect(fresh.publicKey).toBe(first.publicKey);
    expect(fresh.privateKey()).toBe(first.privateKey());
    expect(statSync(fresh.privateKeyFile).mode & 0o777).toBe(0o600);
    // A replica that had made a key of its own takes the store's, its own moved aside.
    const own = new IronlensKey(join(root, 'replica-c')).privateKey();
    const taken = await IronlensKey.open(join(root, 'replica-c'), store, box);
    expect(taken.publicKey).toBe(first.publicKey);
    const dir = join(root, 'replica-c', 'bootstrap', 'ssh');
    const aside = readdirSync(dir).filter((n) => n.startsWith('id_ed25519.replaced-'));
    expect(aside).toHaveLength(1);
    expect(readFileSync(join(dir, aside[0]), 'utf8')).toBe(own);
    expect(readFileSync(`${taken.privateKeyFile}.pub`, 'utf8').trim()).toBe(first.publicKey);
  });

  it('replaces an unusable key in the store too', async () => {
    const store = new MemoryIdentities();
    const broken = encodeEd25519(randomBytes(32), randomBytes(31), 'ironlens');
    await store.putIdentity('ssh-ed25519', box.seal(broken.private, 'bootstrap:ssh-identity'));
    const key = await IronlensKey.open(join(root, 'replace-in-store'), store, box);
    expect(key.replaced).toBe(true);
    expect(box.openText(store.rows.get('ssh-ed25519') as string, 'bootstrap:ssh-identity')).toBe(key.privateKey());
    expect((await IronlensKey.open(join(root, 'replace-in-store-2'), store, box)).publicKey).toBe(key.publicKey);
  });
});
