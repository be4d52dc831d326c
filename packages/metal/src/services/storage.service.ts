import { AppError, type ChapCredential, currentActor, isUniqueViolation, type OperationInput, type OperationsLog } from '@ironlens/core';
import type { AgentTarget, CreatedLun } from '../adapters/storage-agent';
import type { DirectCdRequest, DirectDiskRequest, DiskBatchRequest, DiskBatchResult, DiskDeleteQuery, DiskRequest, LunDeleted, LunDeleteQuery, MastersListing, ScanResult, WorkerStatus, WorkerView } from '../api/schemas';
import { type Os, requireOs, requireWorkerId } from '../domain/identifiers';
import { type Agent, type Cd, type Disk, type WorkerRecord, workerView } from '../domain/types';
import type { AgentRepository } from '../repositories/agent.repository';
import type { ChapRepository } from '../repositories/chap.repository';
import type { RolloutRepository } from '../repositories/rollout.repository';
import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalDb, MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import { type AgentService, iscsiServerOf } from './agent.service';
import type { DhcpHostsService } from './dhcp-hosts.service';
import type { LedgerWriter } from './ledger-writer.service';
import type { RequestContext } from './settings.service';
import type { DeleteOptions, WorkerStorage } from './worker.service';

export type { DirectCdRequest, DirectDiskRequest, DiskRequest };

/**
 * The iSCSI initiator name a worker's machine logs in with: boot.ipxe sets `initiator-iqn`
 * to `${base-iqn}:${hostname}`, with the hostname DHCP gave it (the worker's `hostname`).
 */
function initiatorOf(baseIqn: string, hostname: string): string {
  return `${baseIqn}:${hostname}`;
}

/** Per-worker iSCSI CHAP (issue 13): where the accounts are kept, and whether new targets get one. */
export interface ChapPolicy {
  repo: ChapRepository;
  /** `IRONLENS_ISCSI_CHAP`. */
  enabled: boolean;
}

/** An error's text with a secret cut out, for what an agent might have echoed back. */
function withoutSecret(err: unknown, chap: ChapCredential | undefined): unknown {
  if (!chap || !(err instanceof Error)) return err;
  const scrub = (t: string) => t.split(chap.password).join('<redacted>');
  const extraText = err instanceof AppError && typeof err.extra.error === 'string' ? err.extra.error : '';
  if (!err.message.includes(chap.password) && !extraText.includes(chap.password)) return err;
  if (!(err instanceof AppError)) return new Error(scrub(err.message));
  const extra = extraText ? { ...err.extra, error: scrub(extraText) } : err.extra;
  return new AppError(err.code, scrub(err.message), extra, err.status);
}

/** Refuses an agent answer that does not confirm the CHAP account it was asked to bind. */
function requireChapBound(agentId: string, out: CreatedLun, chap: ChapCredential): void {
  if (out.chap_user === chap.user) return;
  const text = `agent ${agentId} did not bind the CHAP account ${chap.user} to ${out.iqn} (an agent without CHAP support?); the target was removed again`;
  throw new AppError('agent_bad_gateway', text, { agent: agentId, error: text });
}

/**
 * System disks and install CDs (seed §7.1–7.4, §10, §11, §14, §15): the ledger side of
 * storage. A target made on an agent whose ledger write then fails is removed again,
 * or the error says exactly what was left behind.
 *
 * With CHAP on, each worker's disks and install CD are bound to the worker's CHAP account
 * (made on first use, kept sealed); its secret goes to the agent in the create request and
 * again in a scan (`POST /agents/<id>/luns/scan`, or {@link StorageService.reconcileChap} on a
 * timer), which is how targets come back after the agent's tgtd restarted: the agent keeps no secret. It is in no answer, log or operations
 * entry.
 */
export class StorageService implements WorkerStorage {
  constructor(
    private readonly store: MetalStore,
    private readonly agents: AgentService,
    private readonly agentRepo: AgentRepository,
    private readonly workers: WorkerRepository,
    private readonly devices: DeviceRepository,
    private readonly dhcp: DhcpHostsService,
    private readonly ledger: LedgerWriter,
    private readonly ops: OperationsLog,
    /** Deadline of disk and CD creation (a copy of a whole master can be slow). */
    private readonly diskTimeoutMs: number,
    private readonly chap: ChapPolicy,
    /** Where a disk made from a master is written to the worker's image history (issue 31). Default: nowhere. */
    private readonly images?: RolloutRepository,
  ) {}

