import { type ChangeFeed, type ChapCredential, isChapSecret, isChapUser } from '@ironlens/core';
import { isIqn, isIscsiSep, isIscsiServer, isMenuItem, isMenuTimeout, isValidHostname, isValidMac, normalizeMac } from '../domain/identifiers';
import type { BootVars } from '../api/schemas';
import type { Device, Disk, WorkerRecord } from '../domain/types';
import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalDb, MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import type { RenderRefusal } from './render-guard.service';

/** The iPXE variables of one machine; `{}` means "no per-worker vars". */
/** The variables of a `/boot-vars` answer (the API's schema: its `format=json` form). */
export type { BootVars };

export interface DataPlane {
  iscsi_server: string;
  iscsi_sep: string;
}

/** Where a disk's agent serves iSCSI, and which root-path separator its backend wants. */
export interface DataPlaneLookup {
  dataPlane(agentId: string): Promise<DataPlane | null>;
}

export const STGT_SEP = ':::1:';
export const LIO_SEP = '::::';

export interface BootVarsAnswer {
  vars: BootVars;
  /** Who the vars are for, for the script's comment line. */
  subject: string | null;
  /**
   * Why the machine is told to reboot, for a comment line of the script (a closed set, so the
   * text is ours): `pooled`, a device in the pool bound to no worker yet; `no_disk`, a worker
   * with no system disk yet. Never in the JSON form.
   */
  why?: RebootReason;
  /**
   * The worker's iSCSI CHAP account, rendered as iPXE's `username` / `password` settings
   * (issue 13). Only in the script answered to the worker's bound MAC; never in the JSON form.
   */
  chap?: ChapCredential;
}

/** Why a machine is told to reboot (see {@link BootVarsAnswer.why}). */
export type RebootReason = 'pooled' | 'no_disk';

const REBOOT_REASON_TEXT: Record<RebootReason, (subject: string) => string> = {
  pooled: (s) => `# ${s} is in the device pool, bound to no worker yet: it reboots until it is bound`,
  no_disk: (s) => `# ${s} has no system disk yet`,
};

/** Where a worker's CHAP account is read (`ChapRepository`). */
export interface ChapLookup {
  get(db: MetalDb, workerId: string): Promise<ChapCredential | null>;
}

/** An answer with its iPXE text, rendered once and shared by every request it serves. */
interface Rendered {
  readonly vars: Readonly<BootVars>;
  readonly subject: string | null;
  readonly script: string;
  /**
   * The same answer for a request from the worker's bound MAC: the script with the worker's
   * CHAP account. Absent when the worker has none (the script is the same for both).
   */
  readonly bound?: Rendered;
}

/** A worker's projection, valid while its agent's data-plane answer is the same object. */
interface Projection {
  readonly answer: Rendered;
  readonly agent: string | null;
  readonly dataPlane: DataPlane | null;
}

interface WorkerEntry {
  readonly worker: WorkerRecord | null;
  /** The worker's CHAP account, read with the worker (cleared with it by `invalidate()`). */
  readonly chap: ChapCredential | null;
  projection?: Projection;
}

/** A data-plane answer, re-asked after `DATA_PLANE_TTL_MS`; `value` keeps its identity while unchanged. */
interface DataPlaneMemo {
  value: DataPlane | null;
  expires: number;
  pending?: Promise<DataPlane | null>;
}

/** The change-feed topics the boot-vars cache publishes and follows. */
export const BOOT_VARS_TOPICS = { ledger: 'metal.ledger', device: 'metal.device' } as const;

const MAX_CACHED = 200_000;
/** Longer request values (no hostname, worker id or MAC is) are answered but not remembered. */
const MAX_KEY_LENGTH = 64;

/**
 * How long an agent's data-plane answer is reused. Agent writes clear it at once (they
 * call `invalidate()`); the TTL only bounds how late `/boot-vars` follows what the agent
 * service derives without a ledger write (an untagged agent's backend, from its
 * capabilities, which that service itself caches for a minute). Default is 250 ms.
 */
export const DATA_PLANE_TTL_MS = 250;

