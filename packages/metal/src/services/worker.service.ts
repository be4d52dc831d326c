import { AppError, clip, echo, isUniqueViolation, type OperationInput, type OperationsLog } from '@ironlens/core';
import type { BatchCreateInput, CreateWorkerInput, WorkerBatchResult, WorkerDeleteBatchResult, WorkerDeleted } from '../api/schemas';
import { isValidArch, isValidId, normalizeMac, requireHostname, requireMac, requireMenuItem, requireMenuTimeout, requireOs, requireWorkerId } from '../domain/identifiers';
import { type Boot, type Cd, type WorkerRecord, type WorkerView, workerView } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import { isFixedIpv4 } from '../adapters/dnsmasq.adapter';
import type { MetalDb, MetalStore } from '../repositories/tables';
import type { HostReportRecord, HostReportRepository } from '../repositories/host-report.repository';
import type { RolloutRepository } from '../repositories/rollout.repository';
import type { WorkerRepository } from '../repositories/worker.repository';
import { primaryAddress } from './host-report.service';
import type { DeviceService } from './device.service';
import type { LedgerWriter } from './ledger-writer.service';
import type { RequestContext } from './settings.service';

export type { BatchCreateInput, CreateWorkerInput };

/** The view with what the worker reported (issue 24): additive fields, `null` before the first report. */
function withHost(v: WorkerView, report: HostReportRecord | null, fixed: string | null, clusterId: string | null): WorkerView {
  v.host = report?.host ?? null;
  v.boot_timeline = report?.boot ?? null;
  v.address = report ? primaryAddress(report.host, (v.mac as string | null) ?? null) : null;
  v.fixed_address = fixed;
  v.cluster_id = clusterId;
  return v;
}

export interface DeleteOptions {
  deleteDisk: boolean;
  ignoreMissingTarget: boolean;
}

/** What the worker lifecycle needs from the storage side (agents, targets). */
export interface WorkerStorage {
  /** Creates the install CD target for `windows_iso`; returns the ledger's `cd`. */
  createInstallCd(workerId: string, hostname: string, iso: string, ctx: RequestContext): Promise<Cd>;
  /** Removes a CD target made by `createInstallCd` (rollback). */
  removeCd(cd: Cd): Promise<void>;
  /** Deletes the worker's CD target, then its disk targets (seed §11 order). */
  removeTargets(worker: WorkerRecord, opts: DeleteOptions, ctx: RequestContext): Promise<void>;
}

function padWidth(count: number): number {
  return Math.max(2, String(count).length);
}

/**
 * Worker identities (seed §7–§11): a hostname, optionally a bound device, system disks
 * and an install CD. Storage is delegated to `WorkerStorage`; binding rules to
 * `DeviceService.bindInTrx`, so every path that binds follows the same rule.
 */
export class WorkerService {
  constructor(
    private readonly store: MetalStore,
    private readonly workers: WorkerRepository,
    private readonly devices: DeviceRepository,
    private readonly deviceService: DeviceService,
    private readonly ledger: LedgerWriter,
    private readonly ops: OperationsLog,
    private readonly storage: WorkerStorage,
    private readonly defaultArch: string,
    /** Booted workers' reports and fixed addresses (issue 24). Default: none (views carry `host: null`). */
    private readonly hosts?: HostReportRepository,
    /** Workers' image history (issue 31), on `GET /workers/{id}`. Default: none. */
    private readonly images?: RolloutRepository,
  ) {}

  private get db(): MetalDb {
    return this.store.db;
  }

  async view(db: MetalDb, workerId: string): Promise<WorkerView> {
    const w = await this.workers.get(db, workerId);
    if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
    const d = await this.devices.boundTo(db, workerId);
    const [report, fixed, clusters] = this.hosts ? await Promise.all([this.hosts.get(db, workerId), this.hosts.fixedAddress(db, workerId), this.hosts.clusters(db)]) : [null, null, new Map()];
    return withHost(workerView(w, d?.mac ?? null), report, fixed, clusters.get(workerId) ?? null);
  }

