/**
 * Several replicas behind a load balancer (issue 12, "How it is tested"): one throw-away
 * PostgreSQL, three `ironlens serve` processes of the compiled command (each its own data dir
 * and 127.0.0.x address, console on loopback), a real nginx in front of their provisioning
 * listeners, and a real dnsmasq that reads the hosts file the elected writer renders (all
 * three replicas are told the same file and dnsmasq's pid file, as on a dnsmasq host). What a
 * user sees is asserted through nginx, through each replica directly, in the database (psql)
 * and in the hosts file:
 *
 * 1. 300 concurrent bind / force bind / unbind requests through nginx: only 200 and 409, the
 *    ledger stays one-to-one, every replica answers `/boot-vars` as the database says, and the
 *    hosts file equals the database.
 * 2. A bind (and an unbind) through one replica is answered by another replica's `/boot-vars`
 *    within 100 ms, its cache warm before the write.
 * 3. A restart of PostgreSQL: a row written straight into the database while the replicas are
 *    cut off is served by every replica once they reconnect (their caches reload), and a write
 *    through nginx afterwards works and is seen everywhere.
 * 4. `kill -9` of one replica in the middle of a storm of writes and boots: every acknowledged
 *    write is in the ledger, boots through nginx never fail, the others keep serving and
 *    rendering the hosts file, and the kind job that replica was running ends.
 *
 * Runs once (the `sqlite` vitest project picks it up; it starts its own PostgreSQL). Needs
 * root (initdb runs as `postgres` through runuser), nginx, dnsmasq and psql.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { artifactPath, type Postgres, sleep, startPostgres, waitFor } from '@ironlens/core/testing';
import { type StandIns, writeStandIns } from '@ironlens/kind/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Balancer, buildCommand, type Dnsmasq, type Replica, removeTree, requireTool, startBalancer, startDnsmasq, startReplica } from '@ironlens/cli/testing';

const TOKEN = 'replicas-e2e-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const HOSTS = ['127.0.0.11', '127.0.0.12', '127.0.0.13'];
/** How long a kind job of a dead replica may stay `running` before the test calls it stuck. */
const JOB_END_BOUND_MS = 90_000;

let work: string;
let buildRoot: string;
let pg: Postgres;
let dbUrl: string;
let dnsmasq: Dnsmasq;
let standins: StandIns;
let nginx: Balancer;
const replicas: Replica[] = [];
let psqlBin: string;
let nginxPrefix: string;

// ---------------------------------------------------------------- helpers

/** One SQL statement through psql; rows as arrays of strings (`-At`, unit separator). */
function sql(query: string): string[][] {
  const out = execFileSync(psqlBin, ['-X', '-At', '-F', '\x1f', '-v', 'ON_ERROR_STOP=1', '-d', dbUrl, '-c', query], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\x1f'));
}

const mac = (group: number, i: number) => `02:00:00:${group.toString(16).padStart(2, '0')}:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;

interface Answer {
  status: number;
  body: unknown;
  ms: number;
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const t0 = performance.now();
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? AUTH : { ...AUTH, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, ms: performance.now() - t0 };
  } catch (err) {
    return { status: 0, body: String(err), ms: performance.now() - t0 };
  }
}

/** Runs `tasks` with at most `limit` in flight; results in order. */
async function pool<T>(limit: number, tasks: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        out[i] = await tasks[i]();
      }
    }),
  );
  return out;
}

/** A small deterministic generator, so a failing storm can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function bootVars(base: string, m: string, hostname: string): Promise<Record<string, unknown>> {
  const r = await call(base, 'GET', `/boot-vars?mac=${encodeURIComponent(m)}&hostname=${encodeURIComponent(hostname)}&format=json`);
  if (r.status !== 200) throw new Error(`${base} /boot-vars answered ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as Record<string, unknown>;
}

/** What a bound worker without disks gets (the reboot loop); an unbound pair gets `{}` (anti-spoofing). */
const BOUND_VARS = { menu_default: 'reboot', menu_timeout: 1 };
const isBound = (v: Record<string, unknown>) => v.menu_default === 'reboot';

