import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../testing';

/**
 * The data dir's lock (review 1, M5), between processes as serve takes it: the kernel drops it
 * when its holder has exited, and a taker waits a short bounded time for that, so a restart right
 * after `kill -9` is not refused while the killed process is still exiting.
 */
const FILE_LOCK = new URL('./file-lock.ts', import.meta.url).pathname;

let dir: string;
const children: ChildProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-file-lock-'));
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A Node process that runs `body` with `tryLockFile` in scope; what it prints, and its exit. */
function run(body: string, nodeFlags: string[] = []): { child: ChildProcess; out: () => string; exited: Promise<void> } {
  const script = `const { tryLockFile } = await import(${JSON.stringify(FILE_LOCK)});\n${body}`;
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, out: () => out, exited };
}

/**
 * Holds the lock without keeping what tryLockFile returned, and collects its garbage before it
 * says so: the lock must outlive the collection of its handle (better-sqlite3 closes a collected
 * connection).
 */
const holder = (file: string) =>
  run(`if (!tryLockFile(${JSON.stringify(file)}, { waitMs: 0 })) process.exit(3); for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); } console.log('held'); setInterval(() => {}, 1 << 30);`, ['--expose-gc']);
const taker = (file: string, opts = '{}') => run(`console.log('trying'); console.log(tryLockFile(${JSON.stringify(file)}, ${opts}) ? 'locked' : 'busy');`);

describe('tryLockFile between processes', () => {
  it('a taker that starts while the holder is still alive gets the lock once the holder is killed (kill -9), within its default wait', async () => {
    const file = join(dir, 'serve.lock');
    const a = holder(file);
    await waitFor('the holder to take the lock', a.out, (o) => o.includes('held') || a.child.exitCode !== null, 20_000);
    expect(a.out()).toContain('held');
    const b = taker(file);
    // The taker is about to try (or trying): only now is the holder killed.
    await waitFor('the taker to start trying', b.out, (o) => o.includes('trying') || b.child.exitCode !== null, 20_000);
    a.child.kill('SIGKILL');
    await b.exited;
    expect(b.out()).toBe('trying\nlocked\n');
  });

  it('a taker refuses (null) when the holder keeps the lock past the wait, its handle collected or not', async () => {
    const file = join(dir, 'serve.lock');
    const a = holder(file);
    await waitFor('the holder to take the lock', a.out, (o) => o.includes('held') || a.child.exitCode !== null, 20_000);
    expect(a.out()).toContain('held');
    const b = taker(file, '{ waitMs: 200 }');
    await b.exited;
    expect(b.out()).toBe('trying\nbusy\n');
    expect(a.child.exitCode).toBeNull();
  });
});
