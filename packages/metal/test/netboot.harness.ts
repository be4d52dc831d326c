import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { sleep } from '@ironlens/core/testing';

/**
 * The pieces of the netboot end-to-end test that leave the process: a private network
 * namespace with a tap device, long-running daemons in their own process groups, qemu
 * machines, HTTP over a unix socket into the namespace, and log polling. Everything is
 * stopped by pid (process group), never by name.
 */


/** Fails (never skips) when the test cannot run here, naming what is missing. */
export function requireNetbootTools(opts: { uefi?: boolean } = {}): void {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push(`must run as root (uid is ${process.getuid?.()}): network namespaces, tap devices and tgtd need it`);
  for (const tool of ['ip', 'dnsmasq', 'tgtd', 'tgtadm', 'qemu-system-x86_64']) {
    const found = spawnSync('/bin/sh', ['-c', 'command -v "$1"', 'sh', tool], { encoding: 'utf8', env: { PATH: `${process.env.PATH}:/usr/sbin:/sbin` } });
    if (found.status !== 0) problems.push(`${tool} not found`);
  }
  if (!existsSync('/dev/net/tun')) problems.push('/dev/net/tun missing (tap devices)');
  const roms = ['/usr/lib/ipxe/qemu/pxe-virtio.rom', '/usr/share/qemu/pxe-virtio.rom'];
  if (!roms.some((r) => existsSync(r))) problems.push(`iPXE ROM for virtio-net missing (${roms.join(' or ')}; Debian package ipxe-qemu)`);
  if (opts.uefi) {
    if (!existsSync(OVMF)) problems.push(`UEFI firmware missing (${OVMF}; Debian package ovmf)`);
    if (!existsSync(EFI_VIRTIO_ROM)) problems.push(`iPXE's UEFI ROM for virtio-net missing (${EFI_VIRTIO_ROM}; Debian package ipxe-qemu)`);
  }
  if (problems.length) {
    throw new Error(`netboot e2e cannot run: ${problems.join('; ')}. Install the tools with scripts/install-test-deps.sh and run as root.`);
  }
}

/** Debian's OVMF (package `ovmf`): UEFI firmware for qemu. */
export const OVMF = '/usr/share/ovmf/OVMF.fd';
/** iPXE's UEFI driver for virtio-net (Debian's `ipxe-qemu`): the NIC's own iPXE, as a UEFI option ROM. */
export const EFI_VIRTIO_ROM = '/usr/lib/ipxe/qemu/efi-virtio.rom';

/** Debian's OVMF with Secure Boot and Microsoft's keys enrolled (code, and the variables' template). */
export const OVMF_SECURE_CODE = '/usr/share/OVMF/OVMF_CODE_4M.ms.fd';
export const OVMF_SECURE_VARS = '/usr/share/OVMF/OVMF_VARS_4M.ms.fd';

/**
 * How a test machine boots: `bios` (SeaBIOS with the NIC's iPXE ROM), `uefi` (OVMF with the
 * NIC's iPXE UEFI ROM), `uefi-pxe` (OVMF's own PXE client, no iPXE on the NIC: it fetches iPXE
 * by TFTP, as most UEFI servers' NICs do), `uefi-sb` (OVMF with Secure Boot on and Microsoft's
 * keys, the NIC's iPXE UEFI ROM, which OVMF runs without checking option ROMs; `varsFile`: a
 * writable copy of {@link OVMF_SECURE_VARS}).
 */
export type MachineFirmware = 'bios' | 'uefi' | 'uefi-pxe' | 'uefi-sb';

export interface MachineSpec {
  mac: string;
  /** The tap device (one per running machine). */
  tap: string;
  memory: number;
  firmware?: MachineFirmware;
  /** qemu's SMBIOS/UUID and other extra arguments. */
  extra?: string[];
  /** `uefi-sb`: the machine's own copy of the Secure Boot variables. */
  varsFile?: string;
}

/**
 * A test machine's qemu command line (TCG, one CPU, serial console on stdio, network boot
 * only, ends instead of rebooting; `isa-debug-exit` lets a boot sector end it with a code).
 */