  /** The worker's CHAP account for a new target: made when it has none; `undefined` with CHAP off. */
  private async chapFor(workerId: string): Promise<ChapCredential | undefined> {
    if (!this.chap.enabled) return undefined;
    return this.chap.repo.ensure(this.db, workerId);
  }

  private get db(): MetalDb {
    return this.store.db;
  }

  // ---- §14: direct LUN management, passed through --------------------------------------

  async listLuns(agentId: string): Promise<AgentTarget[]> {
    return this.agents.client(await this.agents.require(agentId)).listLuns();
  }

  async createLunDisk(agentId: string, body: DirectDiskRequest, ctx: RequestContext): Promise<CreatedLun> {
    const a = await this.requireRole(agentId, 'disk');
    const out = await this.agents.client(a).createDisk({ ...body, timeoutMs: this.diskTimeoutMs });
    await this.ops.append({ op: 'agent.create_disk', agent: a.id, iqn: out.iqn, via: 'luns', client: ctx.client });
    return out;
  }

  async createLunCd(agentId: string, body: DirectCdRequest, ctx: RequestContext): Promise<CreatedLun> {
    const a = await this.requireRole(agentId, 'cd');
    const out = await this.agents.client(a).createCd({ ...body, timeoutMs: this.diskTimeoutMs });
    await this.ops.append({ op: 'agent.create_cd', agent: a.id, iqn: out.iqn, via: 'luns', client: ctx.client });
    return out;
  }

  private async requireRole(agentId: string, role: 'disk' | 'cd'): Promise<Agent> {
    const a = await this.agents.require(agentId);
    if (!a.role[role]) throw new AppError('agent_role_missing', `agent ${a.id} not configured for ${role} role`);
    return a;
  }

  async deleteLun(agentId: string, q: LunDeleteQuery, ctx: RequestContext): Promise<LunDeleted> {
    const a = await this.agents.require(agentId);
    const deleteFile = q.delete_file === true;
    const outcome = await this.agents.client(a).deleteTarget({ iqn: q.iqn, deleteFile, ignoreMissing: q.ignore_missing === true });
    if (outcome === 'missing') {
      await this.ops.append({ op: 'agent.delete_lun', agent: a.id, iqn: q.iqn, ignored_missing: true, client: ctx.client });
      return { deleted: q.iqn, delete_file: deleteFile, ignored_missing: true as const };
    }
    await this.ops.append({ op: 'agent.delete_lun', agent: a.id, iqn: q.iqn, delete_file: deleteFile, client: ctx.client });
    return { deleted: q.iqn, delete_file: deleteFile };
  }

  /**
   * The agent's scan, with the CHAP accounts of every worker that has a disk or CD on it
   * re-sent: a target the agent rebuilds (after its tgtd restarted) is bound to its account
   * again, never left guarded by the initiator name alone.
   */
  async scan(agentId: string, ctx: RequestContext): Promise<ScanResult> {
    const a = await this.agents.require(agentId);
    const owners = (await this.workers.list(this.db)).filter((w) => w.disks.some((d) => d.agent === a.id) || w.cd?.agent === a.id).map((w) => w.worker_id);
    const chap = [...(await this.chap.repo.many(this.db, owners)).values()];
    const out = await this.agents.client(a).scan(chap.length ? { chap } : {});
    await this.ops.append({ op: 'agent.scan', agent: a.id, chap_accounts: chap.length, client: ctx.client });
    return out;
  }

