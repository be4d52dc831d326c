// biome-ignore-all lint/suspicious/noTemplateCurlyInString: iPXE script text, where ${...} is its own syntax
/**
 * The boot services' settings and the dnsmasq command line made from them (issue 30): off by
 * default, every value checked where it is read, and the exact argument array (no shell) for
 * each mode, compared literally.
 */
import { describe, expect, it } from 'vitest';
import { BootScriptService, CP_URL_LINE, checkBootUrl } from '../services/boot-script.service';
import { bootServicesConfigFromEnv, interfaceIpv4 } from './boot-services.config';
import { dnsmasqArgv } from './dnsmasq-argv';

const HOSTS = '/var/lib/ironlens/dnsmasq/dhcp-hosts.conf';
const env = (e: Record<string, string>) => ({ IRONLENS_BOOT_DNSMASQ: '/usr/sbin/dnsmasq', ...e });

describe('IRONLENS_BOOT_SERVICES settings', () => {
  it('is off unless asked for: nothing changes', () => {
    expect(bootServicesConfigFromEnv({}, HOSTS)).toBeNull();
    expect(bootServicesConfigFromEnv({ IRONLENS_BOOT_SERVICES: 'off', IRONLENS_BOOT_INTERFACE: 'br0' }, HOSTS)).toBeNull();
  });

  it('reads dhcp mode with its defaults: RA on, snponly.efi, Debian’s iPXE directory, files beside the hosts file', () => {
    expect(bootServicesConfigFromEnv(env({ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.9.0.100,10.9.0.200' }), HOSTS)).toEqual({
      mode: 'dhcp',
      interface: 'br0',
      range: { start: '10.9.0.100', end: '10.9.0.200' },
      leaseTime: '1h',
      router: undefined,
      dns: [],
      ipxeDir: '/usr/lib/ipxe',
      efiFile: 'snponly.efi',
      dnsmasq: '/usr/sbin/dnsmasq',
      ra: true,
      leaseFile: '/var/lib/ironlens/dnsmasq/dnsmasq.leases',
      pidFile: '/var/lib/ironlens/dnsmasq/dnsmasq.pid',
      hostsFile: HOSTS,
    });
    const proxy = bootServicesConfigFromEnv(env({ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'eno1' }), HOSTS);
    expect(proxy).toMatchObject({ mode: 'proxy', ra: false, range: undefined });
  });

  it('refuses what is missing or outside its grammar, naming the setting', () => {
    const bad: Array<[Record<string, string>, RegExp]> = [
      [{ IRONLENS_BOOT_SERVICES: 'yes' }, /IRONLENS_BOOT_SERVICES must be off, proxy or dhcp/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp' }, /needs IRONLENS_BOOT_INTERFACE/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0' }, /needs IRONLENS_BOOT_DHCP_RANGE/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0,x' }, /IRONLENS_BOOT_INTERFACE must be an interface name/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0 --conf-file=/x' }, /IRONLENS_BOOT_INTERFACE must be an interface name/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.0.0.1,10.0.0.9' }, /IRONLENS_BOOT_DHCP_RANGE is for IRONLENS_BOOT_SERVICES=dhcp/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.0.0.9,10.0.0.1' }, /10\.0\.0\.9 comes after 10\.0\.0\.1/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.0.0.1,10.0.0.9,tag:x' }, /is not a netmask/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.0.0.1,10.0.0.300' }, /not a unicast IPv4 address/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.0.0.1,10.0.0.9', IRONLENS_BOOT_DHCP_ROUTER: '10.0.0.1,8.8.8.8' }, /IRONLENS_BOOT_DHCP_ROUTER/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.0.0.1,10.0.0.9', IRONLENS_BOOT_DHCP_DNS: '1.1.1.1,\nx' }, /IRONLENS_BOOT_DHCP_DNS/],
      [{ IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_RANGE: '10.0.0.1,10.0.0.9', IRONLENS_BOOT_DHCP_LEASE: '1h,x' }, /IRONLENS_BOOT_DHCP_LEASE/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_EFI_FILE: '../../etc/shadow' }, /IRONLENS_BOOT_EFI_FILE must be snponly\.efi or ipxe\.efi/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_IPXE_DIR: '/srv/ipxe,br1' }, /IRONLENS_BOOT_IPXE_DIR.*no comma/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_IPXE_DIR: 'ipxe' }, /IRONLENS_BOOT_IPXE_DIR/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_IPXE_DIR: '/srv/../etc' }, /IRONLENS_BOOT_IPXE_DIR/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: '..' }, /IRONLENS_BOOT_INTERFACE must be an interface name/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_ROUTER: '10.0.0.1' }, /IRONLENS_BOOT_DHCP_ROUTER is for IRONLENS_BOOT_SERVICES=dhcp/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DHCP_DNS: '10.0.0.1' }, /IRONLENS_BOOT_DHCP_DNS is for IRONLENS_BOOT_SERVICES=dhcp/],
      [{ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0', IRONLENS_BOOT_DNSMASQ: '/usr/sbin/dnsmasq --user=root' }, /IRONLENS_BOOT_DNSMASQ/],
    ];
    for (const [e, msg] of bad) expect(() => bootServicesConfigFromEnv(env(e), HOSTS), JSON.stringify(e)).toThrow(msg);
    expect(() => bootServicesConfigFromEnv(env({ IRONLENS_BOOT_SERVICES: 'proxy', IRONLENS_BOOT_INTERFACE: 'br0' }), '/data dir/hosts')).toThrow(/IPXE_CP_DNSMASQ_HOSTS_FILE/);
  });

  it("finds an interface's IPv4 address and network", () => {
    const list = { br0: [{ family: 'IPv6', address: 'fd00::1', netmask: 'ffff:ffff:ffff:ffff::', internal: false, mac: '', cidr: null }, { family: 'IPv4', address: '192.168.214.1', netmask: '255.255.255.0', internal: false, mac: '', cidr: null }] } as never;
    expect(interfaceIpv4('br0', list)).toEqual({ address: '192.168.214.1', netmask: '255.255.255.0', network: '192.168.214.0' });
    expect(interfaceIpv4('br1', list)).toBeUndefined();
    const wide = { eno1: [{ family: 'IPv4', address: '172.20.7.9', netmask: '255.240.0.0', internal: false, mac: '', cidr: null }] } as never;
    expect(interfaceIpv4('eno1', wide)?.network).toBe('172.16.0.0');
  });
});