export function qemuArgv(m: MachineSpec): string[] {
  const fw = m.firmware ?? 'bios';
  const nic = `virtio-net-pci,netdev=n0,mac=${m.mac}${fw === 'uefi' || fw === 'uefi-sb' ? `,romfile=${EFI_VIRTIO_ROM}` : fw === 'uefi-pxe' ? ',romfile=' : ''}`;
  if (fw === 'uefi-sb' && !m.varsFile) throw new Error('uefi-sb needs varsFile: a writable copy of OVMF_SECURE_VARS');
  const firmware =
    fw === 'bios'
      ? []
      : fw === 'uefi-sb'
        ? ['-machine', 'q35,smm=on', '-global', 'driver=cfi.pflash01,property=secure,value=on', '-drive', `if=pflash,format=raw,unit=0,readonly=on,file=${OVMF_SECURE_CODE}`, '-drive', `if=pflash,format=raw,unit=1,file=${m.varsFile}`]
        : ['-bios', OVMF];
  return [
    'qemu-system-x86_64',
    '-accel',
    'tcg',
    '-m',
    String(m.memory),
    '-smp',
    '1',
    '-nodefaults',
    '-vga',
    'std',
    '-nographic',
    '-serial',
    'mon:stdio',
    '-no-reboot',
    ...firmware,
    '-boot',
    'n,strict=on,reboot-timeout=0',
    '-netdev',
    `tap,id=n0,ifname=${m.tap},script=no,downscript=no`,
    '-device',
    nic,
    '-device',
    'isa-debug-exit,iobase=0xf4,iosize=0x04',
    ...(m.extra ?? []),
  ];
}

/** A time-stamping wrapper: `argv` runs with each output line prefixed by its arrival time (`<epoch seconds> <line>`); one process group. */
export function stampedArgv(argv: string[]): string[] {
  // A fixed script; the machine's argv follows as "$@" (no string built from values).
  const stamp = 'exec 0</dev/null; set -o pipefail; "$@" 2>&1 | while IFS= read -r l; do printf "%s %s\\n" "$EPOCHREALTIME" "$l"; done';
  return ['bash', '-c', stamp, 'qemu-stamped', ...argv];
}

/** Serial lines with the time each arrived (see {@link stampedArgv}), the console flattened. */
export interface TimedLine {
  t: number;
  text: string;
}

export function timedLines(file: string): TimedLine[] {
  if (!existsSync(file)) return [];
  const out: TimedLine[] = [];
  for (const raw of readFileSync(file, 'latin1').split('\n')) {
    const m = /^(\d+\.\d+) (.*)$/s.exec(raw);
    if (m) out.push({ t: Number(m[1]) * 1000, text: flatConsole(m[2]) });
  }
  return out;
}

export function firstAt(lines: TimedLine[], re: RegExp): number | undefined {
  return lines.find((l) => re.test(l.text))?.t;
}

/**
 * The phases of a diskless Debian boot (or a marker boot sector's), in seconds after power-on:
 * from the serial console (`lines`), the provisioning listener's `/boot-vars` answer and the host
 * report. The diskless end-to-end test and `npm run bench:boot` print the same rows.
 */
export function bootPhases(lines: TimedLine[], at: { poweredOn: number; bootVars?: number; hostReport?: number; marker?: string }): Record<string, number | undefined> {
  const rel = (t: number | undefined) => (t === undefined ? undefined : (t - at.poweredOn) / 1000);
  return {
    'iPXE starts (firmware done)': rel(firstAt(lines, /iPXE initialising devices|iPXE \d\.\d/)),
    'iPXE script (DHCP, TFTP)': rel(firstAt(lines, /ironlens: \S+ hostname=/)),
    '/boot-vars': rel(at.bootVars),
    sanboot: rel(firstAt(lines, /ironlens: sanboot/)),
    'GRUB (from the iSCSI disk) / marker': rel(firstAt(lines, at.marker ? new RegExp(at.marker) : /GRUB loading|Welcome to GRUB/)),
    'kernel (GRUB read it and the initrd from the iSCSI disk)': rel(firstAt(lines, /Linux version \d/)),
    initramfs: rel(firstAt(lines, /Run \/init as init process/)),
    'iSCSI login by the initramfs': rel(firstAt(lines, /iscsistart: Logging into/)),
    systemd: rel(firstAt(lines, /Welcome to .*Debian/)),
    'SSH host keys (first boot)': rel(firstAt(lines, /Starting .*ssh-hostkeys/)),
    'login prompt': rel(firstAt(lines, /login: /)),
    'host report': rel(at.hostReport),
  };
}

/** A Markdown table of {@link bootPhases} rows, one column per machine. */
export function phaseTable(columns: Array<{ title: string; row: Record<string, number | undefined> }>): string {
  const names = Object.keys(columns[0]?.row ?? {});
  const fmt = (v: number | undefined) => (v === undefined ? '—' : v.toFixed(1));
  return [
    `| phase (s after power-on) | ${columns.map((c) => c.title).join(' | ')} |`,
    `| --- |${columns.map(() => ' --- |').join('')}`,
    ...names.map((n) => `| ${n} | ${columns.map((c) => fmt(c.row[n])).join(' | ')} |`),
  ].join('\n');
}