  /**
   * CHAP on: for every enabled agent that should hold a CHAP-bound target (a worker's disk or
   * CD in the ledger) but does not list it (its tgtd restarted and the agent's own scan skipped
   * it for want of the secret), runs {@link scan}, which re-sends the accounts. Agents that
   * cannot be reached are left for the next round. Answers the agents it scanned.
   */
  async reconcileChap(): Promise<string[]> {
    if (!this.chap.enabled) return [];
    const workers = await this.workers.list(this.db);
    const withAccount = await this.chap.repo.many(
      this.db,
      workers.map((w) => w.worker_id),
    );
    const expected = new Map<string, Set<string>>();
    for (const w of workers) {
      if (!withAccount.has(w.worker_id)) continue;
      for (const t of [...w.disks, ...(w.cd ? [w.cd] : [])]) {
        const set = expected.get(t.agent) ?? new Set<string>();
        expected.set(t.agent, set);
        set.add(t.iqn);
      }
    }
    const scanned: string[] = [];
    for (const a of await this.agentRepo.list(this.db)) {
      const want = expected.get(a.id);
      if (!a.enabled || !want) continue;
      try {
        const listed = new Set((await this.agents.client(a).listLuns()).map((t) => t.iqn));
        if ([...want].every((iqn) => listed.has(iqn))) continue;
        await this.scan(a.id, { client: 'chap-reconcile' });
        scanned.push(a.id);
      } catch {
        // Unreachable or failing agent: tried again next round.
      }
    }
    return scanned;
  }

  // ---- §15: masters ---------------------------------------------------------------------

  async masters(ctx: RequestContext): Promise<MastersListing> {
    const agents = (await this.agents.list()).filter((a) => a.enabled && a.role.disk);
    // Master tags (the seed control plane's current WebUI) are merged into the masters they name.
    const tags = new Map((await this.agents.masterTags()).map((t) => [`${t.agent_id}/${t.name}`, { os: t.os, os_version: t.os_version, remark: t.remark }]));
    const entries = await Promise.all(
      agents.map(async (a) => {
        const base = { agent: a.id, iscsi_server: iscsiServerOf(a), storager_ip: iscsiServerOf(a) };
        try {
          return { ...base, masters: (await this.agents.client(a).masters()).map((m) => ({ ...m, ...tags.get(`${a.id}/${m.name}`) })) };
        } catch (err) {
          const msg = err instanceof AppError ? String(err.extra.error ?? err.message) : (err as Error).message;
          await this.ops.append({ op: 'master.list', status: 'failed', agent: a.id, error: msg, client: ctx.client });
          return { ...base, masters: [], error: msg };
        }
      }),
    );
    if (entries.length > 0 && entries.every((e) => 'error' in e)) {
      throw new AppError('masters_all_failed', 'every disk agent failed to list masters', { agents: entries });
    }
    return { agents: entries };
  }

  // ---- §7.1: worker system disks --------------------------------------------------------

  private async chooseDiskAgent(requested: string | null | undefined): Promise<Agent> {
    if (requested) {
      const a = await this.agents.require(requested);
      if (!a.enabled) throw new AppError('agent_role_missing', `agent ${a.id} is disabled`);
      if (!a.role.disk) throw new AppError('agent_role_missing', `agent ${a.id} not configured for disk role`);
      return a;
    }
    const candidates = (await this.agents.list()).filter((a) => a.enabled && a.role.disk);
    if (candidates.length === 0) throw new AppError('agent_none_available', 'no enabled agent with the disk role');
    // Fewest disks first; registration order breaks ties.
    const counts = await this.agentRepo.diskCounts(this.db);
    return candidates.reduce((best, a) => ((counts.get(a.id) ?? 0) < (counts.get(best.id) ?? 0) ? a : best));
  }

  private validateDiskRequest(req: DiskRequest): { os: Os; type: 'master' | 'empty' } {
    if (req.type !== 'master' && req.type !== 'empty') throw new AppError('request_invalid', `type must be master or empty, got ${JSON.stringify(req.type)}`);
    const os = requireOs(req.os);
    if (req.type === 'master' && !req.name) throw new AppError('request_invalid', 'type=master requires name (the master image file name)');
    if (req.type === 'empty' && !req.size) throw new AppError('request_invalid', 'type=empty requires size, e.g. 40G');
    return { os, type: req.type };
  }

  private async baseIqn(a: Agent): Promise<string> {
    const caps = await this.agents.fetchCapabilities(a);
    if (!caps.base_iqn) throw new AppError('agent_bad_gateway', `agent ${a.id} reports no base_iqn`, { agent: a.id, error: 'capabilities without base_iqn' });
    return caps.base_iqn;
  }

