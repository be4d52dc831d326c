import { renameSync, writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/**
 * The state scripts/test-all.sh's watchdog reads: which test files run, since when, and at the
 * end which failed. A file that runs synchronously forever (a child process that never exits
 * under execFileSync, say) is out of reach of every vitest timeout, and the run would otherwise
 * wait, silently, until CI's limit. Plain lines, for bash:
 *   running <epoch seconds> <project> <file>
 *   failed <project> <file>            (at the end)
 *   errors <count>                     (at the end: errors no file owns)
 * Writes $IRONLENS_VITEST_STATE (replaced whole each time); does nothing without it.
 */
export default class VitestStateReporter implements Reporter {
  private readonly path = process.env.IRONLENS_VITEST_STATE;
  private readonly running = new Map<string, number>();

  // From the moment a worker takes the file, before its imports run (a file can be stuck there too).
  onTestModuleQueued(m: TestModule): void {
    this.started(m);
  }

  onTestModuleStart(m: TestModule): void {
    this.started(m);
  }

  onTestModuleEnd(m: TestModule): void {
    this.running.delete(this.key(m));
    this.write([]);
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    const failed = modules.filter((m) => m.state() === 'failed').map((m) => `failed ${this.key(m)}`);
    this.running.clear();
    this.write([...failed, `errors ${unhandledErrors.length}`]);
  }

  private started(m: TestModule): void {
    if (this.running.has(this.key(m))) return;
    this.running.set(this.key(m), Math.floor(Date.now() / 1000));
    this.write([]);
  }

  private key(m: TestModule): string {
    return `${m.project.name} ${m.relativeModuleId}`;
  }

  private write(tail: string[]): void {
    if (!this.path) return;
    const lines = [...[...this.running].map(([k, since]) => `running ${since} ${k}`), ...tail];
    writeFileSync(`${this.path}.tmp`, lines.length ? `${lines.join('\n')}\n` : '');
    renameSync(`${this.path}.tmp`, this.path);
  }
}
