import { isAppError } from '@ironlens/core';
import { describe, expect, it } from 'vitest';
import { type BmcCallKind, BmcScheduler } from './bmc-scheduler';

/**
 * The BMC call scheduler's rules, each with calls a test holds and releases (order by events,
 * never by time): one call at a time per host, the global limit, actions before status reads,
 * the bounded queues, the stagger between power-ons.
 */

interface Held {
  name: string;
  release(): void;
}

/** Submits calls and records when each starts; each call runs until the test releases it. */
function harness(s: BmcScheduler) {
  const started: string[] = [];
  const running = new Map<string, Held>();
  const submit = (name: string, host: string, kind: BmcCallKind) =>
    s.run(host, kind, async () => {
      started.push(name);
      await new Promise<void>((release) => running.set(name, { name, release }));
      return name;
    });
  /** Lets a started call end, and waits until the scheduler started what comes next. */
  const finish = async (name: string) => {
    const h = running.get(name);
    if (!h) throw new Error(`${name} is not running (started: ${started.join(', ')})`);
    running.delete(name);
    h.release();
    // Two turns of the microtask queue: the call's end, then the next call's start.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  const settle = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { started, submit, finish, settle, running };
}

describe('BmcScheduler', () => {
  it('runs calls to one host one after another, in the order asked', async () => {
    const h = harness(new BmcScheduler({ limit: 8 }));
    const all = ['a1', 'a2', 'a3'].map((n) => h.submit(n, 'bmc-a', 'action'));
    await h.settle();
    expect(h.started).toEqual(['a1']);
    await h.finish('a1');
    expect(h.started).toEqual(['a1', 'a2']);
    await h.finish('a2');
    await h.finish('a3');
    expect(await Promise.all(all)).toEqual(['a1', 'a2', 'a3']);
  });

  it('runs at most `limit` calls at once over every host', async () => {
    const s = new BmcScheduler({ limit: 2 });
    const h = harness(s);
    const all = ['x', 'y', 'z'].map((n) => h.submit(n, `bmc-${n}`, 'action'));
    await h.settle();
    expect(h.started).toEqual(['x', 'y']);
    expect(s.inFlight).toBe(2);
    await h.finish('y');
    expect(h.started).toEqual(['x', 'y', 'z']);
    await h.finish('x');
    await h.finish('z');
    await Promise.all(all);
    expect(s.inFlight).toBe(0);
  });

  it('starts a waiting action of a host before the status reads that waited longer', async () => {
    const h = harness(new BmcScheduler({ limit: 8, maxReadsPerHost: 16 }));
    const calls = [h.submit('r1', 'bmc', 'read'), h.submit('r2', 'bmc', 'read'), h.submit('r3', 'bmc', 'read'), h.submit('act', 'bmc', 'action')];
    await h.settle();
    expect(h.started).toEqual(['r1']);
    await h.finish('r1');
    expect(h.started).toEqual(['r1', 'act']);
    await h.finish('act');
    await h.finish('r2');
    await h.finish('r3');
    await Promise.all(calls);
    expect(h.started).toEqual(['r1', 'act', 'r2', 'r3']);
  });

  it('gives a free slot of the global limit to a waiting action before an older read of another host', async () => {
    const h = harness(new BmcScheduler({ limit: 1 }));
    const calls = [h.submit('busy', 'bmc-1', 'action'), h.submit('read', 'bmc-2', 'read'), h.submit('act', 'bmc-3', 'action')];
    await h.settle();
    await h.finish('busy');
    expect(h.started).toEqual(['busy', 'act']);
    await h.finish('act');
    await h.finish('read');
    await Promise.all(calls);
  });

  it('refuses a status read over the per-host or the global bound with 503 bmc_busy, at once', async () => {
    const s = new BmcScheduler({ limit: 8, maxReadsPerHost: 2, maxReads: 3 });
    const h = harness(s);
    const ok = [h.submit('r1', 'a', 'read'), h.submit('r2', 'a', 'read'), h.submit('r3', 'a', 'read')];
    await h.settle();
    // r1 runs; r2 and r3 wait: the host's bound is full.
    const refused = await h.submit('r4', 'a', 'read').catch((e: unknown) => e);
    expect(isAppError(refused) && refused.code).toBe('bmc_busy');
    expect(refused).toMatchObject({ status: 503 });
    // Another host: one read runs, one waits; the next is over the global bound (3 waiting).
    ok.push(h.submit('b1', 'b', 'read'), h.submit('b2', 'b', 'read'));
    await h.settle();
    expect(s.queued.reads).toBe(3);
    expect(await h.submit('b3', 'b', 'read').catch((e: unknown) => (isAppError(e) ? e.code : e))).toBe('bmc_busy');
    // An action is not a read: it still queues.
    ok.push(h.submit('act', 'a', 'action'));
    await h.settle();
    for (const n of ['r1', 'act', 'r2', 'r3']) await h.finish(n);
    for (const n of ['b1', 'b2']) await h.finish(n);
    await Promise.all(ok);
    expect(h.started).not.toContain('r4');
    expect(h.started).not.toContain('b3');
  });

  it('bounds the waiting actions too', async () => {
    const h = harness(new BmcScheduler({ limit: 1, maxActions: 1 }));
    const ok = [h.submit('a1', 'a', 'action'), h.submit('a2', 'a', 'action')];
    await h.settle();
    expect(await h.submit('a3', 'a', 'action').catch((e: unknown) => (isAppError(e) ? e.code : e))).toBe('bmc_busy');
    await h.finish('a1');
    await h.finish('a2');
    await Promise.all(ok);
  });

  it('spaces power-ons at least staggerMs apart', async () => {
    const s = new BmcScheduler({ limit: 8, staggerMs: 60 });
    const asked: number[] = [];
    const released: number[] = [];
    await Promise.all(
      ['h1', 'h2', 'h3'].map((host) =>
        s.run(host, 'action', async (beforePowerOn) => {
          asked.push(Date.now());
          await beforePowerOn();
          released.push(Date.now());
        }),
      ),
    );
    // The first power-on's turn is the instant it asked (the scheduler's own clock); each next one
    // is released no earlier than one stagger after the previous turn. Measured from the first
    // ask, which a busy machine cannot move later; a timer may fire a millisecond early.
    released.sort((a, b) => a - b);
    const first = Math.min(...asked);
    expect(released[1] - first).toBeGreaterThanOrEqual(58);
    expect(released[2] - first).toBeGreaterThanOrEqual(118);
  });
});
