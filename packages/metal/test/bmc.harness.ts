import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { freeTcpPort, waitFor } from '@ironlens/core/testing';
import { Daemon } from './netboot.harness';

/**
 * What the power tests (issue 21) start: the real Redfish emulator of OpenStack
 * (`sushy-emulator --fake`, PyPI sushy-tools, in the virtualenv that
 * scripts/install-test-deps.sh makes), and a counting front for it that measures the requests
 * in flight at the emulator's door.
 */

export const SUSHY_VENV = join(homedir(), '.cache', 'ironlens', 'venv-sushy');
const SUSHY = join(SUSHY_VENV, 'bin', 'sushy-emulator');

/** Fails (never skips) when the emulator is not installed, naming how to install it. */
export function requireSushy(): void {
  if (!existsSync(SUSHY)) throw new Error(`${SUSHY} not found: run scripts/install-test-deps.sh (it makes the sushy-tools virtualenv in ${SUSHY_VENV})`);
}

export interface SushySystem {
  uuid: string;
  name: string;
  mac: string;
}

export interface RunningSushy {
  daemon: Daemon;
  port: number;
  base: string;
  tls: boolean;
  username: string;
  password: string;
  /** The system's own resource, read with the right credentials (what the emulator holds now). */
  system(uuid: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** `n` fake systems, `52:54:00:21:xx:yy` MACs, uuids that name their index. */
export function fakeSystems(n: number): SushySystem[] {
  return Array.from({ length: n }, (_, i) => {
    const hex = (i + 1).toString(16).padStart(4, '0');
    return { uuid: `21212121-0000-4000-8000-00000000${hex}`, name: `node-${i + 1}`, mac: `52:54:00:21:${hex.slice(0, 2)}:${hex.slice(2)}` };
  });
}

/**
 * Starts `sushy-emulator --fake` on 127.0.0.1 with its own state dir, an auth file (bcrypt, the
 * only digest it reads) for `username`/`password`, and, with `tls`, a self-signed certificate.
 */
export async function startSushy(dir: string, systems: SushySystem[], opts: { tls?: boolean; username?: string; password?: string } = {}): Promise<RunningSushy> {
  requireSushy();
  mkdirSync(dir, { recursive: true });
  const username = opts.username ?? 'admin';
  const password = opts.password ?? `pw-${process.pid}`;
  const hash = spawnSync(join(SUSHY_VENV, 'bin', 'python'), ['-c', 'import bcrypt,sys; print(bcrypt.hashpw(sys.stdin.read().encode(), bcrypt.gensalt(rounds=4)).decode())'], { input: password, encoding: 'utf8' });
  if (hash.status !== 0) throw new Error(`bcrypt in ${SUSHY_VENV}: ${hash.stderr}`);
  writeFileSync(join(dir, 'htpasswd'), `${username}:${hash.stdout.trim()}\n`);
  const port = await freeTcpPort();
  const lines = [
    `SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'`,
    `SUSHY_EMULATOR_LISTEN_PORT = ${port}`,
    `SUSHY_EMULATOR_STATE_DIR = ${JSON.stringify(join(dir, 'state'))}`,
    `SUSHY_EMULATOR_AUTH_FILE = ${JSON.stringify(join(dir, 'htpasswd'))}`,
    'SUSHY_EMULATOR_FAKE_DRIVER = True',
    `SUSHY_EMULATOR_FAKE_SYSTEMS = ${JSON.stringify(systems.map((s) => ({ uuid: s.uuid, name: s.name, power_state: 'Off', nics: [{ mac: s.mac, ip: '127.0.0.2' }] })))}`,
  ];
  if (opts.tls) {
    await exec(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]);
    lines.push(`SUSHY_EMULATOR_SSL_CERT = ${JSON.stringify(join(dir, 'cert.pem'))}`, `SUSHY_EMULATOR_SSL_KEY = ${JSON.stringify(join(dir, 'key.pem'))}`);
  }
  writeFileSync(join(dir, 'emulator.conf'), `${lines.join('\n')}\n`);
  const daemon = Daemon.start('sushy-emulator', [SUSHY, '--config', join(dir, 'emulator.conf'), '--fake'], join(dir, 'emulator.log'), { ...process.env, PYTHONUNBUFFERED: '1' });
  const scheme = opts.tls ? 'https' : 'http';
  const base = `${scheme}://127.0.0.1:${port}`;
  await waitFor('sushy-emulator to listen', () => daemon.log(), (l) => l.includes('Running on') || !daemon.running, 30_000, 100);
  if (!daemon.running) throw new Error(`sushy-emulator exited (${daemon.code}):\n${daemon.log().slice(-2000)}`);
  const auth = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return {
    daemon,
    port,
    base,
    tls: !!opts.tls,
    username,
    password,
    async system(uuid) {
      const r = await exec(['curl', '-sk', '-H', `authorization: ${auth}`, `${base}/redfish/v1/Systems/${uuid}`]);
      return JSON.parse(r.stdout) as Record<string, unknown>;
    },
    stop: () => daemon.stop(),
  };
}

export interface SeenRequest {
  /** The loopback address the request came in on (one "BMC host" each). */
  host: string;
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

/**
 * A counting front for the emulator (plain HTTP): it listens on several loopback addresses
 * (`127.0.21.1`, `127.0.21.2`, …, one per "BMC host"), passes every request on to the emulator,
 * and records the largest number of requests in flight at the emulator at once, overall and per
 * address. With `etags`, it adds an `ETag` to every system read and answers 412 to a PATCH
 * whose `If-Match` is not the last ETag it gave (what a Redfish BMC with ETags does; the
 * emulator has none).
 */
export class CountingFront {
  readonly seen: SeenRequest[] = [];
  maxInFlight = 0;
  readonly maxPerHost = new Map<string, number>();
  private inFlight = 0;
  private readonly perHost = new Map<string, number>();
  private servers: Server[] = [];
  private etagSeq = 0;
  private readonly etags = new Map<string, string>();
  port = 0;

