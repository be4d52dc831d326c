import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { processAlive } from '@ironlens/core';
import { waitFor } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../src/testing/fixture';
import { requireIpmiTools, type RunningIpmiSim, startIpmiSim } from './bmc.harness';
import { Daemon, flatConsole, killAllSync, Netns, requireNetbootTools } from './netboot.harness';

/**
 * Power through IPMI end to end (issue 21): OpenIPMI's `ipmi_sim` is the BMC (RMCP+ on
 * 127.0.0.1, reached by ironlens' real `ipmitool` adapter); its chassis wiring starts and stops
 * a real qemu machine (TCG, Debian's iPXE ROM), wired back to the BMC through qemu's
 * `ipmi-bmc-extern` + `isa-ipmi-kcs`; the boot device set over IPMI decides whether the machine
 * boots from the network (once) or from its (empty) disk. The machine's network is a tap in a
 * private namespace with dnsmasq (DHCP, TFTP of the shipped boot.ipxe); its HTTP reaches the
 * boot control plane under test, which runs in this process, through a forwarder.
 */

const here = dirname(fileURLToPath(import.meta.url));
const BOOT_IPXE = join(here, '..', 'assets', 'boot.ipxe');
const NS = `ironlens-h21pw-${process.pid}`;
const SRV = '192.168.221.1';
const MAC_A = '52:54:00:21:a0:01';
const MAC_B = '52:54:00:21:b0:01';
const TOKEN = 'power-ipmi-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const t0 = Date.now();
const say = (m: string) => console.log(`[power-ipmi ${Date.now() - t0} ms] ${m}`);

/** Connections to `sock` (a unix socket, reachable from every namespace) go to host:port. */
const UNIX_TO_TCP = `
const net = require('node:net');
const [sock, host, port] = process.argv.slice(1);
try { require('node:fs').unlinkSync(sock); } catch {}
net.createServer((c) => { const u = net.connect(Number(port), host); c.pipe(u); u.pipe(c);
  const end = () => { c.destroy(); u.destroy(); }; c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
}).listen(sock, () => console.log('forwarding ' + sock));
`;
/** Connections to host:port (inside the namespace) go to the unix socket `sock`. */
const TCP_TO_UNIX = `
const net = require('node:net');
const [host, port, sock] = process.argv.slice(1);
net.createServer((c) => { const u = net.connect(sock); c.pipe(u); u.pipe(c);
  const end = () => { c.destroy(); u.destroy(); }; c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
}).listen(Number(port), host, () => console.log('forwarding ' + host + ':' + port));
`;

/**
 * The board wiring of a qemu machine behind ipmi_sim (its `chassis_control` program): power on
 * starts qemu in its own session, off kills it, the power state is whether it runs; `set boot`
 * keeps the boot device, used once at the next power on (as a BMC clears it at boot).
 * `network: false`: a machine whose NIC is not on ironlens' network (it never netboots).
 */