const NO_VARS_SCRIPT = '#!ipxe\n# no per-worker boot vars found\n';
const UNREADABLE_CHAP: ChapCredential = Object.freeze({ user: '', password: '' });
const NOTHING: Rendered = Object.freeze({ vars: Object.freeze({}), subject: null, script: NO_VARS_SCRIPT });


/** `f(v)` at once when `v` is at hand, after it settles otherwise: cache hits never wait a tick. */
function then<T, R>(v: T | Promise<T>, f: (v: T) => R | Promise<R>): R | Promise<R> {
  return v instanceof Promise ? v.then(f) : f(v);
}

const sameDataPlane = (a: DataPlane | null, b: DataPlane | null) => a === b || (!!a && !!b && a.iscsi_server === b.iscsi_server && a.iscsi_sep === b.iscsi_sep);

/**
 * `/boot-vars`: a read-only projection of the ledger (seed §5). Lookups go through a
 * read-through cache that every write of the ledger clears, so a boot storm reads the
 * store once per machine; the projected answer and its iPXE text are kept with the
 * cached worker, so a repeated request renders nothing. Nothing here writes.
 *
 * A lookup that started before an `invalidate()` answers its own request but is not
 * kept (a generation counter), so a write is never hidden by a read that raced it.
 *
 * A worker's CHAP account (issue 13) is rendered only into the answer for a request whose
 * MAC is the device bound to that worker (`bound`); a request naming the hostname alone
 * gets the same variables without it, and the JSON form never carries it.
 *
 * Several replicas: `invalidate()` and `forgetDevice()` also publish the change on the change
 * feed (`metal.ledger`, `metal.device:<mac>`), and the other replicas clear the same entries
 * with `applyChange()` (wired in `MetalReplication`), within the feed's delay (milliseconds).
 */
export class BootVarsService {
  private readonly workerByName = new Map<string, WorkerEntry>();
  private readonly deviceByMac = new Map<string, Device | null>();
  private readonly dataPlaneByAgent = new Map<string, DataPlaneMemo>();
  private readonly macBySpelling = new Map<string, string | null>();
  private generation = 0;
  /** Told when a worker's bound device got its answer (issue 24: the boot timeline). */
  private boundListener: ((workerId: string) => void) | null = null;

  constructor(
    private readonly store: MetalStore,
    private readonly workers: WorkerRepository,
    private readonly devices: DeviceRepository,
    private readonly dataPlane: DataPlaneLookup,
    private readonly timeouts: { bootMenuTimeout: number; autoBootTimeout: number },
    /** Told about a record the renderer refused (a value outside its grammar). Default: nothing. */
    private readonly onRefused: (r: RenderRefusal) => void = () => {},
    /** Told, per answer, whether it came from the cache alone (`true`) or read the store or an agent first. Default: nothing. */
    private readonly onLookup: (hit: boolean) => void = () => {},
    /** Where workers' CHAP accounts are read. Default: nowhere (no CHAP lines). */
    private readonly chap?: ChapLookup,
    /** Where the writes of this process are told to the other replicas. Default: nobody. */
    private readonly changes: Pick<ChangeFeed, 'publish'> | null = null,
  ) {}

  /**
   * The answer and its script. A record with a value outside its grammar (it got into the
   * store some other way than the API) is not rendered: the machine gets "no vars", and the
   * refusal is reported once per projection (the answer is cached with the record).
   */
  private rendered(vars: BootVars, subject: string | null, chap?: ChapCredential | null, why?: RebootReason): Rendered {
    const fields = refusedBootVars({ vars, subject });
    if (fields.length) {
      this.onRefused({ subject: String(subject ?? 'unknown').slice(0, 200), fields });
      return NOTHING;
    }
    const frozen = Object.freeze(vars);
    const script = renderBootVarsScript({ vars, subject, why });
    if (!chap) return Object.freeze({ vars: frozen, subject, script });
    // The account is checked like every other value; a bad one skips the bound answer (named by field, never by value).
    const chapFields = refusedBootVars({ vars, subject, chap });
    const bound = chapFields.length ? NOTHING : Object.freeze({ vars: frozen, subject, script: renderBootVarsScript({ vars, subject, chap, why }) });
    if (chapFields.length) this.onRefused({ subject: String(subject ?? 'unknown').slice(0, 200), fields: chapFields });
    return Object.freeze({ vars: frozen, subject, script, bound });
  }

