import { basename } from 'node:path';
import { AppError, echo } from '@ironlens/core';
import type { DiskImages } from '../adapters/disk-images.adapter';
import type { IscsiTargets, Target, TargetSession } from '../adapters/iscsi-targets';
import {
  checkChap,
  checkChapList,
  checkDiskFileName,
  checkInitiator,
  checkIqn,
  defaultDiskFileName,
  derivedCdIqn,
  derivedDiskIqn,
  isDiskFileName,
  isIqn,
  isIsoFileName,
  isMasterName,
  isPlainFileName,
  parseSize,
} from '../domain/names';
import type { AgentCapabilities, AgentTarget, CdCreated, DiskCreated, LunDeleted, ScanResult } from '../api/schemas';
import type { LunIndex, LunIndexEntry } from '../repositories/lun-index.repository';
import { Mutex } from '../util/mutex';

export interface LunServiceOptions {
  /** The IQN every target of this agent starts with (plus `:`). */
  baseIqn: string;
  /** Whether this agent serves CD (ISO) targets. */
  cdRole: boolean;
  targets: IscsiTargets;
  images: DiskImages;
  index: LunIndex;
  /**
   * Whether a scan may make a target open to every initiator: for a file whose index entry
   * records no initiator, or a file the index does not know. Default is `false`: such a file
   * is not exported (skipped, with the reason), since a name found on disk admits nobody.
   */
  scanOpen?: boolean;
  /** The clock of the sessions' `first_seen_at`. Default is `Date.now`. */
  now?: () => number;
}

/** A target as `GET /luns` shows it (the API's schema). */
export type LunTarget = AgentTarget;

export interface CreateDiskRequest {
  iqn: unknown;
  filename?: unknown;
  master?: unknown;
  size?: unknown;
  /** The only initiator (IQN) the target admits; absent: every initiator. */
  initiator?: unknown;
  /** `{user, password}`: the CHAP account the initiator must log in with (needs `initiator`). */
  chap?: unknown;
}

export type { DiskCreated } from '../api/schemas';

export interface CreateCdRequest {
  iso: unknown;
  iqn?: unknown;
  /** The only initiator (IQN) the target admits; absent: every initiator. */
  initiator?: unknown;
  /** `{user, password}`: the CHAP account the initiator must log in with (needs `initiator`). */
  chap?: unknown;
}

export type { CdCreated } from '../api/schemas';

export interface ScanRequest {
  /**
   * CHAP accounts (`[{user, password}]`) the control plane re-sends: a target recorded with a
   * CHAP user is rebuilt only with that user's credential, since the agent keeps no secret.
   */
  chap?: unknown;
}

export interface DeleteRequest {
  iqn: unknown;
  deleteFile: boolean;
  ignoreMissing: boolean;
}

export type Deleted = LunDeleted;

export type { ScanResult } from '../api/schemas';

export type Capabilities = AgentCapabilities;

const present = (v: unknown) => v !== undefined && v !== null && v !== '';

/**
 * The rules of the agent's LUNs: names, the file-then-target order of creation and its
 * rollback, what a delete may remove, and the scan that rebuilds targets from the image
 * files ("the file is the truth"). Backend changes and the checks before them run under
 * one lock; the slow part of a create (cloning) runs outside it, with its IQN and file
 * name reserved so that no other request or scan can take them meanwhile.
 */
export class LunService {
  private readonly lock = new Mutex();
  private readonly reservedIqns = new Set<string>();
  private readonly reservedFiles = new Set<string>();
  private readonly sessionsSeen = new Map<string, SessionSeen>();

  constructor(private readonly opts: LunServiceOptions) {}

  get cdRole(): boolean {
    return this.opts.cdRole;
  }

  async capabilities(): Promise<Capabilities> {
    const { targets, images, cdRole, baseIqn } = this.opts;
    return {
      backend: targets.backend,
      fs_type: await images.fsType(),
      cd: cdRole,
      persistent: targets.persistent,
      base_iqn: baseIqn,
      clone: 'reflink (FICLONE) -> copy fallback',
      empty_disk: 'truncate (sparse)',
    };
  }

  async list(): Promise<LunTarget[]> {
    const targets = await this.opts.targets.list();
    this.noteSessions(targets);
    return targets.map((t) => toLunTarget(t, this.sessionsOf(t.iqn)));
  }

  /**
   * Looks at the targets' sessions (what `/luns` does, and the agent's poll every few seconds),
   * so that a login is noticed even when nobody reads `/luns` while it is up.
   */
  async pollSessions(): Promise<void> {
    this.noteSessions(await this.opts.targets.list());
  }

