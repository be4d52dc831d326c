import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';

/**
 * ironlens' own SSH key (ed25519), used for a node that gives neither a private key nor a
 * password: `<dataDir>/bootstrap/ssh/id_ed25519` (0600) and its `.pub`, created on first start.
 * Operators put the public key (`GET /api/cluster/bootstrap/ssh-public-key`) in the nodes'
 * `authorized_keys`.
 */
export class IronlensKey {
  readonly privateKeyFile: string;
  readonly publicKey: string;

  constructor(dataDir: string) {
    const dir = join(dataDir, 'bootstrap', 'ssh');
    this.privateKeyFile = join(dir, 'id_ed25519');
    const pubFile = `${this.privateKeyFile}.pub`;
    if (!existsSync(this.privateKeyFile)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment: 'ironlens' });
      try {
        writeFileSync(this.privateKeyFile, pair.private.endsWith('\n') ? pair.private : `${pair.private}\n`, { mode: 0o600, flag: 'wx' });
        writeFileSync(pubFile, `${pair.public}\n`, { mode: 0o644 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    const mode = statSync(this.privateKeyFile).mode & 0o777;
    if (mode & 0o077) chmodSync(this.privateKeyFile, 0o600);
    this.publicKey = readFileSync(pubFile, 'utf8').trim();
  }

  /** The private key's text (for a pinned ssh2 connection). */
  privateKey(): string {
    return readFileSync(this.privateKeyFile, 'utf8');
  }
}
