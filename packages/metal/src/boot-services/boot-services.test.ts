// biome-ignore-all lint/suspicious/noTemplateCurlyInString: iPXE script text, where ${...} is its own syntax
/**
 * The boot services inside the provisioning API (issue 30), with real services and a real
 * store, the dnsmasq a stand-in process (it prints what dnsmasq prints when it reads the hosts
 * file, and its arguments): only the hosts-file writer runs it, `/healthz` and `/metrics` show
 * its state, `GET /boot.ipxe` carries the control plane's URL. The real dnsmasq booting real
 * machines is boot-services.e2e.test.ts's.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Exec, Metrics } from '@ironlens/core';
import { parsePrometheusText, sampleValue, waitFor } from '@ironlens/core/testing';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ipAddrExec, standInArgs, writeDnsmasqStandIn, writeIpxeDir } from '../testing/dnsmasq-stand-in';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { BootServices } from './boot-services';
import { interfaceIpv4Now } from './boot-services.config';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-boot-services-'));
const ipxe = writeIpxeDir(join(dir, 'ipxe'));
const STAND_IN = writeDnsmasqStandIn(dir);
/** What `ip -j -4 addr show dev br0` prints for 10.9.0.5/20. */
const fakeIp = ipAddrExec('br0', '10.9.0.5', 20);

