/**
 * Boot-storm benchmark (issue 2): `/boot-vars` and `/devices/report` against a real
 * ironlens listener holding 10,000 bound workers, with wrk, side by side in the same run
 * with nginx serving the same iPXE text as a static file and a bare `node:http` server
 * answering from a Map (the practical ceiling for Node). Prints req/s and p50/p99 per
 * server and connection count, and the ratios ironlens/nginx and ironlens/bare-node.
 *
 *   npm run bench                       # 8 s per run, 64 and 256 connections
 *   BENCH_SECONDS=3 npm run bench       # quick mode
 *
 * Environment (all optional):
 *   BENCH_SECONDS         seconds per measured run. Default is 8.
 *   BENCH_WARMUP_SECONDS  un-measured warm-up per server and endpoint. Default is 2.
 *   BENCH_ROUNDS          measured runs per server and case, interleaved across servers; the
 *                         table shows the median round. Default is 1 (3 on a shared machine).
 *   BENCH_WORKERS         workers (and bound devices) in the store. Default is 10000.
 *   BENCH_CONNECTIONS     comma list. Default is `64,256`.
 *   BENCH_ENDPOINTS       comma list of `boot-vars`, `devices/report`. Default is both.
 *   BENCH_SERVERS         comma list of `nginx`, `bare-node`, `ironlens`, and `fastify-floor` (a
 *                         Fastify route answering a constant: the floor of any Fastify route).
 *                         Default is `nginx,bare-node,ironlens`.
 *   BENCH_PROFILE         `1`: run ironlens under `--cpu-prof`; the profile's path is printed.
 *   BENCH_FROM_SOURCE     `1`: run the Node servers' TypeScript through tsx. Default: each is first
 *                         compiled as the release is (`buildCli`, into .cache/bench/), and run so.
 *   BENCH_REPLICATED      `1`: also the replicated boot storm (issue 12): `ironlens serve` (the compiled
 *                         command) on one PostgreSQL behind nginx, 1, 2 and 3 replicas, beside one
 *                         `ironlens serve` on SQLite, same fleet, same wrk; a table of its own.
 *                         Needs root (PostgreSQL runs as the postgres user). `npm run bench:replicated`
 *                         runs only that part (BENCH_SERVERS empty).
 *   BENCH_REPLICATED_SETUPS  comma list of `sqlite`, `postgres-direct`, `nginx-1`, `nginx-2`, `nginx-3`.
 *                         Default is `sqlite,nginx-1,nginx-2,nginx-3`.
 *   BENCH_JSON            a file to write the results to, as JSON.
 *
 * Traffic stays on 127.0.0.1. Every process started here is stopped at the end, on
 * failure and on Ctrl-C too.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { freeTcpPort } from '@ironlens/core/testing';
import { buildCli } from '../packages/cli/src/build';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootScriptOf, bootVarsPath, hostnameOf, macOf, REPORT_TEXT, reportPath } from './bench/fleet';
import { pass, type PassResult } from './bench/cold-pass';
import { machine } from './bench/machine';
import { startNginx } from './bench/nginx';
import { installCleanup, interrupted, stopAll, track, waitForPort } from './bench/processes';
import { startReplicated, type Target } from './bench/replicated';
import { seedFleet } from './bench/seed';
import { runWrk, type WrkResult } from './bench/wrk';

type ServerName = 'nginx' | 'bare-node' | 'fastify-floor' | 'ironlens';
type Endpoint = 'boot-vars' | 'devices/report';

const env = process.env;
const list = (v: string | undefined, dflt: string) => (v ?? dflt).split(',').map((s) => s.trim()).filter(Boolean);
const SECONDS = Number(env.BENCH_SECONDS ?? 8);
const WARMUP = Number(env.BENCH_WARMUP_SECONDS ?? 2);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 1);
const WORKERS = Number(env.BENCH_WORKERS ?? 10_000);
const CONNECTIONS = list(env.BENCH_CONNECTIONS, '64,256').map(Number);
const ENDPOINTS = list(env.BENCH_ENDPOINTS, 'boot-vars,devices/report') as Endpoint[];
const SERVERS = list(env.BENCH_SERVERS, 'nginx,bare-node,ironlens') as ServerName[];
const PROFILE = env.BENCH_PROFILE === '1';
const FROM_SOURCE = env.BENCH_FROM_SOURCE === '1';
const REPLICATED = env.BENCH_REPLICATED === '1';
const REPLICATED_SETUPS = list(env.BENCH_REPLICATED_SETUPS, 'sqlite,nginx-1,nginx-2,nginx-3');
const TARGET = { ratioNginx: 0.5, p99Ms: 5, connections: 64 };
const ROOT = join(import.meta.dirname, '..');

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

function check(): void {
  if (!Number.isInteger(WORKERS) || WORKERS < 1 || WORKERS > 1_000_000) throw new Error('BENCH_WORKERS: 1..1000000');
  if (!(SECONDS > 0) || !(WARMUP >= 0)) throw new Error('BENCH_SECONDS must be > 0 and BENCH_WARMUP_SECONDS >= 0');
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 20) throw new Error('BENCH_ROUNDS: 1..20');
  if (CONNECTIONS.some((c) => !Number.isInteger(c) || c < 1)) throw new Error('BENCH_CONNECTIONS: positive integers');
  for (const e of ENDPOINTS) if (e !== 'boot-vars' && e !== 'devices/report') throw new Error(`BENCH_ENDPOINTS: unknown ${e}`);
  for (const s of SERVERS) if (!['nginx', 'bare-node', 'fastify-floor', 'ironlens'].includes(s)) throw new Error(`BENCH_SERVERS: unknown ${s}`);
  for (const s of REPLICATED_SETUPS) if (!/^(sqlite|postgres-direct|nginx-[123])$/.test(s)) throw new Error(`BENCH_REPLICATED_SETUPS: unknown ${s}`);
}


interface Server {
  port: number;
  pid: number;
}

/**
 * Every Node server runs compiled, as `ironlens serve` does (the release's esbuild bundle, with
 * the command's options): run through tsx, each closure created per request also paid tsx's
 * name-keeping wrapper (an `Object.defineProperty`), and the figures measured the loader, not
 * what ships (issue 32, item 9). `BENCH_FROM_SOURCE=1` runs the sources through tsx instead.
 */
