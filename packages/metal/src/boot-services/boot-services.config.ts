import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { type Env, envBool, envOptional, envString, type Exec } from '@ironlens/core';
import { isFixedIpv4 } from '../adapters/dnsmasq.adapter';

/**
 * `IRONLENS_BOOT_SERVICES` (issue 30): `ironlens serve` runs a dnsmasq of its own for the boot
 * network. `proxy`: proxy-DHCP beside the site's DHCP server (which keeps handing out addresses)
 * and TFTP; `dhcp`: DHCP for an isolated provisioning network, and TFTP. Off (default): nothing
 * changes, an external dnsmasq reads the hosts file (docs/netboot.md).
 *
 * Every value here reaches dnsmasq's command line (an argument array, never a shell): each is
 * checked against its grammar when read, and the argument builder checks again.
 */
export type BootServicesMode = 'proxy' | 'dhcp';

/** The EFI binary of Debian's `ipxe` package a UEFI firmware's own PXE gets by TFTP. */
export const EFI_FILES = ['snponly.efi', 'ipxe.efi'] as const;
export type EfiFile = (typeof EFI_FILES)[number];
/** What BIOS PXE firmware gets by TFTP. */
export const BIOS_FILE = 'undionly.kpxe';
/** Debian's `ipxe` package puts its binaries here. */
export const DEFAULT_IPXE_DIR = '/usr/lib/ipxe';

export interface BootServicesConfig {
  mode: BootServicesMode;
  /** `IRONLENS_BOOT_INTERFACE`: the provisioning network's interface (dnsmasq binds to it alone). */
  interface: string;
  /** `IRONLENS_BOOT_DHCP_RANGE` (dhcp): `start,end[,netmask]`, addresses handed to machines not bound to a worker (and bound ones without a fixed address). */
  range?: { start: string; end: string; netmask?: string };
  /** `IRONLENS_BOOT_DHCP_LEASE` (dhcp): the range's lease time (bound workers' is `IRONLENS_DHCP_LEASE`). Default is `1h`. */
  leaseTime: string;
  /** `IRONLENS_BOOT_DHCP_ROUTER` (dhcp): the default gateway handed out; `none` hands out none. Default: dnsmasq's (this host's address on the interface). */
  router?: string | 'none';
  /** `IRONLENS_BOOT_DHCP_DNS` (dhcp): DNS servers handed out, comma-separated. Default: none. */
  dns: string[];
  /** `IRONLENS_BOOT_IPXE_DIR`: the iPXE binaries served by TFTP. Default is `/usr/lib/ipxe` (Debian's `ipxe`). */
  ipxeDir: string;
  /** `IRONLENS_BOOT_EFI_FILE`: what a UEFI firmware's PXE gets. Default is `snponly.efi` (iPXE on the firmware's own network driver). */
  efiFile: EfiFile;
  /** `IRONLENS_BOOT_DNSMASQ`: the dnsmasq binary. Default: `dnsmasq` on PATH or in /usr/sbin (Debian's `dnsmasq-base`). */
  dnsmasq: string;
  /** `IRONLENS_BOOT_RA`: IPv6 router advertisements on the interface, so iPXE does not wait ~13 s for IPv6. Default: on with `dhcp`, off with `proxy` (the site's routers own the link). */
  ra: boolean;
  /** dnsmasq's lease and pid files: beside the hosts file. */
  leaseFile: string;
  pidFile: string;
  hostsFile: string;
}

const IFACE_RE = /^[A-Za-z0-9_.-]{1,15}$/;
/** A path dnsmasq takes inside a comma-separated option: absolute, no comma, space or control character. */
const PATH_RE = /^\/[A-Za-z0-9._/+@-]{0,4094}$/;
const LEASE_RE = /^(infinite|\d{1,7}[smhdw]?)$/;

export class BootServicesConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BootServicesConfigError';
  }
}

export function checkInterfaceName(name: string, setting = 'IRONLENS_BOOT_INTERFACE'): string {
  if (!IFACE_RE.test(name) || name === '.' || name === '..') throw new BootServicesConfigError(`${setting} must be an interface name (1-15 of letters, digits, '_', '.', '-'), got ${JSON.stringify(name.slice(0, 40))}`);
  return name;
}

