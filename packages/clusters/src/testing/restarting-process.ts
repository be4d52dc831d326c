import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';

/**
 * A controller run out of cluster as its pod runs it (the Envoy Gateway and LeaderWorkerSet
 * controllers of the gateway and deployments suites): in a process group of its own, its output
 * appended to `logPath`, restarted one second after it exits until `stop()`, which ends it with
 * SIGTERM (SIGKILL 5 s later).
 */
export class RestartingProcess {
  private child?: ChildProcess;
  private stopped = false;
  private readonly log$;
  /** How many times the process was started. */
  starts = 0;

  constructor(readonly logPath: string) {
    this.log$ = createWriteStream(logPath, { flags: 'a' });
  }

  /** A line of the test's own in the log. */
  note(line: string): void {
    this.log$.write(`[test] ${line}\n`);
  }

  start(command: string, args: string[], env: NodeJS.ProcessEnv): void {
    if (this.stopped) return;
    this.starts++;
    const child = spawn(command, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d: Buffer) => this.log$.write(d));
    child.stderr?.on('data', (d: Buffer) => this.log$.write(d));
    child.once('exit', () => {
      if (!this.stopped) setTimeout(() => this.start(command, args, env), 1000);
    });
    this.child = child;
  }

  /** The exit code of the process started last, or null while it runs (or before one started). */
  exitCode(): number | null {
    return this.child?.exitCode ?? null;
  }

  /** The end of the log (for a failing assertion's message). */
  log(): string {
    return existsSync(this.logPath) ? readFileSync(this.logPath, 'utf8').slice(-4000) : '';
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const c = this.child;
    if (c?.pid && c.exitCode === null && c.signalCode === null) {
      const gone = new Promise((r) => c.once('exit', r));
      const kill = (sig: NodeJS.Signals) => {
        try {
          process.kill(-(c.pid as number), sig);
        } catch {
          // already gone
        }
      };
      kill('SIGTERM');
      const t = setTimeout(() => kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(t);
    }
    await new Promise<void>((r) => this.log$.end(() => r()));
  }
}
