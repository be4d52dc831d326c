import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type BootstrapDatabase, bootstrapMigrations, bootstrapPlugin, type ClustersDatabase, clustersMigrations, clustersPlugin, createBootstrapServices, createClusterNodes, createClusterServices, preloadKubeClient, type WorkerDirectory } from '@ironlens/clusters';
import { type AuthTokensTables, Authenticator, authRoutes, AuthLimiter, authLimiterOptionsFromEnv, authTokensMigrations, type ChangeFeed, CHANGES_CHANNEL, createHttpApp, type Env, envInt, envListen, envOptional, envString, exec, hostList, type HttpLimits, httpLimitsFromEnv, originList, jobLeaseFromEnv, JobRunner, jobsMigrations, JobsRepository, Metrics, NamedTokens, openChangeFeed, OperationsLog, operationsMigrations, partOf, replicaIdFromEnv, SecretBox, secretKeyMatches, Store, type StoreMetaTables, storeMetaMigrations, TokensRepository, type TrustProxy, trustedProxiesFromEnv } from '@ironlens/core';
import { createKindServices, type KindDatabase, kindMigrations, kindPlugin } from '@ironlens/kind';
import { BootServices, buildMetalApp, ChapReconciler, createMetalServices, type MetalServices, DetectingReloader, type MetalConfig, type MetalDatabase, MetalReplication, metalConfigFromEnv, metalMigrations, reloaderFor } from '@ironlens/metal';
import { WEB_BUILD_COMMAND, webDistDir } from '@ironlens/web';
import type { FastifyInstance } from 'fastify';
import { describeAddress, isLoopback } from './address';
import { dataDirFrom, lockDataDir } from './data-dir';
import { mountConsole } from './console/console.plugin';
import { AGENT_TOKEN_RESERVED_ENV } from './settings';

export const ALL_MIGRATIONS = [...storeMetaMigrations, ...authTokensMigrations, ...operationsMigrations, ...jobsMigrations, ...metalMigrations, ...kindMigrations, ...clustersMigrations, ...bootstrapMigrations];

/** Every table of ironlens' store (what {@link ALL_MIGRATIONS} create); each subsystem gets the store typed by its own ({@link partOf}). */
export type IronlensDatabase = StoreMetaTables & AuthTokensTables & MetalDatabase & KindDatabase & ClustersDatabase & BootstrapDatabase;

export { dataDirFrom };

/**
 * The store: PostgreSQL when `IRONLENS_DATABASE_URL` is set (`postgres://user:pass@host:5432/db`,
 * what several replicas share), otherwise SQLite in the data dir (`ironlens.db`). `metrics`: the
 * process' metrics, told the duration of every query. Default: none.
 */
export async function openStore(env: Env, metrics?: Metrics, opts: { migrate?: boolean } = {}): Promise<Store<IronlensDatabase>> {
  const url = envOptional(env, 'IRONLENS_DATABASE_URL');
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) throw new Error('IRONLENS_DATABASE_URL must be a postgres:// or postgresql:// URL');
  const onQuery = metrics?.storeQuery;
  const migrate = opts.migrate;
  return Store.open<IronlensDatabase>(url ? { url, migrations: ALL_MIGRATIONS, onQuery, migrate } : { file: join(dataDirFrom(env), 'ironlens.db'), migrations: ALL_MIGRATIONS, onQuery, migrate });
}

export interface Running {
  /** Where to reach each listener (`http://127.0.0.1:port` for a listener on every interface). */
  urls: Record<string, string>;
  /** The listeners' apps (`boot`, `console`) and the console's in-process provisioning API (`consoleMetal`): what the permission test enumerates. */
  apps: Record<string, FastifyInstance>;
  close(): Promise<void>;
}

export type Log = (msg: string) => void;

export interface ServeOptions {
  /** Called with the console listener's bare app before any route is added (`HttpAppOptions.instrument`: tests' answer checks). Default: none. */
  instrumentConsole?: (app: FastifyInstance) => void;
}

const stderrLog: Log = (msg) => process.stderr.write(`[ironlens] ${msg}\n`);

/** What the listener's socket is bound to ({@link describeAddress}). */
function boundAddress(app: FastifyInstance): string {
  const a = app.server.address() as AddressInfo;
  return describeAddress(a.address, a.port);
}

/**
 * Listens, or throws an error naming the setting that moves the listener; the caller closes
 * what it opened before.
 */
async function listenOrExplain(app: FastifyInstance, listen: { host: string; port: number }, setting: string): Promise<string> {
  try {
    return await app.listen(listen);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(`cannot listen on ${listen.host}:${listen.port} (${e.code ?? e.message}); change ${setting}, or set it to off`);
  }
}

