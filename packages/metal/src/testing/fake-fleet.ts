import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Bmc, BmcConnector } from '../adapters/bmc';
import type { BmcCredentials, PowerAction, PowerState } from '../domain/power';
import type { FakeAgent } from './fake-agent';

/** One stand-in machine of a {@link FakeFleet}. */
export interface FleetMachine {
  mac: string;
  hostname: string;
  /** The IPMI host of its BMC (`PUT /devices/{mac}/bmc` names it). */
  bmcHost: string;
  state: PowerState;
  /** Power actions its BMC received, in order (`setOneTimeNetworkBoot` as `boot:network`). */
  bmcCalls: string[];
  /** What it did, in order: `netboot`, `report <master> <iqn>`, `sanboot failed <iqn>`, `no disk`. */
  events: string[];
  /** Set by a test: awaited before the host report of each boot of `master` (hold a boot, let it go when the test chooses). */
  hold: ((master: string) => Promise<void>) | null;
  /** Bumped by every power change: a boot of an older generation stops (the machine was reset). */
  generation: number;
  /** The timestamp of its last host report (each must be newer). */
  lastTs: number;
  /** Set by a test: the disk this machine boots whatever `/boot-vars` says (a stale boot entry of its firmware). */
  pinned: string | null;
}

export interface FakeFleetOptions {
  /** The control plane the machines call (`/devices/report`, `/boot-vars`, `/hosts/report`), in process through `inject`. */
  app: FastifyInstance;
  /** The storage agent whose targets hold what each disk was cloned from. */
  agent: FakeAgent;
  /** Masters whose boot loader is broken: iPXE's sanboot of a disk cloned from one fails, and the machine netboots again. */
  broken?: Set<string>;
  /** Delay of each BMC call, ms. Default is `0`. */
  bmcMs?: number;
  /** From `/boot-vars` to the host report of a good boot, ms. Default is `0`. */
  bootMs?: number;
  /** After a failed sanboot, before the machine netboots again, ms (boot.ipxe's retry). Default is `1100`. */
  retryMs?: number;
}

