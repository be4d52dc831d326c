import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Supervisor, waitForServing } from './process.supervisor';

let dir: string;
let sup: Supervisor;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-supervisor-'));
  sup = new Supervisor(dir);
});
afterEach(async () => {
  await sup.stopAll(1000);
  rmSync(dir, { recursive: true, force: true });
});

describe('waitForServing', () => {
  it('fails early with the log tail when the process it waits for exits', async () => {
    const proc = sup.start('dies', process.execPath, ['-e', 'console.log("bad flag --nope"); process.exit(3)']);
    const started = Date.now();
    const err = await waitForServing('dies /healthz', async () => false, { timeoutMs: 30_000, proc, sup, intervalMs: 20 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^dies exited \(3\) while waiting for dies \/healthz/);
    expect((err as Error).message).toContain('bad flag --nope');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('counts a throwing check as not ready yet, and names the last error on timeout', async () => {
    let calls = 0;
    const err = await waitForServing(
      'thing',
      async () => {
        calls++;
        throw new Error(`connect ECONNREFUSED #${calls}`);
      },
      { timeoutMs: 200, intervalMs: 20 },
    ).catch((e: Error) => e);
    expect(calls).toBeGreaterThan(2);
    expect((err as Error).message).toMatch(/^timed out after 200 ms waiting for thing \(last error: connect ECONNREFUSED #\d+\)$/);
  });

  it('returns once the check holds', async () => {
    let calls = 0;
    await waitForServing('third time', async () => ++calls === 3, { timeoutMs: 5_000, intervalMs: 10 });
    expect(calls).toBe(3);
  });
});
