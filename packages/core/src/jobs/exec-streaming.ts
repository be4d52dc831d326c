import { spawn } from 'node:child_process';
import { ExecError, type ExecResult } from '../exec';

export interface ExecStreamingOptions {
  /** Aborting kills the command's whole process group (SIGTERM, then SIGKILL after `killGraceMs`). */
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Called for every output line (`\n`, `\r\n` or `\r` ends a line), without the line ending. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Kill the command after this many milliseconds. Default is `0` (no limit). */
  timeoutMs?: number;
  /** Time between SIGTERM and SIGKILL. Default is `3000`. */
  killGraceMs?: number;
  /** Resolve instead of reject on a non-zero exit. Default is `false`. */
  allowFailure?: boolean;
}

const KEEP_BYTES = 1024 * 1024;

/** Thrown when the signal aborted the command; `reason` is the signal's reason. */
export class ExecAbortedError extends Error {
  constructor(
    readonly argv: string[],
    readonly reason: unknown,
  ) {
    super(`${argv[0]} was stopped: ${reason instanceof Error ? reason.message : String(reason ?? 'aborted')}`);
    this.name = 'ExecAbortedError';
  }
}

/**
 * Runs a command from an argument array (never a shell), streaming its output line by
 * line. The command runs in a process group of its own, so cancelling kills it together
 * with every process it started (kind starts docker, kubectl…).
 */
export function execStreaming(argv: string[], opts: ExecStreamingOptions = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    if (argv.length === 0) return reject(new Error('execStreaming: empty argv'));
    if (opts.signal?.aborted) return reject(new ExecAbortedError(argv, opts.signal.reason));
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = { stdout: '', stderr: '' };
    const partial = { stdout: '', stderr: '' };
    let aborted = false;
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    let timeoutTimer: NodeJS.Timeout | undefined;

    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // Already gone.
      }
    };
    const stop = () => {
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), opts.killGraceMs ?? 3000);
      killTimer.unref();
    };
    const onAbort = () => {
      aborted = true;
      stop();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.timeoutMs && opts.timeoutMs > 0) {
      timeoutTimer = setTimeout(() => {
        timedOut = true;
        stop();
      }, opts.timeoutMs);
    }

    const feed = (stream: 'stdout' | 'stderr', chunk: Buffer) => {
      const text = chunk.toString('utf8');
      out[stream] += text;
      if (out[stream].length > KEEP_BYTES) out[stream] = out[stream].slice(-KEEP_BYTES);
      const parts = (partial[stream] + text).split(/\r\n|\n|\r/);
      partial[stream] = parts.pop() ?? '';
      for (const line of parts) opts.onLine?.(line, stream);
    };
    child.stdout.on('data', (c: Buffer) => feed('stdout', c));
    child.stderr.on('data', (c: Buffer) => feed('stderr', c));

    child.on('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      if (err.code === 'ENOENT') {
        return reject(Object.assign(new ExecError(argv, { stdout: '', stderr: `${argv[0]}: command not found`, code: 127 }), { notFound: true }));
      }
      reject(err);
    });
    child.on('close', (code, signal) => {
      cleanup();
      for (const stream of ['stdout', 'stderr'] as const) {
        if (partial[stream]) opts.onLine?.(partial[stream], stream);
      }
      // The group may still hold children that ignored SIGTERM: make sure they go too.
      if (aborted || timedOut) killGroup('SIGKILL');
      if (aborted) return reject(new ExecAbortedError(argv, opts.signal?.reason));
      const result: ExecResult = { stdout: out.stdout, stderr: out.stderr, code: code ?? (signal ? 128 : -1) };
      if (timedOut) result.stderr += `\n${argv[0]}: timed out after ${opts.timeoutMs} ms`;
      if (result.code !== 0 && !opts.allowFailure) return reject(new ExecError(argv, result));
      resolve(result);
    });

    function cleanup() {
      opts.signal?.removeEventListener('abort', onAbort);
      if (timeoutTimer) clearTimeout(timeoutTimer);
      if (killTimer && !aborted && !timedOut) clearTimeout(killTimer);
    }
  });
}