  /**
   * When each session (target, I_T nexus, initiator) was first seen, and when it was seen gone
   * (kept for `ENDED_KEEP_MS`, so that a boot loader's login that Linux replaced is still told).
   * A new login gets a new nexus from tgtd, so it is seen anew.
   */
  private noteSessions(targets: Target[]): void {
    const nowMs = this.opts.now?.() ?? Date.now();
    const now = new Date(nowMs).toISOString();
    const live = new Set<string>();
    for (const t of targets) {
      for (const s of t.sessions ?? []) {
        const key = sessionKey(t.iqn, s);
        live.add(key);
        const known = this.sessionsSeen.get(key);
        if (!known || known.ended_at !== null) this.sessionsSeen.set(key, { iqn: t.iqn, initiator: s.initiator, address: s.address, first_seen_at: now, ended_at: null });
      }
    }
    for (const [key, rec] of this.sessionsSeen) {
      if (rec.ended_at === null && !live.has(key)) rec.ended_at = now;
      else if (rec.ended_at !== null && nowMs - Date.parse(rec.ended_at) > ENDED_KEEP_MS) this.sessionsSeen.delete(key);
    }
    // A bound on memory whatever initiators do: the oldest ended sessions go first.
    if (this.sessionsSeen.size > MAX_SESSIONS) {
      const ended = [...this.sessionsSeen].filter(([, r]) => r.ended_at !== null).sort((x, y) => x[1].first_seen_at.localeCompare(y[1].first_seen_at));
      for (const [key] of ended.slice(0, this.sessionsSeen.size - MAX_SESSIONS)) this.sessionsSeen.delete(key);
    }
  }

  private sessionsOf(iqn: string): SessionSeen[] {
    return [...this.sessionsSeen.values()].filter((r) => r.iqn === iqn).sort((x, y) => x.first_seen_at.localeCompare(y.first_seen_at));
  }

  async createDisk(req: CreateDiskRequest): Promise<DiskCreated> {
    const { baseIqn, images, targets, index } = this.opts;
    const suffix = checkIqn(req.iqn, baseIqn);
    const iqn = req.iqn as string;
    if (present(req.master) === present(req.size)) {
      throw new AppError('master_or_size_required', 'exactly one of master and size is required');
    }
    const size = present(req.size) ? parseSize(req.size) : undefined;
    if (present(req.filename) && typeof req.filename !== 'string') throw new AppError('filename_invalid', 'filename must be a string');
    const initiator = checkInitiator(req.initiator);
    const chap = checkChap(req.chap, initiator);
    const filename = present(req.filename) ? (req.filename as string) : defaultDiskFileName(suffix);
    // The grammar first: a name is judged before the file system is asked anything.
    checkDiskFileName(filename);
    const backing = images.resolve(filename);
    let masterPath: string | undefined;
    if (present(req.master)) {
      if (typeof req.master !== 'string') throw new AppError('filename_invalid', 'master must be a string');
      masterPath = images.resolve(req.master);
    }

    await this.lock.run(async () => {
      if (this.reservedIqns.has(iqn) || (await targets.list()).some((t) => t.iqn === iqn)) {
        throw new AppError('iqn_exists', `iqn already exists: ${iqn}`);
      }
      if (this.reservedFiles.has(filename) || (await images.exists(backing))) {
        throw new AppError('file_exists', `backing file already exists: ${filename}`);
      }
      if (masterPath && !(await images.fileStat(masterPath))) {
        throw new AppError('file_not_found', `master not found: ${basename(masterPath)}`);
      }
      this.reservedIqns.add(iqn);
      this.reservedFiles.add(filename);
    });

    try {
      const clone = masterPath ? await images.clone(masterPath, backing) : null;
      if (size !== undefined) await images.createSparse(backing, size);
      try {
        await this.lock.run(async () => {
          await targets.createDisk(iqn, backing, { initiator, chap });
          try {
            await index.put(iqn, { filename, cd: false, initiator, chap_user: chap?.user });
          } catch (err) {
            await targets.delete(iqn).catch(() => {});
            throw err;
          }
        });
      } catch (err) {
        // The target could not be made: no orphan image file either.
        await images.remove(backing);
        throw err;
      }
      const made = await images.fileStat(backing);
      return { iqn, backing, filename, clone, size: made?.size ?? size ?? 0, ...(initiator ? { initiator } : {}), ...(chap ? { chap_user: chap.user } : {}) };
    } finally {
      this.reservedIqns.delete(iqn);
      this.reservedFiles.delete(filename);
    }
  }

