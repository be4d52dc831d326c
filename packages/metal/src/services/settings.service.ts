import { AppError, type ChangeFeed, isoSeconds, type OperationsLog } from '@ironlens/core';
import type { RegistrationWindowView } from '../api/schemas';
import type { SettingsRepository } from '../repositories/settings.repository';
import { lockLedger, type MetalDb, type MetalStore } from '../repositories/tables';

export interface RequestContext {
  /** The client's address, for the operations log. */
  client?: string;
}

/** Where the deadline of an open registration window is kept (ISO timestamp). */
export const AUTO_REGISTER_UNTIL = 'auto_register_until';

/** Where the window `POST /settings/registration-window` opened is kept: `{opened_at, ttl_minutes}`. */
export const REGISTRATION_WINDOW = 'registration_window';

/** The change-feed topic of the runtime settings. */
export const SETTINGS_TOPIC = 'metal.settings';

/** The registration window's bounds (minutes), as the seed control plane's current WebUI knows them. */
export const WINDOW_TTL_MIN = 1;
export const WINDOW_TTL_MAX = 60;

interface WindowRecord {
  opened_at: string;
  ttl_minutes: number;
}

const CLOSED: RegistrationWindowView = { open: false, opened_at: null, ttl_minutes: null, closes_at: null, remaining_seconds: 0 };

function windowRecord(v: unknown): WindowRecord | null {
  if (!v || typeof v !== 'object') return null;
  const r = v as Record<string, unknown>;
  return typeof r.opened_at === 'string' && !Number.isNaN(Date.parse(r.opened_at)) && Number.isInteger(r.ttl_minutes) ? { opened_at: r.opened_at, ttl_minutes: r.ttl_minutes as number } : null;
}

/**
 * Runtime settings: the persisted value wins over the environment's default.
 *
 * Auto-register may have a deadline (`auto_register_until`): the first read after it turns
 * auto-register off (persisted, with a `settings.auto_register` entry, `reason:
 * "window_closed"`). Two things set one:
 * - `IRONLENS_AUTO_REGISTER_WINDOW_MINUTES` > 0: turning auto-register on also stores when it
 *   closes; when it is on without a deadline (the environment's default at a first start), the
 *   window starts at that first read.
 * - `POST /settings/registration-window` (the seed control plane's current WebUI): auto-register
 *   on for 1–60 minutes, whatever it was before, the window kept as `registration_window`. It is
 *   open while that record's deadline has not passed and auto-register is still on; `DELETE`
 *   closes it early (auto-register off). `PUT /settings/auto-register` takes over from a window:
 *   the switch's value is kept, the window record is dropped.
 */
export class SettingsService {
  private autoRegister: boolean | undefined;
  /** Epoch ms at which auto-register closes; undefined: no deadline. */
  private closesAt: number | undefined;

  constructor(
    private readonly store: MetalStore,
    private readonly repo: SettingsRepository,
    private readonly ops: OperationsLog,
    private readonly autoRegisterDefault: boolean,
    private readonly windowMinutes = 0,
    private readonly now: () => number = Date.now,
    /** Where changes are told to the other replicas. Default: nobody. */
    private readonly changes: Pick<ChangeFeed, 'publish'> | null = null,
  ) {}

  private get db(): MetalDb {
    return this.store.db;
  }

  /** Forgets the cached value: the next read goes to the store (another replica changed it). */
  invalidate(): void {
    this.autoRegister = undefined;
    this.closesAt = undefined;
  }

  async getAutoRegister(): Promise<boolean> {
    if (this.autoRegister === undefined) {
      const v = await this.repo.get<boolean>(this.db, 'auto_register');
      this.autoRegister = typeof v === 'boolean' ? v : this.autoRegisterDefault;
      const until = await this.repo.get<string>(this.db, AUTO_REGISTER_UNTIL);
      this.closesAt = typeof until === 'string' && !Number.isNaN(Date.parse(until)) ? Date.parse(until) : undefined;
      if (this.autoRegister && this.windowMinutes > 0 && this.closesAt === undefined) {
        this.closesAt = this.now() + this.windowMinutes * 60_000;
        await this.repo.set(this.db, AUTO_REGISTER_UNTIL, isoSeconds(new Date(this.closesAt)));
        this.changes?.publish(SETTINGS_TOPIC);
      }
    }
    if (this.autoRegister && this.closesAt !== undefined && this.now() >= this.closesAt) {
      await this.write(false, undefined, { reason: 'window_closed' });
    }
    return this.autoRegister;
  }

  /** `GET /settings/auto-register`: `{enabled}`, plus `closes_at` while a registration window runs. */
  async autoRegisterView(): Promise<{ enabled: boolean; closes_at?: string }> {
    const enabled = await this.getAutoRegister();
    return enabled && this.closesAt !== undefined ? { enabled, closes_at: isoSeconds(new Date(this.closesAt)) } : { enabled };
  }

  async setAutoRegister(enabled: boolean, ctx: RequestContext): Promise<boolean> {
    await this.getAutoRegister();
    const closesAt = enabled && this.windowMinutes > 0 ? this.now() + this.windowMinutes * 60_000 : undefined;
    await this.write(enabled, closesAt, { client: ctx.client }, { window: null });
    return enabled;
  }