  async list(): Promise<WorkerView[]> {
    const none = new Map();
    const [all, bindings, reports, fixed, clusters] = await Promise.all([
      this.workers.list(this.db),
      this.devices.bindings(this.db),
      this.hosts ? this.hosts.all(this.db) : none,
      this.hosts ? this.hosts.fixedAddresses(this.db) : none,
      this.hosts ? this.hosts.clusters(this.db) : none,
    ]);
    return all.map((w) =>
      withHost(workerView(w, bindings.get(w.worker_id) ?? null), reports.get(w.worker_id) ?? null, fixed.get(w.worker_id) ?? null, clusters.get(w.worker_id) ?? null),
    );
  }

  async get(workerIdInput: string): Promise<WorkerView> {
    const v = await this.view(this.db, requireWorkerId(workerIdInput));
    if (this.images) v.image_history = await this.images.images(this.db, v.worker_id);
    return v;
  }

  private validateBoot(boot: Boot | null | undefined): Boot {
    const out: Boot = {};
    if (!boot) return out;
    if (boot.menu_default != null && boot.menu_default !== '') out.menu_default = requireMenuItem(boot.menu_default);
    if (boot.menu_timeout != null) out.menu_timeout = requireMenuTimeout(boot.menu_timeout);
    return out;
  }

  private validateArch(arch: string | null | undefined): string {
    const a = (arch ?? this.defaultArch).trim().toLowerCase();
    if (!isValidArch(a)) throw new AppError('request_invalid', `invalid arch: ${echo(arch)}`);
    return a;
  }

  /** Inserts a worker (and binds its device) inside a transaction; 409s on conflicts. */
  private async insertInTrx(db: MetalDb, w: WorkerRecord, mac: string | null, ctx: RequestContext, audit: OperationInput[]): Promise<void> {
    if (await this.workers.get(db, w.worker_id)) throw new AppError('worker_exists', `worker already exists: ${w.worker_id}`);
    if ((await this.workers.hostnameTaken(db, w.hostname)) || (w.hostname !== w.worker_id && (await this.workers.get(db, w.hostname)))) {
      throw new AppError('hostname_taken', `hostname already exists: ${w.hostname}`);
    }
    if (await this.workers.hostnameTaken(db, w.worker_id)) throw new AppError('worker_exists', `worker_id is another worker's hostname: ${w.worker_id}`);
    if (mac) {
      const d = await this.devices.get(db, mac);
      if (!d) throw new AppError('device_not_pooled', `device not in pool (register it first): ${mac}`);
      if (d.state === 'revoked') throw new AppError('device_revoked', `device is revoked: ${mac}`);
      if (d.state === 'bound') throw new AppError('device_bound', `device already bound to ${d.bound_worker_id}: ${mac}`);
    }
    await this.workers.insert(db, w).catch((err) => {
      // The checks above ran under the ledger lock; a constraint still has the last word.
      if (!isUniqueViolation(err)) throw err;
      if (/hostname/.test(String((err as Error).message))) throw new AppError('hostname_taken', `hostname already exists: ${w.hostname}`);
      throw new AppError('worker_exists', `worker already exists: ${w.worker_id}`);
    });
    audit.push({ op: 'worker.create', worker_id: w.worker_id, hostname: w.hostname, mac, client: ctx.client });
    if (mac) {
      await this.deviceService.bindInTrx(db, mac, w.worker_id, false);
      audit.push({ op: 'device.bind', mac, worker_id: w.worker_id, via: 'worker.create', client: ctx.client });
    }
  }

  /** §7: register a worker identity; `mac` binds a pooled device; `windows_iso` adds an install CD. */
  async create(input: CreateWorkerInput, ctx: RequestContext): Promise<WorkerView> {
    const workerId = requireWorkerId(input.worker_id);
    const hostname = input.hostname != null && input.hostname !== '' ? requireHostname(input.hostname) : workerId;
    const mac = input.mac != null && input.mac !== '' ? requireMac(input.mac) : null;
    const boot = this.validateBoot(input.boot);
    const arch = this.validateArch(input.arch);
    const record: WorkerRecord = { worker_id: workerId, hostname, arch, state: 'registered', default_os: null, boot, disks: [], cd: null };

    // Cheap pre-checks so an obviously conflicting request creates no CD target.
    if (await this.workers.get(this.db, workerId)) throw new AppError('worker_exists', `worker already exists: ${workerId}`);

    let cd: Cd | null = null;
    if (input.windows_iso) {
      cd = await this.storage.createInstallCd(workerId, hostname, input.windows_iso, ctx);
      record.cd = cd;
      record.state = 'installing';
    }
    try {
      await this.ledger.write(async (trx) => {
        const audit: OperationInput[] = [];
        await this.insertInTrx(trx, record, mac, ctx, audit);
        await this.ops.append(audit, trx);
      });
    } catch (err) {
      if (cd) {
        await this.storage.removeCd(cd).catch(async (e) => {
          await this.ops.append({ op: 'agent.delete_cd', status: 'failed', worker_id: workerId, iqn: cd?.iqn, agent: cd?.agent, error: `rollback failed, target left behind: ${(e as Error).message}` });
        });
      }
      throw err;
    }
    return this.view(this.db, workerId);
  }