  async createCd(req: CreateCdRequest): Promise<CdCreated> {
    const { baseIqn, images, targets, index } = this.opts;
    if (!this.opts.cdRole) throw new AppError('cd_role_disabled', 'agent is not configured for cd role');
    if (typeof req.iso !== 'string' || req.iso === '') throw new AppError('filename_invalid', 'iso must be a file name');
    const iso = req.iso;
    if (!isPlainFileName(iso) || !isIsoFileName(iso)) {
      throw new AppError('filename_invalid', `invalid iso ${echo(iso)}: one file name ending in .iso`);
    }
    const backing = images.resolve(iso);
    const iqn = present(req.iqn) ? req.iqn : derivedCdIqn(baseIqn, iso);
    checkIqn(iqn, baseIqn);
    const name = iqn as string;
    const initiator = checkInitiator(req.initiator);
    const chap = checkChap(req.chap, initiator);

    return this.lock.run(async () => {
      if (!(await images.fileStat(backing))) throw new AppError('file_not_found', `iso not found: ${iso}`);
      if (this.reservedIqns.has(name) || (await targets.list()).some((t) => t.iqn === name)) {
        throw new AppError('iqn_exists', `iqn already exists: ${name}`);
      }
      await targets.createCd(name, backing, { initiator, chap });
      try {
        await index.put(name, { filename: iso, cd: true, initiator, chap_user: chap?.user });
      } catch (err) {
        await targets.delete(name).catch(() => {});
        throw err;
      }
      return { iqn: name, backing, filename: iso, ...(initiator ? { initiator } : {}), ...(chap ? { chap_user: chap.user } : {}) };
    });
  }

  async delete(req: DeleteRequest): Promise<Deleted> {
    const { baseIqn, images, targets, index } = this.opts;
    if (!isIqn(req.iqn)) throw new AppError('iqn_invalid', `invalid iqn ${echo(req.iqn)}`);
    const iqn = req.iqn;

    return this.lock.run(async () => {
      const all = await targets.list();
      const target = all.find((t) => t.iqn === iqn);
      const entry = (await index.read()).get(iqn);
      const usedElsewhere = new Set(all.filter((t) => t.iqn !== iqn).flatMap((t) => t.luns.map((l) => l.backing)));
      const removable = (path: string) => images.holds(path) && !isMasterName(basename(path)) && !usedElsewhere.has(path);

      if (!target) {
        if (!req.ignoreMissing) throw new AppError('iqn_not_found', 'iqn not found');
        let fileDeleted = false;
        if (req.deleteFile) {
          const name = entry?.filename ?? (iqn.startsWith(`${baseIqn}:`) ? defaultDiskFileName(iqn.slice(baseIqn.length + 1)) : undefined);
          const path = name && isPlainFileName(name) ? images.pathOf(name) : undefined;
          if (path && removable(path) && (await images.exists(path))) {
            await images.remove(path);
            fileDeleted = true;
          }
        }
        if (entry) await index.remove(iqn);
        return { deleted: iqn, delete_file: req.deleteFile, file_deleted: fileDeleted, ignored_missing: true };
      }

      await targets.delete(iqn);
      let fileDeleted = false;
      if (req.deleteFile) {
        for (const lun of target.luns) {
          if (!removable(lun.backing)) continue;
          await images.remove(lun.backing);
          fileDeleted = true;
        }
      }
      // A kept disk file keeps its IQN for the next scan; a CD target shares its ISO, so it goes.
      if (entry && (req.deleteFile || entry.cd || target.luns.some((l) => l.cd))) await index.remove(iqn);
      return { deleted: iqn, delete_file: req.deleteFile, file_deleted: fileDeleted };
    });
  }