  /** Sets who is told, per answer to a worker's bound device, the worker's id (one listener). */
  onBoundAnswer(listener: (workerId: string) => void): void {
    this.boundListener = listener;
  }

  /** Forget every cached lookup; called after each write of the ledger (and told to the other replicas). */
  invalidate(): void {
    this.clear();
    this.changes?.publish(BOOT_VARS_TOPICS.ledger);
  }

  /**
   * Forget one device only: a new device entering the pool changes no worker's answer, so
   * a first-boot storm of new machines keeps the rest of the cache. Reads in flight are
   * not kept (the generation moves), as with `invalidate()`.
   */
  forgetDevice(mac: string): void {
    this.clearDevice(mac);
    this.changes?.publish(BOOT_VARS_TOPICS.device, mac);
  }

  /**
   * Another replica's change (`topic`, `key` from the change feed): clears what it touches,
   * publishes nothing. A null key, or a topic not known here, clears everything.
   */
  applyChange(topic: string, key: string | null): void {
    if (topic === BOOT_VARS_TOPICS.device && key !== null) this.clearDevice(key);
    else this.clear();
  }

  /** Clears everything without telling anyone (after the change feed reconnected). */
  clear(): void {
    this.generation++;
    this.workerByName.clear();
    this.deviceByMac.clear();
    this.dataPlaneByAgent.clear();
  }

  private clearDevice(mac: string): void {
    this.generation++;
    this.deviceByMac.delete(mac);
  }

  private get db(): MetalDb {
    return this.store.db;
  }

  /** `normalizeMac`, remembered per spelling of MAC length (a pure function: nothing to invalidate). */
  private normalizedMac(input: string): string | null {
    if (input.length > MAX_KEY_LENGTH) return normalizeMac(input);
    let mac = this.macBySpelling.get(input);
    if (mac === undefined) {
      mac = normalizeMac(input);
      if (this.macBySpelling.size >= MAX_CACHED) this.macBySpelling.clear();
      this.macBySpelling.set(input, mac);
    }
    return mac;
  }

  private worker(name: string): WorkerEntry | Promise<WorkerEntry> {
    return this.workerByName.get(name) ?? this.loadWorker(name);
  }

  private async loadWorker(name: string): Promise<WorkerEntry> {
    const generation = this.generation;
    const worker = await this.workers.findByHostname(this.db, name);
    // An account that cannot be opened (another key, a damaged row) is not a reason to fail the
    // request: it reads as an empty one, which the renderer refuses (the bound answer is skipped).
    const chap = worker && this.chap ? await this.chap.get(this.db, worker.worker_id).catch(() => UNREADABLE_CHAP) : null;
    const entry: WorkerEntry = { worker, chap };
    if (generation === this.generation && name.length <= MAX_KEY_LENGTH) {
      if (this.workerByName.size >= MAX_CACHED) this.workerByName.clear();
      this.workerByName.set(name, entry);
    }
    return entry;
  }

  private device(mac: string): Device | null | Promise<Device | null> {
    const hit = this.deviceByMac.get(mac);
    return hit !== undefined ? hit : this.loadDevice(mac);
  }

  private async loadDevice(mac: string): Promise<Device | null> {
    const generation = this.generation;
    const d = await this.devices.get(this.db, mac);
    if (generation === this.generation) {
      if (this.deviceByMac.size >= MAX_CACHED) this.deviceByMac.clear();
      this.deviceByMac.set(mac, d);
    }
    return d;
  }