/** What both listeners are built from (`serve` makes it once). */
interface ListenerContext {
  env: Env;
  log: Log;
  opts: ServeOptions;
  dataDir: string;
  store: Store<IronlensDatabase>;
  metal: MetalServices;
  metalConfig: MetalConfig;
  metrics: Metrics;
  named: NamedTokens;
  namedCount: number;
  limiter: AuthLimiter;
  logger: boolean;
  limits: HttpLimits;
  /** Whose X-Forwarded-For to believe, the same on both listeners (IRONLENS_TRUSTED_PROXIES). */
  trustProxy: TrustProxy;
  started: Started;
  /** ironlens' own dnsmasq (IRONLENS_BOOT_SERVICES), started once the provisioning listener answers. */
  bootServices: BootServices | null;
}

/** What the listeners started: their apps (closed first), URLs, and what closes after them, in order. */
interface Started {
  apps: FastifyInstance[];
  urls: Record<string, string>;
  appsByName: Record<string, FastifyInstance>;
  closers: Array<() => Promise<void>>;
}

/** The provisioning listener: seed 004 at its exact paths, and the tokens API. */
async function startBootListener(c: ListenerContext, bootListen: { host: string; port: number }): Promise<void> {
  const { env, log, store, metal, metalConfig, metrics, named, namedCount, limiter, logger, limits, trustProxy, started, bootServices } = c;
  const bootAuth = new Authenticator([{ variable: 'IPXE_CP_TOKEN', token: metalConfig.token }], named);
  const app = await buildMetalApp({
    services: metal,
    http: { logger, trustProxy, metrics: { metrics, listener: 'boot' }, limits, access: { authenticator: bootAuth, limiter } },
  });
  started.apps.push(app);
  // Tokens are served on both listeners (docs/access.md).
  await app.register(authRoutes, { prefix: '/api/auth', tokens: named, operations: new OperationsLog(partOf(store)) });
  started.appsByName.boot = app;
  started.urls.boot = await listenOrExplain(app, bootListen, 'IRONLENS_BOOT_LISTEN (--boot-listen)');
  log(`provisioning API on ${boundAddress(app)} (${started.urls.boot}; docs at /docs, /redoc)`);
  bootServices?.attach({ dhcp: metal.dhcp, bootScript: metal.bootScript, port: (app.server.address() as AddressInfo).port });
  if (!metalConfig.token && namedCount === 0) log(`warning: IPXE_CP_TOKEN is not set: the provisioning API (workers, devices, agents, settings) is open to anyone who reaches ${boundAddress(app).split(' ')[0]}`);
}

