import type { OperationsLog } from '@ironlens/core';
import type { AgentTarget } from '../adapters/storage-agent';
import type { DhcpHost } from '../adapters/dnsmasq.adapter';
import type { DriftItem, FleetDrift, ReconcileResult, WorkerDrift } from '../api/rollout.schemas';
import type { WorkerStatus } from '../api/schemas';
import { requireWorkerId } from '../domain/identifiers';
import type { WorkerRecord } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import type { HostReportRecord, HostReportRepository } from '../repositories/host-report.repository';
import type { MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import type { DhcpHostsService } from './dhcp-hosts.service';
import { defaultDisk } from './rollout.service';
import type { RequestContext } from './settings.service';
import type { StorageService } from './storage.service';

/** What one check of the fleet read: the hosts file, each agent's targets (or why not), the reports. */
interface Reality {
  lines: DhcpHost[];
  targets: Map<string, AgentTarget[] | Error>;
  reports: Map<string, HostReportRecord>;
  bindings: Map<string, string>;
}

/**
 * Drift (issue 31): what is out of step between the ledger and reality, per worker —
 *
 * - the hosts file: a bound worker without its `mac,…,hostname` line, or a line with another MAC
 *   (or a line for a worker no longer bound); reconcile renders the file again and reloads dnsmasq;
 * - the agents' targets: a disk or install CD of the ledger its agent does not list; reconcile
 *   asks the agent to scan (with the workers' CHAP accounts), which makes the target again from
 *   its file and its recorded initiator; a file that is gone too stays reported;
 * - the disk the worker booted (the iBFT's target in its last host report) is not its default
 *   disk, and the image it runs (`/etc/ironlens-master` in its report) is not the master its
 *   default disk was cloned from: both need a reboot, which reconcile does not do on its own.
 */
export class DriftService {
  constructor(
    private readonly store: MetalStore,
    private readonly workers: WorkerRepository,
    private readonly devices: DeviceRepository,
    private readonly hosts: HostReportRepository,
    private readonly dhcp: DhcpHostsService,
    private readonly storage: StorageService,
    private readonly ops: OperationsLog,
  ) {}

  private get db() {
    return this.store.db;
  }

  private async reality(agents: Set<string>): Promise<Reality> {
    const [lines, reports, bindings] = await Promise.all([this.dhcp.read().catch(() => [] as DhcpHost[]), this.hosts.all(this.db), this.devices.bindings(this.db)]);
    const targets = new Map<string, AgentTarget[] | Error>();
    await Promise.all(
      [...agents].map(async (a) => {
        targets.set(
          a,
          await this.storage.listLuns(a).catch((e: Error) => e),
        );
      }),
    );
    return { lines, targets, reports, bindings };
  }

  private check(w: WorkerRecord, r: Reality): DriftItem[] {
    const out: DriftItem[] = [];
    const mac = r.bindings.get(w.worker_id) ?? null;
    const line = r.lines.find((l) => l.hostname === w.hostname);
    if (mac && !line) {
      out.push({ kind: 'hosts_file_missing', detail: `the hosts file has no line for ${w.hostname} (bound to ${mac}): dnsmasq does not give it its name`, expected: `${mac},${w.hostname}`, actual: null, fixable: true });
    } else if (line && line.mac !== mac) {
      out.push({ kind: 'hosts_file_mismatch', detail: mac ? `the hosts file gives ${w.hostname} to ${line.mac}, the ledger binds ${mac}` : `the hosts file gives ${w.hostname} to ${line.mac}, but the worker is bound to no device`, expected: mac ? `${mac},${w.hostname}` : null, actual: `${line.mac},${line.hostname}`, fixable: true });
    }
    for (const t of [...w.disks, ...(w.cd ? [w.cd] : [])]) {
      const listed = r.targets.get(t.agent);
      if (listed instanceof Error) out.push({ kind: 'agent_unreachable', detail: `agent ${t.agent} did not list its targets: ${listed.message}`, expected: t.iqn, actual: null, fixable: false });
      else if (listed && !listed.some((x) => x.iqn === t.iqn)) {
        out.push({ kind: 'target_missing', detail: `agent ${t.agent} has no target ${t.iqn}; a scan makes it again from its file`, expected: t.iqn, actual: null, fixable: true });
      }
    }
    const disk = defaultDisk(w);
    const host = r.reports.get(w.worker_id)?.host;
    const booted = host?.boot_disk?.iqn ?? null;
    if (disk && booted && booted !== disk.iqn) {
      out.push({ kind: 'booted_other_disk', detail: `the worker last booted ${booted}, its default disk is ${disk.iqn}: it boots the default at its next network boot (POST /devices/{mac}/power with boot: network)`, expected: disk.iqn, actual: booted, fixable: false });
    }
    const image = host?.image?.master ?? null;
    const want = disk?.source.type === 'master' ? (disk.source.name ?? null) : null;
    if (want && image && image !== want && !(booted && disk && booted !== disk.iqn)) {
      out.push({ kind: 'image_mismatch', detail: `the worker runs ${image}, its default disk was cloned from ${want}`, expected: want, actual: image, fixable: false });
    }
    return out;
  }

  /** `GET /workers/{id}/status`: the ledger against the hosts file and the agents (seed §10), what the worker last booted, and its drift. */
  async status(workerIdInput: string): Promise<WorkerStatus> {
    const base = await this.storage.status(workerIdInput);
    const id = base.worker.worker_id;
    const [rep, drift] = await Promise.all([this.hosts.get(this.db, id), this.worker(id)]);
    return { ...base, actual: { ...base.actual, booted_from: rep?.host.boot_disk?.iqn ?? null, image: rep?.host.image ?? null }, drift };
  }

  /** One worker's drift. */
  async worker(workerIdInput: string): Promise<DriftItem[]> {
    const w = await this.workers.get(this.db, requireWorkerId(workerIdInput));
    if (!w) return [];
    return this.check(w, await this.reality(new Set([...w.disks.map((d) => d.agent), ...(w.cd ? [w.cd.agent] : [])])));
  }

  private async all(only?: string): Promise<{ workers: WorkerRecord[]; drift: WorkerDrift[] }> {
    const workers = only ? [await this.workers.get(this.db, requireWorkerId(only))].filter((w): w is WorkerRecord => !!w) : await this.workers.list(this.db);
    const agents = new Set(workers.flatMap((w) => [...w.disks.map((d) => d.agent), ...(w.cd ? [w.cd.agent] : [])]));
    const r = await this.reality(agents);
    const drift = workers.map((w) => ({ worker_id: w.worker_id, drift: this.check(w, r) })).filter((x) => x.drift.length > 0);
    return { workers, drift };
  }

  /** `GET /drift`: every worker with something out of step. */
  async fleet(): Promise<FleetDrift> {
    const { workers, drift } = await this.all();
    return { checked_at: new Date().toISOString(), workers_checked: workers.length, workers: drift };
  }

  /**
   * Fixes what ironlens owns, for one worker or the fleet: the hosts file (rendered again,
   * dnsmasq reloaded) and missing targets (their agent scans). Answers what it did and what is
   * still out of step afterwards.
   */
  async reconcile(workerId: string | undefined, ctx: RequestContext): Promise<ReconcileResult> {
    const before = await this.all(workerId);
    const items = before.drift.flatMap((x) => x.drift.map((d) => ({ worker: x.worker_id, d })));
    const actions: ReconcileResult['actions'] = [];
    if (items.some((i) => i.d.kind === 'hosts_file_missing' || i.d.kind === 'hosts_file_mismatch')) {
      const r = await this.dhcp.render().then(
        () => null,
        (e: Error) => e.message,
      );
      actions.push({ action: 'hosts_file_rendered', target: this.dhcp.path, ok: r === null, detail: r });
    }
    const agents = new Set<string>();
    for (const w of before.workers) {
      const missing = before.drift.find((x) => x.worker_id === w.worker_id)?.drift.filter((d) => d.kind === 'target_missing') ?? [];
      for (const m of missing) {
        const t = [...w.disks, ...(w.cd ? [w.cd] : [])].find((x) => x.iqn === m.expected);
        if (t) agents.add(t.agent);
      }
    }
    for (const a of agents) {
      const r = await this.storage.scan(a, ctx).then(
        (s) => ({ ok: true, detail: `made ${s.created.length} target(s)` }),
        (e: Error) => ({ ok: false, detail: e.message }),
      );
      actions.push({ action: 'agent_scanned', target: a, ...r });
    }
    const after = await this.all(workerId);
    await this.ops.append({ op: 'drift.reconcile', worker_id: workerId ?? null, found: items.map((i) => `${i.worker} ${i.d.kind}`).slice(0, 100), actions, remaining: after.drift.reduce((n, x) => n + x.drift.length, 0), client: ctx.client });
    return { actions, remaining: after.drift };
  }
}
