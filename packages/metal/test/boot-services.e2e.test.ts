import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { artifactPath, waitFor } from '@ironlens/core/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BootSite } from './boot-site.harness';
import { Daemon, flatConsole, type MachineFirmware, type MachineSpec, markerBootSector, requireNetbootTools, stepper, timedLines } from './netboot.harness';

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
 *    then `boot.ipxe`, whose control plane is ironlens, not the DHCP server). The `dhcp` serve
 *    before it is killed with SIGKILL, leaving its dnsmasq behind: the `proxy` serve ends that
 *    one (its pid file) before it starts its own;
 * 7. SIGTERM to serve alone: its dnsmasq ends with it.
 *
 * Each boot stops at the end of its path (the reboot loop of a pooled machine ends qemu, the
 * marker ends it with code 33). What a missing `ipxe` package does is checked without a
 * namespace (packages/cli/src/start-failure.test.ts).
 */

const NS = `ironlens-bs-${process.pid}`;
/** The site's DHCP server (proxy step), in a namespace of its own on the same bridge. */
const SITE_NS = `ironlens-bs-site-${process.pid}`;
const NET = 215;
const SRV = `192.168.${NET}.1`;
const SITE = `192.168.${NET}.2`;
const CP_URL = `http://${SRV}:4839`;
const BASE_IQN = 'iqn.2026-07.io.ironlens.bootsvc';
const TOKEN = `cp-${randomBytes(8).toString('hex')}`;
const AGENT_TOKEN = `agent-${randomBytes(8).toString('hex')}`;
const BIOS = { mac: '52:54:00:b5:00:01', tap: 'tap1', firmware: 'bios' as MachineFirmware, memory: 256 };
const UEFI = { mac: '52:54:00:b5:00:02', tap: 'tap2', firmware: 'uefi-pxe' as MachineFirmware, memory: 512 };
const PROXIED = { mac: '52:54:00:b5:00:03', tap: 'tap3', firmware: 'uefi-pxe' as MachineFirmware, memory: 512 };
const WORKER = 'bs-worker';
const MARKER = `BOOT-SERVICES-OK ${randomBytes(4).toString('hex')}`;

/** A process that is gone, or a zombie its new parent has not reaped (this machine's pid 1 may not reap). */
const ended = (pid: number) => !existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');

