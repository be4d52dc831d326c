import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { operationsMigrations, Store } from '@ironlens/core';
import { testStoreTarget } from '@ironlens/core/testing';
import type { FastifyInstance } from 'fastify';
import type { DnsmasqReloader } from '../adapters/dnsmasq.adapter';
import { buildMetalApp } from '../app';
import { type MetalConfig, metalConfigFromEnv } from '../config';
import { metalMigrations } from '../repositories/metal.migrations';
import type { MetalDatabase, MetalStore } from '../repositories/tables';
import { createMetalServices, type MetalDeps, type MetalServices } from '../wiring';

/** A reloader that counts reloads and can be told to fail: for tests of the service layer. */
export class CountingReloader implements DnsmasqReloader {
  readonly describe = 'counting reloader (test)';
  count = 0;
  failWith: string | null = null;
  async reload(): Promise<void> {
    this.count++;
    if (this.failWith) throw new Error(this.failWith);
  }
}

export interface MetalFixture {
  dir: string;
  store: MetalStore;
  services: MetalServices;
  app: FastifyInstance;
  reloader: CountingReloader;
  config: MetalConfig;
  close(): Promise<void>;
}

/**
 * A real store (a SQLite file in a temp dir, or a fresh PostgreSQL database in the suite's
 * PostgreSQL run), real services, the real app; `inject()` ready.
 */
export async function newMetalFixture(env: Record<string, string> = {}, deps: Partial<MetalDeps> = {}): Promise<MetalFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-metal-'));
  const store = await Store.open<MetalDatabase>({ ...(await testStoreTarget(join(dir, 'ironlens.db'))), migrations: [...operationsMigrations, ...metalMigrations] });
  const config = metalConfigFromEnv({ IPXE_CP_DNSMASQ_RELOAD: 'true', ...env }, dir);
  const reloader = new CountingReloader();
  const services = createMetalServices({ store, config, reloader, ...deps });
  const app = await buildMetalApp({ services });
  return {
    dir,
    store,
    services,
    app,
    reloader,
    config,
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