/** The build hash a fake image reports for a master (`/etc/ironlens-master`'s build line). */
export const fakeBuildOf = (master: string) => createHash('sha256').update(master).digest('hex').slice(0, 16);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Stand-in machines behind stand-in BMCs (issue 31), for the rules of rollouts without qemu:
 * a power-on through the BMC boots the machine the way a diskless worker boots — iPXE's device
 * report, `/boot-vars` (whose `base-iqn` and `menu-default` name the disk it sanboots, as
 * `boot.ipxe` composes it), then, when the disk's master boots, a host report naming the image
 * (the master and its build, as `/etc/ironlens-master` would) and the disk it booted (the iBFT's
 * target). A disk cloned from a `broken` master fails its sanboot, and the machine netboots again
 * (its firmware's retry) until it is reset. The end-to-end test does this with qemu, ipmi_sim
 * and the real master images (packages/metal/test/diskless.e2e.test.ts).
 */
export class FakeFleet {
  readonly machines = new Map<string, FleetMachine>();
  /** Every machine's events and BMC calls in the order they happened: `<hostname> <event>`. */
  readonly log: string[] = [];
  private readonly byHost = new Map<string, FleetMachine>();

  /** The control plane the machines call; a test that restarts it points them at the new one. */
  app: FastifyInstance;
  /** From `/boot-vars` to the host report of a good boot, ms (the benchmark sets it once the fleet is up). */
  bootMs: number;

  constructor(private readonly opts: FakeFleetOptions) {
    this.app = opts.app;
    this.bootMs = opts.bootMs ?? 0;
  }

  add(mac: string, hostname: string, bmcHost = `bmc-${hostname}.example`): FleetMachine {
    const m: FleetMachine = { mac, hostname, bmcHost, state: 'off', bmcCalls: [], events: [], hold: null, generation: 0, lastTs: 0, pinned: null };
    this.machines.set(mac, m);
    this.byHost.set(bmcHost, m);
    return m;
  }

  private event(m: FleetMachine, e: string): void {
    m.events.push(e);
    this.log.push(`${m.hostname} ${e}`);
  }

  machine(mac: string): FleetMachine {
    const m = this.machines.get(mac);
    if (!m) throw new Error(`no machine ${mac}`);
    return m;
  }

  readonly connect: BmcConnector = (c: BmcCredentials): Bmc => {
    const host = c.driver === 'ipmi' ? c.host : new URL(c.url).hostname;
    const m = this.byHost.get(host);
    if (!m) throw new Error(`no fake machine behind BMC ${host}`);
    const delay = () => (this.opts.bmcMs ? sleep(this.opts.bmcMs) : Promise.resolve());
    return {
      powerState: async () => {
        await delay();
        return m.state;
      },
      setOneTimeNetworkBoot: async () => {
        await delay();
        m.bmcCalls.push('boot:network');
        this.log.push(`${m.hostname} bmc boot:network`);
      },
      power: async (action: PowerAction) => {
        await delay();
        m.bmcCalls.push(action);
        this.log.push(`${m.hostname} bmc ${action}`);
        m.generation++;
        if (action === 'off' || action === 'soft-off') {
          m.state = 'off';
          return;
        }
        m.state = 'on';
        // A diskless machine boots from the network whether or not the flag was set (recorded in bmcCalls).
        void this.boot(m, m.generation);
      },
    };
  };

  /** Powers a machine on without its BMC (its first boot, before a test starts). */
  async powerOn(mac: string): Promise<void> {
    const m = this.machine(mac);
    m.generation++;
    m.state = 'on';
    await this.boot(m, m.generation);
  }

  private async get(url: string): Promise<string> {
    const r = await this.app.inject({ method: 'GET', url });
    return r.body;
  }

  /** One boot: netboot, then the disk boot.ipxe would sanboot; stops when the machine was reset meanwhile. */
  private async boot(m: FleetMachine, gen: number): Promise<void> {
    for (;;) {
      if (m.generation !== gen) return;
      this.event(m, 'netboot');
      await this.get(`/devices/report?mac=${encodeURIComponent(m.mac)}`);
      const vars = await this.get(`/boot-vars?mac=${encodeURIComponent(m.mac)}&hostname=${encodeURIComponent(m.hostname)}`);
      const base = /^set base-iqn (\S+)$/m.exec(vars)?.[1];
      const os = /^set menu-default (\S+)$/m.exec(vars)?.[1];
      if (!base || !os) {
        this.event(m, 'no disk');
        return;
      }
      const iqn = m.pinned ?? `${base}:${m.hostname}.${os}`;
      const target = this.opts.agent.targets.get(iqn);
      if (!target?.master) {
        this.event(m, `no disk ${iqn}`);
        return;
      }
      if (this.opts.broken?.has(target.master)) {
        this.event(m, `sanboot failed ${iqn}`);
        await sleep(this.opts.retryMs ?? 1100);
        continue;
      }
      if (m.hold) await m.hold(target.master);
      if (this.bootMs) await sleep(this.bootMs);
      if (m.generation !== gen) return;
      await this.report(m, target.master, iqn);
      return;
    }
  }

  /** The host report of a booted image (unsigned: these tests run without CHAP). */
  async report(m: FleetMachine, master: string, iqn: string): Promise<number> {
    // Each report newer than the last (the control plane refuses a timestamp it already saw).
    m.lastTs = Math.max(m.lastTs + 1, Math.floor(Date.now() / 1000));
    const body = {
      mac: m.mac,
      hostname: m.hostname,
      addresses: [],
      ssh_host_keys: [],
      os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' },
      kernel: '6.1.0-test-amd64',
      hardware: { cpu_model: 'stand-in', cpus: 1, memory_bytes: 1 << 30, disks: [], nics: [], accelerators: [] },
      image: { master, build: fakeBuildOf(master) },
      boot_disk: { iqn },
    };
    const r = await this.app.inject({ method: 'POST', url: '/hosts/report', headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(m.lastTs) }, payload: JSON.stringify(body) });
    this.event(m, r.statusCode === 200 ? `report ${master} ${iqn}` : `report refused ${r.statusCode} ${r.body}`);
    return r.statusCode;
  }
}
