import { accessSync, constants, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import type { Env, Exec, Metrics } from '@ironlens/core';
import type { DnsmasqReloader } from '../adapters/dnsmasq.adapter';
import type { BootScriptService } from '../services/boot-script.service';
import type { DhcpHostsService } from '../services/dhcp-hosts.service';
import { dirname } from 'node:path';
import { BIOS_FILE, type BootServicesConfig, BootServicesConfigError, bootServicesConfigFromEnv, DEFAULT_IPXE_DIR, type InterfaceIpv4, interfaceIpv4Now } from './boot-services.config';
import { dnsmasqArgv } from './dnsmasq-argv';
import { DnsmasqService, type DnsmasqStatus } from './dnsmasq-service.adapter';

/** What `/healthz` shows of the boot services. */
export interface BootServicesStatus extends DnsmasqStatus {
  mode: BootServicesConfig['mode'];
  interface: string;
  /** The URL machines chain `boot.ipxe` from (null before the provisioning listener is up). */
  url: string | null;
}

/**
 * `ironlens serve`'s own boot services (issue 30): its dnsmasq ({@link DnsmasqService}) for
 * DHCP (or proxy-DHCP) and TFTP of Debian's iPXE binaries, and the control-plane URL filled
 * into the `boot.ipxe` the provisioning listener serves. Only the hosts-file writer runs the
 * dnsmasq: alone, this process; with replicas, the elected one (the others stand by and take
 * over when elected).
 */
export class BootServices {
  private readonly service: DnsmasqService;
  private url: string | null = null;
  private here: InterfaceIpv4 | undefined;
  private argv: string[] = [];
  private unwatch: (() => void) | null = null;

  private constructor(
    readonly config: BootServicesConfig,
    private readonly log: (line: string) => void,
    metrics?: Metrics,
  ) {
    const up = metrics?.gauge({ name: 'ironlens_boot_services_up', help: "1 while ironlens' own dnsmasq (IRONLENS_BOOT_SERVICES) runs and has read the hosts file, else 0.", labelNames: ['mode'] });
    const restarts = metrics?.counter({ name: 'ironlens_boot_services_restarts_total', help: "Times ironlens' own dnsmasq ended unexpectedly and was started again.", labelNames: ['mode'] });
    up?.set({ mode: config.mode }, 0);
    restarts?.inc({ mode: config.mode }, 0);
    let seen = 0;
    this.service = new DnsmasqService({
      hostsFile: config.hostsFile,
      pidFile: config.pidFile,
      log,
      onChange: (s) => {
        up?.set({ mode: config.mode }, s.state === 'running' ? 1 : 0);
        if (s.restarts > seen) restarts?.inc({ mode: config.mode }, s.restarts - seen);
        seen = s.restarts;
      },
    });
  }

  /** Null when `IRONLENS_BOOT_SERVICES` is off; throws on a setting outside its grammar. */
  static fromEnv(env: Env, hostsFile: string, log: (line: string) => void, metrics?: Metrics): BootServices | null {
    const config = bootServicesConfigFromEnv(env, hostsFile);
    if (!config) return null;
    const ignored = ['IPXE_CP_DNSMASQ_PID_FILE', 'IPXE_CP_DNSMASQ_RELOAD_COMMAND', 'IPXE_CP_DNSMASQ_CONTAINER', 'IPXE_CP_DNSMASQ_RELOAD'].filter((n) => env[n]);
    if (ignored.length) log(`warning: ${ignored.join(', ')} not used: with IRONLENS_BOOT_SERVICES on, reloads go to ironlens' own dnsmasq`);
    return new BootServices(config, log, metrics);
  }

  /** The hosts file's reloader: SIGHUP to this dnsmasq. */
  get reloader(): DnsmasqReloader {
    return this.service;
  }

  /**
   * What must be on this host before anything starts: dnsmasq, the iPXE binaries (Debian's
   * `ipxe`), an IPv4 address on the interface. Throws an error that names the package or the
   * setting.
   */
  async checkHost(exec: Exec): Promise<void> {
    const c = this.config;
    if (c.dnsmasq === 'dnsmasq' || !existsSync(c.dnsmasq)) {
      throw new BootServicesConfigError(`IRONLENS_BOOT_SERVICES: dnsmasq not found${c.dnsmasq === 'dnsmasq' ? ' on PATH or in /usr/sbin' : ` at ${c.dnsmasq}`} (Debian package dnsmasq-base: apt-get install dnsmasq-base; or set IRONLENS_BOOT_DNSMASQ)`);
    }
    const missing = [BIOS_FILE, c.efiFile].filter((f) => !readable(`${c.ipxeDir}/${f}`));
    if (missing.length) {
      throw new BootServicesConfigError(
        `IRONLENS_BOOT_SERVICES: ${c.ipxeDir} lacks the iPXE binaries ${missing.join(', ')} that TFTP hands to PXE firmware (Debian package ipxe: apt-get install ipxe${c.ipxeDir === DEFAULT_IPXE_DIR ? '' : `; or point IRONLENS_BOOT_IPXE_DIR at its ${DEFAULT_IPXE_DIR}`})`,
      );
    }
    this.here = await interfaceIpv4Now(c.interface, exec);
    if (!this.here) throw new BootServicesConfigError(`IRONLENS_BOOT_INTERFACE=${c.interface}: no such interface with an IPv4 address on this host`);
  }

  /**
   * Starts the services once the provisioning listener answers on `port`: fills the URL into
   * `boot.ipxe` (`IRONLENS_BOOT_URL` when set, else `http://<the interface's address>:<port>`),
   * and runs dnsmasq whenever this process is the hosts-file writer.
   */
  attach(opts: { dhcp: DhcpHostsService; bootScript: BootScriptService; port: number }): void {
    const c = this.config;
    const here = this.here;
    if (!here) throw new Error('BootServices.checkHost() first');
    if (!opts.bootScript.controlPlaneUrl) opts.bootScript.useUrl(`http://${here.address}:${opts.port}`);
    this.url = opts.bootScript.controlPlaneUrl as string;
    this.argv = dnsmasqArgv(c, { url: this.url, network: here.network });
    // dnsmasq refuses to start without its hosts file; ironlens writes it at its first render.
    mkdirSync(dirname(c.hostsFile), { recursive: true });
    if (!existsSync(c.hostsFile)) writeFileSync(c.hostsFile, '', { mode: 0o644 });
    // Started as root, dnsmasq drops to an unprivileged user before it reads the file again on SIGHUP.
    if (process.getuid?.() === 0) {
      const blocked = unreadableByOthers(c.hostsFile);
      if (blocked) this.log(`warning: ${blocked} is not readable by other users: dnsmasq, which drops root after start, would not see a bind made after it started (chmod o+rx the directories, or run ironlens as its own user with the capabilities in docs/netboot.md)`);
    }
    this.log(
      `boot services (${c.mode}) on ${c.interface} (${here.address}${c.mode === 'proxy' ? `, proxy-DHCP beside the network's DHCP server on ${here.network}` : `, DHCP ${c.range?.start}-${c.range?.end}`}): TFTP ${c.ipxeDir} (${BIOS_FILE}, ${c.efiFile}), iPXE chains ${this.url}/boot.ipxe`,
    );
    this.unwatch = opts.dhcp.onWriterChange((writer) => {
      if (writer) this.service.start(this.argv);
      else void this.service.stop({ standby: true });
    });
    if (opts.dhcp.writer) this.service.start(this.argv);
    else void this.service.stop({ standby: true });
  }

  status(): BootServicesStatus {
    return { mode: this.config.mode, interface: this.config.interface, url: this.url, ...this.service.status() };
  }

  async stop(): Promise<void> {
    this.unwatch?.();
    this.unwatch = null;
    await this.service.stop();
  }
}

/** The first of `file` and its directories that a user other than the owner cannot read (the file) or enter (a directory). */
function unreadableByOthers(file: string): string | undefined {
  let p = file;
  for (let i = 0; i < 64; i++) {
    let mode: number;
    try {
      mode = statSync(p).mode;
    } catch {
      return undefined;
    }
    if ((mode & (p === file ? 0o004 : 0o001)) === 0) return p;
    if (p === '/') return undefined;
    p = dirname(p);
  }
  return undefined;
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