describe("ironlens' dnsmasq command line", () => {
  const base = { IRONLENS_BOOT_INTERFACE: 'br0' };
  const common = [
    '/usr/sbin/dnsmasq',
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--port=0',
    '--log-facility=-',
    '--interface=br0',
    '--bind-interfaces',
    `--dhcp-hostsfile=${HOSTS}`,
    '--dhcp-leasefile=/var/lib/ironlens/dnsmasq/dnsmasq.leases',
    '--pid-file=/var/lib/ironlens/dnsmasq/dnsmasq.pid',
    '--enable-tftp',
    '--tftp-root=/usr/lib/ipxe',
    '--dhcp-userclass=set:ipxe,iPXE',
  ];

  it('dhcp: hands out the range, the router and DNS servers; boot.ipxe to iPXE, undionly.kpxe to BIOS PXE, the EFI binary to UEFI PXE; RAs', () => {
    const cfg = bootServicesConfigFromEnv(env({ ...base, IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_DHCP_RANGE: '10.9.0.100,10.9.0.200,255.255.255.0', IRONLENS_BOOT_DHCP_ROUTER: '10.9.0.1', IRONLENS_BOOT_DHCP_DNS: '10.9.0.2,10.9.0.3' }), HOSTS)!;
    expect(dnsmasqArgv(cfg, { url: 'http://10.9.0.5:4839' })).toEqual([
      ...common,
      '--dhcp-range=10.9.0.100,10.9.0.200,255.255.255.0,1h',
      '--dhcp-option=option:router,10.9.0.1',
      '--dhcp-option=option:dns-server,10.9.0.2,10.9.0.3',
      '--dhcp-match=set:bios,option:client-arch,0',
      '--dhcp-match=set:efi64,option:client-arch,7',
      '--dhcp-match=set:efi64,option:client-arch,9',
      '--dhcp-boot=tag:ipxe,http://10.9.0.5:4839/boot.ipxe',
      '--dhcp-boot=tag:!ipxe,tag:efi64,snponly.efi',
      '--dhcp-boot=tag:!ipxe,tag:bios,undionly.kpxe',
      '--enable-ra',
      '--dhcp-range=::,constructor:br0,ra-only',
    ]);
    const noRouter = bootServicesConfigFromEnv(env({ ...base, IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_DHCP_RANGE: '10.9.0.100,10.9.0.200', IRONLENS_BOOT_DHCP_ROUTER: 'none', IRONLENS_BOOT_RA: 'false', IRONLENS_BOOT_EFI_FILE: 'ipxe.efi' }), HOSTS)!;
    const argv = dnsmasqArgv(noRouter, { url: 'http://10.9.0.5:4839/' });
    expect(argv).toContain('--dhcp-option=option:router');
    expect(argv).toContain('--dhcp-boot=tag:!ipxe,tag:efi64,ipxe.efi');
    expect(argv.some((a) => a.startsWith('--enable-ra'))).toBe(false);
  });

  it('proxy: no addresses; one --pxe-service line per client architecture, for iPXE and for PXE firmware', () => {
    const cfg = bootServicesConfigFromEnv(env({ ...base, IRONLENS_BOOT_SERVICES: 'proxy' }), HOSTS)!;
    expect(dnsmasqArgv(cfg, { url: 'http://192.168.1.5:4839', network: '192.168.1.0' })).toEqual([
      ...common,
      '--dhcp-range=192.168.1.0,proxy',
      '--pxe-service=tag:ipxe,x86PC,ironlens,http://192.168.1.5:4839/boot.ipxe',
      '--pxe-service=tag:ipxe,BC_EFI,ironlens,http://192.168.1.5:4839/boot.ipxe',
      '--pxe-service=tag:ipxe,x86-64_EFI,ironlens,http://192.168.1.5:4839/boot.ipxe',
      '--pxe-service=tag:!ipxe,x86PC,ironlens,undionly.kpxe',
      '--pxe-service=tag:!ipxe,BC_EFI,ironlens,snponly.efi',
      '--pxe-service=tag:!ipxe,x86-64_EFI,ironlens,snponly.efi',
    ]);
  });

  it('checks every value again where it is written', () => {
    const cfg = bootServicesConfigFromEnv(env({ ...base, IRONLENS_BOOT_SERVICES: 'proxy' }), HOSTS)!;
    for (const url of ['http://10.0.0.5:4839/boot.ipxe', 'http://10.0.0.5:4839 --conf-file=/x', 'ftp://10.0.0.5', 'http://a,b', 'http://x:99999', 'http://user@10.0.0.5', 'http://${next-server}:4839'])
      expect(() => dnsmasqArgv(cfg, { url, network: '10.0.0.0' }), url).toThrow(/IRONLENS_BOOT_URL/);
    expect(() => dnsmasqArgv({ ...cfg, interface: 'br0,x' }, { url: 'http://10.0.0.5', network: '10.0.0.0' })).toThrow(/interface name/);
    expect(() => dnsmasqArgv({ ...cfg, hostsFile: '/x,y' }, { url: 'http://10.0.0.5', network: '10.0.0.0' })).toThrow(/no comma/);
    expect(() => dnsmasqArgv(cfg, { url: 'http://10.0.0.5', network: '10.0.0.0,tag:x' })).toThrow(/not an IPv4 network/);
    expect(() => dnsmasqArgv({ ...cfg, efiFile: 'x.efi' as never }, { url: 'http://10.0.0.5', network: '10.0.0.0' })).toThrow(/not an iPXE EFI binary/);
    const dhcp = bootServicesConfigFromEnv(env({ ...base, IRONLENS_BOOT_SERVICES: 'dhcp', IRONLENS_BOOT_DHCP_RANGE: '10.9.0.100,10.9.0.200' }), HOSTS)!;
    expect(() => dnsmasqArgv({ ...dhcp, router: '10.9.0.1,tag:x' }, { url: 'http://10.0.0.5' })).toThrow(/router/);
    const at = { url: 'http://10.0.0.5' };
    expect(() => dnsmasqArgv({ ...dhcp, range: { start: '10.9.0.100,proxy', end: '10.9.0.200' } }, at)).toThrow(/range/);
    expect(() => dnsmasqArgv({ ...dhcp, range: { start: '10.9.0.100', end: '10.9.0.200', netmask: '255.255.255.0,tag:x' } }, at)).toThrow(/not a netmask/);
    expect(() => dnsmasqArgv({ ...dhcp, leaseTime: '1h,tag:x' }, at)).toThrow(/lease/);
    expect(() => dnsmasqArgv({ ...dhcp, dns: ['10.9.0.2,tag:x'] }, at)).toThrow(/dns/);
    expect(() => dnsmasqArgv({ ...dhcp, dnsmasq: '/usr/sbin/dnsmasq --user=root' }, at)).toThrow(/IRONLENS_BOOT_DNSMASQ/);
    expect(() => dnsmasqArgv({ ...dhcp, ipxeDir: '/usr/lib/ipxe,br1' }, at)).toThrow(/IRONLENS_BOOT_IPXE_DIR/);
    expect(() => dnsmasqArgv({ ...dhcp, ipxeDir: '/usr/lib/../../etc' }, at)).toThrow(/IRONLENS_BOOT_IPXE_DIR/);
    expect(() => dnsmasqArgv({ ...dhcp, leaseFile: '/x y' }, at)).toThrow(/lease file/);
    expect(() => dnsmasqArgv({ ...dhcp, pidFile: '/x,y' }, at)).toThrow(/pid file/);
  });
});