  constructor(
    private readonly upstreamPort: number,
    private readonly opts: { etags?: boolean } = {},
  ) {}

  async start(hosts: string[]): Promise<void> {
    this.port = await freeTcpPort(hosts[0]);
    for (const host of hosts) {
      const srv = createServer((req, res) => this.handle(host, req, res));
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(this.port, host, () => resolve());
      });
      this.servers.push(srv);
    }
  }

  private handle(host: string, req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? '/';
      this.seen.push({ host, method: req.method ?? '', path, headers: req.headers, body: body.toString('utf8'), at: Date.now() });
      if (this.opts.etags && req.method === 'PATCH' && req.headers['if-match'] !== this.etags.get(path)) {
        res.writeHead(412, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'Base.1.0.PreconditionFailed', message: 'ETag does not match' } }));
        return;
      }
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      const h = (this.perHost.get(host) ?? 0) + 1;
      this.perHost.set(host, h);
      this.maxPerHost.set(host, Math.max(this.maxPerHost.get(host) ?? 0, h));
      const done = () => {
        this.inFlight--;
        this.perHost.set(host, (this.perHost.get(host) ?? 1) - 1);
      };
      const headers = { ...req.headers, host: `127.0.0.1:${this.upstreamPort}` };
      const up = request({ host: '127.0.0.1', port: this.upstreamPort, method: req.method, path, headers }, (ur) => {
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && k !== 'content-length' && k !== 'connection') out[k] = v;
        const rc: Buffer[] = [];
        ur.on('data', (c: Buffer) => rc.push(c));
        ur.on('end', () => {
          done();
          if (this.opts.etags && req.method === 'GET' && ur.statusCode === 200) {
            const tag = `W/"${++this.etagSeq}"`;
            this.etags.set(path, tag);
            out.etag = tag;
          }
          res.writeHead(ur.statusCode ?? 502, out);
          res.end(Buffer.concat(rc));
        });
      });
      up.on('error', (e) => {
        done();
        res.writeHead(502);
        res.end(String(e));
      });
      up.end(body);
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    this.servers = [];
  }
}

/** Fails (never skips) when OpenIPMI's simulator or ipmitool is missing. */
export function requireIpmiTools(): void {
  const missing = ['ipmi_sim', 'ipmitool'].filter((t) => spawnSync('/bin/sh', ['-c', 'command -v "$1"', 'sh', t]).status !== 0);
  if (missing.length) throw new Error(`${missing.join(', ')} not found: run scripts/install-test-deps.sh (Debian packages openipmi, ipmitool)`);
}