  /**
   * Makes a target for every `.img` / `.iso` in DISK_DIR that has none (masters, work
   * files, links that lead outside DISK_DIR or to a master left out): under the IQN recorded
   * for the file, with the initiator recorded for it. A file without a recorded initiator
   * (or unknown to the index, then under the IQN its name gives) is exported open to all
   * only with `scanOpen`; otherwise it is skipped. A file recorded with a CHAP user is
   * rebuilt only when the request carries that user's credential (the control plane re-sends
   * it: the agent keeps no secret, so its own start-up scan skips such a target rather than
   * leave it guarded by the initiator name alone). Index entries whose file is gone are dropped.
   */
  scan(req: ScanRequest = {}): Promise<ScanResult> {
    const { baseIqn, images, targets, index } = this.opts;
    const credentials = checkChapList(req.chap);
    return this.lock.run(async () => {
      const result: ScanResult = { created: [], skipped: [] };
      const files = await images.list();
      const existing = new Set<string>();
      const exportedBy = new Map<string, string>();
      for (const t of await targets.list()) {
        existing.add(t.iqn);
        for (const l of t.luns) exportedBy.set(l.backing, t.iqn);
      }
      const recorded = await index.read();
      const byFile = new Map<string, [string, LunIndexEntry][]>();
      for (const [iqn, e] of recorded) byFile.set(e.filename, [...(byFile.get(e.filename) ?? []), [iqn, e]]);
      let indexChanged = false;
      for (const name of await images.outsideLinks()) {
        if (isDiskFileName(name) || isIsoFileName(name)) result.skipped.push({ iqn: null, filename: name, reason: 'leads outside the image directory' });
      }

      for (const file of files) {
        const name = file.name;
        const cd = isIsoFileName(name);
        if (isMasterName(name) || (!cd && !isDiskFileName(name))) continue;
        if (this.reservedFiles.has(name)) {
          result.skipped.push({ iqn: null, filename: name, reason: 'being created' });
          continue;
        }
        const path = images.pathOf(name);
        // The same rule as a request's file name: nothing that leads outside DISK_DIR, and
        // no second name for a master (a link to it would export the master read-write).
        const real = images.realInside(name);
        if (real === undefined) {
          result.skipped.push({ iqn: null, filename: name, reason: 'leads outside the image directory' });
          continue;
        }
        if (isMasterName(basename(real))) {
          result.skipped.push({ iqn: null, filename: name, reason: 'is a link to a master' });
          continue;
        }
        const entries = byFile.get(name);
        const candidates: [string, LunIndexEntry][] = entries ?? [[cd ? derivedCdIqn(baseIqn, name) : derivedDiskIqn(baseIqn, name), { filename: name, cd }]];
        for (const [iqn, entry] of candidates) {
          const skip = (reason: string, which: string | null = iqn) => result.skipped.push({ iqn: which, filename: name, reason });
          const other = exportedBy.get(path);
          if (existing.has(iqn)) skip('target exists');
          else if (other && (!entry.cd || !entries)) skip(`already exported by ${other}`, other);
          else if (!isIqn(iqn)) skip('no valid iqn can be derived from the file name', null);
          else if (entry.cd && !this.opts.cdRole) skip('agent is not configured for cd role');
          // A hand-edited index must not turn into an open target, nor reach a command line.
          else if (entry.initiator !== undefined && !isIqn(entry.initiator)) skip('the recorded initiator is not a valid IQN');
          // A name found on disk is no credential: without a recorded initiator, nobody is admitted.
          else if (entry.initiator === undefined && !this.opts.scanOpen) skip('no recorded initiator: not exported to every initiator (IRONLENS_AGENT_SCAN_OPEN)');
          else if (entry.chap_user !== undefined && (entry.initiator === undefined || !credentials.has(entry.chap_user))) {
            skip(`no CHAP credential for ${entry.chap_user}: the agent keeps no secret; the control plane re-sends it (POST /agents/<id>/luns/scan)`);
          } else {
            const chap = entry.chap_user === undefined ? undefined : credentials.get(entry.chap_user);
            const opts = { initiator: entry.initiator, chap };
            try {
              if (entry.cd) await targets.createCd(iqn, path, opts);
              else await targets.createDisk(iqn, path, opts);
            } catch (err) {
              skip(`backend failed: ${(err as Error).message}`);
              continue;
            }
            existing.add(iqn);
            exportedBy.set(path, iqn);
            result.created.push({ iqn, cd: entry.cd, filename: name });
            if (!entries) {
              recorded.set(iqn, { filename: name, cd: entry.cd });
              indexChanged = true;
            }
          }
        }
      }

      const onDisk = new Set(files.map((f) => f.name));
      for (const [iqn, e] of recorded) {
        if (!onDisk.has(e.filename) && !existing.has(iqn)) {
          recorded.delete(iqn);
          indexChanged = true;
        }
      }
      if (indexChanged) await index.write(recorded);
      return result;
    });
  }
}

const sessionKey = (iqn: string, s: TargetSession) => `${iqn} ${s.nexus} ${s.initiator}`;

/** How long an ended session is still told (with its `ended_at`). */
const ENDED_KEEP_MS = 10 * 60_000;
/** At most this many sessions are remembered. */
const MAX_SESSIONS = 1024;

interface SessionSeen {
  iqn: string;
  initiator: string;
  address: string | null;
  first_seen_at: string;
  ended_at: string | null;
}

function toLunTarget(t: Target, seen: SessionSeen[]): LunTarget {
  const luns = t.luns.map((l) => ({ backing: l.backing }));
  // Only a target with CHAP accounts says so: the answer of every other target is unchanged.
  const accounts = t.accounts?.length ? { accounts: t.accounts } : {};
  // Likewise only a target somebody is logged in to lists its sessions.
  const sessions = seen.length ? { sessions: seen.map((s) => ({ initiator: s.initiator, address: s.address, first_seen_at: s.first_seen_at, ended_at: s.ended_at })) } : {};
  return t.tid === undefined ? { iqn: t.iqn, luns, acl: t.acl, ...accounts, ...sessions } : { iqn: t.iqn, tid: t.tid, luns, acl: t.acl, ...accounts, ...sessions };
}
