/**
 * Starts the control-plane processes with argument arrays (never a shell), logs
 * each to its own file, and stops every one of them by pid: on `stopAll()`, and
 * also when the Node process exits or is interrupted (a failed or killed test run
 * must not leave etcd or kube-apiserver behind).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { sleep, waitUntil } from '@ironlens/core/testing';

export interface Managed {
  name: string;
  pid: number;
  logFile: string;
  child: ChildProcess;
  exited: Promise<number | string>;
  /** Exit code/signal once exited. */
  exit?: number | string;
}

const live = new Set<Managed>();
let hooksInstalled = false;

function killAllSync(): void {
  for (const m of live) {
    try {
      process.kill(m.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  live.clear();
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllSync);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      // Someone else handles this signal (e.g. the CLI's graceful `up`): leave it to them.
      if (process.listenerCount(sig) > 0) return;
      killAllSync();
      process.kill(process.pid, sig);
    });
  }
}

export class Supervisor {
  readonly procs: Managed[] = [];

  constructor(private readonly logDir: string) {
    installHooks();
  }

  start(name: string, bin: string, args: string[], env: NodeJS.ProcessEnv = process.env): Managed {
    const logFile = join(this.logDir, `${name}.log`);
    const fd = openSync(logFile, 'a');
    writeFileSync(fd, `# ${bin} ${args.join(' ')}\n`);
    const child = spawn(bin, args, { stdio: ['ignore', fd, fd], env, detached: false });
    closeSync(fd);
    if (child.pid === undefined) throw new Error(`could not start ${name} (${bin})`);
    const m: Managed = {
      name,
      pid: child.pid,
      logFile,
      child,
      exited: new Promise((resolve) => {
        child.once('exit', (code, signal) => {
          m.exit = code ?? signal ?? 'unknown';
          live.delete(m);
          resolve(m.exit);
        });
        child.once('error', (e) => {
          m.exit = `spawn error: ${e.message}`;
          live.delete(m);
          resolve(m.exit);
        });
      }),
    };
    live.add(m);
    this.procs.push(m);
    return m;
  }

  /** Last lines of a process's log, for error messages. */
  tail(m: Managed, lines = 25): string {
    if (!existsSync(m.logFile)) return '';
    return readFileSync(m.logFile, 'utf8').split('\n').slice(-lines).join('\n');
  }

  /** SIGTERM in reverse start order, SIGKILL whatever is left after `graceMs`. */
  async stopAll(graceMs = 5000): Promise<void> {
    for (const m of [...this.procs].reverse()) {
      if (m.exit !== undefined) continue;
      try {
        process.kill(m.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      const done = await Promise.race([m.exited.then(() => true), sleep(graceMs).then(() => false)]);
      if (!done) {
        try {
          process.kill(m.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
        await Promise.race([m.exited, sleep(2000)]);
      }
      live.delete(m);
    }
  }
}

/**
 * Polls `check` until it returns true (a throw counts as "not yet"; the last one is reported);
 * fails early, with the tail of its log, if `proc` exits. Default interval is 250 ms.
 */
export async function waitForServing(
  what: string,
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; proc?: Managed; sup?: Supervisor; intervalMs?: number },
): Promise<void> {
  let lastErr = '';
  const exitedError = (p: Managed) => new Error(`${p.name} exited (${p.exit}) while waiting for ${what}; log ${p.logFile}:\n${opts.sup?.tail(p) ?? ''}`);
  try {
    await waitUntil(
      what,
      async () => {
        if (opts.proc?.exit !== undefined) throw exitedError(opts.proc);
        try {
          return await check();
        } catch (e) {
          lastErr = (e as Error).message;
          return false;
        }
      },
      opts.timeoutMs,
      opts.intervalMs ?? 250,
    );
  } catch (e) {
    if (opts.proc?.exit !== undefined) throw exitedError(opts.proc);
    const tail = opts.proc && opts.sup ? `\nlog ${opts.proc.logFile}:\n${opts.sup.tail(opts.proc)}` : '';
    throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${lastErr})` : ''}${tail}`, { cause: e });
  }
}