  /**
   * The agent's data plane, asked at most once per TTL; concurrent askers share one
   * lookup. `invalidate()` drops the memo, so a lookup in flight is never kept past it.
   */
  private agentDataPlane(agent: string): DataPlane | null | Promise<DataPlane | null> {
    const memo = this.dataPlaneByAgent.get(agent);
    if (memo) {
      if (memo.expires > Date.now()) return memo.value;
      if (memo.pending) return memo.pending;
    }
    const next: DataPlaneMemo = { value: memo?.value ?? null, expires: 0 };
    next.pending = this.dataPlane.dataPlane(agent).then(
      (value) => {
        next.pending = undefined;
        // Unchanged: keep the old object, so the projections built on it stay valid.
        if (!memo || !sameDataPlane(memo.value, value)) next.value = value;
        next.expires = Date.now() + DATA_PLANE_TTL_MS;
        return next.value;
      },
      (err: unknown) => {
        next.pending = undefined;
        if (this.dataPlaneByAgent.get(agent) === next) this.dataPlaneByAgent.delete(agent);
        throw err;
      },
    );
    this.dataPlaneByAgent.set(agent, next);
    return next.pending;
  }

  /**
   * hostname → worker (by hostname or id); else mac → device → bound worker.
   * With a MAC, the device must be bound to that worker (anti-spoofing); a pooled
   * device gets the reboot loop; revoked, unknown or spoofed get nothing.
   */
  async resolve(q: { hostname?: string; mac?: string }): Promise<BootVarsAnswer> {
    const a = await this.answer(q);
    return { vars: { ...a.vars }, subject: a.subject };
  }

  /**
   * The same decision as `resolve`, as the iPXE script (`#!ipxe` and `set` lines): a plain
   * string when every lookup it needs is cached, so a boot storm's requests never wait.
   */
  script(q: { hostname?: string; mac?: string }): string | Promise<string> {
    return then(this.answer(q), (a) => a.script);
  }

  /**
   * Told the MAC of every `/boot-vars` request that names one (the proof of boot, issue 21,
   * looks it up in its set of pending MACs). Set once by the wiring. Default: nobody.
   */
  onSighting: ((mac: string) => void) | undefined;

  private answer(q: { hostname?: string; mac?: string }): Rendered | Promise<Rendered> {
    const macGiven = q.mac !== undefined && q.mac.trim() !== '';
    const mac = macGiven ? this.normalizedMac(q.mac as string) : null;
    if (mac && this.onSighting) this.onSighting(mac);
    const a = macGiven && !mac ? NOTHING : this.lookup(q.hostname, mac);
    this.onLookup(!(a instanceof Promise));
    return a;
  }

  private lookup(name: string | undefined, mac: string | null): Rendered | Promise<Rendered> {
    const hostname = name?.trim().toLowerCase() || undefined;
    if (!hostname) return this.byMac(mac);
    return then(this.worker(hostname), (entry) => this.byName(entry, mac));
  }

  /** A worker named by the request; with a MAC, only if that device is bound to it. */
  private byName(entry: WorkerEntry, mac: string | null): Rendered | Promise<Rendered> {
    const w = entry.worker;
    if (!w) return this.byMac(mac);
    // The hostname alone is a claim anyone can make: the answer without the CHAP account.
    if (!mac) return this.project(entry, false);
    return then(this.device(mac), (d) => (d?.state === 'bound' && d.bound_worker_id === w.worker_id ? this.project(entry, true) : NOTHING));
  }

  /** No worker by that name: the device's bound worker, the reboot loop, or nothing. */
  private byMac(mac: string | null): Rendered | Promise<Rendered> {
    if (!mac) return NOTHING;
    return then(this.device(mac), (d) => {
      if (!d) return NOTHING;
      if (d.state === 'bound' && d.bound_worker_id) return then(this.worker(d.bound_worker_id), (w) => (w.worker ? this.project(w, true) : NOTHING));
      if (d.state === 'pooled') return this.rendered({ menu_default: 'reboot', menu_timeout: this.timeouts.autoBootTimeout }, mac, null, 'pooled');
      return NOTHING;
    });
  }

  /**
   * The worker's vars and script; reused while its agent's data-plane answer is unchanged.
   * `boundMac`: the request came from the worker's bound device, so the script carries the
   * worker's CHAP account.
   */
  private project(entry: WorkerEntry, boundMac: boolean): Rendered | Promise<Rendered> {
    const w = entry.worker as WorkerRecord;
    if (boundMac) this.boundListener?.(w.worker_id);
    const pick = (r: Rendered) => (boundMac && r.bound ? r.bound : r);
    const disk = (w.default_os && w.disks.find((d) => d.os === w.default_os)) || w.disks[0];
    if (!disk) return pick(this.projectWith(entry, undefined, null));
    return then(this.agentDataPlane(disk.agent), (dp) => pick(this.projectWith(entry, disk, dp)));
  }