/**
 * The named steps of an end-to-end test: each says when it starts and how long it took (kept in
 * `times`); a failing one gets what `onFail` returns appended to its message (where the logs
 * are kept, their tails; `onFail` also marks the run failed) and is thrown again.
 */
export function stepper(say: (msg: string) => void, onFail: () => string): { step<T>(name: string, fn: () => Promise<T>): Promise<T>; times: Record<string, number> } {
  const times: Record<string, number> = {};
  async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const start = Date.now();
    say(`${name}: start`);
    try {
      const v = await fn();
      times[name] = (Date.now() - start) / 1000;
      say(`${name}: done in ${times[name].toFixed(1)} s`);
      return v;
    } catch (err) {
      (err as Error).message += onFail();
      throw err;
    }
  }
  return { step, times };
}

/** A process started in its own process group, output to a file. */
export class Daemon {
  private exitCode: number | null = null;
  private exitSignal: NodeJS.Signals | null = null;
  readonly exited: Promise<void>;
  readonly pid: number;

  private constructor(
    readonly name: string,
    child: ChildProcess,
    readonly logFile: string,
  ) {
    this.pid = child.pid ?? -1;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitCode = code;
        this.exitSignal = signal;
        resolve();
      });
      child.once('error', () => resolve());
    });
  }

  /** `argv` runs with stdin closed and stdout + stderr appended to `logFile`. */
  static start(name: string, argv: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): Daemon {
    const fd = openSync(logFile, 'a');
    try {
      const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, fd], detached: true, env });
      if (!child.pid) throw new Error(`${name}: could not start ${argv[0]}`);
      const d = new Daemon(name, child, logFile);
      RUNNING.add(d);
      void d.exited.then(() => RUNNING.delete(d));
      return d;
    } finally {
      closeSync(fd);
    }
  }

  get running(): boolean {
    return this.exitCode === null && this.exitSignal === null && RUNNING.has(this);
  }

  /** Exit code, or 128 + signal number as a shell reports it; null while running. */
  get code(): number | null {
    if (this.exitCode !== null) return this.exitCode;
    if (this.exitSignal) return 128 + (osSignals[this.exitSignal] ?? 0);
    return null;
  }

  log(): string {
    return existsSync(this.logFile) ? readFileSync(this.logFile, 'latin1') : '';
  }

  /** Waits for the exit; false on timeout. */
  async waitExit(timeoutMs: number): Promise<boolean> {
    return Promise.race([this.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
  }

  /** SIGTERM to the whole group, SIGKILL after `graceMs`. */
  async stop(graceMs = 3_000): Promise<void> {
    if (!RUNNING.has(this)) return;
    killGroup(this.pid, 'SIGTERM');
    if (!(await this.waitExit(graceMs))) {
      killGroup(this.pid, 'SIGKILL');
      await this.waitExit(5_000);
    }
    RUNNING.delete(this);
  }

  /** SIGKILL to the group at once (a machine pulled from the power). */
  async kill(): Promise<void> {
    killGroup(this.pid, 'SIGKILL');
    await this.waitExit(5_000);
    RUNNING.delete(this);
  }
}

const osSignals: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
const RUNNING = new Set<Daemon>();

function killGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 1) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** A private network namespace with one tap device (`tap0`) carrying `addr`/24. */
export class Netns {
  private created = false;
  constructor(
    readonly name: string,
    readonly addr: string,
    private readonly addr6: string,
  ) {}

  /** Argv prefix that runs a command inside the namespace. */
  get wrap(): string[] {
    return ['ip', 'netns', 'exec', this.name];
  }

  async create(): Promise<void> {
    await exec(['ip', 'netns', 'del', this.name], { allowFailure: true });
    await exec(['ip', 'netns', 'add', this.name]);
    this.created = true;
    const ipn = (...args: string[]) => exec(['ip', '-n', this.name, ...args]);
    await ipn('link', 'set', 'lo', 'up');
    await ipn('tuntap', 'add', 'dev', 'tap0', 'mode', 'tap');
    await ipn('addr', 'add', `${this.addr}/24`, 'dev', 'tap0');
    // With router advertisements on the link (dnsmasq --enable-ra), iPXE skips its ~13 s IPv6 wait.
    await ipn('addr', 'add', `${this.addr6}/64`, 'dev', 'tap0', 'nodad');
    await ipn('link', 'set', 'tap0', 'up');
  }

