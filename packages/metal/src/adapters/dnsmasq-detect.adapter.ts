import { constants } from 'node:fs';
import { access, readdir, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import type { Exec } from '@ironlens/core';
import { type DnsmasqReloader, DockerHupReloader, PidFileReloader } from './dnsmasq.adapter';

/** Where distributions' dnsmasq writes its pid (Debian's service: `/run/dnsmasq/dnsmasq.pid`). */
export const DNSMASQ_PID_FILES = ['/run/dnsmasq/dnsmasq.pid', '/var/run/dnsmasq/dnsmasq.pid', '/run/dnsmasq.pid', '/var/run/dnsmasq.pid'];

export interface DnsmasqDetectOptions {
  /** The seed's container, asked about through `docker inspect` when `docker` is on PATH. */
  container: string;
  /** The hosts file ironlens renders: a dnsmasq naming it on its command line is preferred. */
  hostsFile: string;
  exec: Exec;
  /** Pid files tried in order. Default is {@link DNSMASQ_PID_FILES}. */
  pidFiles?: string[];
  /** The proc file system scanned for running dnsmasq processes. Default is `/proc`. */
  procDir?: string;
  /** PATH searched for `docker`. Default is `process.env.PATH`. */
  path?: string;
}

export interface DnsmasqDetection {
  /** What will be reloaded, or null when no dnsmasq was found. */
  reloader: DnsmasqReloader | null;
  /** One line for the start-up log: what was found, or what was looked for. */
  summary: string;
}

/** SIGHUP to a dnsmasq found running (no pid file): checks the pid is still dnsmasq first. */
export class ProcessHupReloader implements DnsmasqReloader {
  readonly describe: string;
  constructor(
    private readonly pid: number,
    private readonly procDir = '/proc',
  ) {
    this.describe = `running dnsmasq pid ${pid}`;
  }
  async reload(): Promise<void> {
    const comm = await readFile(join(this.procDir, String(this.pid), 'comm'), 'utf8').catch(() => '');
    if (comm.trim() !== 'dnsmasq') throw new Error(`dnsmasq pid ${this.pid} is gone`);
    process.kill(this.pid, 'SIGHUP');
  }
}

async function onPath(name: string, path: string): Promise<boolean> {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    if (
      await access(join(dir, name), constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  return false;
}

async function isDnsmasq(procDir: string, pid: number): Promise<boolean> {
  const comm = await readFile(join(procDir, String(pid), 'comm'), 'utf8').catch(() => '');
  return comm.trim() === 'dnsmasq';
}

async function runningDnsmasq(procDir: string): Promise<Array<{ pid: number; cmdline: string[] }>> {
  const entries = await readdir(procDir).catch(() => [] as string[]);
  const found: Array<{ pid: number; cmdline: string[] }> = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    if (!(await isDnsmasq(procDir, pid))) continue;
    const raw = await readFile(join(procDir, e, 'cmdline'), 'utf8').catch(() => '');
    found.push({ pid, cmdline: raw.split('\0').filter(Boolean) });
  }
  return found;
}

/**
 * Finds the dnsmasq to reload when nothing is configured, in this order: the seed's Docker
 * container (running), a distribution pid file naming a live dnsmasq (the system service), a
 * running dnsmasq whose command line names the hosts file. Any other running dnsmasq (libvirt's,
 * a desktop's) is left alone: nothing says it reads the file, and a SIGHUP would clear its cache
 * for nothing.
 */
export async function detectDnsmasq(opts: DnsmasqDetectOptions): Promise<DnsmasqDetection> {
  const procDir = opts.procDir ?? '/proc';
  const looked: string[] = [];
  if (await onPath('docker', opts.path ?? process.env.PATH ?? '')) {
    const r = await opts.exec(['docker', 'inspect', '--format', '{{.State.Running}}', opts.container], { timeoutMs: 10_000, allowFailure: true }).catch(() => null);
    if (r && r.code === 0 && r.stdout.trim() === 'true') {
      const reloader = new DockerHupReloader(opts.container, opts.exec);
      return { reloader, summary: `dnsmasq reload: ${reloader.describe} (found running)` };
    }
    looked.push(`no running docker container ${opts.container}`);
  } else looked.push('no docker');
  for (const file of opts.pidFiles ?? DNSMASQ_PID_FILES) {
    const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(pid) && pid > 1 && (await isDnsmasq(procDir, pid))) {
      const reloader = new PidFileReloader(file);
      return { reloader, summary: `dnsmasq reload: ${reloader.describe} (found)` };
    }
  }
  looked.push('no dnsmasq pid file');
  const running = await runningDnsmasq(procDir);
  const naming = running.filter((p) => p.cmdline.some((a) => a === opts.hostsFile || a.endsWith(`=${opts.hostsFile}`)));
  if (naming.length > 0) {
    const reloader = new ProcessHupReloader(naming[0].pid, procDir);
    return { reloader, summary: `dnsmasq reload: ${reloader.describe} (found running with ${opts.hostsFile})` };
  }
  looked.push(running.length === 0 ? 'no running dnsmasq' : `no running dnsmasq naming the hosts file (pids ${running.map((p) => p.pid).join(', ')} are other dnsmasq instances)`);
  return {
    reloader: null,
    summary:
      `dnsmasq reload: none found (${looked.join(', ')}); binds write ${opts.hostsFile} and reload nothing. ` +
      'Set IPXE_CP_DNSMASQ_PID_FILE, IPXE_CP_DNSMASQ_RELOAD_COMMAND or IPXE_CP_DNSMASQ_CONTAINER to reload one, IPXE_CP_DNSMASQ_RELOAD=false to silence this',
  };
}

/**
 * The reloader when no reload is configured: detects once ({@link detectDnsmasq}), at start
 * when `detect()` is called, else at the first reload. A detected reloader that fails is
 * detected again once (dnsmasq restarted with another pid); with nothing found, a reload
 * does nothing, so binds succeed and write the hosts file.
 */
export class DetectingReloader implements DnsmasqReloader {
  private detection: Promise<DnsmasqDetection> | undefined;
  private found: DnsmasqReloader | null | undefined;
  constructor(private readonly opts: DnsmasqDetectOptions) {}

  get describe(): string {
    if (this.found === undefined) return 'dnsmasq not detected yet';
    return this.found ? this.found.describe : 'no dnsmasq found';
  }

  detect(): Promise<DnsmasqDetection> {
    this.detection ??= this.run();
    return this.detection;
  }

  private async run(): Promise<DnsmasqDetection> {
    const d = await detectDnsmasq(this.opts);
    this.found = d.reloader;
    return d;
  }

  async reload(): Promise<void> {
    const first = await this.detect();
    if (!first.reloader) return;
    try {
      await first.reloader.reload();
    } catch (err) {
      this.detection = this.run();
      const again = await this.detection;
      if (!again.reloader || again.reloader.describe === first.reloader.describe) throw err;
      await again.reloader.reload();
    }
  }
}
