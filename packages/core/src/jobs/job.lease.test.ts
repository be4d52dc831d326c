import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../store';
import { sleep, testStoreTarget, waitUntil } from '../testing';
import { INTERRUPTED_MESSAGE, JobsRepository, type JobsTables, jobsMigrations, JobRunner, type JobRunnerOptions } from './index';

// Two replicas on one database (PostgreSQL in the suite's postgres run, one SQLite file shared
// by two connections otherwise), each with its own runner in shared mode.

let dir: string;
let target: Awaited<ReturnType<typeof testStoreTarget>>;
const stores: Store<JobsTables>[] = [];
const runners: JobRunner[] = [];
let child: ChildProcess | undefined;

const FAST = { leaseMs: 1200, heartbeatMs: 200, sweepMs: 200 } satisfies JobRunnerOptions;

async function replica(owner: string, opts: JobRunnerOptions = {}) {
  const store = await Store.open<JobsTables>({ ...target, migrations: jobsMigrations });
  stores.push(store);
  const repo = new JobsRepository(store);
  const runner = new JobRunner(repo, { flushDelayMs: 5, shared: true, owner, ...FAST, ...opts });
  runners.push(runner);
  return { store, repo, runner };
}

function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => {
    open = r;
  });
  return { p, open };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-lease-'));
  target = await testStoreTarget(join(dir, 'state.sqlite'));
});

afterEach(async () => {
  if (child?.pid && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, 'SIGKILL');
  child = undefined;
  for (const r of runners.splice(0)) await r.stop();
  for (const s of stores.splice(0)) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('job leases across replicas', () => {
  it('lets exactly one of many replicas claiming one queued job at once take it', async () => {
    const a = await replica('replica-a');
    const b = await replica('replica-b');
    await a.repo.create({ id: 'j-claim', kind: 'test.lease' });
    const until = new Date(Date.now() + 10_000).toISOString();
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a.repo : b.repo).claim('j-claim', `replica-${i}`, until)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    const winner = `replica-${claims.indexOf(true)}`;
    expect((await a.repo.lease('j-claim'))?.owner).toBe(winner);
    expect((await b.repo.get('j-claim'))?.status).toBe('running');
    // Nobody else can take it while the lease holds.
    expect(await a.repo.claim('j-claim', 'replica-late', until)).toBe(false);
  });

  it('runs a job on the replica that started it only, and another replica starting leaves it alone', async () => {
    const a = await replica('replica-a');
    const g = gate();
    let runs = 0;
    const job = await a.runner.start({ kind: 'test.lease', subject: 's', exclusive: true }, async (ctx) => {
      runs++;
      ctx.stage('working');
      await g.p;
      return { result: 'done' };
    });
    await waitUntil('the job runs', async () => (await a.repo.get(job.id))?.stage === 'working', 5000);
    const b = await replica('replica-b');
    expect(await b.runner.recover('test.lease')).toBe(0);
    // Well past one lease: A's heartbeat keeps the job alive under B's sweep.
    await sleep(FAST.leaseMs * 2);
    expect(await b.runner.sweep()).toBe(0);
    expect((await b.repo.get(job.id))?.status).toBe('running');
    expect((await b.repo.lease(job.id))?.owner).toBe('replica-a');
    g.open();
    const end = (await a.runner.wait(job.id))!;
    expect(end.status).toBe('success');
    expect(end.result).toBe('done');
    expect(runs).toBe(1);
  });

  it('fails as interrupted, within lease + sweep, the job of a replica killed with SIGKILL', async () => {
    const b = await replica('replica-b');
    await b.runner.recover('test.lease');
    const store = 'url' in target && target.url ? target.url : (target.file as string);
    const script = new URL('./testing/hold-job.ts', import.meta.url).pathname;
    child = spawn(process.execPath, ['--import', 'tsx', script, store, String(FAST.leaseMs), String(FAST.heartbeatMs)], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
    const id = await new Promise<string>((resolve, reject) => {
      child!.stdout!.on('data', (d) => {
        const m = /job ([0-9a-f]+)/.exec(String(d));
        if (m) resolve(m[1]);
      });
      child!.once('exit', (code) => reject(new Error(`hold-job exited ${code}`)));
    });
    expect((await b.repo.get(id))?.status).toBe('running');
    // Alive, it keeps its lease past several sweeps.
    await sleep(FAST.leaseMs * 2);
    expect((await b.repo.get(id))?.status).toBe('running');

    process.kill(-child.pid!, 'SIGKILL');
    const killedAt = Date.now();
    await waitUntil('the dead replica\'s job is failed', async () => (await b.repo.get(id))?.status === 'failed', 10_000, 20);
    const took = Date.now() - killedAt;
    // Bounded: one lease and one sweep after its last heartbeat (a second of slack for a loaded machine).
    expect(took).toBeLessThan(FAST.leaseMs + FAST.sweepMs + 1000);
    const after = (await b.repo.get(id))!;
    expect(after.error).toBe(INTERRUPTED_MESSAGE);
    expect(after.finishedAt).not.toBeNull();
    // Its exclusive slot is free for a new job on the surviving replica.
    const next = await b.runner.start({ kind: 'test.lease', subject: 'held', exclusive: true }, async () => ({}));
    expect((await b.runner.wait(next.id))!.status).toBe('success');
  });

  it('aborts a job whose lease another replica took away, and leaves the record as that replica wrote it', async () => {
    // A stalls (no heartbeat for far longer than its lease): B declares its job interrupted.
    const a = await replica('replica-a', { heartbeatMs: 60_000, leaseMs: 60_001 });
    const b = await replica('replica-b');
    let aborted = false;
    const job = await a.runner.start({ kind: 'test.lease' }, async (ctx) => {
      ctx.stage('working');
      await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r()));
      aborted = true;
      throw ctx.signal.reason;
    });
    await waitUntil('the job runs', async () => (await a.repo.get(job.id))?.stage === 'working', 5000);
    expect(await b.runner.sweep()).toBe(0);
    // The lease B sees has run out (as if A's clock had stopped).
    await b.store.db.updateTable('jobs').set({ lease_until: new Date(Date.now() - 1000).toISOString() }).where('id', '=', job.id).execute();
    await b.runner.recover('test.lease');
    expect((await b.repo.get(job.id))?.status).toBe('failed');
    await a.runner.heartbeat();
    await a.runner.wait(job.id);
    expect(aborted).toBe(true);
    const end = (await b.repo.get(job.id))!;
    expect(end.status).toBe('failed');
    expect(end.error).toBe(INTERRUPTED_MESSAGE);
    expect(end.stage).toBe('working');
  });
});