  async destroy(): Promise<void> {
    if (!this.created) return;
    await exec(['ip', 'netns', 'del', this.name], { allowFailure: true });
    this.created = false;
  }

  /** Last resort from an `exit` handler: synchronous. */
  destroySync(): void {
    if (this.created) spawnSync('ip', ['netns', 'del', this.name]);
    this.created = false;
  }
}

/**
 * A private network namespace with a bridge (`br0`, carrying `addr`/24 and `addr6`/64) and one
 * tap per machine enslaved to it (`tap1`…`tapN`): a tap takes one qemu at a time, so machines
 * that run together need one each (diskless-linux recipe, pitfall 7).
 */
export class BridgedNetns {
  private created = false;
  private readonly peers: string[] = [];
  readonly taps: string[];
  constructor(
    readonly name: string,
    readonly addr: string,
    private readonly addr6: string,
    tapCount: number,
  ) {
    this.taps = Array.from({ length: tapCount }, (_, i) => `tap${i + 1}`);
  }

  get wrap(): string[] {
    return ['ip', 'netns', 'exec', this.name];
  }

  async create(): Promise<void> {
    await exec(['ip', 'netns', 'del', this.name], { allowFailure: true });
    await exec(['ip', 'netns', 'add', this.name]);
    this.created = true;
    const ipn = (...args: string[]) => exec(['ip', '-n', this.name, ...args]);
    await ipn('link', 'set', 'lo', 'up');
    await ipn('link', 'add', 'br0', 'type', 'bridge');
    await ipn('addr', 'add', `${this.addr}/24`, 'dev', 'br0');
    await ipn('addr', 'add', `${this.addr6}/64`, 'dev', 'br0', 'nodad');
    await ipn('link', 'set', 'br0', 'up');
    for (const t of this.taps) {
      await ipn('tuntap', 'add', 'dev', t, 'mode', 'tap');
      await ipn('link', 'set', t, 'master', 'br0');
      await ipn('link', 'set', t, 'up');
    }
  }