  /** §7.6: create `count` workers named prefix + zero-padded index; idempotent. */
  async createBatch(input: BatchCreateInput, ctx: RequestContext): Promise<WorkerBatchResult> {
    const prefix = input.name_prefix ?? 'worker-';
    if (typeof prefix !== 'string' || prefix.trim() === '') throw new AppError('batch_invalid', 'name_prefix must not be empty');
    const count = input.count;
    const macs = input.macs ?? null;
    if (macs && macs.length !== count) throw new AppError('batch_invalid', `macs has ${macs.length} entries, count is ${count}`);
    const width = padWidth(count);
    const ids = Array.from({ length: count }, (_, i) => `${prefix.trim().toLowerCase()}${String(i + 1).padStart(width, '0')}`);
    for (const id of ids) if (!isValidId(id)) throw new AppError('worker_id_invalid', `name_prefix gives an invalid worker_id: ${echo(id)}`);
    const boot = this.validateBoot(input.boot);
    const arch = this.validateArch(input.arch);

    const succeeded: WorkerBatchResult['succeeded'] = [];
    const skipped: WorkerBatchResult['skipped'] = [];
    const failed: WorkerBatchResult['failed'] = [];
    // One dnsmasq reload for the whole batch (the ledger writer's follow-up runs at its end).
    await this.ledger.batch(async () => {
      for (let i = 0; i < count; i++) {
        const workerId = ids[i];
        const rawMac = macs ? macs[i] : null;
        if (await this.workers.get(this.db, workerId)) {
          skipped.push({ worker_id: workerId, hostname: workerId, reason: 'worker already exists' });
          continue;
        }
        const mac = rawMac != null ? normalizeMac(rawMac) : null;
        if (rawMac != null && !mac) {
          failed.push({ worker_id: workerId, hostname: workerId, mac: typeof rawMac === 'string' ? clip(rawMac) : rawMac, error: `invalid MAC address: ${echo(rawMac)}` });
          continue;
        }
        try {
          await this.ledger.write(async (trx) => {
            const audit: OperationInput[] = [];
            await this.insertInTrx(trx, { worker_id: workerId, hostname: workerId, arch, state: 'registered', default_os: null, boot, disks: [], cd: null }, mac, ctx, audit);
            await this.ops.append(audit, trx);
          });
          succeeded.push(mac ? { worker_id: workerId, hostname: workerId, mac } : { worker_id: workerId, hostname: workerId });
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          failed.push({ worker_id: workerId, hostname: workerId, ...(mac ? { mac } : {}), error: err.message });
        }
      }
      await this.ops.append({ op: 'worker.create.batch', succeeded: succeeded.length, skipped: skipped.length, failed: failed.length, client: ctx.client });
    });
    return { succeeded, skipped, failed };
  }

