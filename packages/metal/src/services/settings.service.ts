import type { OperationsLog } from '@ironlens/core';
import type { SettingsRepository } from '../repositories/settings.repository';
import type { MetalDb, MetalStore } from '../repositories/tables';

export interface RequestContext {
  /** The client's address, for the operations log. */
  client?: string;
}

/** Runtime settings: the persisted value wins over the environment's default. */
export class SettingsService {
  private autoRegister: boolean | undefined;

  constructor(
    private readonly store: MetalStore,
    private readonly repo: SettingsRepository,
    private readonly ops: OperationsLog,
    private readonly autoRegisterDefault: boolean,
  ) {}

  private get db(): MetalDb {
    return this.store.db;
  }

  async getAutoRegister(): Promise<boolean> {
    if (this.autoRegister === undefined) {
      const v = await this.repo.get<boolean>(this.db, 'auto_register');
      this.autoRegister = typeof v === 'boolean' ? v : this.autoRegisterDefault;
    }
    return this.autoRegister;
  }

  async setAutoRegister(enabled: boolean, ctx: RequestContext): Promise<boolean> {
    const old = await this.getAutoRegister();
    await this.store.transaction(async (trx) => {
      await this.repo.set(trx, 'auto_register', enabled);
      await this.ops.append({ op: 'settings.auto_register', enabled, old_enabled: old, client: ctx.client }, trx);
    });
    this.autoRegister = enabled;
    return enabled;
  }
}
