import { execFile } from 'node:child_process';

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface ExecOptions {
  /** Kill the command after this many milliseconds. Default is `60000`. */
  timeoutMs?: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Resolve instead of reject on a non-zero exit. Default is `false`. */
  allowFailure?: boolean;
}

export class ExecError extends Error {
  constructor(
    readonly argv: string[],
    readonly result: ExecResult,
  ) {
    super(`${argv[0]} exited ${result.code}: ${(result.stderr || result.stdout).trim().slice(0, 500)}`);
    this.name = 'ExecError';
  }
}

/** The runner every adapter uses: an argument array, never a shell string. */
export type Exec = (argv: string[], opts?: ExecOptions) => Promise<ExecResult>;

export const exec: Exec = (argv, opts = {}) =>
  new Promise((resolve, reject) => {
    if (argv.length === 0) return reject(new Error('exec: empty argv'));
    execFile(
      argv[0],
      argv.slice(1),
      { timeout: opts.timeoutMs ?? 60_000, signal: opts.signal, env: opts.env, cwd: opts.cwd, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : -1) : 0;
        const result = { stdout: String(stdout ?? ''), stderr: String(stderr ?? ''), code };
        if (err && !opts.allowFailure) {
          if ((err as { code?: unknown }).code === 'ENOENT') return reject(Object.assign(new ExecError(argv, { ...result, stderr: `${argv[0]}: command not found` }), { notFound: true }));
          return reject(new ExecError(argv, result));
        }
        resolve(result);
      },
    );
  });

/** True while a process with this pid exists (signal 0 probes without signalling). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
