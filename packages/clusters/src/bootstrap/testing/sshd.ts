import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { freeTcpPort, sleep } from '@ironlens/core/testing';

const SSHD = '/usr/sbin/sshd';

/** Throws (never skips) when a tool the tests drive is missing. */
export function requireTool(path: string, hint: string): void {
  if (!existsSync(path)) throw new Error(`${path} is missing: ${hint} (scripts/install-test-deps.sh installs it)`);
}

/** A loopback base `127.<a>.<b>.` picked at random, so parallel test files rarely meet. */
export function randomLoopbackPrefix(): string {
  const a = 20 + Math.floor(Math.random() * 200);
  const b = Math.floor(Math.random() * 250);
  return `127.${a}.${b}.`;
}


/** A fresh ed25519 key pair made by `ssh-keygen`; returns the private key path (`.pub` beside it). */
export function newKey(file: string, type: 'ed25519' | 'rsa' | 'ecdsa' = 'ed25519'): string {
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'ironlens-test', '-f', file]);
  return file;
}

/** What `ssh-keygen -lf` prints for a key: the `SHA256:…` field (the expectation is the tool's, not ours). */
export function sshKeygenFingerprint(pubFile: string): string {
  const out = execFileSync('ssh-keygen', ['-lf', pubFile], { encoding: 'utf8' });
  const m = /(SHA256:[A-Za-z0-9+/]{43})/.exec(out);
  if (!m) throw new Error(`ssh-keygen -lf printed no fingerprint: ${out}`);
  return m[1];
}

async function waitListening(host: string, port: number, child: ChildProcess, log: () => string): Promise<void> {
  const end = Date.now() + 10_000;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`sshd exited ${child.exitCode}: ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`sshd on ${host}:${port} did not listen: ${log()}`);
}

/** A real OpenSSH server on a loopback address with a host key of its own. */
export class TestSshd {
  private child?: ChildProcess;
  private output = '';
  private constructor(
    readonly dir: string,
    readonly address: string,
    readonly port: number,
    public hostKey: string,
    readonly authorizedKeys: string,
    /** When set, root may also log in with this password (see `run`). */
    readonly rootPassword?: string,
  ) {}

  /** Starts `sshd -D -e` (root login by key only, as on a fresh node). */
  static async start(opts: { dir: string; address: string; port?: number; hostKey: string; authorizedKeys: string; rootPassword?: string }): Promise<TestSshd> {
    requireTool(SSHD, 'Debian openssh-server');
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    mkdirSync(opts.dir, { recursive: true });
    const port = opts.port ?? (await freeTcpPort(opts.address));
    const s = new TestSshd(opts.dir, opts.address, port, opts.hostKey, opts.authorizedKeys, opts.rootPassword);
    await s.run();
    return s;
  }

  get fingerprint(): string {
    return sshKeygenFingerprint(`${this.hostKey}.pub`);
  }

  private async run(): Promise<void> {
    const config = join(this.dir, 'sshd_config');
    writeFileSync(
      config,
      [
        `ListenAddress ${this.address}`,
        `Port ${this.port}`,
        `HostKey ${this.hostKey}`,
        `PidFile ${join(this.dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${this.authorizedKeys}`,
        this.rootPassword ? 'PermitRootLogin yes' : 'PermitRootLogin prohibit-password',
        this.rootPassword ? 'PasswordAuthentication yes' : 'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'UsePAM no',
        'StrictModes no',
        'LogLevel VERBOSE',
        'MaxStartups 100:30:200',
        'Subsystem sftp internal-sftp',
        '',
      ].join('\n'),
    );
    this.output = '';
    let argv = [SSHD, '-D', '-e', '-f', config];
    if (this.rootPassword) {
      // The machine's /etc/shadow is left alone: this sshd runs in a mount namespace of its own
      // where a copy, with root's password set, is bind-mounted over it.
      const shadow = join(this.dir, 'shadow');
      const hash = execFileSync('openssl', ['passwd', '-6', '-stdin'], { input: this.rootPassword, encoding: 'utf8' }).trim();
      const lines = readFileSync('/etc/shadow', 'utf8').split('\n').map((l) => (l.startsWith('root:') ? ['root', hash, ...l.split(':').slice(2)].join(':') : l));
      writeFileSync(shadow, lines.join('\n'), { mode: 0o600 });
      argv = ['unshare', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', 'mount --bind "$1" /etc/shadow && shift && exec "$@"', 'sh', shadow, ...argv];
    }
    const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d) => (this.output += d));
    child.stderr?.on('data', (d) => (this.output += d));
    this.child = child;
    await waitListening(this.address, this.port, child, () => this.output);
  }

  /** sshd's own log (connections, refused keys). */
  get log(): string {
    return this.output;
  }

  /** Stops the server and every session it started (its process group). */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child?.pid || child.exitCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await gone;
  }

  /** The same address and port, now with another host key: what a replaced (or spoofed) machine looks like. */
  async restartWithKey(hostKey: string): Promise<void> {
    await this.stop();
    this.hostKey = hostKey;
    await this.run();
  }
}
