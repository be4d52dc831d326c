import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ssh2Hosts, SshConnectError } from './ssh.adapter';
import { newKey, randomLoopbackPrefix, sshKeygenFingerprint, TestSshd } from './testing/sshd';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-ssh-'));
const prefix = randomLoopbackPrefix();
let good: TestSshd;
let rsaOnly: TestSshd;
let clientKey: string;
const ssh = new Ssh2Hosts();

beforeAll(async () => {
  clientKey = newKey(join(dir, 'client'));
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, readFileSync(`${clientKey}.pub`));
  good = await TestSshd.start({ dir: join(dir, 'a'), address: `${prefix}2`, hostKey: newKey(join(dir, 'host-a')), authorizedKeys: authorized });
  rsaOnly = await TestSshd.start({ dir: join(dir, 'b'), address: `${prefix}3`, hostKey: newKey(join(dir, 'host-b'), 'rsa'), authorizedKeys: authorized });
}, 30_000);

afterAll(async () => {
  await good?.stop();
  await rsaOnly?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('Ssh2Hosts', () => {
  it('reads a host key without logging in, with the fingerprint ssh-keygen -lf prints', async () => {
    const key = await ssh.scanHostKey(good.address, good.port, { timeoutMs: 5000 });
    expect(key.algorithm).toBe('ssh-ed25519');
    expect(key.fingerprint).toBe(sshKeygenFingerprint(join(dir, 'host-a.pub')));
    expect(key.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    // The known_hosts blob is the .pub file's second field.
    expect(key.blob).toBe(readFileSync(join(dir, 'host-a.pub'), 'utf8').split(' ')[1]);
    // No authentication was attempted: sshd logged no accepted or failed login for the scan.
    expect(good.log).not.toMatch(/ironlens-host-key-scan.*(Accepted|Failed)/);
  });

  it('reads an RSA host key too', async () => {
    const key = await ssh.scanHostKey(rsaOnly.address, rsaOnly.port, { timeoutMs: 5000 });
    expect(key.algorithm).toBe('ssh-rsa');
    expect(key.fingerprint).toBe(sshKeygenFingerprint(join(dir, 'host-b.pub')));
  });

  it('logs in and runs a command when the key matches its pin', async () => {
    const s = await ssh.connect(
      { host: good.address, port: good.port, username: 'root', privateKey: readFileSync(clientKey, 'utf8'), fingerprint: good.fingerprint },
      { timeoutMs: 5000 },
    );
    const r = await s.exec('echo hello; echo oops >&2; exit 3');
    s.close();
    expect(r).toEqual({ code: 3, stdout: 'hello\n', stderr: 'oops\n' });
  });

  it('refuses a host whose key differs from the pin, before sending credentials', async () => {
    const err = await ssh
      .connect({ host: rsaOnly.address, port: rsaOnly.port, username: 'root', privateKey: readFileSync(clientKey, 'utf8'), fingerprint: good.fingerprint }, { timeoutMs: 5000 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(SshConnectError);
    expect(err.reason).toBe('host_key_mismatch');
    expect(rsaOnly.log).not.toMatch(/Accepted publickey|Failed publickey|Postponed publickey/);
  });

  it('reports an unusable private key without echoing it', async () => {
    const err = await ssh
      .connect({ host: good.address, port: good.port, username: 'root', privateKey: 'not-a-key-SECRETSECRET', fingerprint: good.fingerprint }, { timeoutMs: 5000 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(SshConnectError);
    expect(err.reason).toBe('auth_failed');
    expect(err.message).not.toContain('SECRETSECRET');
  });

  it('reports a refused port as unreachable', async () => {
    const key = await ssh.scanHostKey(`${prefix}9`, 1, { timeoutMs: 2000 }).catch((e) => e);
    expect(key.message).toBe('Connection refused');
  });
});