  /**
   * Another host on the bridge: a namespace of its own (`peer`, lo up) whose `eth0` is one end of a
   * veth pair, the other end (`link`) enslaved to br0; `eth0` takes `mac` and `addresses` (CIDR)
   * when given, and comes up. Deleted with this namespace.
   */
  async attachPeer(peer: string, link: string, opts: { mac?: string; addresses?: string[] } = {}): Promise<void> {
    await exec(['ip', 'netns', 'del', peer], { allowFailure: true });
    await exec(['ip', 'netns', 'add', peer]);
    this.peers.push(peer);
    const ipn = (ns: string, ...args: string[]) => exec(['ip', '-n', ns, ...args]);
    await ipn(peer, 'link', 'set', 'lo', 'up');
    await ipn(this.name, 'link', 'add', link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', peer);
    await ipn(this.name, 'link', 'set', link, 'master', 'br0');
    await ipn(this.name, 'link', 'set', link, 'up');
    if (opts.mac) await ipn(peer, 'link', 'set', 'eth0', 'address', opts.mac);
    for (const a of opts.addresses ?? []) await ipn(peer, 'addr', 'add', a, 'dev', 'eth0', ...(a.includes(':') ? ['nodad'] : []));
    await ipn(peer, 'link', 'set', 'eth0', 'up');
  }

  async destroy(): Promise<void> {
    for (const p of this.peers.splice(0)) await exec(['ip', 'netns', 'del', p], { allowFailure: true });
    if (!this.created) return;
    await exec(['ip', 'netns', 'del', this.name], { allowFailure: true });
    this.created = false;
  }

  destroySync(): void {
    for (const p of this.peers.splice(0)) spawnSync('ip', ['netns', 'del', p]);
    if (this.created) spawnSync('ip', ['netns', 'del', this.name]);
    this.created = false;
  }
}

/** Synchronous SIGKILL of everything still running (for a `process.on('exit')` handler). */
export function killAllSync(): void {
  for (const d of RUNNING) killGroup(d.pid, 'SIGKILL');
  RUNNING.clear();
}

export interface HttpAnswer {
  status: number;
  text: string;
  json<T = unknown>(): T;
}

/** HTTP/1.1 over a unix socket (the proxy into the namespace). */
export function httpOverSocket(socketPath: string, method: string, path: string, opts: { token?: string; body?: unknown } = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = { host: 'ironlens' };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = request({ socketPath, method, path, headers, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          text,
          json: <T>() => JSON.parse(text) as T,
        });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timeout`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** What a test's dnsmasq serves in its namespace: DHCP on one interface, TFTP of the boot script. */
export interface NetbootDnsmasqOptions {
  /** `ip netns exec <ns>` (the namespace's `wrap`). */
  wrap: string[];
  iface: string;
  /** `<first>,<last>,<netmask>,<lease>`. */
  range: string;
  dir: string;
  tftpRoot: string;
  /** The file a DHCP client is told to boot. Default is `boot.ipxe`. */
  bootFile?: string;
  /** The hosts file ironlens renders (`--dhcp-hostsfile`), when the test has one. */
  hostsFile?: string;
  extra?: string[];
}

/** dnsmasq in the foreground (no DNS), its pid file, lease file and log under `dir` (`dnsmasq.pid`, `leases`, `dnsmasq.log`). */
export function startNetbootDnsmasq(o: NetbootDnsmasqOptions): Daemon {
  return Daemon.start(
    'dnsmasq',
    [
      ...o.wrap,
      'dnsmasq',
      '--keep-in-foreground',
      '--conf-file=/dev/null',
      '--port=0',
      `--interface=${o.iface}`,
      '--bind-interfaces',
      `--dhcp-range=${o.range}`,
      ...(o.hostsFile ? [`--dhcp-hostsfile=${o.hostsFile}`] : []),
      `--dhcp-leasefile=${join(o.dir, 'leases')}`,
      '--enable-tftp',
      `--tftp-root=${o.tftpRoot}`,
      `--dhcp-boot=${o.bootFile ?? 'boot.ipxe'}`,
      `--pid-file=${join(o.dir, 'dnsmasq.pid')}`,
      '--log-dhcp',
      `--log-facility=${join(o.dir, 'dnsmasq.log')}`,
      ...(o.extra ?? []),
    ],
    join(o.dir, 'stdout.log'),
  );
}

/**
 * The other way: run inside the namespace, it listens on TCP `host:port` there and passes each
 * connection to the unix socket `sock` (a file, so a server outside the namespace is reached).
 */
export const TCP_TO_SOCKET_JS = `
const net = require('node:net');
const [host, port, sock] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  const end = () => { c.destroy(); u.destroy(); };
  c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
}).listen(Number(port), host, () => console.log('forwarding ' + host + ':' + port + ' -> ' + sock));
`;

/**
 * A TCP forwarder run inside the namespace: connections to the unix socket `socketPath`
 * (a file, so reachable from outside the namespace) go to `host:port` inside it.
 */
export const FORWARDER_JS = `
const net = require('node:net');
const [sock, host, port] = process.argv.slice(1);
try { require('node:fs').unlinkSync(sock); } catch {}
net.createServer((c) => {
  const u = net.connect(Number(port), host);
  c.pipe(u); u.pipe(c);
  const end = () => { c.destroy(); u.destroy(); };
  c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
}).listen(sock, () => console.log('forwarding ' + sock + ' -> ' + host + ':' + port));
`;

/**
 * The marker boot sector (recipe netboot-e2e.sh): prints `marker` on COM1, then writes
 * 0x10 to isa-debug-exit, so qemu exits with code 33. The string sits at 0x7c26.
 */
export function markerBootSector(marker: string): Buffer {
  const code = Buffer.from('fa31c08ed8be267cac84c0741288c3bafd03eca82074fb88d8baf803eeebe9b010e6f4f4ebfd', 'hex');
  const text = Buffer.from(`\r\n${marker}\r\n\0`, 'latin1');
  const mbr = Buffer.alloc(512);
  code.copy(mbr, 0);
  text.copy(mbr, code.length);
  if (code.length + text.length > 446) throw new Error('marker too long for a boot sector');
  mbr[510] = 0x55;
  mbr[511] = 0xaa;
  return mbr;
}

const ESC = String.fromCharCode(0x1b);
const ANSI_ESCAPE = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, 'g');
const CONSOLE_BREAKS = new RegExp(`[${String.fromCharCode(13, 10, 8)}]`, 'g');

/**
 * Serial output as one line: ANSI escapes, carriage returns, line feeds and backspaces
 * removed. The BIOS console wraps long lines at 80 columns, so a message can only be
 * matched once the breaks are gone.
 */
export function flatConsole(raw: string): string {
  return raw.replace(ANSI_ESCAPE, '').replace(CONSOLE_BREAKS, '');
}
