import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAppError } from '../errors';
import { Store } from '../store';
import { sleep, testStoreTarget, waitUntil } from '../testing';
import { execStreaming } from './exec-streaming';
import { JobsRepository, type JobsTables, jobsMigrations } from './job.repository';
import { JobCancelledError, type JobContext, JobRunner, type JobRunnerOptions } from './job.runner';

let dir: string;
let target: Awaited<ReturnType<typeof testStoreTarget>>;
const stores: Store<JobsTables>[] = [];
const runners: JobRunner[] = [];

async function open(opts: JobRunnerOptions = {}) {
  const store = await Store.open<JobsTables>({ ...target, migrations: jobsMigrations });
  stores.push(store);
  const repo = new JobsRepository(store);
  const runner = new JobRunner(repo, { flushDelayMs: 5, ...opts });
  runners.push(runner);
  return { store, repo, runner };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-jobs-'));
  target = await testStoreTarget(join(dir, 'state.sqlite'));
});

afterEach(async () => {
  for (const r of runners.splice(0)) await r.stop();
  for (const s of stores.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => {
    open = r;
  });
  return { p, open };
}

const until = (fn: () => Promise<boolean> | boolean, ms = 5000) => waitUntil('the job to get there', fn, ms, 10);

describe('JobRunner', () => {
  it('persists every transition of a successful job: queued, running with stage and percent, success with result', async () => {
    const { runner, repo } = await open();
    const g = gate();
    const job = await runner.start({ kind: 'test.work', subject: 's1', input: { a: 1 } }, async (ctx) => {
      ctx.stage('step one', 40);
      ctx.log('line a');
      await ctx.flush();
      await g.p;
      return { result: { done: true }, message: 'all good' };
    });
    expect(job.status).toBe('queued');
    expect(job.input).toEqual({ a: 1 });
    await until(async () => (await repo.get(job.id))?.stage === 'step one');
    const mid = (await repo.get(job.id))!;
    expect(mid.status).toBe('running');
    expect(mid.percent).toBe(40);
    expect(mid.startedAt).not.toBeNull();
    expect(mid.log).toEqual(['==> step one', 'line a']);
    g.open();
    const end = (await runner.wait(job.id))!;
    expect(end.status).toBe('success');
    expect(end.result).toEqual({ done: true });
    expect(end.message).toBe('all good');
    expect(end.percent).toBe(100);
    expect(end.finishedAt).not.toBeNull();
    expect(end.error).toBeNull();
  });

  it('ends failed with the error when the handler throws', async () => {
    const { runner } = await open();
    const job = await runner.start({ kind: 'test.work' }, async (ctx) => {
      ctx.stage('about to break', 10);
      throw new Error('disk on fire');
    });
    const end = (await runner.wait(job.id))!;
    expect(end.status).toBe('failed');
    expect(end.error).toBe('disk on fire');
    expect(end.stage).toBe('about to break');
    expect(end.result).toBeNull();
  });

  it('cancels a running job by killing its command, then refuses a second cancel as finished', async () => {
    const { runner } = await open();
    let cleanedUp = false;
    const started = gate();
    const job = await runner.start({ kind: 'test.work' }, async (ctx) => {
      ctx.stage('sleeping', 5);
      started.open();
      try {
        await execStreaming([process.execPath, '-e', 'setTimeout(() => {}, 30000)'], { signal: ctx.signal });
      } catch (err) {
        cleanedUp = true;
        throw err;
      }
      return {};
    });
    await started.p;
    const t0 = Date.now();
    const flagged = await runner.cancel(job.id);
    expect(flagged.cancelRequested).toBe(true);
    const end = (await runner.wait(job.id))!;
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(end.status).toBe('cancelled');
    expect(cleanedUp).toBe(true);
    const again = await runner.cancel(job.id).catch((e) => e);
    expect(isAppError(again) && again.status).toBe(400);
    expect(again.code).toBe('job_finished');
  });

  it('never overlaps its heartbeats or cancel polls: a store slower than the timer delays the next round instead of doubling it', async () => {
    const store = await Store.open<JobsTables>({ ...target, migrations: jobsMigrations });
    stores.push(store);
    const seen = { renew: { now: 0, most: 0, calls: 0 }, poll: { now: 0, most: 0, calls: 0 } };
    // Counted once the handler runs (the runner's own check before it starts is no poll).
    let counting = false;
    const slow = async <T>(c: { now: number; most: number; calls: number }, fn: () => Promise<T>): Promise<T> => {
      if (!counting) return sleep(100).then(fn);
      c.calls++;
      c.most = Math.max(c.most, ++c.now);
      try {
        await sleep(100);
        return await fn();
      } finally {
        c.now--;
      }
    };
    class SlowStore extends JobsRepository {
      override renew(owner: string, ids: string[], leaseUntil: string) {
        return slow(seen.renew, () => super.renew(owner, ids, leaseUntil));
      }
      override isCancelRequested(id: string) {
        return slow(seen.poll, () => super.isCancelRequested(id));
      }
    }
    const runner = new JobRunner(new SlowStore(store), { flushDelayMs: 5, heartbeatMs: 10, leaseMs: 60_000, cancelPollMs: 10 });
    runners.push(runner);
    const job = await runner.start({ kind: 'test.slow-store' }, async () => {
      counting = true;
      // Runs until each loop had a few rounds (ten timer periods fit in one slow call).
      await waitUntil('three renewals and three cancel polls', () => seen.renew.calls > 2 && seen.poll.calls > 2, 10_000, 10);
      return {};
    });
    expect((await runner.wait(job.id))?.status).toBe('success');
    expect(seen.renew.calls).toBeGreaterThan(2);
    expect(seen.poll.calls).toBeGreaterThan(2);
    expect(seen.renew.most).toBe(1);
    expect(seen.poll.most).toBe(1);
  });

  it('answers job_not_found for an unknown job id', async () => {
    const { runner } = await open();
    const err = await runner.cancel('nope').catch((e) => e);
    expect(err.code).toBe('job_not_found');
    expect(err.status).toBe(404);
  });

  it('lets a handler notice cancellation between stages', async () => {
    const { runner, repo } = await open();
    const g = gate();
    const job = await runner.start({ kind: 'test.work' }, async (ctx: JobContext) => {
      ctx.stage('one', 10);
      await ctx.flush();
      await g.p;
      ctx.throwIfCancelled();
      ctx.stage('two', 50);
      return {};
    });
    await until(async () => (await repo.get(job.id))?.stage === 'one');
    await runner.cancel(job.id);
    g.open();
    const end = (await runner.wait(job.id))!;
    expect(end.status).toBe('cancelled');
    expect(end.stage).toBe('one');
  });

  it('marks a job left running by a stopped process as failed (interrupted) at the next start', async () => {
    const first = await open();
    const job = await first.repo.create({ id: 'j-old', kind: 'test.work', subject: 'x', exclusive: true });
    await first.repo.update(job.id, { status: 'running', startedAt: new Date().toISOString() });
    await first.store.close();
    stores.splice(stores.indexOf(first.store), 1);

    const second = await open();
    expect(await second.runner.recover()).toBe(1);
    const after = (await second.repo.get('j-old'))!;
    expect(after.status).toBe('failed');
    expect(after.error).toMatch(/interrupted/);
    expect(after.finishedAt).not.toBeNull();
    // Its exclusive slot is free again.
    const next = await second.runner.start({ kind: 'test.work', subject: 'x', exclusive: true }, async () => ({}));
    expect((await second.runner.wait(next.id))!.status).toBe('success');
  });

  it('keeps at most the configured number of jobs per kind, dropping the oldest finished ones', async () => {
    const { runner, repo } = await open({ retention: { 'test.small': 3 } });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const j = await runner.start({ kind: 'test.small' }, async () => ({ result: i }));
      await runner.wait(j.id);
      ids.push(j.id);
    }
    const other = await runner.start({ kind: 'test.other' }, async () => ({}));
    await runner.wait(other.id);
    const left = await repo.list({ kind: 'test.small' });
    // The fifth start pruned down to 3 before it ran: jobs 3, 4, 5 remain, newest first.
    expect(left.map((j) => j.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(await repo.count({ kind: 'test.other' })).toBe(1);
  });

  it('never prunes a job that is still running', async () => {
    const { runner, repo } = await open({ retention: { 'test.small': 1 } });
    const g = gate();
    const long = await runner.start({ kind: 'test.small' }, async () => {
      await g.p;
      return {};
    });
    const short = await runner.start({ kind: 'test.small' }, async () => ({}));
    await runner.wait(short.id);
    expect(await repo.get(long.id)).toBeDefined();
    g.open();
    await runner.wait(long.id);
  });

  it('refuses a second exclusive job for the same subject with job_conflict while the first is active', async () => {
    const { runner } = await open();
    const g = gate();
    const first = await runner.start({ kind: 'test.work', subject: 'dev', exclusive: true }, async () => {
      await g.p;
      return {};
    });
    const err = await runner.start({ kind: 'test.work', subject: 'dev', exclusive: true }, async () => ({})).catch((e) => e);
    expect(err.code).toBe('job_conflict');
    expect(err.status).toBe(409);
    const otherSubject = await runner.start({ kind: 'test.work', subject: 'prod', exclusive: true }, async () => ({}));
    await runner.wait(otherSubject.id);
    g.open();
    await runner.wait(first.id);
    const again = await runner.start({ kind: 'test.work', subject: 'dev', exclusive: true }, async () => ({}));
    expect((await runner.wait(again.id))!.status).toBe('success');
  });

  it('bounds the log tail to the configured number of lines and cuts long lines', async () => {
    const { runner } = await open({ logTailLines: 5, logLineMax: 10 });
    const job = await runner.start({ kind: 'test.work' }, async (ctx) => {
      for (let i = 0; i < 20; i++) ctx.log(`line ${i}`);
      ctx.log('x'.repeat(50));
      return {};
    });
    const end = (await runner.wait(job.id))!;
    expect(end.log).toEqual(['line 16', 'line 17', 'line 18', 'line 19', `${'x'.repeat(10)}…`]);
  });

  it('honours a cancel written by another process through the shared store', async () => {
    const a = await open({ cancelPollMs: 50 });
    const b = await open();
    const started = gate();
    const job = await a.runner.start({ kind: 'test.work' }, async (ctx) => {
      started.open();
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      return {};
    });
    await started.p;
    await b.runner.cancel(job.id);
    const end = (await a.runner.wait(job.id))!;
    expect(end.status).toBe('cancelled');
  });

  it('stops running jobs on shutdown as failed (interrupted), not cancelled', async () => {
    const { runner } = await open();
    const started = gate();
    const job = await runner.start({ kind: 'test.work' }, async (ctx) => {
      started.open();
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      return {};
    });
    await started.p;
    await runner.stop();
    const end = (await runner.repository.get(job.id))!;
    expect(end.status).toBe('failed');
    expect(end.error).toMatch(/interrupted/);
  });

  it('treats a JobCancelledError thrown by the handler as cancelled', async () => {
    const { runner } = await open();
    const job = await runner.start({ kind: 'test.work' }, async () => {
      throw new JobCancelledError();
    });
    expect((await runner.wait(job.id))!.status).toBe('cancelled');
  });
});