  /** §7.5: change the worker's MAC = re-bind to a pooled device; `changed:false` when the same. */
  async setMac(workerIdInput: string, macInput: unknown, ctx: RequestContext): Promise<WorkerView & { changed: boolean }> {
    const workerId = requireWorkerId(workerIdInput);
    const mac = requireMac(macInput);
    const result = await this.ledger.write(async (trx) => {
      const db = trx;
      const w = await this.workers.get(db, workerId);
      if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
      const current = await this.devices.boundTo(db, workerId);
      if (current?.mac === mac) {
        await this.ops.append({ op: 'worker.mac.update', worker_id: workerId, old_mac: mac, new_mac: mac, changed: false, client: ctx.client }, trx);
        return { changed: false };
      }
      const d = await this.devices.get(db, mac);
      if (!d) throw new AppError('device_not_pooled', `device not in pool (register it first): ${mac}`);
      if (d.state === 'revoked') throw new AppError('device_revoked', `device is revoked: ${mac}`);
      if (d.state === 'bound') throw new AppError('device_bound', `MAC already bound to ${d.bound_worker_id}: ${mac}`);
      const o = await this.deviceService.bindInTrx(db, mac, workerId, true);
      const audit: OperationInput[] = [{ op: 'device.bind', mac, worker_id: workerId, old_device_mac: o.old_device_mac, via: 'worker.mac.update', client: ctx.client }];
      if (current) audit.push({ op: 'device.unbind', mac: current.mac, worker_id: workerId, via: 'worker.mac.update', client: ctx.client });
      audit.push({ op: 'worker.mac.update', worker_id: workerId, old_mac: current?.mac ?? null, new_mac: mac, changed: true, client: ctx.client });
      await this.ops.append(audit, trx);
      return { changed: true };
    });
    return { ...(await this.view(this.db, workerId)), changed: result.changed };
  }

  /** §7.3: default OS / menu item / timeout; null or "" clears a field. */
  async setDefaultOs(workerIdInput: string, body: Record<string, unknown>, ctx: RequestContext): Promise<WorkerView> {
    const workerId = requireWorkerId(workerIdInput);
    const has = (k: string) => Object.hasOwn(body ?? {}, k);
    if (!has('os') && !has('menu_default') && !has('menu_timeout')) throw new AppError('default_os_nothing_to_set');
    const empty = (v: unknown) => v === null || v === '';
    const os = has('os') ? (empty(body.os) ? null : requireOs(body.os)) : undefined;
    const menuDefault = has('menu_default') ? (empty(body.menu_default) ? null : requireMenuItem(body.menu_default)) : undefined;
    const menuTimeout = has('menu_timeout') ? (empty(body.menu_timeout) ? null : requireMenuTimeout(body.menu_timeout)) : undefined;
    await this.ledger.write(async (trx) => {
      const db = trx;
      const w = await this.workers.get(db, workerId);
      if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
      if (os) {
        if (w.disks.length === 0) throw new AppError('worker_has_no_disks', `worker ${workerId} has no system disk yet`);
        if (!w.disks.some((d) => d.os === os)) {
          throw new AppError('default_os_no_disk', `worker ${workerId} has no ${os} system disk; its disks: ${w.disks.map((d) => d.os).join(', ')}`, { disks: w.disks.map((d) => d.os) });
        }
      }
      await this.workers.update(db, workerId, { default_os: os, menu_default: menuDefault, menu_timeout: menuTimeout });
      await this.ops.append({ op: 'worker.default_os', worker_id: workerId, os, menu_default: menuDefault, menu_timeout: menuTimeout, client: ctx.client }, trx);
    });
    return this.view(this.db, workerId);
  }

  /**
   * `PUT /workers/{worker_id}/default-disk` (the seed control plane's current WebUI): `/default-os`
   * with the disk named by its key (`disk`, the `os_tag` of the worker views, which is its `os`),
   * and the WebUI's generic menu item `boot-os` meaning the worker's default disk (400
   * `menu_item_invalid` when it has none). Same rules, errors and ledger fields as `/default-os`.
   */
  async setDefaultDisk(workerIdInput: string, body: Record<string, unknown>, ctx: RequestContext): Promise<WorkerView> {
    const workerId = requireWorkerId(workerIdInput);
    const has = (k: string) => Object.hasOwn(body ?? {}, k);
    if (!has('disk') && !has('menu_default') && !has('menu_timeout')) throw new AppError('default_os_nothing_to_set', 'at least one of disk, menu_default, menu_timeout is required');
    const asOs: Record<string, unknown> = {};
    if (has('disk')) asOs.os = body.disk;
    if (has('menu_timeout')) asOs.menu_timeout = body.menu_timeout;
    if (has('menu_default')) {
      const item = body.menu_default;
      if (typeof item === 'string' && item.trim().toLowerCase() === 'boot-os') {
        const disk = has('disk') ? (body.disk === '' ? null : body.disk) : (await this.workers.get(this.db, workerId))?.default_os;
        if (disk === undefined && !has('disk')) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
        if (disk === null || disk === undefined) throw new AppError('menu_item_invalid', `menu_default boot-os boots the worker's default disk, and worker ${workerId} has none: set disk first`);
        asOs.menu_default = disk;
      } else asOs.menu_default = item;
    }
    return this.setDefaultOs(workerId, asOs, ctx);
  }