/** The hosts file the database says: `mac,hostname,infinite` per bound device, by hostname (the renderer's order). */
function hostsFromDatabase(): string {
  const rows = sql("SELECT d.mac, w.hostname FROM devices d JOIN workers w ON w.worker_id = d.bound_worker_id WHERE d.state = 'bound' ORDER BY w.hostname");
  return rows.map(([m, h]) => `${m},${h},infinite\n`).join('');
}

/** The ledger's one-to-one rule, read from the database. */
function ledgerViolations(): string[][] {
  return [
    ...sql("SELECT 'worker with two devices', bound_worker_id, string_agg(mac, ' ') FROM devices WHERE bound_worker_id IS NOT NULL GROUP BY bound_worker_id HAVING count(*) > 1"),
    ...sql("SELECT 'state disagrees with binding', mac, state FROM devices WHERE (state = 'bound') <> (bound_worker_id IS NOT NULL)"),
    ...sql("SELECT 'bound to a missing worker', d.mac, d.bound_worker_id FROM devices d LEFT JOIN workers w ON w.worker_id = d.bound_worker_id WHERE d.bound_worker_id IS NOT NULL AND w.worker_id IS NULL"),
  ];
}

/** Waits until dnsmasq's hosts file equals the database (the writer renders after each change). */
async function hostsFileSettles(): Promise<void> {
  await waitFor(
    'the hosts file to equal the database',
    () => ({ file: readFileSync(dnsmasq.hostsFile, 'utf8'), db: hostsFromDatabase() }),
    (v) => v.file === v.db,
    10_000,
    100,
  );
}

/** What the run measured, for the reader of a CI log: `.artifacts/replicas-e2e-<run>.json`. */
const summary: Record<string, unknown> = {};

const live = () => replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);

// ---------------------------------------------------------------- set-up

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test needs root (PostgreSQL runs as the postgres user through runuser); CI runs as root');
  psqlBin = requireTool('psql', 'postgresql-client');
  requireTool('nginx', 'nginx-light');
  requireTool('dnsmasq', 'dnsmasq-base');
  work = mkdtempSync(join(tmpdir(), 'ironlens-replicas-'));
  buildRoot = artifactPath('replicas-cli');
  const [bin, started] = await Promise.all([buildCommand(buildRoot), startPostgres()]);
  pg = started;
  dbUrl = await pg.createDatabase('ironlens');
  dnsmasq = await startDnsmasq(join(work, 'dnsmasq'));
  standins = writeStandIns();
  const env = {
    IRONLENS_DATABASE_URL: dbUrl,
    IPXE_CP_TOKEN: TOKEN,
    IPXE_CP_DNSMASQ_HOSTS_FILE: dnsmasq.hostsFile,
    IPXE_CP_DNSMASQ_PID_FILE: dnsmasq.pidFile,
    IRONLENS_SECRET_KEY: 'a'.repeat(64),
    // The kind panel's tools are the stand-ins (no container engine here); its create hangs
    // at a stage, so a job stays running on the replica that took it.
    PATH: `${standins.binDir}:${process.env.PATH}`,
    HOME: join(work, 'home'),
    STANDIN_LOG: standins.logFile,
    STANDIN_STATE: standins.stateDir,
    STANDIN_KIND_HANG_AT: 'Starting control-plane',
    KIND_K8S_SKIP_VERSION_LIST: '1',
    IRONLENS_GITHUB_MIRROR: 'http://127.0.0.1:9',
  };
  // One after the other: the first runs the migrations, the others find them done.
  for (const [i, host] of HOSTS.entries()) {
    replicas.push(await startReplica({ bin, name: 'ABC'[i], host, dataDir: join(work, `replica-${'abc'[i]}`), env, console: true }));
  }
  nginxPrefix = mkdtempSync(join(tmpdir(), 'ironlens-replicas-nginx-'));
  nginx = await startBalancer(nginxPrefix, replicas.map((r) => ({ host: r.host, port: r.bootPort })));
}, 300_000);

