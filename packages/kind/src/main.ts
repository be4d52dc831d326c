import { type Env, envOptional, httpLimitsFromEnv, jobsMigrations, Metrics, Store } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';
import { buildKindApp } from './app';
import { readKindConfig } from './config';
import { createKindServices, type KindDatabase, kindMigrations } from './wiring';

export interface KindPanelOptions {
  /** Fastify's logger. Default is `true`. */
  logger?: boolean;
  /** Built web assets: the caller (the CLI) passes `@ironlens/web`'s `webDistDir`. */
  webDist: string;
  /** Named when the assets are missing (`@ironlens/web`'s `WEB_BUILD_COMMAND`). */
  webBuildCommand?: string;
}

export interface RunningKindPanel {
  app: FastifyInstance;
  /** The address it listens on. */
  url: string;
  /** `KIND_K8S_TOKEN` is set: the API requires it. */
  tokenRequired: boolean;
  close(): Promise<void>;
}

/**
 * `ironlens kind`: reads the configuration from `env`, opens its store (`KIND_K8S_DB`),
 * wires the real adapters and listens on `KIND_K8S_WEB_HOST:KIND_K8S_WEB_PORT` (default `127.0.0.1:8080`:
 * this machine only, as its API hands out cluster-admin kubeconfigs). A failed listen closes what was opened.
 * `KIND_K8S_TOKEN`, when set, is the bearer token the API requires (default: unset, open as in the seed).
 * The dashboard's assets come from `opts.webDist`, which the caller hands in. `/metrics` serves its
 * Prometheus metrics, behind `KIND_K8S_TOKEN` when that is set (docs/metrics.md).
 */
export async function startKindPanel(env: Env, opts: KindPanelOptions): Promise<RunningKindPanel> {
  const config = readKindConfig(env);
  const metrics = new Metrics();
  const store = await Store.open<KindDatabase>({ file: config.dbFile, migrations: [...jobsMigrations, ...kindMigrations], onQuery: metrics.storeQuery });
  const runtime = await createKindServices(env, store, { jobObserver: metrics.jobs });
  const token = envOptional(env, 'KIND_K8S_TOKEN');
  let app: FastifyInstance | undefined;
  let url: string;
  try {
    app = await buildKindApp({ services: runtime.services, webDist: opts.webDist, webBuildCommand: opts.webBuildCommand, logger: opts.logger ?? true, token, metrics: { metrics, listener: 'kind', token }, limits: httpLimitsFromEnv(env), hosts: config.hosts });
    url = await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await app?.close().catch(() => {});
    await runtime.close().catch(() => {});
    await store.close().catch(() => {});
    throw err;
  }
  return {
    app,
    url,
    tokenRequired: token !== undefined,
    close: async () => {
      await app.close();
      await runtime.close();
      await store.close();
    },
  };
}