async function compiled(script: string): Promise<{ file: string; loader: string[] }> {
  const source = join(ROOT, 'scripts', 'bench', script);
  if (FROM_SOURCE) return { file: source, loader: ['--import', 'tsx'] };
  const outdir = join(ROOT, '.cache', 'bench', script.replace(/\.ts$/, ''));
  await buildCli(outdir, source);
  return { file: join(outdir, 'main.js'), loader: [] };
}

async function startNodeChild(script: string, what: string, extraEnv: Record<string, string>, execArgv: string[] = []): Promise<Server> {
  const { file, loader } = await compiled(script);
  const child = track(
    spawn(process.execPath, [...execArgv, ...loader, file], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...extraEnv },
    }),
  );
  return { port: await waitForPort(child, what), pid: child.pid ?? 0 };
}

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

/** Before any load: each server answers what it must, for a sample of the fleet. */
async function verify(ports: Partial<Record<ServerName, number>>): Promise<void> {
  const sample = [1, WORKERS, ...Array.from({ length: 98 }, () => 1 + Math.floor(Math.random() * WORKERS))];
  for (const name of ['ironlens', 'bare-node'] as const) {
    const port = ports[name];
    if (!port) continue;
    for (const i of sample) {
      const r = await get(port, bootVarsPath(i));
      if (r.status !== 200 || r.body !== bootScriptOf(i)) throw new Error(`${name}: ${bootVarsPath(i)} answered ${r.status} ${JSON.stringify(r.body)}, expected ${JSON.stringify(bootScriptOf(i))}`);
    }
    const spoofed = await get(port, `/boot-vars?mac=${macOf(2)}&hostname=${hostnameOf(1)}`);
    if (spoofed.body.includes('set ')) throw new Error(`${name}: a MAC bound to another worker got boot vars`);
    const rep = await get(port, reportPath(1));
    if (rep.status !== 200 || rep.body !== REPORT_TEXT) throw new Error(`${name}: /devices/report answered ${rep.status} ${JSON.stringify(rep.body)}`);
  }
  if (ports.nginx) {
    const r = await get(ports.nginx, bootVarsPath(1));
    if (r.status !== 200 || r.body !== bootScriptOf(1)) throw new Error(`nginx: /boot-vars answered ${r.status} ${JSON.stringify(r.body)}`);
    const rep = await get(ports.nginx, reportPath(1));
    if (rep.status !== 200 || rep.body !== REPORT_TEXT) throw new Error(`nginx: /devices/report answered ${rep.status}`);
  }
}