  /**
   * Creates the disk on the agent, then writes the ledger. If the ledger write fails, the
   * target and its file are removed again; if that fails too, the error names them.
   */
  private async createDisk(w: WorkerRecord, a: Agent, req: DiskRequest, os: Os, extra: { setDefault: boolean }, ctx: RequestContext): Promise<Disk> {
    const base = await this.baseIqn(a);
    // The seed writes the IQN as `base-iqn:worker-id.os` and its menu composes the root path
    // as `${base-iqn}:${hostname}.os`; the hostname (which defaults to the worker id, so the
    // two agree) is what a machine can actually boot. The file keeps the worker id.
    const iqn = `${base}:${w.hostname}.${os}`;
    const filename = `${w.worker_id}.${os}.img`;
    // Only the worker may log in: boot.ipxe sets its initiator name to ${base-iqn}:${hostname}.
    const initiator = initiatorOf(base, w.hostname);
    const source = req.type === 'master' ? { master: String(req.name) } : { size: String(req.size) };
    const agent = this.agents.client(a);
    const chap = await this.chapFor(w.worker_id);
    let out: CreatedLun;
    try {
      out = await agent.createDisk({ iqn, filename, ...source, initiator, ...(chap ? { chap } : {}), timeoutMs: this.diskTimeoutMs });
    } catch (raw) {
      const err = withoutSecret(raw, chap);
      await this.ops.append({ op: 'agent.create_disk', status: 'failed', worker_id: w.worker_id, agent: a.id, iqn, error: (err as Error).message, client: ctx.client });
      throw err;
    }
    const disk: Disk = {
      agent: a.id,
      iqn: out.iqn,
      filename: out.filename,
      backing: out.backing,
      os,
      source: req.type === 'master' ? { type: 'master', name: String(req.name) } : { type: 'empty', size: String(req.size) },
    };
    try {
      // An agent that does not know `chap` (older than issue 13) would make a disk guarded by the name alone.
      if (chap) requireChapBound(a.id, out, chap);
      await this.ledger.write(async (trx) => {
        const db = trx;
        const current = await this.workers.get(db, w.worker_id);
        if (!current) throw new AppError('worker_not_found', `worker not found: ${w.worker_id}`);
        if (current.disks.some((d) => d.os === os)) throw new AppError('disk_exists', `worker ${w.worker_id} already has a ${os} system disk`);
        await this.workers.addDisk(db, w.worker_id, disk).catch((err) => {
          throw isUniqueViolation(err) ? new AppError('disk_exists', `worker ${w.worker_id} already has a ${os} system disk`) : err;
        });
        await this.workers.update(db, w.worker_id, {
          state: current.state === 'registered' ? 'ready' : current.state,
          ...(extra.setDefault ? { default_os: os } : {}),
        });
        const audit: OperationInput[] = [
          { op: 'agent.create_disk', status: 'ok', worker_id: w.worker_id, agent: a.id, iqn: disk.iqn, os, clone: out.clone ?? null, ...(chap ? { chap_user: chap.user } : {}), client: ctx.client },
        ];
        await this.ops.append(audit, trx);
        if (req.type === 'master') {
          await this.images?.addImage(trx, w.worker_id, { at: new Date().toISOString(), actor: currentActor(), master: String(req.name), os, agent: a.id, iqn: disk.iqn, rollout_id: null, outcome: 'created', detail: null });
        }
      });
    } catch (err) {
      const undone = await agent.deleteTarget({ iqn: disk.iqn, deleteFile: true, ignoreMissing: true }).then(
        () => true,
        () => false,
      );
      if (!undone) {
        const left = `target ${disk.iqn} and file ${disk.backing || disk.filename} on agent ${a.id}`;
        await this.ops.append({ op: 'agent.create_disk', status: 'orphaned', worker_id: w.worker_id, agent: a.id, iqn: disk.iqn, left_behind: left, client: ctx.client }).catch(() => {});
        if (err instanceof AppError) throw new AppError(err.code, `${err.message}; rollback failed, left behind: ${left}`, err.extra, err.status);
        throw new AppError('internal_error', `ledger write failed (${(err as Error).message}); rollback failed, left behind: ${left}`);
      }
      throw err;
    }
    return disk;
  }

