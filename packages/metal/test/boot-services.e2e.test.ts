import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunningTgtd, startTgtd, unusedControlPort } from '@ironlens/agent/testing';
import { exec } from '@ironlens/core';
import { artifactPath, waitFor } from '@ironlens/core/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BridgedNetns, Daemon, FORWARDER_JS, flatConsole, httpOverSocket, killAllSync, type MachineFirmware, markerBootSector, qemuArgv, requireNetbootTools, stampedArgv, timedLines } from './netboot.harness';

/**
 * Issue 30: `ironlens serve` boots machines with its own DHCP and TFTP. In a network namespace
 * with nothing but `ironlens serve` (IRONLENS_BOOT_SERVICES=dhcp) and `ironlens agent` (tgtd),
 * and no dnsmasq started by the test:
 *
 * 1. a BIOS machine (SeaBIOS, its NIC's iPXE ROM) gets an address and `boot.ipxe` over HTTP with
 *    the control plane's URL filled in, reports itself (`pcbios`) and lands in the pool;
 * 2. bound to a worker with a disk, its DHCP answer carries the worker's hostname (the hosts file
 *    ironlens renders, re-read by its own dnsmasq on SIGHUP);
 * 3. ironlens' dnsmasq is killed: it is restarted (`/healthz`, `/metrics`), and
 * 4. the BIOS machine's next boot works: it sanboots its disk (a boot sector that prints a marker);
 * 5. a UEFI machine without iPXE on its NIC (OVMF's own PXE) gets `snponly.efi` by TFTP from Debian's
 *    `ipxe` package, which chains `boot.ipxe` and reports `efi`;
 * 6. `proxy` mode beside a separate DHCP server the test runs (addresses only, in a second
 *    namespace on the same bridge): a UEFI machine still gets ironlens' boot file (`ipxe.efi`,
 *    then `boot.ipxe`, whose control plane is ironlens, not the DHCP server).
 *
 * Each boot stops at the end of its path (the reboot loop of a pooled machine ends qemu, the
 * marker ends it with code 33). What a missing `ipxe` package does is checked without a
 * namespace (packages/cli/src/start-failure.test.ts).
 */

const here = dirname(fileURLToPath(import.meta.url));
const IRONLENS = join(here, '..', '..', 'cli', 'bin', 'ironlens.mjs');

const NS = `ironlens-bs-${process.pid}`;
/** The site's DHCP server (proxy step), in a namespace of its own on the same bridge. */
const SITE_NS = `ironlens-bs-site-${process.pid}`;
const SRV = '192.168.215.1';
const SITE = '192.168.215.2';
const CP_URL = `http://${SRV}:4839`;
const BASE_IQN = 'iqn.2026-07.io.ironlens.bootsvc';
const TOKEN = `cp-${randomBytes(8).toString('hex')}`;
const AGENT_TOKEN = `agent-${randomBytes(8).toString('hex')}`;
const BIOS = { mac: '52:54:00:b5:00:01', tap: 'tap1', firmware: 'bios' as MachineFirmware, memory: 256 };
const UEFI = { mac: '52:54:00:b5:00:02', tap: 'tap2', firmware: 'uefi-pxe' as MachineFirmware, memory: 512 };
const PROXIED = { mac: '52:54:00:b5:00:03', tap: 'tap3', firmware: 'uefi-pxe' as MachineFirmware, memory: 512 };
const WORKER = 'bs-worker';
const MARKER = `BOOT-SERVICES-OK ${randomBytes(4).toString('hex')}`;

