/** Runs `wrk --latency` with the boot-storm Lua script and parses what it prints. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cpuSeconds } from './cpu';
import { track } from './processes';

export const LUA_SCRIPT = fileURLToPath(new URL('./boot-storm.lua', import.meta.url));

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p75: number;
  p90: number;
  p99: number;
  /** Connect/read/write/timeout socket errors plus non-2xx/3xx answers. */
  errors: number;
  non2xx: number;
  /** CPU used by wrk itself, as a share of one core over the run (1 = its one thread is saturated). */
  wrkCpu: number;
  /** CPU used by the server (and its children) during the run, in seconds; NaN when not measured. */
  serverCpuSeconds: number;
  raw: string;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

export function parseDuration(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) throw new Error(`cannot parse wrk duration ${JSON.stringify(text)}`);
  return Number(m[1]) * UNIT_MS[m[2]];
}

export function parseWrk(out: string): WrkResult {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm').exec(out);
    if (!m) throw new Error(`wrk printed no ${p}% latency:\n${out}`);
    return parseDuration(m[1]);
  };
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m),/.exec(out);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  if (!total || !rps) throw new Error(`cannot parse wrk output:\n${out}`);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = sock ? sock.slice(1, 5).reduce((a, b) => a + Number(b), 0) : 0;
  const non = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const non2xx = non ? Number(non[1]) : 0;
  return {
    requests: Number(total[1]),
    seconds: parseDuration(`${total[2]}${total[3]}`) / 1000,
    rps: Number(rps[1]),
    p50: pct('50'),
    p75: pct('75'),
    p90: pct('90'),
    p99: pct('99'),
    errors: socketErrors + non2xx,
    non2xx,
    wrkCpu: Number.NaN,
    serverCpuSeconds: Number.NaN,
    raw: out,
  };
}

export interface WrkRun {
  url: string;
  connections: number;
  seconds: number;
  /** File of request paths, one per line, read by the Lua script. */
  pathsFile: string;
  threads?: number;
  /** The server's pid (or every pid serving: replicas, their balancer, their database), to measure its CPU time over the run. */
  serverPid?: number | number[];
}

export function runWrk(r: WrkRun): Promise<WrkResult> {
  const args = [`-t${r.threads ?? 1}`, `-c${r.connections}`, `-d${r.seconds}s`, '--timeout', '10s', '--latency', '-s', LUA_SCRIPT, r.url];
  return new Promise((resolve, reject) => {
    const child = track(spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, BENCH_PATHS: r.pathsFile } }));
    let out = '';
    let err = '';
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.stderr?.on('data', (b: Buffer) => {
      err += b.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (r.seconds + 30) * 1000);
    const pids = r.serverPid === undefined ? [] : ([] as number[]).concat(r.serverPid);
    const serverCpuNow = () => (pids.length ? pids.reduce((a, pid) => a + cpuSeconds(pid), 0) : Number.NaN);
    const serverCpu0 = serverCpuNow();
    const t0 = performance.now();
    // wrk's CPU time can only be read while it runs: sample it until it exits.
    let wrkCpu = 0;
    const sample = setInterval(() => {
      if (child.pid) wrkCpu = cpuSeconds(child.pid) || wrkCpu;
    }, 200);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      clearInterval(sample);
      const serverCpu = serverCpuNow() - serverCpu0;
      if (code !== 0) return reject(new Error(`wrk exited with ${code}: ${err}${out}`));
      try {
        const result = parseWrk(out);
        result.wrkCpu = wrkCpu / ((performance.now() - t0) / 1000);
        result.serverCpuSeconds = serverCpu;
        resolve(result);
      } catch (e) {
        reject(e);
      }
    });
  });
}