  // ---- issue 31: a rollout's disks --------------------------------------------------------

  /** The master image names an agent lists (`GET /masters` of that agent). */
  async mastersOn(agentId: string): Promise<string[]> {
    const a = await this.agents.require(agentId);
    return (await this.agents.client(a).masters()).map((m) => m.name);
  }

  /**
   * The disk a rollout makes for `w` beside `old`, on the same agent (a reflink clone where the
   * file system has it), planned before it is made so a retry can remove a half-made one:
   * IQN `<base_iqn>:<generation>:<hostname>.<os>` (boot.ipxe composes `${base-iqn}:${hostname}.<os>`
   * with base-iqn `<base_iqn>:<generation>`, which `/boot-vars` derives from the IQN), initiator
   * `<base_iqn>:<generation>:<hostname>`, file `<worker_id>.<os>.<generation>.img`.
   */
  async planBeside(w: WorkerRecord, old: Disk, master: string, generation: string): Promise<Disk> {
    const a = await this.agents.require(old.agent);
    const base = `${await this.baseIqn(a)}:${generation}`;
    return { agent: a.id, iqn: `${base}:${w.hostname}.${old.os}`, filename: `${w.worker_id}.${old.os}.${generation}.img`, backing: '', os: old.os, source: { type: 'master', name: master } };
  }

  /**
   * Makes a planned disk on its agent (removing a half-made one of an earlier try first), bound
   * to the worker's CHAP account when it has one. Answers the disk with its backing file. Not
   * written to the ledger: the rollout switches the worker's disk itself.
   */
  async makePlanned(w: WorkerRecord, d: Disk, ctx: RequestContext): Promise<Disk> {
    const a = await this.agents.require(d.agent);
    const agent = this.agents.client(a);
    await agent.deleteTarget({ iqn: d.iqn, deleteFile: true, ignoreMissing: true });
    const base = d.iqn.slice(0, d.iqn.lastIndexOf(':'));
    const chap = await this.chapFor(w.worker_id);
    const master = d.source.name ?? '';
    let out: CreatedLun;
    try {
      out = await agent.createDisk({ iqn: d.iqn, filename: d.filename, master, initiator: initiatorOf(base, w.hostname), ...(chap ? { chap } : {}), timeoutMs: this.diskTimeoutMs });
    } catch (raw) {
      const err = withoutSecret(raw, chap);
      await this.ops.append({ op: 'agent.create_disk', status: 'failed', worker_id: w.worker_id, agent: a.id, iqn: d.iqn, via: 'rollout', error: (err as Error).message, client: ctx.client });
      throw err;
    }
    if (chap && out.chap_user !== chap.user) {
      await agent.deleteTarget({ iqn: out.iqn, deleteFile: true, ignoreMissing: true }).catch(() => {});
      requireChapBound(a.id, out, chap);
    }
    await this.ops.append({ op: 'agent.create_disk', status: 'ok', worker_id: w.worker_id, agent: a.id, iqn: out.iqn, os: d.os, master, via: 'rollout', clone: out.clone ?? null, client: ctx.client });
    return { ...d, iqn: out.iqn, filename: out.filename, backing: out.backing };
  }

  /** Removes a disk's target and its file (a rollout's old disk after success, or its new one after a rollback). */
  async dropDisk(workerId: string, d: Disk, ctx: RequestContext): Promise<'deleted' | 'missing'> {
    const outcome = await this.deleteTarget(d.agent, d.iqn, true, true);
    await this.ops.append({ op: 'agent.delete_disk', worker_id: workerId, agent: d.agent, iqn: d.iqn, os: d.os, delete_file: true, target: outcome, via: 'rollout', client: ctx.client });
    return outcome;
  }

  async createWorkerDisk(workerIdInput: string, req: DiskRequest, ctx: RequestContext): Promise<WorkerView> {
    const { os } = this.validateDiskRequest(req);
    const workerId = requireWorkerId(workerIdInput);
    const w = await this.workers.get(this.db, workerId);
    if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
    if (w.disks.some((d) => d.os === os)) throw new AppError('disk_exists', `worker ${workerId} already has a ${os} system disk`);
    const a = await this.chooseDiskAgent(req.disk_agent);
    await this.createDisk(w, a, req, os, { setDefault: false }, ctx);
    return this.view(workerId);
  }