afterAll(async () => {
  writeFileSync(artifactPath('replicas-e2e', '.json'), `${JSON.stringify(summary, null, 2)}\n`);
  for (const r of replicas) writeFileSync(artifactPath(`replicas-e2e-${r.name}`, '.log'), r.output());
  if (nginx) writeFileSync(artifactPath('replicas-e2e-nginx', '.log'), nginx.errorLog());
  await Promise.all([...replicas.map((r) => r.stop()), nginx?.stop(), dnsmasq?.stop()]);
  pg?.stop();
  standins?.cleanup();
  removeTree(work);
  removeTree(buildRoot);
  removeTree(nginxPrefix);
}, 60_000);

// ---------------------------------------------------------------- scenarios

describe.sequential('three ironlens replicas on one PostgreSQL behind nginx', () => {
  it('300 concurrent bind / force / unbind requests through nginx keep the ledger one-to-one and the hosts file equal to the database', async () => {
    const DEVICES = 16;
    const WORKERS = 12;
    const macs = Array.from({ length: DEVICES }, (_, i) => mac(0x10, i));
    const workers = Array.from({ length: WORKERS }, (_, i) => `storm-${String(i).padStart(2, '0')}`);
    const imported = await call(nginx.url, 'POST', '/devices/import', { entries: macs.map((m) => ({ mac: m })) });
    expect(imported.status).toBe(200);
    expect((imported.body as { created: string[] }).created).toHaveLength(DEVICES);
    for (const w of workers) expect((await call(nginx.url, 'POST', '/workers', { worker_id: w })).status).toBe(200);

    // One writer of the hosts file among the three, and each says at start which it is.
    const writers = replicas.filter((r) => r.output().includes(`this replica writes ${dnsmasq.hostsFile}`));
    expect(writers.map((r) => r.name)).toHaveLength(1);
    for (const r of replicas.filter((x) => !writers.includes(x))) expect(r.output()).toContain('another replica of the group writes the hosts file');

    const readsBefore = dnsmasq.reads();
    const next = rng(12);
    const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)];
    const requests = Array.from({ length: 300 }, () => {
      const r = next();
      const m = pick(macs);
      if (r < 0.4) return { op: 'bind', method: 'POST', path: `/devices/${m}/bind?worker_id=${pick(workers)}` };
      if (r < 0.75) return { op: 'force', method: 'POST', path: `/devices/${m}/bind?worker_id=${pick(workers)}&force=true` };
      return { op: 'unbind', method: 'DELETE', path: `/devices/${m}/bind` };
    });
    const answers = await Promise.all(requests.map((q) => call(nginx.url, q.method, q.path)));

    const byStatus: Record<string, number> = {};
    for (const [i, a] of answers.entries()) byStatus[`${requests[i].op} ${a.status}`] = (byStatus[`${requests[i].op} ${a.status}`] ?? 0) + 1;
    const unexpected = answers.map((a, i) => ({ ...requests[i], status: a.status, body: a.body })).filter((a) => a.status !== 200 && a.status !== 409);
    // A race lost to another replica is a 409, never a 500 (an unmapped unique violation) nor a 502.
    summary.storm = byStatus;
    expect(unexpected, JSON.stringify(byStatus)).toEqual([]);
    for (const op of ['bind', 'force', 'unbind']) expect(byStatus[`${op} 200`] ?? 0, `${op} succeeded at least once: ${JSON.stringify(byStatus)}`).toBeGreaterThan(0);

    expect(ledgerViolations()).toEqual([]);
    // The API says what the database says, on every replica.
    const rows = sql(`SELECT mac, state, coalesce(bound_worker_id, '') FROM devices WHERE mac LIKE '02:00:00:10:%' ORDER BY mac`);
    const dbView = rows.map(([m, state, w]) => ({ mac: m, state, bound_worker_id: w || null }));
    for (const r of replicas) {
      const listed = await call(r.boot, 'GET', '/devices');
      expect(listed.status).toBe(200);
      const mine = (listed.body as Array<{ mac: string; state: string; bound_worker_id: string | null }>)
        .filter((d) => d.mac.startsWith('02:00:00:10:'))
        .map((d) => ({ mac: d.mac, state: d.state, bound_worker_id: d.bound_worker_id ?? null }))
        .sort((a, b) => a.mac.localeCompare(b.mac));
      expect(mine, `replica ${r.name} /devices`).toEqual(dbView);
    }
    // Every replica boots every device as the database says (caches follow writes made elsewhere).
    const boundTo = new Map(dbView.filter((d) => d.bound_worker_id).map((d) => [d.mac, d.bound_worker_id as string]));
    const spare = workers.find((w) => ![...boundTo.values()].includes(w));
    for (const r of replicas) {
      for (const d of dbView) {
        const hostname = boundTo.get(d.mac) ?? spare ?? workers[0];
        const vars = await bootVars(r.boot, d.mac, hostname);
        expect(vars, `replica ${r.name}: ${d.mac} as ${hostname}`).toEqual(boundTo.has(d.mac) ? BOUND_VARS : {});
      }
    }
    await hostsFileSettles();
    expect(dnsmasq.reads()).toBeGreaterThan(readsBefore);
  }, 120_000);

  it('a bind through one replica is answered by another replica’s /boot-vars within 100 ms (and so is the unbind)', async () => {
    const pairs = [
      [0, 1],
      [1, 2],
      [2, 0],
    ] as const;
    const seen: string[] = [];
    for (const [k, [a, b]] of pairs.entries()) {
      const m = mac(0x20, k);
      const w = `probe-${k}`;
      expect((await call(replicas[a].boot, 'POST', '/devices', { mac: m })).status).toBe(201);
      expect((await call(replicas[a].boot, 'POST', '/workers', { worker_id: w })).status).toBe(200);
      // Warm B's cache with the unbound answer first: a stale cache would keep serving it.
      await waitFor(`replica ${replicas[b].name} to know ${w}`, () => call(replicas[b].boot, 'GET', `/workers/${w}`), (r) => r.status === 200, 5000);
      for (let i = 0; i < 3; i++) expect(await bootVars(replicas[b].boot, m, w)).toEqual({});

      for (const step of ['bind', 'unbind'] as const) {
        const write = step === 'bind' ? await call(replicas[a].boot, 'POST', `/devices/${m}/bind?worker_id=${w}`) : await call(replicas[a].boot, 'DELETE', `/devices/${m}/bind`);
        expect(write.status, JSON.stringify(write.body)).toBe(200);
        const acked = performance.now();
        let ms = Number.POSITIVE_INFINITY;
        while (performance.now() - acked < 2000) {
          const v = await bootVars(replicas[b].boot, m, w);
          if (isBound(v) === (step === 'bind')) {
            ms = performance.now() - acked;
            break;
          }
          await sleep(2);
        }
        summary.propagation = seen;
        seen.push(`${step} via ${replicas[a].name}, seen by ${replicas[b].name} after ${Number.isFinite(ms) ? `${ms.toFixed(1)} ms` : 'more than 2 s'}`);
        expect(ms, seen.join('; ')).toBeLessThanOrEqual(100);
      }
    }
  }, 60_000);

  it('a restart of PostgreSQL: the replicas reconnect, reload what changed while they were cut off, and take writes again', async () => {
    const m = mac(0x30, 1);
    const w = 'restart-0';
    const m2 = mac(0x30, 2);
    const w2 = 'restart-1';
    for (const [dm, dw] of [
      [m, w],
      [m2, w2],
    ]) {
      expect((await call(nginx.url, 'POST', '/devices', { mac: dm })).status).toBe(201);
      expect((await call(nginx.url, 'POST', '/workers', { worker_id: dw })).status).toBe(200);
    }
    for (const r of replicas) {
      await waitFor(`replica ${r.name} to know ${w2}`, () => call(r.boot, 'GET', `/workers/${w2}`), (x) => x.status === 200, 5000);
      expect(await bootVars(r.boot, m, w)).toEqual({}); // cached unbound
    }

    pg.restart(); // every connection is cut (fast shutdown), the data stays
    // Straight into the database, before the replicas are back: no replica sees this write
    // happen; only a reload after reconnecting can show it.
    sql(`UPDATE devices SET state = 'bound', bound_worker_id = '${w}' WHERE mac = '${m}'`);

    for (const r of replicas) {
      await waitFor(`replica ${r.name} to serve the row written during the outage`, () => bootVars(r.boot, m, w), isBound, 15_000, 100);
    }
    const bind = await call(nginx.url, 'POST', `/devices/${m2}/bind?worker_id=${w2}`);
    expect(bind.status, JSON.stringify(bind.body)).toBe(200);
    for (const r of replicas) {
      await waitFor(`replica ${r.name} to serve the write made after the restart`, () => bootVars(r.boot, m2, w2), isBound, 1000, 10);
    }
    await hostsFileSettles();
    expect(ledgerViolations()).toEqual([]);
  }, 90_000);

  it('kill -9 of one replica during a storm: acknowledged writes stay, boots never fail, the others keep serving, its job ends', async () => {
    const victim = replicas[0];
    const survivors = replicas.slice(1);
    // A kind cluster creation running on the victim (the stand-in kind hangs at a stage).
    const created = await call(victim.console as string, 'POST', '/kind/api/v1/clusters', { name: 'on-victim', workers: 0 });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const jobId = (created.body as { job_id: string }).job_id;
    await waitFor(
      'the job to run on the victim',
      () => call(victim.console as string, 'GET', `/kind/api/v1/jobs/${jobId}`),
      (r) => (r.body as { progress_stage?: string }).progress_stage === 'kind create cluster: Starting control-plane',
      20_000,
    );

    // Fresh pairs, so that every acknowledged write has one outcome to look for afterwards.
    const N = 120;
    const fresh = Array.from({ length: N }, (_, i) => ({ mac: mac(0x40, i), worker: `kill-${String(i).padStart(3, '0')}` }));
    const bound = Array.from({ length: 60 }, (_, i) => ({ mac: mac(0x41, i), worker: `held-${String(i).padStart(3, '0')}` }));
    expect((await call(nginx.url, 'POST', '/devices/import', { entries: [...fresh, ...bound].map((p) => ({ mac: p.mac })) })).status).toBe(200);
    const setup = await pool(16, [...fresh.map((p) => () => call(nginx.url, 'POST', '/workers', { worker_id: p.worker })), ...bound.map((p) => () => call(nginx.url, 'POST', '/workers', { worker_id: p.worker, mac: p.mac }))]);
    expect(setup.filter((a) => a.status !== 200)).toEqual([]);

    type Op = { kind: 'bind' | 'unbind' | 'boot'; mac: string; worker: string };
    const ops: Op[] = [];
    for (let i = 0; i < N; i++) {
      ops.push({ kind: 'bind', ...fresh[i] });
      if (i % 2 === 0) ops.push({ kind: 'unbind', ...bound[i / 2] });
      ops.push({ kind: 'boot', ...bound[i % bound.length] });
    }
    const CONCURRENCY = 24;
    let done = 0;
    let killedAt = -1;
    const results = await pool(
      CONCURRENCY,
      ops.map((op) => async () => {
        const startedBeforeKill = killedAt < 0;
        const a =
          op.kind === 'bind'
            ? await call(nginx.url, 'POST', `/devices/${op.mac}/bind?worker_id=${op.worker}`)
            : op.kind === 'unbind'
              ? await call(nginx.url, 'DELETE', `/devices/${op.mac}/bind`)
              : await call(nginx.url, 'GET', `/boot-vars?mac=${op.mac}&hostname=${op.worker}&format=json`);
        if (++done === Math.floor(ops.length / 3)) {
          killedAt = done;
          victim.kill9();
        }
        return { op, status: a.status, body: a.body, inFlightAtKill: startedBeforeKill && killedAt > 0 };
      }),
    );
    expect(killedAt).toBeGreaterThan(0);
    await victim.exited;

    // Boots are GETs: nginx retries them on the next replica, so none may fail.
    const boots = results.filter((r) => r.op.kind === 'boot');
    expect(boots.filter((r) => r.status !== 200)).toEqual([]);
    // Writes: 200, or what a write in flight on the victim gets. nginx does not resend a POST
    // (a bind) it already sent, since it may have been applied: 502. It does resend a DELETE
    // (an unbind, idempotent in HTTP): 200 from a survivor, or 409 "not bound" when the victim
    // had applied it before dying, the device then being in the pool. Either is at most one
    // per connection in flight at the kill, so at most CONCURRENCY; anything else (500, a 409
    // with the device still bound, 504) is a defect.
    const writes = results.filter((r) => r.op.kind !== 'boot');
    const state = new Map(sql(`SELECT mac, state, coalesce(bound_worker_id, '') FROM devices WHERE mac LIKE '02:00:00:4%'`).map(([m, s, w]) => [m, { state: s, worker: w }]));
    const lost = writes.filter((r) => r.status === 502 || (r.op.kind === 'unbind' && r.status === 409 && r.inFlightAtKill && state.get(r.op.mac)?.state === 'pooled'));
    summary.kill = { killedAfter: killedAt, inFlightAtKill: results.filter((r) => r.inFlightAtKill).length, writes: writes.length, acknowledged: writes.filter((r) => r.status === 200).length, lost: lost.map((r) => `${r.op.kind} ${r.status}`), boots: boots.length, bootFailures: boots.filter((r) => r.status !== 200).length };
    expect(writes.filter((r) => r.status !== 200 && !lost.includes(r))).toEqual([]);
    expect(lost.length).toBeLessThanOrEqual(CONCURRENCY);

    // Every acknowledged write is in the ledger.
    for (const r of writes.filter((x) => x.status === 200)) {
      const row = state.get(r.op.mac);
      if (r.op.kind === 'bind') expect(row, `acknowledged bind ${r.op.mac} → ${r.op.worker}`).toEqual({ state: 'bound', worker: r.op.worker });
      else expect(row, `acknowledged unbind ${r.op.mac}`).toEqual({ state: 'pooled', worker: '' });
    }
    expect(ledgerViolations()).toEqual([]);

    // The survivors keep serving, through nginx and directly, and agree with the database.
    for (const r of survivors) expect((await call(r.boot, 'GET', '/healthz')).status).toBe(200);
    const after = await call(nginx.url, 'POST', `/devices/${lost[0]?.op.mac ?? fresh[0].mac}/bind?worker_id=${lost[0]?.op.worker ?? fresh[0].worker}`);
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    for (const r of survivors) {
      for (const p of fresh.slice(0, 10)) {
        const row = state.get(p.mac);
        const expected = row?.state === 'bound' || p.mac === (lost[0]?.op.mac ?? fresh[0].mac) ? BOUND_VARS : {};
        expect(await bootVars(r.boot, p.mac, p.worker), `replica ${r.name}: ${p.mac}`).toEqual(expected);
      }
    }
    // The hosts file is rendered by a surviving writer and equals the database.
    await hostsFileSettles();

    // The victim's job does not stay `running` forever: a survivor ends it (or takes it over).
    const job = await waitFor(
      'the dead replica’s job to end',
      () => call(survivors[0].console as string, 'GET', `/kind/api/v1/jobs/${jobId}`),
      (r) => (r.body as { status?: string }).status !== 'running' && (r.body as { status?: string }).status !== 'queued',
      JOB_END_BOUND_MS,
      500,
    );
    expect((job.body as { status: string }).status).toBe('failed');
    expect((job.body as { error: string }).error).toMatch(/interrupted/);
    expect(live()).toHaveLength(2);
  }, 240_000);
});