/** The console listener: the web console, the kind panel, the cluster manager and its bootstrap, the console's provisioning API. */
async function startConsoleListener(c: ListenerContext, consoleListen: { host: string; port: number }): Promise<void> {
  const { env, log, opts, dataDir, store, metal, metalConfig, metrics, named, namedCount, limiter, logger, limits, trustProxy, started } = c;
  const token = envOptional(env, 'IRONLENS_CONSOLE_TOKEN');
  const consoleAuth = new Authenticator([{ variable: 'IRONLENS_CONSOLE_TOKEN', token }], named);
  let clustersClose: (() => Promise<void>) | undefined;
  let bootstrapClose: (() => Promise<void>) | undefined;
  // Inside `serve`, the kind panel's cluster files live under the data dir unless told otherwise.
  const kind = await createKindServices({ KIND_K8S_CLUSTERS_DIR: join(dataDir, 'kind', 'clusters'), ...env }, partOf(store), { jobObserver: metrics.jobs });
  // Closed after the apps, in this order: the kind panel, the bootstrap, the cluster manager.
  started.closers.push(kind.close, async () => {
    await bootstrapClose?.();
    await clustersClose?.();
  });
  // The web console (issue 11): `/` and its page paths, assets, the provisioning API under /api/metal.
  const webDist = envString(env, 'IRONLENS_WEB_DIST', webDistDir);
  const app = await createHttpApp({
    title: 'ironlens console',
    description: 'The console listener: the kind panel under /kind (seed 001).',
    logger,
    metrics: { metrics, listener: 'console' },
    access: { authenticator: consoleAuth, limiter },
    limits,
    trustProxy,
    // Browsers reach this listener: Host (DNS rebinding), Origin and form checks (IRONLENS_CONSOLE_HOSTS adds names).
    // IRONLENS_CONSOLE_ORIGINS: the public origins of a reverse proxy that rewrites Host (issue 33).
    browserGuard: { hosts: hostList(env.IRONLENS_CONSOLE_HOSTS), origins: originList(env.IRONLENS_CONSOLE_ORIGINS) },
    instrument: opts.instrumentConsole,
  });
  started.apps.push(app);
  started.appsByName.console = app;
  await app.register(authRoutes, { prefix: '/api/auth', tokens: named, operations: new OperationsLog(partOf(store)) });
  await app.register(kindPlugin, { prefix: '/kind', services: kind.services, webDist, webBuildCommand: WEB_BUILD_COMMAND, docsUrl: '/docs', redocUrl: '/redoc' });
  // The cluster manager (seed 000) at its exact paths: /api/v1/versions, /api/cluster/…, /api/cluster-overview/….
  // The booted workers' reported addresses and host keys, from metal (issue 24; the gateway's URL, issue 22).
  const workers: WorkerDirectory = {
    find: (id) => metal.hostReports.directoryEntry(id),
    joined: (ids, clusterId) => metal.hostReports.joinCluster(ids, clusterId),
    joinedTo: (clusterId) => metal.hostReports.joinedTo(clusterId),
  };
  // Their host reports' accelerators, beside the nodes the deployments place on (issue 28).
  const clusters = createClusterServices({ store: partOf(store), env, dataDir, runner: kind.runner, workers, inventory: { joinedTo: (clusterId) => metal.hostReports.inventoryOf(clusterId) } });
  clustersClose = clusters.close;
  await app.register(clustersPlugin, { services: clusters });
  // The Kubespray bootstrap (/api/cluster/bootstrap/…); `register` hands its kubeconfig straight to the cluster manager.
  // Bootstrap from workers (issue 24): the directory above.
  const bootstrap = await createBootstrapServices({ store: partOf(store), env, dataDir, registrar: clusters.clusters, operations: new OperationsLog(partOf(store)), jobObserver: metrics.jobs, workers });
  bootstrapClose = bootstrap.close;
  await app.register(bootstrapPlugin, { services: bootstrap.services });
  // The console's provisioning API authenticates the caller's own token, as the console listener does.
  const metalForConsole = await buildMetalApp({ services: metal, http: { logger: false, docs: false, access: { authenticator: consoleAuth, limiter } } });
  started.appsByName.consoleMetal = metalForConsole;
  await mountConsole(app, { webDist, buildCommand: WEB_BUILD_COMMAND, metal: metalForConsole, authenticator: consoleAuth, metalToken: metalConfig.token });
  app.get('/healthz', { config: { permission: 'public' }, schema: { tags: ['health'], summary: 'Health check (no auth)', response: { 200: { type: 'object', properties: { status: { type: 'string' } } } } } }, async () => ({ status: 'ok' }));
  started.urls.console = await listenOrExplain(app, consoleListen, 'IRONLENS_CONSOLE_LISTEN (--console-listen)');
  // The gateway's authorization hook reaches this listener: on an ephemeral port (0) its bound port.
  clusters.gateway.useConsolePort((app.server.address() as AddressInfo).port);
  const access = token ? 'bearer token required (IRONLENS_CONSOLE_TOKEN)' : namedCount > 0 ? 'bearer token required (named tokens)' : 'no token: IRONLENS_CONSOLE_TOKEN is not set';
  log(`console on ${boundAddress(app)} (${started.urls.console}/; provisioning API at /api/metal, kind panel at /kind/, kind API at /kind/api/v1, cluster manager at /api/cluster; ${access})`);
  if (!token && namedCount === 0 && !isLoopback((app.server.address() as AddressInfo).address)) {
    log('warning: the console listens beyond this machine without IRONLENS_CONSOLE_TOKEN: anyone who reaches it can take cluster-admin kubeconfigs');
  }
  // Deferred work after listen: the Kubernetes client is loaded once the listeners answer.
  setTimeout(() => {
    try {
      preloadKubeClient();
    } catch (err) {
      log(`warning: the Kubernetes client could not be loaded: ${(err as Error).message}`);
    }
  }, 200).unref();
}