  /**
   * Issue 24: the worker's fixed IPv4 address (`null` removes it), rendered into the hosts
   * file (`mac,ipv4,hostname,infinite`), so machines that DHCP at the same moment are never
   * offered one address twice. Unique across workers.
   */
  async setFixedAddress(workerIdInput: string, input: unknown, ctx: RequestContext): Promise<WorkerView> {
    const workerId = requireWorkerId(workerIdInput);
    if (!this.hosts) throw new AppError('worker_address_invalid', 'fixed addresses are not available here');
    const hosts = this.hosts;
    const ipv4 = input === null || input === '' ? null : typeof input === 'string' && isFixedIpv4(input.trim()) ? input.trim() : null;
    if (ipv4 === null && !(input === null || input === '')) throw new AppError('worker_address_invalid', `fixed_address must be a unicast IPv4 address or null, got ${echo(input)}`);
    await this.ledger.write(async (trx) => {
      if (!(await this.workers.get(trx, workerId))) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
      if (ipv4) {
        const holder = [...(await hosts.fixedAddresses(trx)).entries()].find(([id, ip]) => ip === ipv4 && id !== workerId);
        if (holder) throw new AppError('worker_address_taken', `${ipv4} is the fixed address of worker ${holder[0]}`, { worker_id: holder[0] });
      }
      await hosts.setFixedAddress(trx, workerId, ipv4);
      await this.ops.append({ op: 'worker.address', worker_id: workerId, fixed_address: ipv4, client: ctx.client }, trx);
    });
    return this.view(this.db, workerId);
  }

  /**
   * §11: unbind the devices (committed first; a failure aborts), delete the CD and disk
   * targets, delete the ledger entry. dnsmasq follows the ledger whatever fails on the way
   * (the ledger writer's follow-up): once the devices are unbound, the hosts file no longer
   * holds them, even when the agent then refuses a target delete. Returns what the seed shows.
   */
  private async deleteOne(workerId: string, opts: DeleteOptions, ctx: RequestContext): Promise<{ hostname: string; unbound: string[] }> {
    const w = await this.workers.get(this.db, workerId);
    if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
    const unbound = await this.ledger.write(async (trx) => {
      const macs = await this.devices.unbindWorker(trx, workerId);
      await this.ops.append(
        macs.map((mac) => ({ op: 'device.unbind', mac, worker_id: workerId, via: 'worker.delete', client: ctx.client })),
        trx,
      );
      return macs;
    });
    await this.storage.removeTargets(w, opts, ctx);
    await this.ledger.write(async (trx) => {
      await this.workers.delete(trx, workerId);
      await this.ops.append({ op: 'worker.delete', worker_id: workerId, hostname: w.hostname, delete_disk: opts.deleteDisk, client: ctx.client }, trx);
    });
    return { hostname: w.hostname, unbound };
  }

  async delete(workerIdInput: string, opts: DeleteOptions, ctx: RequestContext): Promise<WorkerDeleted> {
    const workerId = requireWorkerId(workerIdInput);
    const { unbound } = await this.ledger.batch(() => this.deleteOne(workerId, opts, ctx));
    return { deleted: workerId, delete_disk: opts.deleteDisk, dnsmasq_removed: unbound.length > 0 };
  }

  /** §11.1: each worker independent; one dnsmasq reload for the whole batch. */
  async deleteBatch(ids: unknown[], opts: DeleteOptions, ctx: RequestContext): Promise<WorkerDeleteBatchResult> {
    const succeeded: WorkerDeleteBatchResult['succeeded'] = [];
    const failed: WorkerDeleteBatchResult['failed'] = [];
    await this.ledger.batch(async () => {
      for (const raw of ids) {
        try {
          const workerId = requireWorkerId(raw);
          const { hostname } = await this.deleteOne(workerId, opts, ctx);
          succeeded.push({ worker_id: workerId, hostname });
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          failed.push({ worker_id: raw, error: err.message });
        }
      }
      await this.ops.append({ op: 'worker.delete.batch', succeeded: succeeded.length, failed: failed.length, client: ctx.client });
    });
    return { succeeded, failed };
  }
}
