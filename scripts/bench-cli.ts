/**
 * `npm run bench:cli`: how fast the `ironlens` command starts, beside `node -e 0` measured in
 * the same run on the same machine. Builds packages/cli/dist first (what `npm install` does),
 * then times, as a user runs them:
 *   - `node -e 0`                      Node itself
 *   - `ironlens --help`                the compiled command           (target: under 0.3 s)
 *   - `ironlens serve` until listening the compiled command, both listeners answering /healthz,
 *                                      on a fresh data dir (store created) (target: under 1.5 s)
 *   - `node:http`, two listeners       the reference for serve: a bare Node process listening on
 *                                      two ports, timed the same way (serve's target: under 5x it)
 *   - both again from the TypeScript sources through tsx (IRONLENS_FROM_SOURCE=1), the start
 *     cost before the build existed (`--no-sources` skips them).
 * Wall time is the median of the runs; CPU time (user + system, children's ticks from
 * /proc/self/stat, 10 ms resolution) is the mean. Options: `--runs N` (default 10; serve runs N/2).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort, sleep } from '@ironlens/core/testing';
import { buildCli, REPO_ROOT } from '../packages/cli/src/build';

const BIN = join(REPO_ROOT, 'packages', 'cli', 'bin', 'ironlens.mjs');
const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU time of this process's waited-for children so far (cutime + cstime), in ms. */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command name: field 3 is index 0, so cutime (16) and cstime (17) are 13 and 14.
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}


interface Sample {
  wallMs: number;
  cpuMs: number;
}

/** Runs a command to its end; wall and CPU time. */
function timeRun(argv: string[], env: NodeJS.ProcessEnv): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const cpu0 = childrenCpuMs();
    const t0 = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) return reject(new Error(`${argv.join(' ')} exited ${code}: ${err}`));
      // The exit event comes after libuv reaped the child, so its CPU time is counted.
      resolve({ wallMs, cpuMs: childrenCpuMs() - cpu0 });
    });
  });
}

async function healthy(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
  } catch {
    return false;
  }
}

/** The reference: a bare `node:http` process with two listeners answering /healthz. */
const BARE_HTTP = `const h=require('node:http');for(const p of process.argv.slice(1))h.createServer((q,s)=>s.end('ok')).listen(+p,'127.0.0.1');process.on('SIGTERM',()=>process.exit(0));`;

/** `ironlens serve` from spawn until both listeners answer /healthz; then SIGTERM. */
function timeServe(env: NodeJS.ProcessEnv): Promise<Sample> {
  return timeListening(env, (data, boot, cons) => [BIN, 'serve', '--data-dir', data, '--boot-listen', `127.0.0.1:${boot}`, '--console-listen', `127.0.0.1:${cons}`]);
}

/** A command that listens on two ports, from spawn until both answer /healthz; then SIGTERM. */
async function timeListening(env: NodeJS.ProcessEnv, args: (data: string, boot: number, cons: number) => string[]): Promise<Sample> {
  const data = mkdtempSync(join(tmpdir(), 'ironlens-bench-cli-'));
  const [boot, cons] = [await freeTcpPort(), await freeTcpPort()];
  const cpu0 = childrenCpuMs();
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, args(data, boot, cons), {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const until = Date.now() + 60_000;
    while (!((await healthy(boot)) && (await healthy(cons)))) {
      if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${err}`);
      if (Date.now() > until) throw new Error(`serve did not listen within 60 s: ${err}`);
      await sleep(5);
    }
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    child.kill('SIGTERM');
    if ((await exited) !== 0) throw new Error(`serve did not stop cleanly: ${err}`);
    // CPU includes the shutdown, which is small beside the start.
    return { wallMs, cpuMs: childrenCpuMs() - cpu0 };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(data, { recursive: true, force: true });
  }
}

async function series(name: string, runs: number, one: () => Promise<Sample>): Promise<{ name: string; wallMs: number; cpuMs: number; runs: number }> {
  await one(); // warm the page cache
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) samples.push(await one());
  const walls = samples.map((s) => s.wallMs).sort((a, b) => a - b);
  const wallMs = walls[Math.floor(walls.length / 2)];
  const cpuMs = samples.reduce((n, s) => n + s.cpuMs, 0) / samples.length;
  return { name, wallMs, cpuMs, runs };
}

const runsArg = process.argv.indexOf('--runs');
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 10;
/** `--no-sources`: skip the two runs from the TypeScript sources (the slow part of the bench). */
const sources = !process.argv.includes('--no-sources');
process.stdout.write(`[bench-cli] build: ${await buildCli()}\n`);

// No dnsmasq is detected or reloaded: the default path (detection) is measured, on a fresh data dir.
const compiled = { ...process.env, IRONLENS_FROM_SOURCE: '' };
const source = { ...process.env, IRONLENS_FROM_SOURCE: '1' };
const rows = [
  await series('node -e 0', runs, () => timeRun([process.execPath, '-e', '0'], process.env)),
  await series('ironlens --help', runs, () => timeRun([process.execPath, BIN, '--help'], compiled)),
  await series('node:http, two listeners', Math.max(2, Math.floor(runs / 2)), () => timeListening(process.env, (_d, boot, cons) => ['-e', BARE_HTTP, String(boot), String(cons)])),
  await series('ironlens serve (listening)', Math.max(2, Math.floor(runs / 2)), () => timeServe(compiled)),
  ...(sources
    ? [
        await series('ironlens --help (sources, tsx)', Math.max(2, Math.floor(runs / 3)), () => timeRun([process.execPath, BIN, '--help'], source)),
        await series('ironlens serve (sources, tsx)', 2, () => timeServe(source)),
      ]
    : []),
];
const targets: Record<string, number> = { 'ironlens --help': 300, 'ironlens serve (listening)': 1500 };

const pad = (s: string, n: number) => s.padEnd(n);
process.stdout.write(`\n${pad('command', 34)}${pad('wall (median)', 16)}${pad('CPU (mean)', 14)}${pad('runs', 6)}target\n`);
for (const r of rows) {
  const target = targets[r.name];
  const verdict = target === undefined ? '' : `< ${target / 1000} s ${r.wallMs < target ? 'met' : 'MISSED'}`;
  process.stdout.write(`${pad(r.name, 34)}${pad(`${(r.wallMs / 1000).toFixed(3)} s`, 16)}${pad(`${(r.cpuMs / 1000).toFixed(2)} s`, 14)}${pad(String(r.runs), 6)}${verdict}\n`);
}
const bare = rows.find((r) => r.name === 'node:http, two listeners')!;
const serve = rows.find((r) => r.name === 'ironlens serve (listening)')!;
const ratio = serve.wallMs / bare.wallMs;
process.stdout.write(`\nironlens serve / node:http start, wall: ${ratio.toFixed(2)}x (target < 5x: ${ratio < 5 ? 'met' : 'MISSED'}); CPU: ${(serve.cpuMs / Math.max(bare.cpuMs, TICK_MS)).toFixed(2)}x\n`);
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
process.stdout.write(`\nnode ${process.version}, load average ${load}\n`);