const t0 = Date.now();
const say = (msg: string) => console.log(`[boot-services ${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);

interface Health {
  status: string;
  boot_services?: { mode: string; state: string; pid: number | null; restarts: number; url: string | null; last_exit: string | null };
}

describe("boot services: ironlens serve's own DHCP/proxy-DHCP and TFTP boot BIOS and UEFI machines", () => {
  let work: string;
  let netns: BridgedNetns | undefined;
  let siteCreated = false;
  let tgtd: RunningTgtd | undefined;
  let serve: Daemon | undefined;
  const daemons: Daemon[] = [];
  let failed = false;
  const times: Record<string, number> = {};
  const paths = { data: '', disks: '', hosts: '', apiSocket: '' };
  const onExit = () => {
    killAllSync();
    netns?.destroySync();
    if (siteCreated) exec(['ip', 'netns', 'del', SITE_NS], { allowFailure: true }).catch(() => {});
  };
  const api = (method: string, path: string, body?: unknown) => httpOverSocket(paths.apiSocket, method, path, { token: TOKEN, body });
  const health = async () => (await api('GET', '/healthz')).json<Health>();
  const serveLog = () => serve?.log() ?? '';
  /** A machine's console as one line: the BIOS console wraps at 80 columns. */
  const serial = (name: string) => timedLines(join(work, `${name}.serial.log`)).map((l) => l.text).join('');

  let keptLogs: string | undefined;
  const logsDir = () => (keptLogs ??= artifactPath('boot-services-e2e-logs'));

  async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const start = Date.now();
    say(`${name}: start`);
    try {
      const v = await fn();
      times[name] = (Date.now() - start) / 1000;
      say(`${name}: done in ${times[name].toFixed(1)} s`);
      return v;
    } catch (err) {
      failed = true;
      const e = err as Error;
      e.message += `\nlogs kept in: ${logsDir()}\n--- serve (tail) ---\n${serveLog().slice(-4000)}`;
      throw e;
    }
  }

  function powerOn(name: string, m: { mac: string; tap: string; firmware: MachineFirmware; memory: number }): Daemon {
    const d = Daemon.start(name, stampedArgv([...netns!.wrap, ...qemuArgv(m)]), join(work, `${name}.serial.log`));
    daemons.push(d);
    return d;
  }

  /** `ironlens serve` in the namespace with boot services in `mode`; resolves once its dnsmasq runs. */
  async function startServe(mode: 'dhcp' | 'proxy', extra: Record<string, string> = {}): Promise<Daemon> {
    const d = Daemon.start(`serve-${mode}`, [...netns!.wrap, process.execPath, IRONLENS, 'serve'], join(work, `serve-${mode}.log`), {
      ...process.env,
      IRONLENS_FROM_SOURCE: '1',
      IRONLENS_LOG: '1',
      IRONLENS_DATA_DIR: paths.data,
      IRONLENS_BOOT_LISTEN: '0.0.0.0:4839',
      IRONLENS_CONSOLE_LISTEN: 'off',
      IPXE_CP_TOKEN: TOKEN,
      IPXE_CP_DNSMASQ_HOSTS_FILE: paths.hosts,
      IRONLENS_BOOT_SERVICES: mode,
      IRONLENS_BOOT_INTERFACE: 'br0',
      ...(mode === 'dhcp' ? { IRONLENS_BOOT_DHCP_RANGE: '192.168.215.100,192.168.215.150', IRONLENS_BOOT_DHCP_ROUTER: 'none' } : {}),
      ...extra,
    });
    daemons.push(d);
    serve = d;
    await waitFor(`serve (${mode}) to start its dnsmasq`, () => d.log(), (l) => l.includes(`read ${paths.hosts}`) || !d.running, 60_000, 100);
    if (!d.running) throw new Error(`serve exited with code ${d.code}: ${d.log().slice(-3000)}`);
    await waitFor('/healthz: boot services running', () => health().catch(() => null), (h) => h?.boot_services?.state === 'running', 20_000, 100);
    return d;
  }

  /** The provisioning listener's request log: the URLs asked for by `ip`, or by anyone. */
  const requested = (prefix: string) =>
    serveLog()
      .split('\n')
      .filter((l) => l.includes(`"url":"${prefix}`))
      .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as { time: number; req?: { remoteAddress?: string } });

  beforeAll(async () => {
    requireNetbootTools({ uefi: true });
    for (const f of ['/usr/lib/ipxe/undionly.kpxe', '/usr/lib/ipxe/snponly.efi', '/usr/lib/ipxe/ipxe.efi']) {
      if (!existsSync(f)) throw new Error(`${f} missing: Debian package ipxe (scripts/install-test-deps.sh installs it)`);
    }
    process.once('exit', onExit);
    work = mkdtempSync(join(tmpdir(), 'ironlens-boot-services-e2e-'));
    // dnsmasq, started as root, reads the hosts file again as an unprivileged user.
    chmodSync(work, 0o755);
    Object.assign(paths, { data: join(work, 'data'), disks: join(work, 'disks'), hosts: join(work, 'dnsmasq', 'dhcp-hosts.conf'), apiSocket: join(work, 'api.sock') });
    for (const d of [paths.data, paths.disks, dirname(paths.hosts)]) mkdirSync(d, { recursive: true, mode: 0o755 });

    await step('setup', async () => {
      writeFileSync(join(paths.disks, '_tpl_marker.img'), markerBootSector(MARKER));
      await exec(['truncate', '-s', '8M', join(paths.disks, '_tpl_marker.img')]);
      const ns = new BridgedNetns(NS, SRV, 'fd00:215::1', 3);
      netns = ns;
      await ns.create();
      tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `${SRV}:3260`, wrapper: ns.wrap, logFile: join(work, 'tgtd.log') });
      const agent = Daemon.start('ironlens-agent', [...ns.wrap, process.execPath, IRONLENS, 'agent'], join(work, 'agent.log'), {
        ...process.env,
        IRONLENS_FROM_SOURCE: '1',
        DISK_DIR: paths.disks,
        IPXE_AGENT_TOKEN: AGENT_TOKEN,
        IPXE_AGENT_BACKEND: 'stgt',
        IPXE_AGENT_BASE_IQN: BASE_IQN,
        IPXE_AGENT_TGT_CONTROL_PORT: String(tgtd.controlPort),
        IRONLENS_AGENT_LISTEN: '127.0.0.1:4840',
      });
      const fwd = Daemon.start('api-forwarder', [...ns.wrap, process.execPath, '-e', FORWARDER_JS, paths.apiSocket, SRV, '4839'], join(work, 'forwarder.log'));
      daemons.push(agent, fwd);
      for (const [d, ready] of [
        [agent, /Server listening at/],
        [fwd, /forwarding/],
      ] as const) {
        await waitFor(`${d.name} to start`, () => d.log(), (l) => ready.test(l) || !d.running, 60_000, 100);
        if (!d.running) throw new Error(`${d.name} exited with code ${d.code}: ${d.log().slice(-2000)}`);
      }
      await startServe('dhcp');
      // Nothing but ironlens runs a dnsmasq in the namespace: the one /healthz names is serve's child.
      const h = await health();
      const ps = await exec(['ps', '-o', 'pid=,ppid=,comm=', '-e']);
      const dnsmasqs = ps.stdout.split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f[2] === 'dnsmasq');
      const ours = dnsmasqs.find((f) => Number(f[0]) === h.boot_services!.pid);
      expect(ours, `dnsmasq pid ${h.boot_services!.pid} among ${JSON.stringify(dnsmasqs)}`).toBeDefined();
      expect(h.boot_services).toMatchObject({ mode: 'dhcp', state: 'running', restarts: 0, url: CP_URL });
      say(`setup: serve's dnsmasq pid ${h.boot_services!.pid} (parent ${ours![1]}), ${h.boot_services!.url}/boot.ipxe`);
    });
  }, 180_000);

  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      failed = true;
    });
  });

  afterAll(async () => {
    for (const d of [...daemons].reverse()) await d.stop();
    await tgtd?.stop();
    await netns?.destroy();
    if (siteCreated) await exec(['ip', 'netns', 'del', SITE_NS], { allowFailure: true });
    process.removeListener('exit', onExit);
    const kept = work && failed ? logsDir() : undefined;
    if (kept) cpSync(work, kept, { recursive: true, filter: (src) => statSync(src).isDirectory() || src.endsWith('.log') || src.endsWith('.conf') || src.endsWith('.leases') });
    if (work) rmSync(work, { recursive: true, force: true });
    say(`cleanup done${kept ? `; logs kept in ${kept}` : ''}; steps: ${Object.entries(times).map(([k, v]) => `${k} ${v.toFixed(1)} s`).join(', ')}`);
  }, 120_000);

  it('dhcp: a BIOS machine gets an address and boot.ipxe from serve alone, reports pcbios and joins the pool', async () => {
    await step('BIOS first boot', async () => {
      const qemu = powerOn('bios-1', BIOS);
      expect(await qemu.waitExit(120_000), 'the pooled machine reboots (qemu ends)').toBe(true);
      const shown = serial('bios-1');
      expect(shown).toContain(`ironlens: ${BIOS.mac} hostname= control plane ${CP_URL}`);
      expect(shown).toContain('menu-default=reboot');
      // dnsmasq's own lines in serve's log: the address it gave, the boot file it named.
      const log = flatConsole(serveLog());
      expect(log).toMatch(new RegExp(`dnsmasq-dhcp\\[\\d+\\]: DHCPACK\\(br0\\) 192\\.168\\.215\\.\\d+ ${BIOS.mac}`));
      const script = requested('/boot.ipxe');
      expect(script.length, 'iPXE fetched boot.ipxe over HTTP from serve').toBeGreaterThanOrEqual(1);
      const served = await api('GET', '/boot.ipxe');
      expect(served.text).toContain(`isset \${cp-url} || set cp-url ${CP_URL}\n`);
      const device = (await api('GET', `/devices/${BIOS.mac}`)).json<{ state: string; fingerprint: { platform?: string } }>();
      expect(device).toMatchObject({ state: 'pooled', fingerprint: { platform: 'pcbios' } });
    });
  }, 180_000);

  it("dhcp: binding it renders the hosts file and ironlens' own dnsmasq reads it again", async () => {
    await step('operator', async () => {
      const reads = () => (serveLog().match(new RegExp(`read ${paths.hosts.replace(/[.]/g, '\\.')}`, 'g')) ?? []).length;
      const before = reads();
      expect((await api('POST', '/agents', { id: 'storage', base_url: 'http://127.0.0.1:4840', token: AGENT_TOKEN, iscsi_server: SRV, role: { disk: true, cd: false } })).status).toBe(201);
      expect((await api('POST', '/workers', { worker_id: WORKER })).status).toBe(200);
      const bind = await api('POST', `/devices/${BIOS.mac}/bind?worker_id=${WORKER}`);
      expect(bind.status, bind.text).toBe(200);
      const disk = await api('POST', `/workers/${WORKER}/luns/disk`, { type: 'master', os: 'ubuntu', name: '_tpl_marker.img' });
      expect(disk.status, disk.text).toBe(200);
      expect((await api('PUT', `/workers/${WORKER}/default-os`, { os: 'ubuntu', menu_timeout: 1 })).status).toBe(200);
      expect(readFileSync(paths.hosts, 'utf8')).toBe(`${BIOS.mac},${WORKER},infinite\n`);
      await waitFor("serve's dnsmasq to re-read the hosts file (SIGHUP)", reads, (n) => n > before, 10_000, 100);
    });
  }, 60_000);

  it("restarts ironlens' dnsmasq when it dies, and the next boot works: the bound BIOS machine sanboots its disk", async () => {
    await step('kill dnsmasq', async () => {
      const before = await health();
      const pid = before.boot_services!.pid!;
      process.kill(pid, 'SIGKILL');
      const after = await waitFor('/healthz: dnsmasq running again', () => health(), (h) => h.boot_services?.state === 'running' && h.boot_services.pid !== pid, 30_000, 100);
      expect(after.boot_services).toMatchObject({ restarts: 1 });
      expect(after.boot_services!.last_exit).toMatch(/^signal SIGKILL/);
      expect(serveLog()).toMatch(/dnsmasq: ended unexpectedly \(signal SIGKILL/);
      const metrics = (await api('GET', '/metrics')).text;
      expect(metrics).toMatch(/^ironlens_boot_services_restarts_total\{mode="dhcp"\} 1$/m);
      expect(metrics).toMatch(/^ironlens_boot_services_up\{mode="dhcp"\} 1$/m);
      say(`kill dnsmasq: pid ${pid} killed, restarted as pid ${after.boot_services!.pid}`);
    });
    await step('BIOS second boot', async () => {
      const qemu = powerOn('bios-2', BIOS);
      expect(await qemu.waitExit(120_000), 'the marker ends qemu').toBe(true);
      const shown = serial('bios-2');
      expect(shown).toContain(`ironlens: ${BIOS.mac} hostname=${WORKER} control plane ${CP_URL}`);
      expect(shown).toContain(`sanboot iscsi:${SRV}:::1:${BASE_IQN}:${WORKER}.ubuntu`);
      expect(shown).toContain(MARKER);
      expect(qemu.code).toBe(33);
      expect(flatConsole(serveLog())).toMatch(new RegExp(`DHCPACK\\(br0\\) 192\\.168\\.215\\.\\d+ ${BIOS.mac} ${WORKER}`));
    });
  }, 180_000);

  it("dhcp: a UEFI machine's own PXE gets snponly.efi by TFTP from Debian's ipxe, which chains boot.ipxe and reports efi", async () => {
    await step('UEFI boot (firmware PXE)', async () => {
      const qemu = powerOn('uefi-1', UEFI);
      expect(await qemu.waitExit(180_000), 'the pooled machine reboots (qemu ends)').toBe(true);
      const shown = serial('uefi-1');
      expect(shown).toMatch(/NBP filename is snponly\.efi/);
      expect(shown).toContain(`ironlens: ${UEFI.mac} hostname= control plane ${CP_URL}`);
      expect(flatConsole(serveLog())).toMatch(/dnsmasq-tftp\[\d+\]: sent \/usr\/lib\/ipxe\/snponly\.efi to 192\.168\.215\.\d+/);
      const device = (await api('GET', `/devices/${UEFI.mac}`)).json<{ state: string; fingerprint: { platform?: string } }>();
      expect(device).toMatchObject({ state: 'pooled', fingerprint: { platform: 'efi' } });
    });
  }, 240_000);

  it('dhcp: a BIOS PXE firmware (no iPXE: client architecture 0) is named undionly.kpxe, which TFTP serves byte for byte from Debian\'s ipxe', async () => {
    await step('BIOS PXE client', async () => {
      // A DHCP client that says what a BIOS PXE ROM says (vendor class, client architecture 0,
      // no iPXE user class), in a namespace of its own on the bridge; then a TFTP read.
      const client = `ironlens-bs-cl-${process.pid}`;
      await exec(['ip', 'netns', 'add', client]);
      try {
        const ipn = (ns: string, ...a: string[]) => exec(['ip', '-n', ns, ...a]);
        await ipn(client, 'link', 'set', 'lo', 'up');
        await ipn(NS, 'link', 'add', 'vclient', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', client);
        await ipn(NS, 'link', 'set', 'vclient', 'master', 'br0');
        await ipn(NS, 'link', 'set', 'vclient', 'up');
        await ipn(client, 'link', 'set', 'eth0', 'address', '52:54:00:b5:00:04', 'up');
        const script = join(work, 'udhcpc.sh');
        const out = join(work, 'udhcpc.out');
        writeFileSync(script, `#!/bin/sh\n[ "$1" = bound ] && echo "boot_file=$boot_file siaddr=$siaddr" >>${out}\nexit 0\n`, { mode: 0o755 });
        await exec(['ip', 'netns', 'exec', client, 'busybox', 'udhcpc', '-i', 'eth0', '-f', '-q', '-n', '-t', '5', '-T', '2', '-s', script, '-V', 'PXEClient:Arch:00000:UNDI:002001', '-x', '0x5d:0000'], { timeoutMs: 60_000 });
        expect(readFileSync(out, 'utf8')).toBe(`boot_file=undionly.kpxe siaddr=${SRV}\n`);
        // The client configures no address itself (its script only notes the answer): one outside the range.
        await ipn(client, 'addr', 'add', '192.168.215.99/24', 'dev', 'eth0');
        const got = join(work, 'undionly.kpxe');
        await exec(['ip', 'netns', 'exec', client, 'curl', '-sS', '--max-time', '30', '-o', got, `tftp://${SRV}/undionly.kpxe`], { timeoutMs: 60_000 });
        expect(readFileSync(got).equals(readFileSync('/usr/lib/ipxe/undionly.kpxe')), 'the same bytes as Debian ships').toBe(true);
      } finally {
        await exec(['ip', 'netns', 'del', client], { allowFailure: true });
      }
    });
  }, 120_000);

  it("proxy: beside the site's DHCP server, a UEFI machine gets its address from that server and ironlens' boot file (ipxe.efi, then boot.ipxe)", async () => {
    await step('proxy boot', async () => {
      await serve!.stop();
      // The site's network: a DHCP server handing out addresses only, in its own namespace on the bridge.
      await exec(['ip', 'netns', 'add', SITE_NS]);
      siteCreated = true;
      const ipn = (ns: string, ...a: string[]) => exec(['ip', '-n', ns, ...a]);
      await ipn(SITE_NS, 'link', 'set', 'lo', 'up');
      await ipn(NS, 'link', 'add', 'vsite', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', SITE_NS);
      await ipn(NS, 'link', 'set', 'vsite', 'master', 'br0');
      await ipn(NS, 'link', 'set', 'vsite', 'up');
      await ipn(SITE_NS, 'addr', 'add', `${SITE}/24`, 'dev', 'eth0');
      await ipn(SITE_NS, 'addr', 'add', 'fd00:215::2/64', 'dev', 'eth0', 'nodad');
      await ipn(SITE_NS, 'link', 'set', 'eth0', 'up');
      const siteLog = join(work, 'site-dhcp.log');
      const site = Daemon.start(
        'site-dhcp',
        [
          'ip', 'netns', 'exec', SITE_NS, 'dnsmasq', '--keep-in-foreground', '--conf-file=/dev/null', '--port=0', '--interface=eth0', '--bind-interfaces',
          '--dhcp-range=192.168.215.160,192.168.215.200,255.255.255.0,1h', `--dhcp-leasefile=${join(work, 'site.leases')}`,
          // the site's router advertises IPv6 (iPXE skips its 13 s wait)
          '--enable-ra', '--dhcp-range=::,constructor:eth0,ra-only', `--log-facility=${siteLog}`,
        ],
        join(work, 'site-dhcp.stdout.log'),
      );
      daemons.push(site);
      await waitFor('the site DHCP server', () => (existsSync(siteLog) ? readFileSync(siteLog, 'utf8') : ''), (l) => l.includes('DHCP, IP range') || !site.running, 20_000, 100);
      await startServe('proxy', { IRONLENS_BOOT_EFI_FILE: 'ipxe.efi' });
      expect((await health()).boot_services).toMatchObject({ mode: 'proxy', state: 'running', url: CP_URL });
      const qemu = powerOn('proxied', PROXIED);
      expect(await qemu.waitExit(180_000), 'the pooled machine reboots (qemu ends)').toBe(true);
      const shown = serial('proxied');
      expect(shown).toMatch(/NBP filename is ipxe\.efi/);
      // boot.ipxe came from ironlens and names ironlens, not the DHCP server (the next-server of a proxy-DHCP boot).
      expect(shown).toContain(`ironlens: ${PROXIED.mac} hostname= control plane ${CP_URL}`);
      const siteText = readFileSync(siteLog, 'utf8');
      const ack = new RegExp(`DHCPACK\\(eth0\\) (192\\.168\\.215\\.(1[6-9]\\d|200)) ${PROXIED.mac}`).exec(siteText);
      expect(ack, 'the site server gave the address').not.toBeNull();
      expect(siteText, 'the site server names no boot file').not.toMatch(/ipxe|boot/i);
      const log = flatConsole(serveLog());
      expect(log).toMatch(new RegExp(`dnsmasq-dhcp\\[\\d+\\]: PXE\\(br0\\) ${PROXIED.mac} proxy`));
      expect(log).toMatch(/dnsmasq-tftp\[\d+\]: sent \/usr\/lib\/ipxe\/ipxe\.efi to 192\.168\.215\.\d+/);
      expect(log, "ironlens' proxy hands out no address").not.toMatch(new RegExp(`DHCPACK\\(br0\\) \\S+ ${PROXIED.mac}`));
      const device = (await api('GET', `/devices/${PROXIED.mac}`)).json<{ state: string; fingerprint: { platform?: string } }>();
      expect(device).toMatchObject({ state: 'pooled', fingerprint: { platform: 'efi' } });
      say(`proxy boot: address ${ack![1]} from the site server, ipxe.efi and boot.ipxe from ironlens`);
    });
  }, 300_000);
});
