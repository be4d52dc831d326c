import { readFile } from 'node:fs/promises';
import { type Exec, writeFileAtomic } from '@ironlens/core';

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

/** The hosts file dnsmasq reads with `--dhcp-hostsfile`: `mac,hostname` per line. */
export interface DhcpHostsFile {
  readonly path: string;
  write(entries: Array<{ mac: string; hostname: string }>): Promise<void>;
  read(): Promise<Array<{ mac: string; hostname: string }>>;
}

export class FileDhcpHosts implements DhcpHostsFile {
  constructor(readonly path: string) {}

  async write(entries: Array<{ mac: string; hostname: string }>): Promise<void> {
    const body = entries.map((e) => `${e.mac},${e.hostname}\n`).join('');
    await writeFileAtomic(this.path, body);
  }

  async read(): Promise<Array<{ mac: string; hostname: string }>> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    return parseDhcpHosts(text);
  }
}

/** Parses `mac,hostname` lines; comments and blank lines are skipped. */
export function parseDhcpHosts(text: string): Array<{ mac: string; hostname: string }> {
  const out: Array<{ mac: string; hostname: string }> = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [mac, hostname] = line.split(',').map((s) => s.trim());
    if (mac && hostname) out.push({ mac: mac.toLowerCase(), hostname });
  }
  return out;
}