  /** `PUT /settings/auto-register`: sets it and answers as `autoRegisterView`. */
  async putAutoRegister(enabled: boolean, ctx: RequestContext): Promise<{ enabled: boolean; closes_at?: string }> {
    await this.setAutoRegister(enabled, ctx);
    return this.autoRegisterView();
  }

  /** `GET /settings/registration-window`: the window and how long it has left; closed once its deadline passed or auto-register was switched off. */
  async registrationWindow(): Promise<RegistrationWindowView> {
    const enabled = await this.getAutoRegister();
    const w = windowRecord(await this.repo.get(this.db, REGISTRATION_WINDOW));
    if (!w || !enabled) return CLOSED;
    const closes = Date.parse(w.opened_at) + w.ttl_minutes * 60_000;
    const remaining = Math.floor((closes - this.now()) / 1000);
    if (remaining <= 0) return CLOSED;
    return { open: true, opened_at: w.opened_at, ttl_minutes: w.ttl_minutes, closes_at: isoSeconds(new Date(closes)), remaining_seconds: remaining };
  }

  /**
   * `POST /settings/registration-window`: auto-register on for `ttl_minutes` (1–60, else 400
   * `registration_window_ttl_invalid`); 409 `registration_window_open` while one is open. An
   * expired window's record is overwritten.
   */
  async openRegistrationWindow(ttl: number, ctx: RequestContext): Promise<RegistrationWindowView> {
    if (!Number.isInteger(ttl) || ttl < WINDOW_TTL_MIN || ttl > WINDOW_TTL_MAX) throw new AppError('registration_window_ttl_invalid', `ttl_minutes must be within ${WINDOW_TTL_MIN}-${WINDOW_TTL_MAX}, got ${ttl}`);
    await this.getAutoRegister();
    const opened = Math.floor(this.now() / 1000) * 1000;
    const closesAt = opened + ttl * 60_000;
    const record: WindowRecord = { opened_at: isoSeconds(new Date(opened)), ttl_minutes: ttl };
    await this.write(true, closesAt, { via: 'settings.registration_window', client: ctx.client }, {
      window: record,
      guard: async (db) => {
        // Checked under the ledger lock: two replicas opening at once cannot both succeed.
        const w = windowRecord(await this.repo.get(db, REGISTRATION_WINDOW));
        const on = await this.repo.get<boolean>(db, 'auto_register');
        if (w && on !== false && Date.parse(w.opened_at) + w.ttl_minutes * 60_000 > this.now()) throw new AppError('registration_window_open');
      },
      entries: [{ op: 'settings.registration_window', status: 'open', ttl_minutes: ttl, opened_at: record.opened_at, closes_at: isoSeconds(new Date(closesAt)), client: ctx.client }],
    });
    return this.registrationWindow();
  }

  /**
   * `DELETE /settings/registration-window`: closes it early (auto-register off) and forgets it;
   * a window that already closed by itself is just forgotten. 409 `registration_window_not_open`
   * when none was ever opened (or the switch took over since).
   */
  async closeRegistrationWindow(ctx: RequestContext): Promise<{ open: false }> {
    const open = (await this.registrationWindow()).open;
    const w = windowRecord(await this.repo.get(this.db, REGISTRATION_WINDOW));
    if (!w) throw new AppError('registration_window_not_open');
    const entry = { op: 'settings.registration_window', status: 'close', opened_at: w.opened_at, ttl_minutes: w.ttl_minutes, client: ctx.client };
    if (open) await this.write(false, undefined, { via: 'settings.registration_window', client: ctx.client }, { window: null, entries: [entry] });
    else {
      await this.store.transaction(async (trx) => {
        await lockLedger(trx);
        await this.repo.set(trx, REGISTRATION_WINDOW, null);
        await this.ops.append(entry, trx);
      });
      this.changes?.publish(SETTINGS_TOPIC);
    }
    return { open: false };
  }

  /**
   * Writes auto-register and its deadline (and, when given, the window record) in one transaction
   * with a `settings.auto_register` entry and any `entries` beside it.
   */
  private async write(
    enabled: boolean,
    closesAt: number | undefined,
    audit: Record<string, unknown>,
    more: { window?: WindowRecord | null; guard?: (db: MetalDb) => Promise<void>; entries?: Array<Record<string, unknown> & { op: string }> } = {},
  ): Promise<void> {
    const old = this.autoRegister;
    await this.store.transaction(async (trx) => {
      const db = trx;
      await lockLedger(db);
      await more.guard?.(db);
      await this.repo.set(db, 'auto_register', enabled);
      await this.repo.set(db, AUTO_REGISTER_UNTIL, closesAt === undefined ? null : isoSeconds(new Date(closesAt)));
      if (more.window !== undefined) await this.repo.set(db, REGISTRATION_WINDOW, more.window);
      const window = closesAt === undefined ? {} : { closes_at: isoSeconds(new Date(closesAt)) };
      await this.ops.append([{ op: 'settings.auto_register', enabled, old_enabled: old, ...window, ...audit }, ...(more.entries ?? [])], trx);
    });
    this.autoRegister = enabled;
    this.closesAt = closesAt;
    this.changes?.publish(SETTINGS_TOPIC);
  }
}
