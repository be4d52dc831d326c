/**
 * Every process the benchmark starts is registered here and stopped at the end, on
 * success, on failure and on SIGINT/SIGTERM: by its own pid, never by name.
 */
import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';

const running = new Set<ChildProcess>();

/** True once SIGINT/SIGTERM arrived: failures that follow are the stop itself. */
export let interrupted = false;

export function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

export function start(cmd: string, args: string[], opts: SpawnOptions = {}): ChildProcess {
  return track(spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], ...opts }));
}

/** Sends `signal`, then SIGKILL after `graceMs` if the process is still there. */
export function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => stop(c)));
}

/** Last-resort cleanup when the orchestrator is interrupted. */
export function installCleanup(onExit: () => void = () => {}): void {
  const bail = (sig: NodeJS.Signals) => {
    interrupted = true;
    process.stderr.write(`\n[bench] ${sig}: stopping every process started by the benchmark\n`);
    stopAll().finally(() => {
      onExit();
      process.exit(130);
    });
  };
  process.once('SIGINT', bail);
  process.once('SIGTERM', bail);
  process.once('exit', () => {
    for (const c of running) c.kill('SIGKILL');
    onExit();
  });
}

/** Waits for a child started with an IPC channel to send `{ port }`. */
export function waitForPort(child: ChildProcess, what: string, timeoutMs = 60_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not report its port within ${timeoutMs} ms`)), timeoutMs);
    child.once('message', (m: { port?: number; error?: string }) => {
      clearTimeout(timer);
      if (typeof m?.port === 'number') resolve(m.port);
      else reject(new Error(`${what} failed to start: ${m?.error ?? JSON.stringify(m)}`));
    });
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited before listening (code ${code}, signal ${sig})`));
    });
  });
}
