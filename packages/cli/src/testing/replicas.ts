/**
 * A replicated ironlens on this machine, for the replicated end-to-end test (issue 12) and the
 * replicated benchmark: `ironlens serve` processes (the compiled command, each its own data
 * dir, listeners on their own 127.0.0.x loopback address), a real nginx (Debian) in front of
 * their provisioning listeners as the load balancer, and a real dnsmasq (no DNS, static DHCP leases only on
 * loopback: it reads the hosts file on SIGHUP, which is what the replicas reload) whose log
 * tells when it read the file. Everything runs in its own process group and is stopped by pid.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeTcpPort, waitForListen, waitUntil } from '@ironlens/core/testing';
import { buildCli } from '../build';

const BIN_SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'ironlens.mjs');

/** Throws when a tool the test drives is missing (a test never passes without its tool). */
export function requireTool(name: string, debianPackage: string): string {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin'])) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  throw new Error(`${name} is missing: install the Debian package ${debianPackage} (scripts/install-test-deps.sh)`);
}

/** Compiles the `ironlens` command into `root` (bin/ + dist/, as `npm install` does) and returns the bin. */
export async function buildCommand(root: string): Promise<string> {
  const bin = join(root, 'bin', 'ironlens.mjs');
  mkdirSync(dirname(bin), { recursive: true });
  copyFileSync(BIN_SOURCE, bin);
  await buildCli(join(root, 'dist'));
  return bin;
}

/** A child in its own process group, its output kept. */
export interface Proc {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<void>;
  /** SIGKILL to the whole group (the child and what it started). */
  kill9(): void;
  /** SIGTERM to the group, SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export function startProc(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd?: string): Proc {
  const child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  // The start lines are kept whatever follows; the rest is a bounded tail.
  let head = '';
  let out = '';
  const keep = (d: Buffer) => {
    if (head.length < 20_000) head += d;
    else out += d;
    if (out.length > 200_000) out = `…\n${out.slice(-100_000)}`;
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const signal = (sig: NodeJS.Signals) => {
    if (!child.pid) return;
    try {
      process.kill(-child.pid, sig);
    } catch {}
  };
  return {
    child,
    output: () => head + out,
    exited,
    kill9: () => signal('SIGKILL'),
    async stop(graceMs = 5000) {
      if (!alive()) return signal('SIGKILL'); // what it started may outlive it
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      signal('SIGKILL');
    },
  };
}

/** Resolves once something accepts TCP connections on host:port; throws at once when `proc` exits first. */
function listening(host: string, port: number, proc: Proc, what: string, timeoutMs = 30_000): Promise<void> {
  const failed = () => (proc.child.exitCode !== null ? `exited (${proc.child.exitCode}) before listening: ${proc.output().slice(-3000)}` : undefined);
  return waitForListen(what, host, port, { timeoutMs, failed, detail: () => proc.output().slice(-3000) });
}

export interface Replica extends Proc {
  readonly name: string;
  /** The provisioning listener, `http://127.0.0.x:port`. */
  readonly boot: string;
  readonly bootPort: number;
  readonly host: string;
  /** The console listener (loopback), when asked for. */
  readonly console?: string;
  readonly dataDir: string;
}

export interface ReplicaOptions {
  bin: string;
  name: string;
  /** 127.0.0.x: its own loopback address. */
  host: string;
  dataDir: string;
  env: Record<string, string>;
  /** Open the console listener too (loopback, same host). Default is `false`. */
  console?: boolean;
}

/** One `ironlens serve` of the compiled command; resolves once its listeners are up. */
export async function startReplica(o: ReplicaOptions): Promise<Replica> {
  mkdirSync(o.dataDir, { recursive: true });
  const bootPort = await freeTcpPort(o.host);
  const consolePort = o.console ? await freeTcpPort(o.host) : 0;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    IRONLENS_FROM_SOURCE: '',
    ...o.env,
    IRONLENS_DATA_DIR: o.dataDir,
    IRONLENS_BOOT_LISTEN: `${o.host}:${bootPort}`,
    IRONLENS_CONSOLE_LISTEN: o.console ? `${o.host}:${consolePort}` : 'off',
  };
  const proc = startProc(process.execPath, [o.bin, 'serve'], env, o.dataDir);
  await listening(o.host, bootPort, proc, `replica ${o.name}`, 60_000);
  if (o.console) await listening(o.host, consolePort, proc, `replica ${o.name} console`, 60_000);
  return {
    ...proc,
    name: o.name,
    host: o.host,
    boot: `http://${o.host}:${bootPort}`,
    bootPort,
    console: o.console ? `http://${o.host}:${consolePort}` : undefined,
    dataDir: o.dataDir,
  };
}

/**
 * The start of an nginx configuration that keeps everything in `prefix` (pid, error log, temp
 * dirs; `-p prefix`), one worker in the foreground, no access log, keep-alive without a request
 * limit; it ends inside the open `http {` block, for the caller's upstreams and servers.
 * Shared by the load balancer here and the benchmark's static-file reference (scripts/bench/nginx.ts).
 */
export function nginxPrelude(prefix: string): string {
  return `worker_processes 1;
daemon off;
master_process on;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/tmp/body;
  proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi;
  scgi_temp_path ${prefix}/tmp/scgi;
  # Node never closes a keep-alive connection after N requests; nor does this nginx.
  keepalive_requests 1000000;
  server_tokens off;`;
}