  /** §7.1.3: same disk for many workers, each on its own agent; default_os set on success. */
  async createWorkerDisksBatch(req: DiskBatchRequest, ctx: RequestContext): Promise<DiskBatchResult> {
    const { os } = this.validateDiskRequest(req);
    if (!Array.isArray(req.targets) || req.targets.length === 0) throw new AppError('batch_invalid', 'targets must be a non-empty array of {worker_id, agent}');
    const succeeded: DiskBatchResult['succeeded'] = [];
    const skipped: DiskBatchResult['skipped'] = [];
    const failed: DiskBatchResult['failed'] = [];
    for (const t of req.targets) {
      const agentId = String(t?.agent ?? '');
      try {
        const workerId = requireWorkerId(t?.worker_id);
        if (!agentId) throw new AppError('request_invalid', 'agent is required for each target');
        const w = await this.workers.get(this.db, workerId);
        if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
        if (w.disks.some((d) => d.os === os)) {
          skipped.push({ worker_id: workerId, reason: `already has a ${os} system disk` });
          continue;
        }
        const a = await this.chooseDiskAgent(agentId);
        const disk = await this.createDisk(w, a, req, os, { setDefault: true }, ctx);
        succeeded.push({ worker_id: workerId, agent: a.id, iqn: disk.iqn });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        failed.push({ worker_id: t?.worker_id ?? null, agent: agentId, error: err.message });
      }
    }
    await this.ops.append({ op: 'worker.disk.batch', os, succeeded: succeeded.length, skipped: skipped.length, failed: failed.length, client: ctx.client });
    return { succeeded, skipped, failed };
  }

  /** Deletes one target, tolerating "iqn not found" when asked to. */
  private async deleteTarget(agentId: string, iqn: string, deleteFile: boolean, ignoreMissing: boolean): Promise<'deleted' | 'missing'> {
    const a = await this.agentRepo.get(this.db, agentId);
    if (!a) {
      if (ignoreMissing) return 'missing';
      throw new AppError('agent_not_found', `agent not found: ${agentId} (holds ${iqn})`);
    }
    return this.agents.client(a).deleteTarget({ iqn, deleteFile, ignoreMissing });
  }

  /** §7.4: delete one system disk; clears default_os (and a same-name menu_default). */
  async deleteWorkerDisk(workerIdInput: string, osInput: string, q: DiskDeleteQuery, ctx: RequestContext): Promise<WorkerView> {
    const os = requireOs(osInput);
    const workerId = requireWorkerId(workerIdInput);
    const w = await this.workers.get(this.db, workerId);
    if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
    const disk = w.disks.find((d) => d.os === os);
    if (!disk) throw new AppError('disk_not_found', `worker ${workerId} has no ${os} system disk`);
    const outcome = await this.deleteTarget(disk.agent, disk.iqn, q.delete_file === true, q.ignore_missing_target === true);
    await this.ledger.write(async (trx) => {
      const db = trx;
      await this.workers.removeDisk(db, workerId, os);
      const left = (await this.workers.disksOf(db, workerId)).length;
      const patch: Parameters<WorkerRepository['update']>[2] = {};
      if (w.default_os === os) {
        patch.default_os = null;
        if (w.boot.menu_default === os) patch.menu_default = null;
      }
      if (left === 0 && w.state === 'ready') patch.state = 'registered';
      await this.workers.update(db, workerId, patch);
      await this.ops.append({ op: 'agent.delete_disk', worker_id: workerId, agent: disk.agent, iqn: disk.iqn, os, delete_file: q.delete_file === true, target: outcome, client: ctx.client }, trx);
    });
    return this.view(workerId);
  }

  // ---- §7.2: install CD; §11: removal ---------------------------------------------------