/**
 * `ironlens serve`: the provisioning listener (`IRONLENS_BOOT_LISTEN`, default
 * `0.0.0.0:4839`, seed 004 at its exact paths) and the console listener
 * (`IRONLENS_CONSOLE_LISTEN`, default `127.0.0.1:8080`: the web console at `/`, the provisioning API
 * for it under `/api/metal`, the kind panel under `/kind`; loopback by default because its APIs hand
 * out kubeconfigs; `IRONLENS_CONSOLE_TOKEN`, when set, is the bearer token those APIs require, the
 * pages and docs stay open; `IRONLENS_CONSOLE_HOSTS`: host names it answers besides the loopback names
 * and its own addresses, 421 otherwise; writes from other sites are refused; `IRONLENS_WEB_DIST`: the
 * built web assets, default `@ironlens/web`'s). Both listeners take the `IRONLENS_HTTP_*` timeouts and
 * connection caps (`httpLimitsFromEnv`).
 * `off` switches a listener off. A start that fails closes what it opened and rejects.
 * Each listener serves the process' Prometheus metrics at `/metrics`, behind its own token
 * (`IPXE_CP_TOKEN`, `IRONLENS_CONSOLE_TOKEN`) when that is set (docs/metrics.md).
 */
export async function serve(env: Env, log: Log = stderrLog, opts: ServeOptions = {}): Promise<Running> {
  const dataDir = dataDirFrom(env);
  const bootListen = envListen(env, 'IRONLENS_BOOT_LISTEN', '0.0.0.0:4839');
  const consoleListen = envListen(env, 'IRONLENS_CONSOLE_LISTEN', '127.0.0.1:8080');
  const metalConfig = metalConfigFromEnv(env, dataDir);
  // One metrics registry for the process, served at /metrics on each listener (docs/metrics.md).
  const metrics = new Metrics();
  // Boot services (issue 30): ironlens' own dnsmasq, checked before anything starts; it is the hosts file's reloader.
  const bootServices = BootServices.fromEnv(env, metalConfig.dnsmasqHostsFile, log, metrics);
  if (bootServices && !bootListen) throw new Error('IRONLENS_BOOT_SERVICES needs the provisioning listener (IRONLENS_BOOT_LISTEN is off): iPXE chains boot.ipxe from it');
  await bootServices?.checkHost(exec);
  // dnsmasq detection (a `docker inspect`, /proc) runs while the store opens.
  const reloader = bootServices?.reloader ?? reloaderFor(metalConfig, exec);
  const detection = reloader instanceof DetectingReloader ? reloader.detect() : undefined;
  const origin = replicaIdFromEnv(env);
  // One serve per SQLite data dir: a second one refuses at once, naming the first's pid.
  const unlock = envOptional(env, 'IRONLENS_DATABASE_URL') === undefined ? lockDataDir(dataDir) : () => {};
  const store = await openStore(env, metrics).catch((err) => {
    unlock();
    throw err;
  });
  metrics.collectJobsFrom(new JobsRepository(partOf(store)));
  // Last resort (issue 18): a promise nobody awaited that rejects — from a hostile cluster's
  // answer, say — is logged and counted, never the end of the process (and with it of /boot-vars).
  const unhandled = metrics.counter({
    name: 'ironlens_unhandled_rejections_total',
    help: 'Promise rejections no code handled; logged and counted instead of stopping the process (each one is a bug to report).',
  });
  const onUnhandled = (reason: unknown) => {
    unhandled.inc();
    const what = reason instanceof Error ? `${reason.name}: ${reason.message.slice(0, 300)}` : typeof reason;
    log(`error: an unhandled promise rejection was caught and the process keeps running (${what})`);
  };
  process.on('unhandledRejection', onUnhandled);
  const started: Started = { apps: [], urls: {}, appsByName: {}, closers: [] };
  let changes: ChangeFeed | undefined;
  let replication: MetalReplication | undefined;
  let chapReconciler: ChapReconciler | undefined;
  let metalServices: MetalServices | undefined;
  const close = async () => {
    process.off('unhandledRejection', onUnhandled);
    for (const app of started.apps.splice(0)) await app.close();
    // The last_seen of the reports answered so far, before the store closes.
    await metalServices?.devices.settled().catch(() => {});
    await bootServices?.stop();
    chapReconciler?.stop();
    metalServices?.power.stop();
    for (const c of started.closers.splice(0)) await c();
    await replication?.close();
    replication = undefined;
    await changes?.close();
    changes = undefined;
    await store.close();
    unlock();
  };

  // Start-up work the listeners need not wait for (the dnsmasq detection, the repair render
  // below): it runs while they come up, and `serve` resolves once it is done.
  const pending: Promise<unknown>[] = [];
  try {
    if (!(await secretKeyMatches(partOf(store), SecretBox.fromEnv(env, dataDir)))) {
      const message = 'the secret key (IRONLENS_SECRET_KEY, or secret.key in the data dir) is not the one the secrets in the store were sealed with';
      if (store.dialect === 'postgres') throw new Error(`${message}: give every replica the same IRONLENS_SECRET_KEY`);
      log(`warning: ${message}: sealed secrets (kubeconfigs, agent tokens) cannot be opened`);
    }
    log(store.dialect === 'postgres' ? `data dir ${dataDir} (rendered files, the secret key file unless IRONLENS_SECRET_KEY is set); state in PostgreSQL` : `data dir ${dataDir} (SQLite store ironlens.db, secret key, rendered files)`);
    if (detection) pending.push(detection.then((d) => log(d.summary)));
    else log(`dnsmasq reload: ${reloader.describe}`);
    if (store.dialect === 'postgres' && store.pool) {
      // One of several replicas: caches follow the others' writes, jobs are leased, the hosts
      // file has one elected writer per IRONLENS_DHCP_WRITER_GROUP.
      changes = await openChangeFeed(store, { origin, log });
      log(
        `running as replica ${origin} on PostgreSQL: caches follow the other replicas (LISTEN ${CHANGES_CHANNEL}), jobs are leased (IRONLENS_JOB_LEASE_MS), the dnsmasq hosts file is written by the elected replica of group ${JSON.stringify(metalConfig.dhcpWriterGroup)}`,
      );
    }
    // Rollouts (issue 31) run on a runner of their own and drain the registered clusters' nodes.
    const clusterNodes = createClusterNodes({ store: partOf(store), env, dataDir });
    const rolloutRunner = new JobRunner(new JobsRepository(partOf(store)), { ...jobLeaseFromEnv(env), observer: metrics.jobs });
    const metal = createMetalServices({ store: partOf(store), config: metalConfig, reloader, env, reservedEnv: AGENT_TOKEN_RESERVED_ENV, metrics, changes, clusterNodes: clusterNodes.nodes, runner: rolloutRunner, bootServices: bootServices ?? undefined });
    metalServices = metal;
    started.closers.push(async () => {
      await rolloutRunner.stop();
      clusterNodes.close();
    });
    await metal.rollouts.start();
    // Proofs of boot left pending by an earlier run are watched again (or end at their deadline).
    await metal.power.resume();
    if (changes?.shared && store.pool) {
      // The elected writer renders at election (the repair below, for one process alone).
      replication = await MetalReplication.start(metal, changes, {
        connectionString: store.pool.options.connectionString as string,
        dhcpWriterGroup: metalConfig.dhcpWriterGroup,
        retryMs: metalConfig.dhcpWriterRetryMs,
        resyncMs: metalConfig.replicaResyncMs,
        log,
      });
      log(replication.dhcpWriter ? `this replica writes ${metalConfig.dnsmasqHostsFile}` : `another replica of the group writes the hosts file; this one takes over if it stops`);
    } else {
      // Repair: a crash between a commit and the file write is healed by rendering again.
      pending.push(metal.dhcp.sync().catch((err: Error) => log(`warning: ${err.message}`)));
    }
    // CHAP on: agents whose tgtd restarted get their CHAP-bound targets back (the hosts-file writer checks).
    if (metalConfig.iscsiChap) chapReconciler = new ChapReconciler(metal.storage, metal.dhcp, metalConfig.iscsiChapReconcileMs, log).start();

    // Access (issue 20, docs/access.md): named tokens of the store on both listeners, beside each
    // listener's environment token; one failed-auth limiter for the process.
    const named = new NamedTokens(new TokensRepository(partOf(store)), { cacheMs: envInt(env, 'IRONLENS_AUTH_CACHE_MS', 500) });
    // Whose X-Forwarded-For to believe, the same on both listeners (IRONLENS_TRUSTED_PROXIES).
    const proxies = trustedProxiesFromEnv(env);
    if (proxies.note) log(`warning: ${proxies.note}`);
    const ctx: ListenerContext = {
      env,
      log,
      opts,
      dataDir,
      store,
      metal,
      metalConfig,
      metrics,
      named,
      namedCount: await named.repo.count(),
      limiter: new AuthLimiter(authLimiterOptionsFromEnv(env)),
      logger: env.IRONLENS_LOG === '1' || env.IRONLENS_LOG === 'true',
      // Timeouts and connection caps, the same on both listeners (IRONLENS_HTTP_*).
      limits: httpLimitsFromEnv(env),
      trustProxy: proxies.trustProxy,
      started,
      bootServices,
    };
    if (bootListen) await startBootListener(ctx, bootListen);
    if (consoleListen) await startConsoleListener(ctx, consoleListen);
    await Promise.all(pending);
    return { urls: started.urls, apps: started.appsByName, close };
  } catch (err) {
    // What was still running when the start failed ends before the store closes under it.
    await Promise.allSettled(pending);
    await close().catch(() => {});
    throw err;
  }
}