describe('GET /boot.ipxe: the shipped script with the control plane filled in', () => {
  const template = `#!ipxe\n# header\n${CP_URL_LINE}\nchain \${cp-url}/boot-vars\n`;

  it('fills the URL into the one fallback line, and serves the script unchanged without one', () => {
    const s = new BootScriptService(template);
    expect(s.render()).toBe(template);
    s.useUrl('http://10.9.0.5:4839/');
    expect(s.render()).toBe('#!ipxe\n# header\nisset ${cp-url} || set cp-url http://10.9.0.5:4839\nchain ${cp-url}/boot-vars\n');
    expect(new BootScriptService(template, 'https://[fd00::5]:8443').render()).toContain('isset ${cp-url} || set cp-url https://[fd00::5]:8443\n');
  });

  it('refuses a URL that could add a line, a command or a variable to the script', () => {
    const s = new BootScriptService(template);
    for (const bad of ['http://10.9.0.5:4839\nshell', 'http://10.9.0.5:4839 || shell', 'http://${x}', 'http://10.9.0.5/path', 'javascript:x', 'http://-x.example'])
      expect(() => s.useUrl(bad), JSON.stringify(bad)).toThrow(/IRONLENS_BOOT_URL must be http\(s\):\/\/host\[:port\]/);
    expect(checkBootUrl('http://boot.example.org:4839')).toBe('http://boot.example.org:4839');
    expect(() => new BootScriptService('#!ipxe\necho no fallback line\n')).toThrow(/exactly once/);
    // Checked again where it is written: a URL that reached the service some other way is not rendered.
    const bypassed = new BootScriptService(template);
    Object.assign(bypassed, { url: 'http://10.9.0.5:4839\nshell' });
    expect(() => bypassed.render()).toThrow(/IRONLENS_BOOT_URL/);
  });

  it('keeps the shipped script’s fallback line (what the rendering replaces)', () => {
    expect(new BootScriptService().render().split('\n')).toContain(CP_URL_LINE);
  });
});