/**
 * nginx as the load balancer (open-source nginx has passive health checks only: a replica
 * that refuses or resets is marked down for `fail_timeout` and the request goes to the next
 * one). Requests are retried on the next replica, except a POST or PATCH already sent to a
 * replica that dies (nginx's default, `non_idempotent` is off): the client gets 502 and
 * decides. PUT and DELETE, idempotent in HTTP, are resent.
 */
export function balancerConf(prefix: string, port: number, upstreams: Array<{ host: string; port: number }>): string {
  return `${nginxPrelude(prefix)}
  upstream ironlens {
${upstreams.map((u) => `    server ${u.host}:${u.port} max_fails=1 fail_timeout=2s;`).join('\n')}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://ironlens;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_connect_timeout 1s;
      proxy_read_timeout 30s;
      proxy_next_upstream error timeout http_502 http_503 http_504;
      proxy_next_upstream_tries 3;
    }
  }
}
`;
}

export interface Balancer extends Proc {
  readonly url: string;
  readonly port: number;
  errorLog(): string;
}

/** A real nginx (Debian's) in the foreground with `conf(port)` as its configuration, everything under `prefix`, stopped by pid. */
export async function startNginx(prefix: string, conf: (port: number) => string, port?: number): Promise<Balancer> {
  const nginx = requireTool('nginx', 'nginx-light');
  // nginx's worker drops to `nobody` when run as root: its prefix must be reachable.
  for (const d of ['tmp', 'logs']) mkdirSync(join(prefix, d), { recursive: true });
  chmodSync(prefix, 0o755);
  const listen = port ?? (await freeTcpPort());
  const file = join(prefix, 'nginx.conf');
  writeFileSync(file, conf(listen));
  const errorLog = join(prefix, 'error.log');
  const proc = startProc(nginx, ['-p', prefix, '-c', file, '-e', errorLog], process.env);
  await listening('127.0.0.1', listen, proc, 'nginx');
  return { ...proc, url: `http://127.0.0.1:${listen}`, port: listen, errorLog: () => (existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : '') };
}

export async function startBalancer(prefix: string, upstreams: Array<{ host: string; port: number }>): Promise<Balancer> {
  return startNginx(prefix, (port) => balancerConf(prefix, port, upstreams));
}

/**
 * A plain reverse proxy in front of one upstream (the console): `location /` with `proxy_pass`,
 * nothing else unless asked. `host`: what it sends as `Host` — `'$http_host'` keeps the
 * browser's (port included), `'$proxy_host'` (nginx's default) the upstream's. `headers`: more
 * `proxy_set_header` lines (an `Authorization` a deployment adds, `X-Forwarded-*`). The browser's
 * `Origin` and `Sec-Fetch-*` pass through untouched, as with any nginx.
 */
export function reverseProxyConf(prefix: string, port: number, upstream: string, opts: { host: '$http_host' | '$proxy_host'; headers?: Record<string, string> }): string {
  const extra = Object.entries(opts.headers ?? {}).map(([k, v]) => `      proxy_set_header ${k} "${v.replace(/["\\]/g, '')}";`);
  return `${nginxPrelude(prefix)}
  client_max_body_size 16m;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass ${upstream};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host ${opts.host};
${extra.join('\n')}
    }
  }
}
`;
}

export interface Dnsmasq extends Proc {
  readonly hostsFile: string;
  readonly pidFile: string;
  /** How many times dnsmasq has read the hosts file (its log says `read <file>`). */
  reads(): number;
}

/**
 * A real dnsmasq that serves nothing (no DNS, static DHCP leases only, on loopback) and reads
 * `hostsFile` at start and on every SIGHUP: the process the replicas' writer reloads through
 * its pid file.
 */
export async function startDnsmasq(dir: string): Promise<Dnsmasq> {
  const bin = requireTool('dnsmasq', 'dnsmasq-base');
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755); // dnsmasq drops root: the hosts file must be readable by its user
  const hostsFile = join(dir, 'dhcp-hosts.conf');
  const pidFile = join(dir, 'dnsmasq.pid');
  const log = join(dir, 'dnsmasq.log');
  writeFileSync(hostsFile, '', { mode: 0o644 });
  // dnsmasq reads a hosts file only with DHCP on: a static-only range on the loopback
  // interface, on a free port instead of 67 (it never hands out an address).
  const port = await freeTcpPort();
  const proc = startProc(
    bin,
    [
      '--keep-in-foreground', '--conf-file=/dev/null', '--port=0', '--interface=lo', '--bind-interfaces', `--dhcp-alternate-port=${port},${port + 1}`,
      '--dhcp-range=127.0.0.0,static', `--dhcp-hostsfile=${hostsFile}`, `--dhcp-leasefile=${join(dir, 'leases')}`, `--pid-file=${pidFile}`, `--log-facility=${log}`,
    ],
    process.env,
  );
  const reads = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => l.includes(`read ${hostsFile}`)).length : 0);
  try {
    await waitUntil('dnsmasq to write its pid file and read the hosts file', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '' && reads() >= 1, 15_000);
  } catch (err) {
    await proc.stop();
    throw new Error(`${(err as Error).message}: ${proc.output().slice(-2000)}`);
  }
  return {
    ...proc,
    hostsFile,
    pidFile,
    reads,
    async stop() {
      // dnsmasq forks away from the group leader only without --keep-in-foreground; its pid file names it.
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      await proc.stop();
      if (pid > 1) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
    },
  };
}

/** Removes a directory tree; never throws. */
export function removeTree(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}
