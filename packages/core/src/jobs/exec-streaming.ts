import { type ChildProcess, spawn } from 'node:child_process';
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
    const child = spawn(argv[0], argv.slice(1), { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const group = new ProcessGroup(child, opts.killGraceMs ?? 3000);
    const stdout = new LineCollector((line) => opts.onLine?.(line, 'stdout'));
    const stderr = new LineCollector((line) => opts.onLine?.(line, 'stderr'));
    child.stdout.on('data', (c: Buffer) => stdout.feed(c));
    child.stderr.on('data', (c: Buffer) => stderr.feed(c));

    let aborted = false;
    let timedOut = false;
    const onAbort = () => {
      aborted = true;
      group.stop();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const timeoutTimer =
      opts.timeoutMs && opts.timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            group.stop();
          }, opts.timeoutMs)
        : undefined;
    const cleanup = () => {
      opts.signal?.removeEventListener('abort', onAbort);
      clearTimeout(timeoutTimer);
      if (!aborted && !timedOut) group.cancelKill();
    };

    child.on('error', (err: NodeJS.ErrnoException) => {
      cleanup();
      if (err.code === 'ENOENT') {
        return reject(Object.assign(new ExecError(argv, { stdout: '', stderr: `${argv[0]}: command not found`, code: 127 }), { notFound: true }));
      }
      reject(err);
    });
    child.on('close', (code, signal) => {
      cleanup();
      stdout.flush();
      stderr.flush();
      // The group may still hold children that ignored SIGTERM: make sure they go too.
      if (aborted || timedOut) group.kill('SIGKILL');
      if (aborted) return reject(new ExecAbortedError(argv, opts.signal?.reason));
      const result: ExecResult = { stdout: stdout.text, stderr: stderr.text, code: code ?? (signal ? 128 : -1) };
      if (timedOut) result.stderr += `\n${argv[0]}: timed out after ${opts.timeoutMs} ms`;
      if (result.code !== 0 && !opts.allowFailure) return reject(new ExecError(argv, result));
      resolve(result);
    });
  });
}

/** One output stream: keeps its last `KEEP_BYTES`, hands each complete line (`\n`, `\r\n`, `\r`) to `onLine`. */
class LineCollector {
  text = '';
  private partial = '';

  constructor(private readonly onLine: (line: string) => void) {}

  feed(chunk: Buffer): void {
    const text = chunk.toString('utf8');
    this.text += text;
    if (this.text.length > KEEP_BYTES) this.text = this.text.slice(-KEEP_BYTES);
    const parts = (this.partial + text).split(/\r\n|\n|\r/);
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.onLine(line);
  }

  /** The last line, when the output did not end with a line break. */
  flush(): void {
    if (this.partial) this.onLine(this.partial);
    this.partial = '';
  }
}

/** The child's process group (it was spawned `detached`): stopped with SIGTERM, then SIGKILL after a grace time. */
class ProcessGroup {
  private killTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly child: ChildProcess,
    private readonly graceMs: number,
  ) {}

  kill(sig: NodeJS.Signals): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, sig);
    } catch {
      // Already gone.
    }
  }

  stop(): void {
    this.kill('SIGTERM');
    this.killTimer = setTimeout(() => this.kill('SIGKILL'), this.graceMs);
    this.killTimer.unref();
  }

  /** The command ended by itself: no SIGKILL is due. */
  cancelKill(): void {
    clearTimeout(this.killTimer);
  }
}