const t0 = Date.now();
const say = (msg: string) => console.log(`[boot-services ${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);

describe("boot services: ironlens serve's own DHCP/proxy-DHCP and TFTP boot BIOS and UEFI machines", () => {
  let work: string;
  let site: BootSite | undefined;
  let failed = false;
  const onExit = () => {
    site?.stopSync();
  };
  const api = (method: string, path: string, body?: unknown) => site!.api(method, path, body);
  const health = () => site!.health();
  const serveLog = () => site?.serveLog() ?? '';
  /** A machine's console as one line: the BIOS console wraps at 80 columns. */
  const serial = (name: string) => timedLines(join(work, `${name}.serial.log`)).map((l) => l.text).join('');
  const powerOn = (name: string, m: MachineSpec) => site!.powerOn(name, m);

  let keptLogs: string | undefined;
  const logsDir = () => (keptLogs ??= artifactPath('boot-services-e2e-logs'));

  const { step, times } = stepper(say, () => {
    failed = true;
    return `\nlogs kept in: ${logsDir()}\n--- serve (tail) ---\n${serveLog().slice(-4000)}`;
  });

  beforeAll(async () => {
    requireNetbootTools({ uefi: true });
    for (const f of ['/usr/lib/ipxe/undionly.kpxe', '/usr/lib/ipxe/snponly.efi', '/usr/lib/ipxe/ipxe.efi']) {
      if (!existsSync(f)) throw new Error(`${f} missing: Debian package ipxe (scripts/install-test-deps.sh installs it)`);
    }
    process.once('exit', onExit);
    work = mkdtempSync(join(tmpdir(), 'ironlens-boot-services-e2e-'));

    await step('setup', async () => {
      site = await BootSite.start({
        name: NS,
        net: NET,
        taps: 3,
        work,
        token: TOKEN,
        agentToken: AGENT_TOKEN,
        baseIqn: BASE_IQN,
        beforeAgent: async (disks) => {
          writeFileSync(join(disks, '_tpl_marker.img'), markerBootSector(MARKER));
          await exec(['truncate', '-s', '8M', join(disks, '_tpl_marker.img')]);
        },
      });
      await site.startServe('dhcp');
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
    await site?.stop();
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
      const script = site!.requested('/boot.ipxe');
      expect(script.length, 'iPXE fetched boot.ipxe over HTTP from serve').toBeGreaterThanOrEqual(1);
      const served = await api('GET', '/boot.ipxe');
      expect(served.text).toContain(`isset \${cp-url} || set cp-url ${CP_URL}\n`);
      const device = (await api('GET', `/devices/${BIOS.mac}`)).json<{ state: string; fingerprint: { platform?: string } }>();
      expect(device).toMatchObject({ state: 'pooled', fingerprint: { platform: 'pcbios' } });
    });
  }, 180_000);

  it("dhcp: binding it renders the hosts file and ironlens' own dnsmasq reads it again", async () => {
    await step('operator', async () => {
      const reads = () => (serveLog().match(new RegExp(`read ${site!.paths.hosts.replace(/[.]/g, '\\.')}`, 'g')) ?? []).length;
      const before = reads();
      expect((await api('POST', '/agents', { id: 'storage', base_url: 'http://127.0.0.1:4840', token: AGENT_TOKEN, iscsi_server: SRV, role: { disk: true, cd: false } })).status).toBe(201);
      expect((await api('POST', '/workers', { worker_id: WORKER })).status).toBe(200);
      const bind = await api('POST', `/devices/${BIOS.mac}/bind?worker_id=${WORKER}`);
      expect(bind.status, bind.text).toBe(200);
      const disk = await api('POST', `/workers/${WORKER}/luns/disk`, { type: 'master', os: 'ubuntu', name: '_tpl_marker.img' });
      expect(disk.status, disk.text).toBe(200);
      expect((await api('PUT', `/workers/${WORKER}/default-os`, { os: 'ubuntu', menu_timeout: 1 })).status).toBe(200);
      expect(readFileSync(site!.paths.hosts, 'utf8')).toBe(`${BIOS.mac},${WORKER},infinite\n`);
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
      await site!.netns!.attachPeer(client, 'vclient', { mac: '52:54:00:b5:00:04' });
      {
        const script = join(work, 'udhcpc.sh');
        const out = join(work, 'udhcpc.out');
        writeFileSync(script, `#!/bin/sh\n[ "$1" = bound ] && echo "boot_file=$boot_file siaddr=$siaddr" >>${out}\nexit 0\n`, { mode: 0o755 });
        await exec(['ip', 'netns', 'exec', client, 'busybox', 'udhcpc', '-i', 'eth0', '-f', '-q', '-n', '-t', '5', '-T', '2', '-s', script, '-V', 'PXEClient:Arch:00000:UNDI:002001', '-x', '0x5d:0000'], { timeoutMs: 60_000 });
        expect(readFileSync(out, 'utf8')).toBe(`boot_file=undionly.kpxe siaddr=${SRV}\n`);
        // The client configures no address itself (its script only notes the answer): one outside the range.
        await exec(['ip', '-n', client, 'addr', 'add', '192.168.215.99/24', 'dev', 'eth0']);
        const got = join(work, 'undionly.kpxe');
        await exec(['ip', 'netns', 'exec', client, 'curl', '-sS', '--max-time', '30', '-o', got, `tftp://${SRV}/undionly.kpxe`], { timeoutMs: 60_000 });
        expect(readFileSync(got).equals(readFileSync('/usr/lib/ipxe/undionly.kpxe')), 'the same bytes as Debian ships').toBe(true);
      }
    });
  }, 120_000);

  it("proxy: beside the site's DHCP server, a UEFI machine gets its address from that server and ironlens' boot file (ipxe.efi, then boot.ipxe)", async () => {
    await step('proxy boot', async () => {
      // serve (dhcp) dies without a word (SIGKILL to it alone): its dnsmasq is left running, holding
      // the DHCP and TFTP ports; the next serve ends it before it starts its own.
      const left = (await health()).boot_services!.pid!;
      const killed = site!.serve!;
      process.kill(killed.pid, 'SIGKILL');
      expect(await killed.waitExit(10_000)).toBe(true);
      expect(() => process.kill(left, 0), 'the killed serve left its dnsmasq running').not.toThrow();
      // The site's network: a DHCP server handing out addresses only, in its own namespace on the bridge.
      await site!.netns!.attachPeer(SITE_NS, 'vsite', { addresses: [`${SITE}/24`, 'fd00:215::2/64'] });
      const siteLog = join(work, 'site-dhcp.log');
      const siteDhcp = Daemon.start(
        'site-dhcp',
        [
          'ip', 'netns', 'exec', SITE_NS, 'dnsmasq', '--keep-in-foreground', '--conf-file=/dev/null', '--port=0', '--interface=eth0', '--bind-interfaces',
          '--dhcp-range=192.168.215.160,192.168.215.200,255.255.255.0,1h', `--dhcp-leasefile=${join(work, 'site.leases')}`,
          // the site's router advertises IPv6 (iPXE skips its 13 s wait)
          '--enable-ra', '--dhcp-range=::,constructor:eth0,ra-only', `--log-facility=${siteLog}`,
        ],
        join(work, 'site-dhcp.stdout.log'),
      );
      site!.daemons.push(siteDhcp);
      await waitFor('the site DHCP server', () => (existsSync(siteLog) ? readFileSync(siteLog, 'utf8') : ''), (l) => l.includes('DHCP, IP range') || !siteDhcp.running, 20_000, 100);
      await site!.startServe('proxy', { IRONLENS_BOOT_EFI_FILE: 'ipxe.efi' });
      expect((await health()).boot_services).toMatchObject({ mode: 'proxy', state: 'running', url: CP_URL, restarts: 0 });
      expect(serveLog()).toContain(`dnsmasq: stopping pid ${left}, left running by an earlier ironlens (it reads ${site!.paths.hosts})`);
      expect(ended(left), 'the leftover dnsmasq ended').toBe(true);
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

  it('stops its dnsmasq when it stops (SIGTERM to serve alone)', async () => {
    await step('serve stops', async () => {
      const pid = (await health()).boot_services!.pid!;
      const serve = site!.serve!;
      process.kill(serve.pid, 'SIGTERM');
      expect(await serve.waitExit(20_000), 'serve ends on SIGTERM').toBe(true);
      expect(serve.code).toBe(0);
      expect(ended(pid), 'its dnsmasq ended with it').toBe(true);
    });
  }, 60_000);
});
