import { join, resolve } from 'node:path';
import { createHttpApp, type Env, envListen, envOptional, envString, jobsMigrations, OperationsLog, operationsMigrations, Store } from '@ironlens/core';
import { bootstrapMigrations, bootstrapPlugin, clustersMigrations, clustersPlugin, createBootstrapServices, createClusterServices } from '@ironlens/clusters';
import { createKindServices, kindMigrations, kindPlugin } from '@ironlens/kind';
import { buildMetalApp, createMetalServices, metalConfigFromEnv, metalMigrations } from '@ironlens/metal';
import { WEB_BUILD_COMMAND, webDistDir } from '@ironlens/web';
import type { FastifyInstance } from 'fastify';

export const ALL_MIGRATIONS = [...operationsMigrations, ...jobsMigrations, ...metalMigrations, ...kindMigrations, ...clustersMigrations, ...bootstrapMigrations];

/** `IRONLENS_DATA_DIR`: where the store and rendered files live. Default is `./.ironlens`. */
export function dataDirFrom(env: Env): string {
  return resolve(envString(env, 'IRONLENS_DATA_DIR', '.ironlens'));
}

export async function openStore(env: Env): Promise<Store> {
  return Store.open({ file: join(dataDirFrom(env), 'ironlens.db'), migrations: ALL_MIGRATIONS });
}

export interface Running {
  urls: Record<string, string>;
  close(): Promise<void>;
}

const log = (msg: string) => process.stderr.write(`[ironlens] ${msg}\n`);

/**
 * `ironlens serve`: the provisioning listener (`IRONLENS_BOOT_LISTEN`, default
 * `0.0.0.0:4839`, seed 004 at its exact paths) and the console listener
 * (`IRONLENS_CONSOLE_LISTEN`, default `127.0.0.1:8080`: the kind panel under `/kind`; loopback by
 * default because its API hands out kubeconfigs; `IRONLENS_CONSOLE_TOKEN`, when set, is the bearer
 * token that API requires, the dashboard and docs stay open).
 * `off` switches a listener off.
 */
export async function serve(env: Env): Promise<Running> {
  const dataDir = dataDirFrom(env);
  const store = await openStore(env);
  const metalConfig = metalConfigFromEnv(env, dataDir);
  const metal = createMetalServices({ store, config: metalConfig, env });
  // Repair: a crash between a commit and the file write is healed by rendering again.
  await metal.dhcp.sync().catch((err: Error) => log(`warning: ${err.message}`));

  const apps: FastifyInstance[] = [];
  const urls: Record<string, string> = {};
  const logger = env.IRONLENS_LOG === '1' || env.IRONLENS_LOG === 'true';
  const bootListen = envListen(env, 'IRONLENS_BOOT_LISTEN', '0.0.0.0:4839');
  if (bootListen) {
    const app = await buildMetalApp({ services: metal, http: { logger, trustProxy: env.IRONLENS_TRUST_PROXY === '1' } });
    urls.boot = await app.listen(bootListen);
    apps.push(app);
    log(`boot control plane on ${urls.boot} (docs at /docs, /redoc)`);
  }

  const consoleListen = envListen(env, 'IRONLENS_CONSOLE_LISTEN', '127.0.0.1:8080');
  let kindClose: (() => Promise<void>) | undefined;
  let clustersClose: (() => Promise<void>) | undefined;
  let bootstrapClose: (() => Promise<void>) | undefined;
  if (consoleListen) {
    // Inside `serve`, the kind panel's cluster files live under the data dir unless told otherwise.
    const kind = await createKindServices({ KIND_K8S_CLUSTERS_DIR: join(dataDir, 'kind', 'clusters'), ...env }, store);
    kindClose = kind.close;
    const app = await createHttpApp({ title: 'ironlens console', description: 'The console listener: the kind panel under /kind (seed 001).', logger });
    await app.register(kindPlugin, {
      prefix: '/kind',
      services: kind.services,
      webDist: webDistDir,
      webBuildCommand: WEB_BUILD_COMMAND,
      docsUrl: '/docs',
      redocUrl: '/redoc',
      token: envOptional(env, 'IRONLENS_CONSOLE_TOKEN'),
    });
    // The cluster manager (seed 000) at its exact paths: /api/v1/versions, /api/cluster/…, /api/cluster-overview/….
    const clusters = createClusterServices({ store, env, dataDir, runner: kind.runner });
    clustersClose = clusters.close;
    await app.register(clustersPlugin, { services: clusters, token: envOptional(env, 'IRONLENS_CONSOLE_TOKEN') });
    // The Kubespray bootstrap (/api/cluster/bootstrap/…); `register` hands its kubeconfig straight to the cluster manager.
    const bootstrap = await createBootstrapServices({ store, env, dataDir, registrar: clusters.clusters, operations: new OperationsLog(store) });
    bootstrapClose = bootstrap.close;
    await app.register(bootstrapPlugin, { services: bootstrap.services, token: envOptional(env, 'IRONLENS_CONSOLE_TOKEN') });
    app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/kind/', 307));
    urls.console = await app.listen(consoleListen);
    apps.push(app);
    log(`console on ${urls.console} (kind panel at /kind/, API at /kind/api/v1; cluster manager at /api/cluster${envOptional(env, 'IRONLENS_CONSOLE_TOKEN') ? ', bearer token required' : ''})`);
  }

  return {
    urls,
    async close() {
      for (const app of apps) await app.close();
      if (kindClose) await kindClose();
      if (bootstrapClose) await bootstrapClose();
      if (clustersClose) await clustersClose();
      await store.close();
    },
  };
}
