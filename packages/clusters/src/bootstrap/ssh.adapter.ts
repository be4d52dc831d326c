import { createHash } from 'node:crypto';
import ssh2, { type Client as ClientType, type ConnectConfig } from 'ssh2';

// ssh2 is CommonJS: under Node's own ESM loader only its default export is reliable.
const { Client } = ssh2;

/**
 * Host-key algorithms offered to a server, most preferred first: a host that has an ed25519
 * key shows that one, so a scan and a later pinned connection see the same key.
 */
export const HOST_KEY_ALGORITHMS = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] as const;

/** A server's host key as read during the key exchange. */
export interface HostKey {
  /** The key's type as `ssh-keygen` names it in a `.pub` file (`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`…). */
  algorithm: string;
  /** `SHA256:` and the unpadded base64 of the key blob's SHA-256: what `ssh-keygen -lf` prints. */
  fingerprint: string;
  /** The key blob, base64: the second field of a `known_hosts` line. */
  blob: string;
}

/** How to log in. Exactly one source of credentials is used by the caller's choice. */
export interface SshAuth {
  username: string;
  privateKey?: string;
  password?: string;
}

export interface SshTarget extends SshAuth {
  host: string;
  port: number;
  /** The pinned fingerprint: any other host key fails the connection before authentication. */
  fingerprint: string;
}

export interface SshExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** One authenticated connection to a host whose key matched its pin. */
export interface SshSession {
  readonly hostKey: HostKey;
  /** Runs a fixed command (never built from input) and collects its output. */
  exec(command: string, timeoutMs?: number): Promise<SshExecResult>;
  close(): void;
}

/** Why a pinned connection failed: the key differed, the host did not answer, or login was refused. */
export class SshConnectError extends Error {
  constructor(
    message: string,
    readonly reason: 'host_key_mismatch' | 'unreachable' | 'auth_failed',
    readonly seen?: HostKey,
  ) {
    super(message);
    this.name = 'SshConnectError';
  }
}

/** The capability the bootstrap needs from SSH. */
export interface SshHosts {
  /** Reads the host's key without authenticating (no credentials are sent). */
  scanHostKey(host: string, port: number, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<HostKey>;
  /** Connects with the pinned key only and logs in. */
  connect(target: SshTarget, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<SshSession>;
}

/** The fingerprint `ssh-keygen -lf` prints for a key blob. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type named at the start of an SSH public key blob (a length-prefixed string). */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return 'unknown';
  const n = blob.readUInt32BE(0);
  if (n <= 0 || n > 64 || blob.length < 4 + n) return 'unknown';
  return blob.subarray(4, 4 + n).toString('latin1');
}

function hostKeyOf(blob: Buffer): HostKey {
  return { algorithm: keyTypeOf(blob), fingerprint: fingerprintOf(blob), blob: blob.toString('base64') };
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { level?: string };
  if (e?.code === 'ECONNREFUSED') return 'Connection refused';
  if (e?.code === 'EHOSTUNREACH') return 'No route to host';
  if (e?.code === 'ENOTFOUND' || e?.code === 'EAI_AGAIN') return 'Name does not resolve';
  if (/timed out/i.test(e?.message ?? '')) return 'Connection timed out';
  return e?.message || String(err);
}

/** `ssh2` with pinned host keys. */
export class Ssh2Hosts implements SshHosts {
  scanHostKey(host: string, port: number, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<HostKey> {
    return new Promise((resolve, reject) => {
      const client = new Client();
      let seen: HostKey | undefined;
      let settled = false;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        client.destroy();
        if (seen) resolve(seen);
        else reject(err ?? new Error('Connection closed before the host key was read'));
      };
      const timer = setTimeout(() => finish(new Error('Connection timed out')), opts.timeoutMs);
      const onAbort = () => finish(new Error('cancelled'));
      if (opts.signal?.aborted) return finish(new Error('cancelled'));
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      client.on('error', (err) => finish(new Error(describe(err))));
      client.on('close', () => finish());
      client.on('ready', () => finish(new Error('the server let us in without credentials')));
      const config: ConnectConfig = {
        host,
        port,
        username: 'ironlens-host-key-scan',
        readyTimeout: opts.timeoutMs,
        algorithms: { serverHostKey: [...HOST_KEY_ALGORITHMS] },
        // Refusing the key ends the handshake before any authentication is attempted.
        hostVerifier: (key: Buffer) => {
          seen = hostKeyOf(key);
          return false;
        },
      };
      client.connect(config);
    });
  }

  connect(target: SshTarget, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<SshSession> {
    return new Promise((resolve, reject) => {
      const client = new Client();
      let seen: HostKey | undefined;
      let settled = false;
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        client.destroy();
        reject(err);
      };
      const timer = setTimeout(() => fail(new SshConnectError('Connection timed out', 'unreachable')), opts.timeoutMs);
      const onAbort = () => fail(new SshConnectError('cancelled', 'unreachable'));
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      client.on('error', (err: Error & { level?: string }) => {
        if (seen && seen.fingerprint !== target.fingerprint) {
          return fail(new SshConnectError(`host key ${seen.fingerprint} (${seen.algorithm}) does not match the pinned ${target.fingerprint}`, 'host_key_mismatch', seen));
        }
        if (err.level === 'client-authentication') return fail(new SshConnectError(`authentication as ${target.username} failed`, 'auth_failed', seen));
        fail(new SshConnectError(describe(err), 'unreachable', seen));
      });
      client.on('close', () => fail(new SshConnectError('Connection closed', 'unreachable', seen)));
      client.on('ready', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        const hostKey = seen!;
        resolve({
          hostKey,
          exec: (command, timeoutMs = 30_000) => runCommand(client, command, timeoutMs, opts.signal),
          close: () => client.end(),
        });
      });
      const config: ConnectConfig = {
        host: target.host,
        port: target.port,
        username: target.username,
        privateKey: target.privateKey,
        password: target.password,
        tryKeyboard: false,
        readyTimeout: opts.timeoutMs,
        algorithms: { serverHostKey: [...HOST_KEY_ALGORITHMS] },
        hostVerifier: (key: Buffer) => {
          seen = hostKeyOf(key);
          return seen.fingerprint === target.fingerprint;
        },
      };
      try {
        client.connect(config);
      } catch (err) {
        // ssh2 parses the private key up front (never echoed: its message names the format only).
        fail(new SshConnectError(`the private key cannot be used: ${(err as Error).message.replace(/^Cannot parse privateKey: /, '')}`, 'auth_failed'));
      }
    });
  }
}

function runCommand(client: ClientType, command: string, timeoutMs: number, signal?: AbortSignal): Promise<SshExecResult> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, stream) => {
      if (err) return reject(err);
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => {
        stream.close();
        reject(new Error(`${command.split(' ')[0]} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = () => {
        clearTimeout(timer);
        stream.close();
        reject(new Error('cancelled'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      stream.on('data', (d: Buffer) => {
        if (stdout.length < 1 << 20) stdout += d.toString('utf8');
      });
      stream.stderr.on('data', (d: Buffer) => {
        if (stderr.length < 1 << 20) stderr += d.toString('utf8');
      });
      stream.on('close', (code: number | null) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve({ code: code ?? -1, stdout, stderr });
      });
    });
  });
}

/** Runs `fn` over `items` with at most `limit` at once; results keep the input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
