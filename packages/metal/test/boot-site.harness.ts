import { chmodSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunningTgtd, startTgtd, unusedControlPort } from '@ironlens/agent/testing';
import { waitFor } from '@ironlens/core/testing';
import { BridgedNetns, Daemon, FORWARDER_JS, type HttpAnswer, httpOverSocket, killAllSync, type MachineSpec, qemuArgv, stampedArgv } from './netboot.harness';

/**
 * A provisioning network where `ironlens serve` runs its own boot services (issue 30): a
 * namespace with a bridge (`br0`, `192.168.<net>.1/24`) and a tap per machine, tgtd and
 * `ironlens agent` (stgt) on it, and `ironlens serve` with `IRONLENS_BOOT_SERVICES` — no
 * dnsmasq of the test's own. The boot-services end-to-end test and `npm run bench:boot` use it.
 */

const here = dirname(fileURLToPath(import.meta.url));
export const IRONLENS_BIN = join(here, '..', '..', 'cli', 'bin', 'ironlens.mjs');

export interface BootSiteOptions {
  /** The namespace's name (unique per process: give the pid). */
  name: string;
  /** The third octet of 192.168.<net>.0/24 (and fd00:<net>::/64). */
  net: number;
  taps: number;
  /** A directory of the caller's; made traversable (dnsmasq re-reads the hosts file as an unprivileged user). */
  work: string;
  token: string;
  agentToken: string;
  baseIqn: string;
  /** Runs once the disk directory exists, before the agent starts (it lists masters at start). */
  beforeAgent?: (disks: string) => Promise<void>;
}

export interface Health {
  status: string;
  boot_services?: { mode: string; state: string; pid: number | null; restarts: number; url: string | null; last_exit: string | null };
}

export class BootSite {
  readonly srv: string;
  readonly cpUrl: string;
  readonly paths: { data: string; disks: string; hosts: string; apiSocket: string };
  netns: BridgedNetns | undefined;
  tgtd: RunningTgtd | undefined;
  serve: Daemon | undefined;
  readonly daemons: Daemon[] = [];

  private constructor(readonly opts: BootSiteOptions) {
    this.srv = `192.168.${opts.net}.1`;
    this.cpUrl = `http://${this.srv}:4839`;
    const w = opts.work;
    this.paths = { data: join(w, 'data'), disks: join(w, 'disks'), hosts: join(w, 'dnsmasq', 'dhcp-hosts.conf'), apiSocket: join(w, 'api.sock') };
  }