export function checkIpv4(value: string, setting: string): string {
  if (!isFixedIpv4(value)) throw new BootServicesConfigError(`${setting}: ${JSON.stringify(String(value).slice(0, 40))} is not a unicast IPv4 address`);
  return value;
}

export function checkDnsmasqPath(path: string, setting: string): string {
  if (!PATH_RE.test(path) || path.split('/').includes('..')) throw new BootServicesConfigError(`${setting}: ${JSON.stringify(path.slice(0, 80))} must be an absolute path of letters, digits and . _ / + @ - (no comma or space: dnsmasq splits its options on commas)`);
  return path;
}

const NETMASK_RE = /^(255\.){0,3}(255|254|252|248|240|224|192|128|0)(\.0){0,3}$/;

export function checkNetmask(value: string, setting: string): string {
  if (!NETMASK_RE.test(value) || value.split('.').length !== 4) throw new BootServicesConfigError(`${setting}: ${JSON.stringify(String(value).slice(0, 40))} is not a netmask`);
  return value;
}

export function checkLeaseTime(value: string, setting: string): string {
  if (!LEASE_RE.test(value)) throw new BootServicesConfigError(`${setting} must be seconds, or a number with s, m, h, d or w, or infinite; got ${JSON.stringify(String(value).slice(0, 40))}`);
  return value;
}

function parseRange(text: string): BootServicesConfig['range'] {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length < 2 || parts.length > 3) throw new BootServicesConfigError(`IRONLENS_BOOT_DHCP_RANGE must be start,end[,netmask], got ${JSON.stringify(text.slice(0, 80))}`);
  const [start, end, netmask] = parts;
  checkIpv4(start, 'IRONLENS_BOOT_DHCP_RANGE');
  checkIpv4(end, 'IRONLENS_BOOT_DHCP_RANGE');
  if (ipv4ToInt(start) > ipv4ToInt(end)) throw new BootServicesConfigError(`IRONLENS_BOOT_DHCP_RANGE: ${start} comes after ${end}`);
  if (netmask !== undefined) checkNetmask(netmask, 'IRONLENS_BOOT_DHCP_RANGE');
  return { start, end, ...(netmask ? { netmask } : {}) };
}

export function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

