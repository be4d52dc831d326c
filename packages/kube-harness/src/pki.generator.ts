/**
 * A throw-away PKI for one harness cluster: a CA and the leaf certificates the
 * control plane needs. Keys come from node:crypto (ECDSA P-256); certificates are
 * signed with the `openssl` CLI (OpenSSL >= 1.1.1; Debian's `openssl` package),
 * always called with argument arrays.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

export interface CertPair {
  cert: string;
  key: string;
}

export interface LeafSpec {
  name: string;
  /** Subject common name (the user name for client certificates). */
  cn: string;
  /** Subject organizations (the groups for client certificates). */
  orgs?: string[];
  ips?: string[];
  dns?: string[];
  usage: 'server' | 'client' | 'both';
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await execFileP('openssl', args, { cwd });
  } catch (e) {
    const err = e as Error & { stderr?: string; code?: string };
    if (err.code === 'ENOENT') {
      throw new Error('kube-harness needs the `openssl` command (Debian package `openssl`) to issue cluster certificates');
    }
    throw new Error(`openssl ${args.join(' ')} failed: ${err.stderr || err.message}`);
  }
}

function newKey(path: string): Promise<void> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return writeFile(path, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
}

export class Pki {
  readonly ca: CertPair;
  private constructor(readonly dir: string) {
    this.ca = { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  }

  static async create(dir: string, caName = 'ironlens-kube-harness-ca'): Promise<Pki> {
    const pki = new Pki(dir);
    await newKey(pki.ca.key);
    await openssl(
      [
        'req', '-x509', '-new', '-key', pki.ca.key, '-out', pki.ca.cert, '-days', '3650', '-sha256',
        '-subj', `/CN=${caName}`,
        '-addext', 'basicConstraints=critical,CA:TRUE',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
      ],
      dir,
    );
    return pki;
  }

  async issue(spec: LeafSpec): Promise<CertPair> {
    const key = join(this.dir, `${spec.name}.key`);
    const csr = join(this.dir, `${spec.name}.csr`);
    const cert = join(this.dir, `${spec.name}.crt`);
    const ext = join(this.dir, `${spec.name}.ext`);
    await newKey(key);
    const subj = [...(spec.orgs ?? []).map((o) => `/O=${o}`), `/CN=${spec.cn}`].join('');
    await openssl(['req', '-new', '-key', key, '-out', csr, '-subj', subj], this.dir);
    const eku = spec.usage === 'server' ? 'serverAuth' : spec.usage === 'client' ? 'clientAuth' : 'serverAuth,clientAuth';
    const sans = [...(spec.ips ?? []).map((ip) => `IP:${ip}`), ...(spec.dns ?? []).map((d) => `DNS:${d}`)];
    const extLines = [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      `extendedKeyUsage=${eku}`,
      'authorityKeyIdentifier=keyid',
    ];
    if (sans.length) extLines.push(`subjectAltName=${sans.join(',')}`);
    await writeFile(ext, `${extLines.join('\n')}\n`);
    await openssl(
      [
        'x509', '-req', '-in', csr, '-CA', this.ca.cert, '-CAkey', this.ca.key,
        '-set_serial', `0x${randomBytes(12).toString('hex')}`,
        '-days', '365', '-sha256', '-extfile', ext, '-out', cert,
      ],
      this.dir,
    );
    return { cert, key };
  }

  /** A key pair (PEM) for signing service-account tokens. */
  async serviceAccountKeys(): Promise<{ publicKey: string; privateKey: string }> {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const priv = join(this.dir, 'sa.key');
    const pub = join(this.dir, 'sa.pub');
    await writeFile(priv, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
    await writeFile(pub, publicKey.export({ type: 'spki', format: 'pem' }) as string);
    return { publicKey: pub, privateKey: priv };
  }
}