interface Row {
  endpoint: Endpoint;
  connections: number;
  server: ServerName;
  /** The median round (by req/s); its latencies are that round's. */
  result: WrkResult;
  rounds: WrkResult[];
}

/** The round with the median req/s (the lower middle one for an even count). */
export function median(results: WrkResult[]): WrkResult {
  const sorted = [...results].sort((a, b) => a.rps - b.rps);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

const fmt = (n: number, digits = 2) => n.toFixed(digits);
const fmtRps = (n: number) => Math.round(n).toLocaleString('en-US');

export function resultsTable(rows: Row[]): string {
  const lines = [
    '| endpoint | conns | server | req/s | p50 ms | p90 ms | p99 ms | errors | server CPU | req per CPU-s | wrk CPU | req/s of each round |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  const pct = (x: number) => (Number.isFinite(x) ? `${Math.round(100 * x)}%` : '–');
  for (const r of rows) {
    const x = r.result;
    const each = r.rounds.map((y) => fmtRps(y.rps)).join(' / ');
    const errors = r.rounds.reduce((a, y) => a + y.errors, 0);
    const perCpu = x.serverCpuSeconds > 0 ? fmtRps(x.requests / x.serverCpuSeconds) : '–';
    lines.push(
      `| /${r.endpoint} | ${r.connections} | ${r.server} | ${fmtRps(x.rps)} | ${fmt(x.p50)} | ${fmt(x.p90)} | ${fmt(x.p99)} | ${errors} | ${pct(x.serverCpuSeconds / x.seconds)} | ${perCpu} | ${pct(x.wrkCpu)} | ${each} |`,
    );
  }
  return lines.join('\n');
}

interface ReplicatedRow {
  endpoint: Endpoint;
  connections: number;
  label: string;
  result: WrkResult;
  rounds: WrkResult[];
}

/** The replicated storm: one row per setup; `CPU` sums every process serving it (replicas, nginx, PostgreSQL). */
export function replicatedTable(rows: ReplicatedRow[]): string {
  const lines = [
    '| endpoint | conns | setup | req/s | p50 ms | p90 ms | p99 ms | errors | CPU of its processes | req per CPU-s | wrk CPU | req/s of each round |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  const pct = (x: number) => (Number.isFinite(x) ? `${Math.round(100 * x)}%` : '–');
  for (const r of rows) {
    const x = r.result;
    const errors = r.rounds.reduce((a, y) => a + y.errors, 0);
    const perCpu = x.serverCpuSeconds > 0 ? fmtRps(x.requests / x.serverCpuSeconds) : '–';
    lines.push(
      `| /${r.endpoint} | ${r.connections} | ${r.label} | ${fmtRps(x.rps)} | ${fmt(x.p50)} | ${fmt(x.p90)} | ${fmt(x.p99)} | ${errors} | ${pct(x.serverCpuSeconds / x.seconds)} | ${perCpu} | ${pct(x.wrkCpu)} | ${r.rounds.map((y) => fmtRps(y.rps)).join(' / ')} |`,
    );
  }
  return lines.join('\n');
}

/** The same storm against each replicated setup, interleaved round by round like the servers above. */
async function replicatedStorm(targets: Target[], paths: Record<Endpoint, string>): Promise<ReplicatedRow[]> {
  const rows: ReplicatedRow[] = [];
  for (const endpoint of ENDPOINTS) {
    if (WARMUP > 0) for (const t of targets) await runWrk({ url: t.url, connections: CONNECTIONS[0], seconds: WARMUP, pathsFile: paths[endpoint] });
    for (const connections of CONNECTIONS) {
      const runs = new Map<string, WrkResult[]>(targets.map((t) => [t.label, []]));
      for (let round = 1; round <= ROUNDS; round++) {
        for (const t of targets) {
          const result = await runWrk({ url: t.url, connections, seconds: SECONDS, pathsFile: paths[endpoint], serverPid: t.pids });
          runs.get(t.label)!.push(result);
          log(`/${endpoint} c=${connections} ${t.label}${ROUNDS > 1 ? ` round ${round}/${ROUNDS}` : ''}: ${fmtRps(result.rps)} req/s, p50 ${fmt(result.p50)} ms, p99 ${fmt(result.p99)} ms, errors ${result.errors}`);
        }
      }
      for (const t of targets) rows.push({ endpoint, connections, label: t.label, result: median(runs.get(t.label)!), rounds: runs.get(t.label)! });
    }
  }
  return rows;
}

/** Median over rounds of ironlens/other, each pair taken from the same round. */
export function pairedRatio(il: Row, other: Row): number {
  const r = il.rounds.map((x, i) => x.rps / (other.rounds[i]?.rps ?? Number.NaN)).sort((a, b) => a - b);
  return r.length % 2 ? r[(r.length - 1) / 2] : (r[r.length / 2 - 1] + r[r.length / 2]) / 2;
}

const perCpu = (x: WrkResult) => (x.serverCpuSeconds > 0 ? x.requests / x.serverCpuSeconds : Number.NaN);

/** Median over rounds of ironlens/other requests per CPU-second of the server, pairs from the same round. */
export function pairedCpuRatio(il: Row, other: Row): number {
  const r = il.rounds.map((x, i) => perCpu(x) / (other.rounds[i] ? perCpu(other.rounds[i]) : Number.NaN)).sort((a, b) => a - b);
  return r.length % 2 ? r[(r.length - 1) / 2] : (r[r.length / 2 - 1] + r[r.length / 2]) / 2;
}

export function ratioTable(rows: Row[]): string {
  const floor = rows.some((r) => r.server === 'fastify-floor');
  const others: ServerName[] = floor ? ['nginx', 'bare-node', 'fastify-floor'] : ['nginx', 'bare-node'];
  const lines = [
    `| endpoint | conns | ${others.map((o) => `ironlens/${o}`).join(' | ')} | ${others.map((o) => `per CPU-s: ironlens/${o}`).join(' | ')} |`,
    `| --- | ---: |${' ---: |'.repeat(2 * others.length)}`,
  ];
  const find = (e: Endpoint, c: number, s: ServerName) => rows.find((r) => r.endpoint === e && r.connections === c && r.server === s);
  for (const e of ENDPOINTS) {
    for (const c of CONNECTIONS) {
      const il = find(e, c, 'ironlens');
      if (!il) continue;
      const cell = (s: ServerName, ratio: (a: Row, b: Row) => number) => {
        const o = find(e, c, s);
        const v = o ? ratio(il, o) : Number.NaN;
        return Number.isFinite(v) ? fmt(v) : '–';
      };
      lines.push(`| /${e} | ${c} | ${others.map((o) => cell(o, pairedRatio)).join(' | ')} | ${others.map((o) => cell(o, pairedCpuRatio)).join(' | ')} |`);
    }
  }
  return lines.join('\n');
}

function verdict(rows: Row[]): string {
  const il = rows.find((r) => r.endpoint === 'boot-vars' && r.connections === TARGET.connections && r.server === 'ironlens');
  const ng = rows.find((r) => r.endpoint === 'boot-vars' && r.connections === TARGET.connections && r.server === 'nginx');
  if (!il || !ng) return 'target: not measured (needs /boot-vars at 64 connections with nginx and ironlens)';
  const ratio = pairedRatio(il, ng);
  const okRatio = ratio >= TARGET.ratioNginx;
  const okP99 = il.result.p99 < TARGET.p99Ms;
  return [
    `target /boot-vars @ ${TARGET.connections} conns: >= ${TARGET.ratioNginx}x nginx -> ${fmt(ratio)}x ${okRatio ? 'MET' : 'NOT MET'};`,
    `p99 < ${TARGET.p99Ms} ms -> ${fmt(il.result.p99)} ms ${okP99 ? 'MET' : 'NOT MET'}`,
  ].join(' ');
}

async function main(): Promise<void> {
  check();
  const work = mkdtempSync(join(tmpdir(), 'ironlens-bench-'));
  const cleanups: Array<() => void> = [() => rmSync(work, { recursive: true, force: true })];
  installCleanup(() => {
    if (env.BENCH_KEEP !== '1') for (const c of cleanups.splice(0)) c();
  });
  const m = machine();
  const loadBefore = loadavg()[0];
  log(`machine: nproc ${m.nproc}, ${m.cpu}, Node ${m.node}, ${m.wrk}, ${m.nginx}; load average ${fmt(loadBefore)}`);
  if (loadBefore > 0.5) log('warning: the machine is busy; absolute figures will be low and noisy, compare the ratios');

  const t0 = performance.now();
  await seedFleet(join(work, 'data', 'ironlens.db'), WORKERS);
  log(`seeded ${WORKERS} workers with bound devices and disks in ${fmt((performance.now() - t0) / 1000)} s`);
  const paths: Record<Endpoint, string> = { 'boot-vars': join(work, 'boot-vars.paths'), 'devices/report': join(work, 'report.paths') };
  const ids = Array.from({ length: WORKERS }, (_, k) => k + 1);
  writeFileSync(paths['boot-vars'], `${ids.map(bootVarsPath).join('\n')}\n`);
  writeFileSync(paths['devices/report'], `${ids.map(reportPath).join('\n')}\n`);

  const servers: Partial<Record<ServerName, Server>> = {};
  const profileDir = join(work, 'cpu-prof');
  if (SERVERS.includes('nginx')) {
    // A prefix of its own outside `work` (0700): nginx's worker runs as `nobody` when we are root.
    const prefix = mkdtempSync(join(tmpdir(), 'ironlens-bench-nginx-'));
    cleanups.push(() => rmSync(prefix, { recursive: true, force: true }));
    const nginx = await startNginx(prefix, await freeTcpPort(), { bootVars: bootScriptOf(1), report: REPORT_TEXT });
    servers.nginx = { port: nginx.port, pid: nginx.child.pid ?? 0 };
  }
  if (SERVERS.includes('bare-node')) servers['bare-node'] = await startNodeChild('bare-node-server.ts', 'bare node server', { BENCH_WORKERS: String(WORKERS) });
  if (SERVERS.includes('fastify-floor')) servers['fastify-floor'] = await startNodeChild('fastify-floor-server.ts', 'fastify floor server', {});
  if (SERVERS.includes('ironlens')) {
    const execArgv = PROFILE ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
    servers.ironlens = await startNodeChild('ironlens-server.ts', 'ironlens', { BENCH_DATA_DIR: join(work, 'data') }, execArgv);
  }
  const ports = Object.fromEntries(Object.entries(servers).map(([k, v]) => [k, v.port])) as Partial<Record<ServerName, number>>;
  log(`listening: ${Object.entries(ports).map(([k, v]) => `${k} 127.0.0.1:${v}`).join(', ')}`);
  if (env.BENCH_VERIFY === '0') log('warning: BENCH_VERIFY=0, answers not checked (experiments only)');
  else {
    await verify(ports);
    log('every server answers the expected iPXE text for a sample of 100 workers');
  }

  // The first boot of the storm, before anything warms the cache: every machine once. And its
  // first device report in this process (the store read once per machine), so that the rounds
  // measure what the issue asks of /devices/report: an unchanged report of a known device.
  const colds = new Map<Endpoint, { first: PassResult; again: PassResult }>();
  const ironlens = servers.ironlens;
  if (ironlens) {
    for (const endpoint of ENDPOINTS) {
      const shuffled = ids.map(endpoint === 'boot-vars' ? bootVarsPath : reportPath).sort(() => Math.random() - 0.5);
      const first = await pass(ironlens.port, shuffled);
      const again = await pass(ironlens.port, shuffled);
      colds.set(endpoint, { first, again });
      log(`cold pass /${endpoint}: ${WORKERS} machines once each, 64 in flight: ${fmt(first.seconds)} s (${fmtRps(first.rps)} req/s); same pass warm: ${fmt(again.seconds)} s (${fmtRps(again.rps)} req/s)`);
    }
  }
  const coldLine = (endpoint: Endpoint, what: string) => {
    const c = colds.get(endpoint);
    if (!c) return [];
    const failures = c.first.failures + c.again.failures;
    return [`${what} (ironlens, every machine once, 64 in flight, node:http client): ${fmt(c.first.seconds)} s = ${fmtRps(c.first.rps)} req/s; the same pass warm: ${fmt(c.again.seconds)} s = ${fmtRps(c.again.rps)} req/s${failures ? `; FAILURES ${failures}` : ''}`];
  };

  const rows: Row[] = [];
  const order = (['nginx', 'bare-node', 'fastify-floor', 'ironlens'] as const).filter((s) => ports[s]);
  for (const endpoint of ENDPOINTS) {
    if (WARMUP > 0) {
      for (const server of order) {
        await runWrk({ url: `http://127.0.0.1:${ports[server]}`, connections: CONNECTIONS[0], seconds: WARMUP, pathsFile: paths[endpoint] });
      }
    }
    for (const connections of CONNECTIONS) {
      // Servers interleaved round by round, so a burst of load from elsewhere hits them alike.
      const runs = new Map<ServerName, WrkResult[]>(order.map((s) => [s, []]));
      for (let round = 1; round <= ROUNDS; round++) {
        for (const server of order) {
          const result = await runWrk({ url: `http://127.0.0.1:${ports[server]}`, connections, seconds: SECONDS, pathsFile: paths[endpoint], serverPid: servers[server]?.pid });
          runs.get(server)!.push(result);
          log(`/${endpoint} c=${connections} ${server}${ROUNDS > 1 ? ` round ${round}/${ROUNDS}` : ''}: ${fmtRps(result.rps)} req/s, p50 ${fmt(result.p50)} ms, p99 ${fmt(result.p99)} ms, errors ${result.errors}`);
        }
      }
      for (const server of order) rows.push({ endpoint, connections, server, result: median(runs.get(server)!), rounds: runs.get(server)! });
    }
  }

  // The replicated storm (BENCH_REPLICATED=1): the single-process servers stop first, so the
  // replicas, nginx and PostgreSQL have the machine to themselves.
  let replicatedRows: ReplicatedRow[] = [];
  if (REPLICATED) {
    await stopAll();
    const replicated = await startReplicated(work, WORKERS, REPLICATED_SETUPS, log);
    cleanups.unshift(() => replicated.killNow());
    try {
      replicatedRows = await replicatedStorm(replicated.targets, paths);
    } finally {
      await replicated.stop();
    }
  }

  const out = [
    `machine: nproc ${m.nproc}; CPU ${m.cpu}; Node ${m.node}; kernel ${m.kernel}; ${m.wrk}; ${m.nginx}`,
    `run: wrk -t1 --latency, ${SECONDS} s per run, ${ROUNDS} round(s) interleaved, median shown (warm-up ${WARMUP} s), ${WORKERS} workers, random worker per request; 1-min load average ${fmt(loadBefore)} before, ${fmt(loadavg()[0])} after`,
    ...(rows.length ? ['', resultsTable(rows), '', ratioTable(rows), ''] : []),
    ...coldLine('boot-vars', 'first boot of the storm, cache cold'),
    ...coldLine('devices/report', "first /devices/report of each machine in this process (the store read once each; last_seen written after)"),
    ...(colds.size ? [''] : []),
    ...(rows.length ? [verdict(rows)] : []),
    ...(replicatedRows.length
      ? [
          '',
          `replicated: \`ironlens serve\` (compiled) on one PostgreSQL (throw-away, fsync off) behind nginx (passive health checks, keep-alive upstreams), beside one \`ironlens serve\` on SQLite; same fleet, same wrk`,
          '',
          replicatedTable(replicatedRows),
        ]
      : []),
  ].join('\n');
  process.stdout.write(`${out}\n`);
  if (env.BENCH_JSON) {
    const bare = <R extends { result: WrkResult; rounds: WrkResult[] }>(r: R) => ({ ...r, result: { ...r.result, raw: undefined }, rounds: r.rounds.map((x) => ({ ...x, raw: undefined })) });
    writeFileSync(env.BENCH_JSON, JSON.stringify({ machine: m, seconds: SECONDS, workers: WORKERS, rows: rows.map(bare), replicated: replicatedRows.map(bare) }, null, 2));
  }
  await stopAll();
  if (PROFILE) log(`cpu profile(s) of ironlens: ${readdirProfiles(profileDir).join(', ') || 'none written'} (BENCH_KEEP=1 keeps them)`);
}

function readdirProfiles(dir: string): string[] {
  try {
    return execFileSync('ls', [dir], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((f) => join(dir, f));
  } catch {
    return [];
  }
}

main().then(
  async () => {
    await stopAll();
    process.exit(0);
  },
  async (err: Error) => {
    if (interrupted) return; // the signal handler stops everything and exits
    process.stderr.write(`[bench] failed: ${err.stack ?? err.message}\n`);
    await stopAll();
    process.exit(1);
  },
);