  private projectWith(entry: WorkerEntry, disk: Disk | undefined, dp: DataPlane | null): Rendered {
    const p = entry.projection;
    const agent = disk ? disk.agent : null;
    if (p && p.agent === agent && p.dataPlane === dp) return p.answer;
    const w = entry.worker as WorkerRecord;
    const vars: BootVars = {};
    if (disk) {
      const i = disk.iqn.lastIndexOf(':');
      vars.base_iqn = i > 0 ? disk.iqn.slice(0, i) : disk.iqn;
      if (dp) {
        vars.iscsi_server = dp.iscsi_server;
        vars.iscsi_sep = dp.iscsi_sep;
      }
    }
    const menuDefault = w.default_os ?? w.boot.menu_default ?? 'reboot';
    vars.menu_default = menuDefault;
    vars.menu_timeout = menuDefault === 'reboot' ? this.timeouts.autoBootTimeout : (w.boot.menu_timeout ?? this.timeouts.bootMenuTimeout);
    // No disk, no iSCSI login: the account is only rendered beside a disk to log in to.
    const why = !disk && menuDefault === 'reboot' ? 'no_disk' : undefined;
    const answer = this.rendered(vars, w.hostname, disk ? entry.chap : null, why);
    entry.projection = { answer, agent, dataPlane: dp };
    return answer;
  }
}

/** The grammar of each value the script prints; `subject` goes into its comment line. */
const BOOT_VAR_GRAMMAR: Record<keyof BootVars, (v: unknown) => boolean> = {
  base_iqn: isIqn,
  iscsi_server: isIscsiServer,
  iscsi_sep: isIscsiSep,
  menu_default: isMenuItem,
  menu_timeout: isMenuTimeout,
};

/** The fields of an answer outside their grammar (`subject`: a hostname or a MAC); empty when it may be rendered. */
export function refusedBootVars(a: BootVarsAnswer): string[] {
  const out: string[] = [];
  if (a.subject !== null && !isValidHostname(a.subject) && !isValidMac(a.subject)) out.push('subject');
  for (const [k, v] of Object.entries(a.vars)) {
    const ok = BOOT_VAR_GRAMMAR[k as keyof BootVars];
    if (v !== undefined && !ok?.(v)) out.push(k);
  }
  if (a.why !== undefined && !Object.hasOwn(REBOOT_REASON_TEXT, a.why)) out.push('why');
  if (a.chap !== undefined) {
    if (!isChapUser(a.chap.user)) out.push('chap_user');
    if (!isChapSecret(a.chap.password)) out.push('chap_password');
  }
  return out;
}

/**
 * The iPXE script form: `set` lines iPXE can chain. An answer with any value outside its
 * grammar renders as "no vars" (never a line of its own: no newline, no command injection).
 */
export function renderBootVarsScript(a: BootVarsAnswer): string {
  const v = a.vars;
  if (Object.keys(v).length === 0 || refusedBootVars(a).length > 0) return NO_VARS_SCRIPT;
  const lines = ['#!ipxe', `# boot vars for ${a.subject ?? 'unknown'}`];
  if (a.why !== undefined && a.subject !== null) lines.push(REBOOT_REASON_TEXT[a.why](a.subject));
  if (v.base_iqn !== undefined) lines.push(`set base-iqn ${v.base_iqn}`);
  if (v.iscsi_server !== undefined) lines.push(`set iscsi-server ${v.iscsi_server}`);
  if (v.iscsi_sep !== undefined) lines.push(`set iscsi-sep ${v.iscsi_sep}`);
  // iPXE answers an iSCSI target's CHAP challenge with its `username` and `password` settings.
  if (a.chap !== undefined) lines.push(`set username ${a.chap.user}`, `set password ${a.chap.password}`);
  if (v.menu_default !== undefined) lines.push(`set menu-default ${v.menu_default}`);
  if (v.menu_timeout !== undefined) lines.push(`set menu-timeout ${v.menu_timeout}`);
  return `${lines.join('\n')}\n`;
}