let f: MetalFixture | undefined;
let boot: BootServices | null = null;
afterEach(async () => {
  await boot?.stop();
  boot = null;
  await f?.close();
  f = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function setUp(mode: 'dhcp' | 'proxy', log: string[] = []) {
  const hosts = join(dir, `hosts-${mode}`, 'dhcp-hosts.conf');
  const env = {
    IRONLENS_BOOT_SERVICES: mode,
    IRONLENS_BOOT_INTERFACE: 'br0',
    IRONLENS_BOOT_IPXE_DIR: ipxe,
    IRONLENS_BOOT_DNSMASQ: STAND_IN,
    IPXE_CP_DNSMASQ_HOSTS_FILE: hosts,
    ...(mode === 'dhcp' ? { IRONLENS_BOOT_DHCP_RANGE: '10.9.0.100,10.9.0.200' } : {}),
  };
  const metrics = new Metrics();
  boot = BootServices.fromEnv(env, hosts, (l) => log.push(l), metrics)!;
  await boot.checkHost(fakeIp);
  f = await newMetalFixture(env, { bootServices: boot, reloader: boot.reloader });
  return { boot, f, metrics, hosts };
}

describe('boot services in the provisioning API', () => {
  it('runs dnsmasq on the hosts-file writer only: standby while another replica writes, started when elected, stopped when not', async () => {
    const { boot, f } = await setUp('dhcp');
    f.services.dhcp.setWriter(false);
    boot.attach({ dhcp: f.services.dhcp, bootScript: f.services.bootScript, port: 4839 });
    expect(boot.status()).toMatchObject({ state: 'standby', pid: null });
    f.services.dhcp.setWriter(true);
    const running = await waitFor('running on the writer', () => boot.status(), (s) => s.state === 'running');
    expect(running.pid).toBeGreaterThan(1);
    f.services.dhcp.setWriter(false);
    await waitFor('standby again', () => boot.status(), (s) => s.state === 'standby');
    expect(() => process.kill(running.pid!, 0), 'its dnsmasq ended').toThrow();
  });

  it('fills the interface address and the listener port into GET /boot.ipxe and into dnsmasq’s boot file', async () => {
    const { boot, f, hosts } = await setUp('proxy');
    expect((await f.app.inject({ url: '/boot.ipxe' })).body).toContain('isset ${cp-url} || set cp-url http://${next-server}:4839\n');
    boot.attach({ dhcp: f.services.dhcp, bootScript: f.services.bootScript, port: 4839 });
    await waitFor('running', () => boot.status().state, (s) => s === 'running');
    const r = await f.app.inject({ url: '/boot.ipxe' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r.body.startsWith('#!ipxe\n')).toBe(true);
    expect(r.body).toContain('\nisset ${cp-url} || set cp-url http://10.9.0.5:4839\n');
    expect(r.body).not.toContain('${next-server}:4839');
    // the proxy's network from the interface's /20
    const args = standInArgs(hosts);
    expect(args).toContain('--dhcp-range=10.9.0.0,proxy');
    expect(args).toContain('--pxe-service=tag:ipxe,x86-64_EFI,ironlens,http://10.9.0.5:4839/boot.ipxe');
  });

  it('shows its state in /healthz and /metrics, and sends hosts-file reloads to its dnsmasq', async () => {
    const log: string[] = [];
    const { boot, f, metrics, hosts } = await setUp('dhcp', log);
    boot.attach({ dhcp: f.services.dhcp, bootScript: f.services.bootScript, port: 4839 });
    const up = await waitFor('running', () => boot.status(), (s) => s.state === 'running');
    const health = (await f.app.inject({ url: '/healthz' })).json();
    expect(health).toEqual({
      status: 'ok',
      boot_services: { mode: 'dhcp', interface: 'br0', url: 'http://10.9.0.5:4839', state: 'running', pid: up.pid, restarts: 0, since: expect.any(String), last_exit: null },
    });
    const text = await metrics.text();
    expect(sampleValue(parsePrometheusText(text), 'ironlens_boot_services_up', { mode: 'dhcp' })).toBe(1);
    expect(sampleValue(parsePrometheusText(text), 'ironlens_boot_services_restarts_total', { mode: 'dhcp' })).toBe(0);
    const reads = () => log.filter((l) => l.endsWith(`read ${hosts}`)).length;
    expect(reads()).toBe(1);
    // A bind renders the file and reloads: SIGHUP to this dnsmasq, which reads it again.
    await f.app.inject({ url: '/devices/report?mac=52:54:00:00:00:01' });
    expect((await f.app.inject({ method: 'POST', url: '/workers', payload: { worker_id: 'w1', mac: '52:54:00:00:00:01' } })).statusCode).toBe(200);
    await waitFor('dnsmasq to read the hosts file again', reads, (n) => n === 2);
    expect(readFileSync(hosts, 'utf8')).toBe('52:54:00:00:00:01,w1,infinite\n');
  });

  it('says which reload settings it leaves unused (they would reload some other dnsmasq), and nothing when none is set', () => {
    const env = { IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DNSMASQ: STAND_IN };
    const quiet: string[] = [];
    BootServices.fromEnv(env, join(dir, 'h', 'dhcp-hosts.conf'), (l) => quiet.push(l));
    expect(quiet).toEqual([]);
    const told: string[] = [];
    BootServices.fromEnv({ ...env, IPXE_CP_DNSMASQ_PID_FILE: '/run/dnsmasq.pid', IPXE_CP_DNSMASQ_RELOAD: 'true' }, join(dir, 'h', 'dhcp-hosts.conf'), (l) => told.push(l));
    expect(told).toEqual(["warning: IPXE_CP_DNSMASQ_PID_FILE, IPXE_CP_DNSMASQ_RELOAD not used: with IRONLENS_BOOT_SERVICES on, reloads go to ironlens' own dnsmasq"]);
  });

  it('is absent from /healthz when off, and serves the shipped script unchanged', async () => {
    f = await newMetalFixture();
    expect((await f.app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const r = await f.app.inject({ url: '/boot.ipxe' });
    expect(r.body).toBe(readFileSync(join(__dirname, '..', '..', 'assets', 'boot.ipxe'), 'utf8'));
    await f.close();
    f = await newMetalFixture({ IRONLENS_BOOT_URL: 'http://boot.example.org:8839' });
    expect((await f.app.inject({ url: '/boot.ipxe' })).body).toContain('\nisset ${cp-url} || set cp-url http://boot.example.org:8839\n');
  });
});

describe("an interface's IPv4 address, as iproute2 shows it", () => {
  it('takes the first global IPv4 address and its prefix, also on an interface without carrier', async () => {
    expect(await interfaceIpv4Now('br0', fakeIp)).toEqual({ address: '10.9.0.5', netmask: '255.255.240.0', network: '10.9.0.0' });
    const none: Exec = async () => ({ code: 0, stdout: JSON.stringify([{ ifname: 'br0', addr_info: [] }]), stderr: '' });
    expect(await interfaceIpv4Now('br0', none)).toBeUndefined();
    const missing: Exec = async () => ({ code: 1, stdout: '', stderr: 'Device "br9" does not exist.' });
    expect(await interfaceIpv4Now('br9', missing)).toBeUndefined();
    await expect(interfaceIpv4Now('br0;reboot', fakeIp)).rejects.toThrow(/interface name/);
  });
});