  /** The namespace, tgtd, the agent and a forwarder to the provisioning API (serve: {@link startServe}). */
  static async start(opts: BootSiteOptions): Promise<BootSite> {
    const site = new BootSite(opts);
    chmodSync(opts.work, 0o755);
    for (const d of [site.paths.data, site.paths.disks, dirname(site.paths.hosts)]) mkdirSync(d, { recursive: true, mode: 0o755 });
    await opts.beforeAgent?.(site.paths.disks);
    const ns = new BridgedNetns(opts.name, site.srv, `fd00:${opts.net}::1`, opts.taps);
    site.netns = ns;
    await ns.create();
    site.tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `${site.srv}:3260`, wrapper: ns.wrap, logFile: join(opts.work, 'tgtd.log') });
    const agent = Daemon.start('ironlens-agent', [...ns.wrap, process.execPath, IRONLENS_BIN, 'agent'], join(opts.work, 'agent.log'), {
      ...process.env,
      IRONLENS_FROM_SOURCE: '1',
      DISK_DIR: site.paths.disks,
      IPXE_AGENT_TOKEN: opts.agentToken,
      IPXE_AGENT_BACKEND: 'stgt',
      IPXE_AGENT_BASE_IQN: opts.baseIqn,
      IPXE_AGENT_TGT_CONTROL_PORT: String(site.tgtd.controlPort),
      IRONLENS_AGENT_LISTEN: '127.0.0.1:4840',
    });
    const fwd = Daemon.start('api-forwarder', [...ns.wrap, process.execPath, '-e', FORWARDER_JS, site.paths.apiSocket, site.srv, '4839'], join(opts.work, 'forwarder.log'));
    site.daemons.push(agent, fwd);
    for (const [d, ready] of [
      [agent, /Server listening at/],
      [fwd, /forwarding/],
    ] as const) {
      await waitFor(`${d.name} to start`, () => d.log(), (l) => ready.test(l) || !d.running, 60_000, 100);
      if (!d.running) throw new Error(`${d.name} exited with code ${d.code}: ${d.log().slice(-2000)}`);
    }
    return site;
  }

  api(method: string, path: string, body?: unknown): Promise<HttpAnswer> {
    return httpOverSocket(this.paths.apiSocket, method, path, { token: this.opts.token, body });
  }

  async health(): Promise<Health> {
    return (await this.api('GET', '/healthz')).json<Health>();
  }

  serveLog(): string {
    return this.serve?.log() ?? '';
  }

  /** `ironlens serve` in the namespace with boot services in `mode` on br0; resolves once its dnsmasq runs. */
  async startServe(mode: 'dhcp' | 'proxy', extra: Record<string, string> = {}): Promise<Daemon> {
    const d = Daemon.start(`serve-${mode}`, [...this.netns!.wrap, process.execPath, IRONLENS_BIN, 'serve'], join(this.opts.work, `serve-${mode}.log`), {
      ...process.env,
      IRONLENS_FROM_SOURCE: '1',
      IRONLENS_LOG: '1',
      IRONLENS_DATA_DIR: this.paths.data,
      IRONLENS_BOOT_LISTEN: '0.0.0.0:4839',
      IRONLENS_CONSOLE_LISTEN: 'off',
      IPXE_CP_TOKEN: this.opts.token,
      IPXE_CP_DNSMASQ_HOSTS_FILE: this.paths.hosts,
      IRONLENS_BOOT_SERVICES: mode,
      IRONLENS_BOOT_INTERFACE: 'br0',
      ...(mode === 'dhcp' ? { IRONLENS_BOOT_DHCP_RANGE: `192.168.${this.opts.net}.100,192.168.${this.opts.net}.150`, IRONLENS_BOOT_DHCP_ROUTER: 'none' } : {}),
      ...extra,
    });
    this.daemons.push(d);
    this.serve = d;
    await waitFor(`serve (${mode}) to start its dnsmasq`, () => d.log(), (l) => l.includes(`read ${this.paths.hosts}`) || !d.running, 60_000, 100);
    if (!d.running) throw new Error(`serve exited with code ${d.code}: ${d.log().slice(-3000)}`);
    await waitFor('/healthz: boot services running', () => this.health().catch(() => null), (h) => h?.boot_services?.state === 'running', 20_000, 100);
    return d;
  }

  /** Powers a machine on: qemu in the namespace, its serial console time-stamped into `<work>/<name>.serial.log`. */
  powerOn(name: string, m: MachineSpec): Daemon {
    const d = Daemon.start(name, stampedArgv([...this.netns!.wrap, ...qemuArgv(m)]), join(this.opts.work, `${name}.serial.log`));
    this.daemons.push(d);
    return d;
  }

  /** The provisioning listener's request log (IRONLENS_LOG=1): the requests whose URL starts with `prefix`, with their times (ms). */
  requested(prefix: string): Array<{ time: number }> {
    return this.serveLog()
      .split('\n')
      .filter((l) => l.includes(`"url":"${prefix}`))
      .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as { time: number });
  }

  async stop(): Promise<void> {
    for (const d of [...this.daemons].reverse()) await d.stop();
    await this.tgtd?.stop();
    await this.netns?.destroy();
  }

  /** Last resort from an `exit` handler. */
  stopSync(): void {
    killAllSync();
    this.netns?.destroySync();
  }
}
