import { readdir, readFile, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { clip, type Exec, writeFileAtomic } from '@ironlens/core';
import { isValidHostname, isValidMac } from '../domain/identifiers';

/** Tells a running dnsmasq to re-read its hosts file. */
export interface DnsmasqReloader {
  /** A short description for logs and errors, e.g. `pid file /run/dnsmasq.pid`. */
  readonly describe: string;
  reload(): Promise<void>;
}

/** The seed's default: `docker exec <container> killall -HUP dnsmasq`. */
export class DockerHupReloader implements DnsmasqReloader {
  readonly describe: string;
  constructor(
    private readonly container: string,
    private readonly exec: Exec,
  ) {
    this.describe = `docker container ${container}`;
  }
  async reload(): Promise<void> {
    await this.exec(['docker', 'exec', this.container, 'killall', '-HUP', 'dnsmasq'], { timeoutMs: 15_000 });
  }
}

/** SIGHUP to the process whose pid is in a file (dnsmasq's own `--pid-file`). */
export class PidFileReloader implements DnsmasqReloader {
  readonly describe: string;
  constructor(private readonly pidFile: string) {
    this.describe = `pid file ${pidFile}`;
  }
  async reload(): Promise<void> {
    const text = (await readFile(this.pidFile, 'utf8')).trim();
    const pid = Number(text);
    if (!Number.isInteger(pid) || pid <= 1) throw new Error(`${this.pidFile} holds no pid: ${JSON.stringify(text.slice(0, 40))}`);
    process.kill(pid, 'SIGHUP');
  }
}

/** Any command, as an argument array (no shell). */
export class CommandReloader implements DnsmasqReloader {
  readonly describe: string;
  constructor(
    private readonly argv: string[],
    private readonly exec: Exec,
  ) {
    this.describe = `command ${argv.join(' ')}`;
  }
  async reload(): Promise<void> {
    await this.exec(this.argv, { timeoutMs: 15_000 });
  }
}

/** `IPXE_CP_DNSMASQ_RELOAD=false`: write the file, reload nothing. */
export class NoReloader implements DnsmasqReloader {
  readonly describe = 'no reload';
  async reload(): Promise<void> {}
}

export interface DhcpHost {
  mac: string;
  hostname: string;
  /** The worker's fixed IPv4 address (issue 24), when the operator set one. */
  ipv4?: string | null;
}

/**
 * The lease a bound worker gets (issue 24): `infinite` (default) never runs out, because no
 * DHCP client runs on a diskless node after its initramfs; `range` keeps the seed's exact
 * `mac,hostname` lines (the dhcp-range's lease time applies).
 */
export type DhcpLease = 'infinite' | 'range';

/**
 * A unicast IPv4 address a host can be given: dotted quad, not 0/8, 127/8, 169.254/16, nor
 * 224/4 and above (multicast, 240/4, and with it the limited broadcast 255.255.255.255).
 */
export function isFixedIpv4(value: unknown): value is string {
  if (typeof value !== 'string' || !/^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(value)) return false;
  const [a, b] = value.split('.').map(Number);
  return a !== 0 && a !== 127 && a < 224 && !(a === 169 && b === 254);
}

/** A record the renderer left out, and which of its fields are outside their grammar. */
export interface RefusedHost {
  subject: string;
  fields: string[];
}

/**
 * Renders dnsmasq's `--dhcp-hostsfile`: one `mac,hostname` line per record. A record whose
 * MAC is not a canonical unicast MAC or whose hostname is outside the hostname grammar is
 * left out and returned in `refused`: no value can add a line, a field or a tag
 * (`set:`/`tag:`), whatever got into the store.
 */
export function renderDhcpHosts(entries: DhcpHost[], lease: DhcpLease = 'infinite'): { text: string; refused: RefusedHost[] } {
  const lines: string[] = [];
  const refused: RefusedHost[] = [];
  for (const e of entries) {
    const ip = e.ipv4 ?? null;
    const fields = [...(isValidMac(e.mac) ? [] : ['mac']), ...(ip === null || isFixedIpv4(ip) ? [] : ['ipv4']), ...(isValidHostname(e.hostname) ? [] : ['hostname'])];
    if (fields.length) refused.push({ subject: clip(`${String(e.mac)},${String(e.hostname)}`), fields });
    // dnsmasq's dhcp-host fields: hwaddr, [ipaddr], hostname, [lease time].
    else lines.push(`${[e.mac, ...(ip ? [ip] : []), e.hostname, ...(lease === 'infinite' ? ['infinite'] : [])].join(',')}\n`);
  }
  return { text: lines.join(''), refused };
}

/** The hosts file dnsmasq reads with `--dhcp-hostsfile`: `mac,hostname` per line. */
export interface DhcpHostsFile {
  readonly path: string;
  /** Renders and writes atomically; returns the records the renderer refused (not written). */
  write(entries: DhcpHost[]): Promise<RefusedHost[]>;
  read(): Promise<DhcpHost[]>;
  /** True when the file holds exactly what {@link write} would write for `entries`. */
  holds(entries: DhcpHost[]): Promise<boolean>;
  /** Removes temporary files an interrupted write left beside the file. Returns their names. */
  removeStaleTemps(): Promise<string[]>;
}

export class FileDhcpHosts implements DhcpHostsFile {
  constructor(
    readonly path: string,
    private readonly lease: DhcpLease = 'infinite',
  ) {}

  async write(entries: DhcpHost[]): Promise<RefusedHost[]> {
    const { text, refused } = renderDhcpHosts(entries, this.lease);
    await writeFileAtomic(this.path, text);
    return refused;
  }

  async holds(entries: DhcpHost[]): Promise<boolean> {
    try {
      return (await readFile(this.path, 'utf8')) === renderDhcpHosts(entries, this.lease).text;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  async read(): Promise<DhcpHost[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    return parseDhcpHosts(text);
  }

  /**
   * `writeFileAtomic`'s temporary files (`.dhcp-hosts.conf.<hex>.tmp`) that a `kill -9`
   * during a write left behind. Call once at start-up, before any write of this process.
   */
  async removeStaleTemps(): Promise<string[]> {
    const dir = dirname(this.path);
    const pattern = new RegExp(`^\\.${basename(this.path).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.[0-9a-f]+\\.tmp$`);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const removed: string[] = [];
    for (const name of names.filter((n) => pattern.test(n))) {
      const p = join(dir, name);
      if (!(await stat(p)).isFile()) continue;
      await unlink(p).catch(() => {});
      removed.push(name);
    }
    return removed;
  }
}

/** Parses `mac,[ipv4,]hostname[,lease]` lines; comments and blank lines are skipped. */
export function parseDhcpHosts(text: string): DhcpHost[] {
  const out: DhcpHost[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [mac, ...rest] = line.split(',').map((s) => s.trim());
    const ipv4 = rest.length > 1 && isFixedIpv4(rest[0]) ? (rest.shift() as string) : undefined;
    const hostname = rest[0];
    if (mac && hostname) out.push({ mac: mac.toLowerCase(), hostname, ...(ipv4 ? { ipv4 } : {}) });
  }
  return out;
}
