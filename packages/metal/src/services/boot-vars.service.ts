import type { Store } from '@ironlens/core';
import { normalizeMac } from '../domain/identifiers';
import type { Device, WorkerRecord } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalDb } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';

/** The iPXE variables of one machine; `{}` means "no per-worker vars". */
export interface BootVars {
  base_iqn?: string;
  iscsi_server?: string;
  iscsi_sep?: string;
  menu_default?: string;
  menu_timeout?: number;
}

/** Where a disk's agent serves iSCSI, and which root-path separator its backend wants. */
export interface DataPlaneLookup {
  dataPlane(agentId: string): Promise<{ iscsi_server: string; iscsi_sep: string } | null>;
}

export const STGT_SEP = ':::1:';
export const LIO_SEP = '::::';

export interface BootVarsAnswer {
  vars: BootVars;
  /** Who the vars are for, for the script's comment line. */
  subject: string | null;
}

const MAX_CACHED = 200_000;

/**
 * `/boot-vars`: a read-only projection of the ledger (seed §5). Lookups go through a
 * read-through cache that every write of the ledger clears, so a boot storm reads the
 * store once per machine. Nothing here writes.
 */
export class BootVarsService {
  private readonly workerByName = new Map<string, WorkerRecord | null>();
  private readonly deviceByMac = new Map<string, Device | null>();

  constructor(
    private readonly store: Store,
    private readonly workers: WorkerRepository,
    private readonly devices: DeviceRepository,
    private readonly dataPlane: DataPlaneLookup,
    private readonly timeouts: { bootMenuTimeout: number; autoBootTimeout: number },
  ) {}

  /** Forget every cached lookup; called after each write of the ledger. */
  invalidate(): void {
    this.workerByName.clear();
    this.deviceByMac.clear();
  }

  private get db(): MetalDb {
    return this.store.db as unknown as MetalDb;
  }

  private async worker(name: string): Promise<WorkerRecord | null> {
    let w = this.workerByName.get(name);
    if (w === undefined) {
      w = await this.workers.findByHostname(this.db, name);
      if (this.workerByName.size >= MAX_CACHED) this.workerByName.clear();
      this.workerByName.set(name, w);
    }
    return w;
  }

  private async device(mac: string): Promise<Device | null> {
    let d = this.deviceByMac.get(mac);
    if (d === undefined) {
      d = await this.devices.get(this.db, mac);
      if (this.deviceByMac.size >= MAX_CACHED) this.deviceByMac.clear();
      this.deviceByMac.set(mac, d);
    }
    return d;
  }

  /**
   * hostname → worker (by hostname or id); else mac → device → bound worker.
   * With a MAC, the device must be bound to that worker (anti-spoofing); a pooled
   * device gets the reboot loop; revoked, unknown or spoofed get nothing.
   */
  async resolve(q: { hostname?: string; mac?: string }): Promise<BootVarsAnswer> {
    const hostname = q.hostname?.trim().toLowerCase() || undefined;
    const macGiven = q.mac !== undefined && q.mac.trim() !== '';
    const mac = macGiven ? normalizeMac(q.mac) : null;
    if (macGiven && !mac) return { vars: {}, subject: null };

    const byName = hostname ? await this.worker(hostname) : null;
    if (byName) {
      if (mac) {
        const d = await this.device(mac);
        if (!d || d.state !== 'bound' || d.bound_worker_id !== byName.worker_id) return { vars: {}, subject: null };
      }
      return { vars: await this.project(byName), subject: byName.hostname };
    }
    if (!mac) return { vars: {}, subject: null };
    const d = await this.device(mac);
    if (!d) return { vars: {}, subject: null };
    if (d.state === 'bound' && d.bound_worker_id) {
      const w = await this.worker(d.bound_worker_id);
      if (w) return { vars: await this.project(w), subject: w.hostname };
      return { vars: {}, subject: null };
    }
    if (d.state === 'pooled') {
      return { vars: { menu_default: 'reboot', menu_timeout: this.timeouts.autoBootTimeout }, subject: mac };
    }
    return { vars: {}, subject: null };
  }

  private async project(w: WorkerRecord): Promise<BootVars> {
    const vars: BootVars = {};
    const disk = (w.default_os && w.disks.find((d) => d.os === w.default_os)) || w.disks[0];
    if (disk) {
      const i = disk.iqn.lastIndexOf(':');
      vars.base_iqn = i > 0 ? disk.iqn.slice(0, i) : disk.iqn;
      const dp = await this.dataPlane.dataPlane(disk.agent);
      if (dp) {
        vars.iscsi_server = dp.iscsi_server;
        vars.iscsi_sep = dp.iscsi_sep;
      }
    }
    const menuDefault = w.default_os ?? w.boot.menu_default ?? 'reboot';
    vars.menu_default = menuDefault;
    vars.menu_timeout = menuDefault === 'reboot' ? this.timeouts.autoBootTimeout : (w.boot.menu_timeout ?? this.timeouts.bootMenuTimeout);
    return vars;
  }
}

/** The iPXE script form: `set` lines iPXE can chain. */
export function renderBootVarsScript(a: BootVarsAnswer): string {
  const v = a.vars;
  if (Object.keys(v).length === 0) return '#!ipxe\n# no per-worker boot vars found\n';
  const lines = ['#!ipxe', `# boot vars for ${a.subject ?? 'unknown'}`];
  if (v.base_iqn !== undefined) lines.push(`set base-iqn ${v.base_iqn}`);
  if (v.iscsi_server !== undefined) lines.push(`set iscsi-server ${v.iscsi_server}`);
  if (v.iscsi_sep !== undefined) lines.push(`set iscsi-sep ${v.iscsi_sep}`);
  if (v.menu_default !== undefined) lines.push(`set menu-default ${v.menu_default}`);
  if (v.menu_timeout !== undefined) lines.push(`set menu-timeout ${v.menu_timeout}`);
  return `${lines.join('\n')}\n`;
}