export interface RunningIpmiSim {
  daemon: Daemon;
  /** The LAN (RMCP+) port on 127.0.0.1. */
  port: number;
  /** The VM serial port (qemu's ipmi-bmc-extern chardev) on 127.0.0.1. */
  vmPort: number;
  username: string;
  password: string;
  stop(): Promise<void>;
}

/**
 * OpenIPMI's `ipmi_sim` as a BMC on 127.0.0.1: one admin user (RMCP+, MD5), the chassis
 * controlled by `chassisControl` (ipmi_sim's `chassis_control` program: `<mc> get|set <param>
 * [<value>]` for power, reset, boot…, the board wiring a real BMC has), and a VM serial port
 * (codec VM) for qemu's `ipmi-bmc-extern`.
 */
export async function startIpmiSim(dir: string, chassisControl: string, opts: { username?: string; password?: string } = {}): Promise<RunningIpmiSim> {
  requireIpmiTools();
  mkdirSync(join(dir, 'state'), { recursive: true });
  const username = opts.username ?? 'admin';
  const password = opts.password ?? `ipmi-${process.pid}`;
  const port = await freeTcpPort();
  const vmPort = await freeTcpPort();
  const name = `ironlens${process.pid}${port}`;
  writeFileSync(
    join(dir, 'lan.conf'),
    [
      `name "${name}"`,
      'set_working_mc 0x20',
      '  startlan 1',
      `    addr 127.0.0.1 ${port}`,
      '    priv_limit admin',
      '    allowed_auths_callback md5',
      '    allowed_auths_user md5',
      '    allowed_auths_operator md5',
      '    allowed_auths_admin md5',
      '    guid a123456789abcdefa123456789abcdef',
      '  endlan',
      `  serial 15 127.0.0.1 ${vmPort} codec VM`,
      `  chassis_control "${chassisControl} 0x20"`,
      `  user 2 true "${username}" "${password}" admin 10 md5`,
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'sim.emu'), ['mc_setbmc 0x20', 'mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr', 'sel_enable 0x20 1000 0x0a', 'mc_enable 0x20', ''].join('\n'));
  const daemon = Daemon.start('ipmi_sim', ['ipmi_sim', '-c', join(dir, 'lan.conf'), '-f', join(dir, 'sim.emu'), '-s', join(dir, 'state'), '-n'], join(dir, 'ipmi_sim.log'));
  await waitFor(
    'ipmi_sim to listen',
    async () => (await exec(['ss', '-Huln', `sport = :${port}`], { allowFailure: true })).stdout,
    (out) => out.includes(`127.0.0.1:${port}`) || !daemon.running,
    10_000,
    100,
  );
  if (!daemon.running) throw new Error(`ipmi_sim exited (${daemon.code}):\n${daemon.log().slice(-2000)}`);
  return { daemon, port, vmPort, username, password, stop: () => daemon.stop() };
}

/**
 * The chassis wiring of a machine without a VM: power and the boot device in files under
 * `dir` (`on`, `bootdev`); `get power` takes `delayMs` (so a test sees ipmitool running).
 */
export function fileChassisScript(dir: string, delayMs = 0): string {
  const file = join(dir, 'chassis.sh');
  writeFileSync(
    file,
    `#!/bin/sh
# ipmi_sim chassis_control: <mc> get|set <param> [<value>] ...
dir='${dir}'
shift
op="$1"; shift
echo "$op $*" >> "$dir/chassis.log"
case "$op" in
get)
  for p in "$@"; do
    case "$p" in
      power) sleep ${(delayMs / 1000).toFixed(3)}; if [ -f "$dir/on" ]; then echo "power:1"; else echo "power:0"; fi ;;
      boot) echo "boot:$(cat "$dir/bootdev" 2>/dev/null || echo default)" ;;
    esac
  done ;;
set)
  while [ $# -ge 2 ]; do
    case "$1" in
      power) if [ "$2" = 1 ]; then touch "$dir/on"; else rm -f "$dir/on"; fi ;;
      boot) echo "$2" > "$dir/bootdev" ;;
    esac
    shift 2
  done ;;
esac
exit 0
`,
    { mode: 0o755 },
  );
  return file;
}