export function intToIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** dnsmasq on PATH (and /usr/sbin, /sbin, where Debian puts it), or undefined. */
export function findOnPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of [...path.split(delimiter), '/usr/sbin', '/sbin'].filter(Boolean)) {
    const p = join(dir, name);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * The boot services' settings, or null when `IRONLENS_BOOT_SERVICES` is off (the default).
 * `hostsFile`: the file ironlens renders (`IPXE_CP_DNSMASQ_HOSTS_FILE`); dnsmasq's lease and
 * pid files go beside it.
 */
export function bootServicesConfigFromEnv(env: Env, hostsFile: string): BootServicesConfig | null {
  const mode = envString(env, 'IRONLENS_BOOT_SERVICES', 'off').trim().toLowerCase();
  if (mode === 'off' || mode === 'false' || mode === '0') return null;
  if (mode !== 'proxy' && mode !== 'dhcp') throw new BootServicesConfigError(`IRONLENS_BOOT_SERVICES must be off, proxy or dhcp, got ${JSON.stringify(mode.slice(0, 40))}`);
  const iface = envOptional(env, 'IRONLENS_BOOT_INTERFACE');
  if (!iface) throw new BootServicesConfigError(`IRONLENS_BOOT_SERVICES=${mode} needs IRONLENS_BOOT_INTERFACE, the provisioning network's interface`);
  const rangeText = envOptional(env, 'IRONLENS_BOOT_DHCP_RANGE');
  if (mode === 'dhcp' && !rangeText) throw new BootServicesConfigError('IRONLENS_BOOT_SERVICES=dhcp needs IRONLENS_BOOT_DHCP_RANGE (start,end[,netmask]): the addresses it hands out');
  if (mode === 'proxy') {
    for (const s of ['IRONLENS_BOOT_DHCP_RANGE', 'IRONLENS_BOOT_DHCP_ROUTER', 'IRONLENS_BOOT_DHCP_DNS']) {
      if (envOptional(env, s)) throw new BootServicesConfigError(`${s} is for IRONLENS_BOOT_SERVICES=dhcp: in proxy mode the site's DHCP server hands out addresses, routers and DNS servers`);
    }
  }
  const routerText = envOptional(env, 'IRONLENS_BOOT_DHCP_ROUTER');
  const router = routerText === undefined ? undefined : routerText === 'none' ? 'none' : checkIpv4(routerText, 'IRONLENS_BOOT_DHCP_ROUTER');
  const dns = (envOptional(env, 'IRONLENS_BOOT_DHCP_DNS') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => checkIpv4(s, 'IRONLENS_BOOT_DHCP_DNS'));
  const leaseTime = checkLeaseTime(envString(env, 'IRONLENS_BOOT_DHCP_LEASE', '1h'), 'IRONLENS_BOOT_DHCP_LEASE');
  const efiFile = envString(env, 'IRONLENS_BOOT_EFI_FILE', 'snponly.efi');
  if (!(EFI_FILES as readonly string[]).includes(efiFile)) throw new BootServicesConfigError(`IRONLENS_BOOT_EFI_FILE must be ${EFI_FILES.join(' or ')}, got ${JSON.stringify(efiFile.slice(0, 40))}`);
  const dnsmasqSetting = envOptional(env, 'IRONLENS_BOOT_DNSMASQ');
  const dnsmasq = dnsmasqSetting ? checkDnsmasqPath(dnsmasqSetting, 'IRONLENS_BOOT_DNSMASQ') : (findOnPath('dnsmasq', env.PATH) ?? 'dnsmasq');
  const dir = dirname(checkDnsmasqPath(hostsFile, 'IPXE_CP_DNSMASQ_HOSTS_FILE'));
  return {
    mode,
    interface: checkInterfaceName(iface),
    range: rangeText ? parseRange(rangeText) : undefined,
    leaseTime,
    router,
    dns,
    ipxeDir: checkDnsmasqPath(envString(env, 'IRONLENS_BOOT_IPXE_DIR', DEFAULT_IPXE_DIR).replace(/\/+$/, '') || '/', 'IRONLENS_BOOT_IPXE_DIR'),
    efiFile: efiFile as EfiFile,
    dnsmasq,
    ra: envBool(env, 'IRONLENS_BOOT_RA', mode === 'dhcp'),
    leaseFile: join(dir, 'dnsmasq.leases'),
    pidFile: join(dir, 'dnsmasq.pid'),
    hostsFile,
  };
}

export interface InterfaceIpv4 {
  address: string;
  netmask: string;
  network: string;
}

function withNetwork(address: string, netmask: string): InterfaceIpv4 {
  return { address, netmask, network: intToIpv4((ipv4ToInt(address) & ipv4ToInt(netmask)) >>> 0) };
}

/** The first IPv4 address of `iface` and its network, from Node's list (which leaves out an interface without carrier). */
export function interfaceIpv4(iface: string, list = networkInterfaces()): InterfaceIpv4 | undefined {
  const a = (list[iface] ?? []).find((x) => x.family === 'IPv4' && !x.internal);
  return a ? withNetwork(a.address, a.netmask) : undefined;
}

/**
 * The first IPv4 address of `iface` as iproute2 shows it (`ip -j -4 addr show dev IFACE`): also
 * while the interface has no carrier yet (a bridge whose machines are all off, a cable not in),
 * which Node's own list leaves out. Falls back to Node's list when `ip` cannot run.
 */
export async function interfaceIpv4Now(iface: string, exec: Exec): Promise<InterfaceIpv4 | undefined> {
  checkInterfaceName(iface);
  const r = await exec(['ip', '-j', '-4', 'addr', 'show', 'dev', iface], { allowFailure: true, timeoutMs: 10_000 }).catch(() => null);
  if (r?.code !== 0) return r?.stderr.includes('does not exist') ? undefined : interfaceIpv4(iface);
  try {
    const links = JSON.parse(r.stdout) as Array<{ addr_info?: Array<{ family?: string; local?: string; prefixlen?: number; scope?: string }> }>;
    const a = links.flatMap((l) => l.addr_info ?? []).find((x) => x.family === 'inet' && typeof x.local === 'string' && isFixedIpv4(x.local) && Number.isInteger(x.prefixlen));
    if (!a) return undefined;
    const bits = a.prefixlen as number;
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    return withNetwork(a.local as string, intToIpv4(mask));
  } catch {
    return interfaceIpv4(iface);
  }
}