function vmChassisScript(dir: string, mac: string, network: boolean): string {
  const file = join(dir, 'chassis.sh');
  const nic = network ? `-netdev tap,id=n0,ifname=tap0,script=no,downscript=no -device virtio-net-pci,netdev=n0,mac=${mac}` : '-nic none';
  writeFileSync(
    file,
    `#!/bin/sh
dir='${dir}'
shift
op="$1"; shift
echo "$op $*" >> "$dir/chassis.log"
running() { [ -f "$dir/qemu.pid" ] && kill -0 "$(cat "$dir/qemu.pid")" 2>/dev/null; }
start() {
  # From the disk (empty here): SeaBIOS halts, the machine stays on. From the network: once.
  order=c; timeout=-1
  if [ "$(cat "$dir/bootdev" 2>/dev/null)" = pxe ]; then order=n; timeout=${network ? 0 : -1}; fi
  echo default > "$dir/bootdev"
  echo "$order" >> "$dir/boot-orders"
  n=$(wc -l < "$dir/boot-orders")
  setsid ip netns exec ${NS} qemu-system-x86_64 -accel tcg -m 256 -nographic -no-reboot \\
    -boot order=$order,strict=on,reboot-timeout=$timeout ${nic} \\
    -chardev socket,id=ipmi0,path="$dir/vm.sock",reconnect=2 -device ipmi-bmc-extern,chardev=ipmi0,id=bmc0 -device isa-ipmi-kcs,bmc=bmc0 \\
    < /dev/null > "$dir/serial-$n.log" 2>&1 &
  echo $! > "$dir/qemu.pid"
}
stop() { if running; then kill -9 "$(cat "$dir/qemu.pid")"; fi; rm -f "$dir/qemu.pid"; }
case "$op" in
get)
  for p in "$@"; do
    case "$p" in
      power) if running; then echo "power:1"; else echo "power:0"; fi ;;
      boot) echo "boot:$(cat "$dir/bootdev" 2>/dev/null || echo default)" ;;
    esac
  done ;;
set)
  while [ $# -ge 2 ]; do
    case "$1" in
      power) if [ "$2" = 1 ]; then running || start; else stop; fi ;;
      reset) stop; start ;;
      shutdown) stop ;;
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

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

interface Machine {
  dir: string;
  sim: RunningIpmiSim;
}

describe('power through IPMI: ipmi_sim drives a real qemu machine that boots through ironlens', () => {
  let work: string;
  let netns: Netns | undefined;
  const daemons: Daemon[] = [];
  let fxA: MetalFixture;
  let fxB: MetalFixture;
  let a: Machine;
  let b: Machine;
  let dnsmasqLog = '';
  const onExit = () => {
    killAllSync();
    for (const m of [a, b]) {
      const pid = m && existsSync(join(m.dir, 'qemu.pid')) ? Number(readFileSync(join(m.dir, 'qemu.pid'), 'utf8')) : 0;
      if (pid > 1) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
    }
    netns?.destroySync();
  };
  const qemuPid = (m: Machine) => (existsSync(join(m.dir, 'qemu.pid')) ? Number(readFileSync(join(m.dir, 'qemu.pid'), 'utf8')) : 0);
  const vmRunning = (m: Machine) => {
    const pid = qemuPid(m);
    return pid > 1 && processAlive(pid) && !readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2].startsWith('Z');
  };
  const serial = (m: Machine) => {
    const logs = readdirSync(m.dir).filter((f) => f.startsWith('serial-')).sort();
    return logs.length ? flatConsole(readFileSync(join(m.dir, logs[logs.length - 1]), 'latin1')) : '';
  };
  const api = (fx: MetalFixture, method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) => fx.app.inject({ method, url, headers: auth, payload: payload as object });

  async function machine(name: string, mac: string, network: boolean): Promise<Machine> {
    const dir = join(work, name);
    mkdirSync(dir, { recursive: true });
    const sim = await startIpmiSim(dir, vmChassisScript(dir, mac, network));
    daemons.push(sim.daemon);
    daemons.push(Daemon.start(`${name}-vm-forwarder`, [process.execPath, '-e', UNIX_TO_TCP, join(dir, 'vm.sock'), '127.0.0.1', String(sim.vmPort)], join(dir, 'vm-forwarder.log')));
    return { dir, sim };
  }

  beforeAll(async () => {
    requireNetbootTools();
    requireIpmiTools();
    process.once('exit', onExit);
    work = mkdtempSync(join(tmpdir(), `ironlens-power-ipmi-${process.pid}-`));
    chmodSync(work, 0o755);
    const tftp = join(work, 'tftp');
    mkdirSync(join(work, 'dnsmasq'), { recursive: true });
    mkdirSync(tftp);
    copyFileSync(BOOT_IPXE, join(tftp, 'boot.ipxe'));
    chmodSync(join(tftp, 'boot.ipxe'), 0o644);
    netns = new Netns(NS, SRV, 'fd21:21::1');
    await netns.create();
    dnsmasqLog = join(work, 'dnsmasq', 'dnsmasq.log');
    const dnsmasq = Daemon.start(
      'dnsmasq',
      [
        ...netns.wrap,
        'dnsmasq',
        '--keep-in-foreground',
        '--conf-file=/dev/null',
        '--port=0',
        '--interface=tap0',
        '--bind-interfaces',
        '--no-ping',
        '--dhcp-range=192.168.221.100,192.168.221.200,255.255.255.0,1h',
        '--enable-ra',
        '--dhcp-range=::,constructor:tap0,ra-only',
        `--dhcp-leasefile=${join(work, 'dnsmasq', 'leases')}`,
        '--enable-tftp',
        `--tftp-root=${tftp}`,
        '--dhcp-boot=boot.ipxe',
        `--pid-file=${join(work, 'dnsmasq', 'dnsmasq.pid')}`,
        '--log-dhcp',
        `--log-facility=${dnsmasqLog}`,
      ],
      join(work, 'dnsmasq', 'stdout.log'),
    );
    daemons.push(dnsmasq);
    // The control plane under test, in this process: the machine's HTTP reaches it through a forwarder.
    fxA = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN, IPXE_CP_AUTO_REGISTER: 'false', IRONLENS_BOOT_CONFIRM_TIMEOUT_MS: '150000' });
    const sock = join(work, 'api.sock');
    await fxA.app.listen({ path: sock });
    daemons.push(Daemon.start('api-forwarder', [...netns.wrap, process.execPath, '-e', TCP_TO_UNIX, SRV, '4839', sock], join(work, 'api-forwarder.log')));
    // The second control plane waits briefly for a boot that never comes.
    fxB = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN, IRONLENS_BOOT_CONFIRM_TIMEOUT_MS: '8000' });
    a = await machine('machine-a', MAC_A, true);
    b = await machine('machine-b', MAC_B, false);
    await waitFor('dnsmasq to start', () => (existsSync(dnsmasqLog) ? readFileSync(dnsmasqLog, 'utf8') : ''), (l) => l.includes('started') || !dnsmasq.running, 10_000);
    if (!dnsmasq.running) throw new Error(`dnsmasq exited (${dnsmasq.code}): ${dnsmasq.log()}`);
    for (const [fx, mac, m] of [
      [fxA, MAC_A, a],
      [fxB, MAC_B, b],
    ] as const) {
      const r = await api(fx, 'POST', '/devices', { mac, bmc: { driver: 'ipmi', host: '127.0.0.1', port: m.sim.port, username: m.sim.username, password: m.sim.password } });
      expect(r.statusCode, r.body).toBe(201);
    }
    say(`setup: netns ${NS}, dnsmasq, ipmi_sim A on udp ${a.sim.port}, B on udp ${b.sim.port}`);
  }, 120_000);

  afterAll(async () => {
    for (const fx of [fxA, fxB]) {
      fx?.services.power.stop();
      await fx?.close();
    }
    onExit();
    for (const d of daemons.reverse()) await d.stop();
    await netns?.destroy();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ipmitool-level power on and off start and stop the VM', async () => {
    const on = await api(fxA, 'POST', `/devices/${MAC_A}/power`, { action: 'on' });
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json()).toMatchObject({ action: 'on', state: 'on', last_power: { bmc_ok: true, result: null } });
    await waitFor('the VM to run', () => vmRunning(a), (x) => x, 10_000);
    say(`power on: qemu pid ${qemuPid(a)} runs (boot order ${readFileSync(join(a.dir, 'boot-orders'), 'utf8').trim()})`);
    const pid = qemuPid(a);
    const off = await api(fxA, 'POST', `/devices/${MAC_A}/power`, { action: 'off' });
    expect(off.statusCode, off.body).toBe(200);
    expect(off.json().state).toBe('off');
    await waitFor('the VM to stop', () => processAlive(pid), (x) => !x, 10_000);
    say(`power off: qemu pid ${pid} is gone`);
  }, 60_000);

  it('boot: "network": the VM boots iPXE through ironlens and last_power becomes booted', async () => {
    const r = await api(fxA, 'POST', `/devices/${MAC_A}/power`, { action: 'cycle', boot: 'network' });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().last_power).toMatchObject({ action: 'cycle', boot: 'network', bmc_ok: true });
    expect(readFileSync(join(a.dir, 'boot-orders'), 'utf8').trim().split('\n').pop()).toBe('n');
    const dev = await waitFor(
      'last_power booted',
      async () => (await api(fxA, 'GET', `/devices/${MAC_A}`)).json(),
      (d) => d.last_power?.result !== 'pending',
      140_000,
      500,
    ).catch((e: Error) => {
      e.message += `\n--- serial ---\n${serial(a).slice(-2000)}\n--- dnsmasq ---\n${existsSync(dnsmasqLog) ? readFileSync(dnsmasqLog, 'utf8').slice(-2000) : ''}`;
      throw e;
    });
    expect(dev.last_power.result, JSON.stringify(dev.last_power)).toBe('booted');
    expect(dev.last_power.network_boot_seen_at).not.toBeNull();
    expect(serial(a)).toContain(`ironlens: ${MAC_A}`);
    expect(readFileSync(dnsmasqLog, 'utf8')).toMatch(new RegExp(`DHCPACK\\(tap0\\) \\S+ ${MAC_A}`));
    say(`network boot proven: ${dev.last_power.detail}`);
    const ops = (await api(fxA, 'GET', `/operations?mac=${MAC_A}`)).json().entries as Array<{ op: string }>;
    expect(ops.map((o) => o.op)).toEqual(expect.arrayContaining(['power.action', 'power.boot.confirmed']));
  }, 180_000);

  it('a BMC that accepts the action while the machine never boots from the network: no_network_boot', async () => {
    const r = await api(fxB, 'POST', `/devices/${MAC_B}/power`, { action: 'on', boot: 'network' });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().last_power).toMatchObject({ bmc_ok: true, result: 'pending' });
    await waitFor('machine B to run', () => vmRunning(b), (x) => x, 10_000);
    const dev = await waitFor('no_network_boot', async () => (await api(fxB, 'GET', `/devices/${MAC_B}`)).json(), (d) => d.last_power?.result !== 'pending', 30_000, 250);
    expect(dev.last_power.result).toBe('no_network_boot');
    expect(dev.last_power.detail).toContain('no DHCP/iPXE request from this MAC came');
    expect(vmRunning(b), `the machine was on all along\n--- chassis ---\n${readFileSync(join(b.dir, 'chassis.log'), 'utf8')}\n--- console ---\n${serial(b).slice(-1500)}`).toBe(true);
    say(`no network boot: ${dev.last_power.detail}`);
  }, 60_000);

  it('keeps the IPMI passwords out of answers, the operations log and the data dirs', async () => {
    for (const [fx, m] of [
      [fxA, a],
      [fxB, b],
    ] as const) {
      for (const url of ['/devices', '/operations?limit=100000', `/devices/${fx === fxA ? MAC_A : MAC_B}/bmc`]) {
        const body = (await api(fx, 'GET', url)).body;
        expect(body).not.toContain(m.sim.password);
      }
      for (const f of filesUnder(fx.dir)) expect(readFileSync(f).includes(Buffer.from(m.sim.password)), f).toBe(false);
    }
  });
});