  /**
   * The CD admits only the worker's initiator, `<base_iqn>:<hostname>` (the caller knows the
   * hostname before the worker is stored).
   */
  async createInstallCd(workerId: string, hostname: string, iso: string, ctx: RequestContext): Promise<Cd> {
    const candidates = (await this.agents.list()).filter((a) => a.enabled && a.role.cd);
    if (candidates.length === 0) throw new AppError('agent_none_available', 'no enabled agent with the cd role for windows_iso');
    const a = candidates[0];
    const base = await this.baseIqn(a);
    const iqn = `${base}:${hostname}.windows.iso`;
    const chap = await this.chapFor(workerId);
    let out: CreatedLun;
    try {
      out = await this.agents.client(a).createCd({ iso, iqn, initiator: initiatorOf(base, hostname), ...(chap ? { chap } : {}), timeoutMs: this.diskTimeoutMs });
    } catch (err) {
      throw withoutSecret(err, chap);
    }
    if (chap && out.chap_user !== chap.user) {
      await this.agents.client(a).deleteTarget({ iqn: out.iqn, deleteFile: false, ignoreMissing: true }).catch(() => {});
      requireChapBound(a.id, out, chap);
    }
    await this.ops.append({ op: 'agent.create_cd', worker_id: workerId, agent: a.id, iqn: out.iqn, iso, ...(chap ? { chap_user: chap.user } : {}), client: ctx.client });
    return { agent: a.id, iqn: out.iqn, iso, backing: out.backing };
  }

  async removeCd(cd: Cd): Promise<void> {
    await this.deleteTarget(cd.agent, cd.iqn, false, true);
  }

  /** CD first, then disks; the ledger follows each step so a retry resumes where it stopped. */
  async removeTargets(w: WorkerRecord, opts: DeleteOptions, ctx: RequestContext): Promise<void> {
    if (w.cd) {
      // The ISO is shared install media: its file is never deleted with a worker.
      const outcome = await this.deleteTarget(w.cd.agent, w.cd.iqn, false, opts.ignoreMissingTarget);
      await this.ledger.write(async (trx) => {
        await this.workers.update(trx, w.worker_id, { cd: null });
        await this.ops.append({ op: 'agent.delete_cd', worker_id: w.worker_id, agent: w.cd?.agent, iqn: w.cd?.iqn, target: outcome, client: ctx.client }, trx);
      });
    }
    for (const d of w.disks) {
      const outcome = await this.deleteTarget(d.agent, d.iqn, opts.deleteDisk, opts.ignoreMissingTarget);
      await this.ledger.write(async (trx) => {
        await this.workers.removeDisk(trx, w.worker_id, d.os);
        await this.ops.append({ op: 'agent.delete_disk', worker_id: w.worker_id, agent: d.agent, iqn: d.iqn, os: d.os, delete_file: opts.deleteDisk, target: outcome, client: ctx.client }, trx);
      });
    }
  }

  // ---- §10: ledger vs reality -----------------------------------------------------------

  async status(workerIdInput: string): Promise<WorkerStatus> {
    const workerId = requireWorkerId(workerIdInput);
    const worker = await this.view(workerId);
    const lines = await this.dhcp.read();
    const line = lines.find((l) => l.hostname === worker.hostname);
    const byAgent = new Map<string, Promise<AgentTarget[]>>();
    const lunsOf = (agentId: string) => {
      let p = byAgent.get(agentId);
      if (!p) {
        p = this.listLuns(agentId);
        byAgent.set(agentId, p);
      }
      return p;
    };
    const check = async (agentId: string, iqn: string) => {
      try {
        const luns = await lunsOf(agentId);
        const t = luns.find((l) => l.iqn === iqn);
        return t ? { exists: true, target: { iqn: t.iqn, luns: t.luns.map((l) => ({ backing: l.backing })) } } : { exists: false, target: null };
      } catch (err) {
        return { exists: null, target: null, error: (err as Error).message };
      }
    };
    const disks = await Promise.all(worker.disks.map(async (d) => ({ os: d.os, ...(await check(d.agent, d.iqn)) })));
    const cd = worker.cd ? await check(worker.cd.agent, worker.cd.iqn) : null;
    return {
      worker,
      actual: {
        dnsmasq: line ? { hostname: line.hostname, mac: line.mac } : null,
        disks,
        cd,
      },
    };
  }

  private async view(workerId: string) {
    const w = await this.workers.get(this.db, workerId);
    if (!w) throw new AppError('worker_not_found', `worker not found: ${workerId}`);
    const d = await this.devices.boundTo(this.db, workerId);
    return workerView(w, d?.mac ?? null);
  }
}
