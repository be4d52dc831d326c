import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jobsMigrations, operationsMigrations, Store } from '@ironlens/core';
import { type AnswerCheck, answerCheck, testStoreTarget } from '@ironlens/core/testing';
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
  /** Every JSON answer compared with what its handler returned (a field the schema drops is a drift); `close()` fails on a drift. */
  answers: AnswerCheck;
  close(): Promise<void>;
}

/**
 * A real store (a SQLite file in a temp dir, or a fresh PostgreSQL database in the suite's
 * PostgreSQL run), real services, the real app; `inject()` ready. Every JSON answer is compared
 * with what its handler returned, and `close()` throws on a difference.
 */
export async function newMetalFixture(env: Record<string, string> = {}, deps: Partial<MetalDeps> = {}): Promise<MetalFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-metal-'));
  const store = await Store.open<MetalDatabase>({ ...(await testStoreTarget(join(dir, 'ironlens.db'))), migrations: [...operationsMigrations, ...jobsMigrations, ...metalMigrations] });
  const config = metalConfigFromEnv({ IPXE_CP_DNSMASQ_RELOAD: 'true', ...env }, dir);
  const reloader = new CountingReloader();
  const services = createMetalServices({ store, config, reloader, ...deps });
  const answers = answerCheck();
  const app = await buildMetalApp({ services, http: { instrument: answers.install } });
  return {
    dir,
    store,
    services,
    app,
    reloader,
    config,
    answers,
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      // The answer fastify sent must be what the service returned (issue 19): a schema that drops a field fails the test that called the route.
      if (answers.drifts.length) throw new Error(`answers that differ from what their handler returned:\n${answers.drifts.map((d) => `${d.route} ${d.status}: returned ${JSON.stringify(d.returned)}, answered ${JSON.stringify(d.answered)}`).join('\n')}`);
    },
  };
}
