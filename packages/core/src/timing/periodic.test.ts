import { describe, expect, it } from 'vitest';
import { waitUntil } from '../testing';
import { Periodic } from './periodic';
import { sleep } from './sleep';

describe('Periodic', () => {
  it('never overlaps a run still going: the ticks meanwhile are skipped', async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const started = Date.now();
    const p = new Periodic(async () => {
      running++;
      most = Math.max(most, running);
      runs++;
      await sleep(60);
      running--;
    }, 10).start();
    // 200 ms at least, and two runs (a loaded machine may tick late): the ticks that fell in a run were skipped.
    await waitUntil('two runs, 200 ms in', () => runs >= 2 && Date.now() - started >= 200, 10_000, 5);
    p.stop();
    await sleep(70);
    expect(most).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(runs).toBeLessThan(10);
  });

  it('answers undefined to run() while a run is going, and goes on after a failed run', async () => {
    const errors: string[] = [];
    let n = 0;
    const p = new Periodic(
      async () => {
        n++;
        await sleep(20);
        if (n === 1) throw new Error('first fails');
        return n;
      },
      5,
      (e) => errors.push(e.message),
    );
    const first = p.run();
    expect(await p.run()).toBeUndefined();
    await expect(first).rejects.toThrow('first fails');
    p.start();
    await sleep(80);
    p.stop();
    await sleep(40); // the run the last tick started ends
    expect(n).toBeGreaterThanOrEqual(2);
    expect(await p.run()).toBeGreaterThan(1);
  });
});
