import { type ChangeFeed, isoSeconds, type OperationsLog } from '@ironlens/core';
import type { SettingsRepository } from '../repositories/settings.repository';
import type { MetalDb, MetalStore } from '../repositories/tables';

export interface RequestContext {
  /** The client's address, for the operations log. */
  client?: string;
}

/** Where the deadline of an open registration window is kept (ISO timestamp). */
export const AUTO_REGISTER_UNTIL = 'auto_register_until';

/** The change-feed topic of the runtime settings. */
export const SETTINGS_TOPIC = 'metal.settings';

/**
 * Runtime settings: the persisted value wins over the environment's default.
 *
 * With a registration window (`IRONLENS_AUTO_REGISTER_WINDOW_MINUTES` > 0), turning
 * auto-register on also stores when it closes; the first read after that moment turns it
 * off (persisted, with a `settings.auto_register` entry, `reason: "window_closed"`). When it
 * is on without a deadline (the environment's default at a first start), the window starts
 * at that first read.
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
    if (this.autoRegister && this.windowMinutes > 0 && this.closesAt !== undefined && this.now() >= this.closesAt) {
      await this.write(false, { reason: 'window_closed' });
    }
    return this.autoRegister;
  }

  /** `GET /settings/auto-register`: `{enabled}`, plus `closes_at` while a registration window runs. */
  async autoRegisterView(): Promise<{ enabled: boolean; closes_at?: string }> {
    const enabled = await this.getAutoRegister();
    return enabled && this.windowMinutes > 0 && this.closesAt !== undefined ? { enabled, closes_at: isoSeconds(new Date(this.closesAt)) } : { enabled };
  }

  async setAutoRegister(enabled: boolean, ctx: RequestContext): Promise<boolean> {
    await this.getAutoRegister();
    await this.write(enabled, { client: ctx.client });
    return enabled;
  }

  /** `PUT /settings/auto-register`: sets it and answers as `autoRegisterView`. */
  async putAutoRegister(enabled: boolean, ctx: RequestContext): Promise<{ enabled: boolean; closes_at?: string }> {
    await this.setAutoRegister(enabled, ctx);
    return this.autoRegisterView();
  }

  private async write(enabled: boolean, audit: Record<string, unknown>): Promise<void> {
    const old = this.autoRegister;
    const closesAt = enabled && this.windowMinutes > 0 ? this.now() + this.windowMinutes * 60_000 : undefined;
    await this.store.transaction(async (trx) => {
      const db = trx;
      await this.repo.set(db, 'auto_register', enabled);
      if (this.windowMinutes > 0) await this.repo.set(db, AUTO_REGISTER_UNTIL, closesAt === undefined ? null : isoSeconds(new Date(closesAt)));
      const window = closesAt === undefined ? {} : { closes_at: isoSeconds(new Date(closesAt)) };
      await this.ops.append({ op: 'settings.auto_register', enabled, old_enabled: old, ...window, ...audit }, trx);
    });
    this.autoRegister = enabled;
    this.closesAt = closesAt;
    this.changes?.publish(SETTINGS_TOPIC);
  }
}
