import { type ChangeFeed, type Exec, JobRunner, JobsRepository, LocalChangeFeed, type Metrics, OperationsLog, partOf, exec as realExec, SecretBox } from '@ironlens/core';
import { type ClusterNodes, NO_CLUSTER_NODES } from './adapters/cluster-nodes';
import { RolloutRepository } from './repositories/rollout.repository';
import { RolloutMetrics } from './rollout.metrics';
import { DriftService } from './services/drift.service';
import { defaultDisk, RolloutService } from './services/rollout.service';
import { wakeKeys } from './services/rollout.worker';
import { Wakeups } from './services/wakeups';
import { CommandReloader, type DhcpHostsFile, type DnsmasqReloader, DockerHupReloader, FileDhcpHosts, NoReloader, PidFileReloader } from './adapters/dnsmasq.adapter';
import { DetectingReloader } from './adapters/dnsmasq-detect.adapter';
import type { MetalConfig } from './config';
import { requireMac } from './domain/identifiers';
import { DeviceRepository } from './repositories/device.repository';
import { SettingsRepository } from './repositories/settings.repository';
import { WorkerRepository } from './repositories/worker.repository';
import { BootVarsService } from './services/boot-vars.service';
import { DeviceService } from './services/device.service';
import { DhcpHostsService } from './services/dhcp-hosts.service';
import { LedgerWriter } from './services/ledger-writer.service';
import { SettingsService } from './services/settings.service';
import { WorkerService } from './services/worker.service';
import type { StorageAgents } from './adapters/storage-agent';
import { HttpStorageAgents } from './adapters/storage-agent.http';
import { AgentRepository } from './repositories/agent.repository';
import { MasterTagRepository } from './repositories/master-tag.repository';
import { ChapRepository } from './repositories/chap.repository';
import type { MetalStore } from './repositories/tables';
import { AgentService } from './services/agent.service';
import { StorageService } from './services/storage.service';
import { LayoutService } from './services/layout.service';
import { RenderGuard, type WarnFn } from './services/render-guard.service';
import { ReportGuard } from './services/report-guard.service';
import { MetalMetrics } from './metal.metrics';
import { AGENT_PROBE_BUDGET_MS, InventoryService } from './services/inventory.service';
import { HostReportRepository } from './repositories/host-report.repository';
import { HostReportService } from './services/host-report.service';
import type { BmcConnector } from './adapters/bmc';
import { cleaningBmcErrors } from './domain/bmc-text';
import { IpmitoolBmc } from './adapters/ipmitool.adapter';
import { RedfishBmc } from './adapters/redfish.adapter';
import { BmcRepository, PowerRepository } from './repositories/bmc.repository';
import { BmcScheduler } from './services/bmc-scheduler';
import { BootProofService } from './services/boot-proof.service';
import { PowerService } from './services/power.service';
import { BootScriptService } from './services/boot-script.service';
import type { BootServicesStatus } from './boot-services/boot-services';

/** What the routes get: services only, never the store (the services own every transaction). */
export interface MetalServices {
  config: MetalConfig;
  settings: SettingsService;
  devices: DeviceService;
  workers: WorkerService;
  bootVars: BootVarsService;
  dhcp: DhcpHostsService;
  agents: AgentService;
  storage: StorageService;
  layout: LayoutService;
  /** Booted workers' host reports (issue 24). */
  hostReports: HostReportService;
  /** BMCs, power actions and the proof of boot (issue 21). */
  power: PowerService;
  /** `GET /boot.ipxe`: the shipped script with the control plane's URL (issue 30). */
  bootScript: BootScriptService;
  /** ironlens' own dnsmasq, when `IRONLENS_BOOT_SERVICES` is on: its state in `/healthz`. */
  bootServices?: { status(): BootServicesStatus };
  /** Rollouts of a new master across workers (issue 31). */
  rollouts: RolloutService;
  /** The ledger against reality, and its reconcile (issue 31). */
  drift: DriftService;
  operations(q: { since?: number; limit?: number; mac?: string }): ReturnType<OperationsLog['list']>;
}

export interface MetalDeps {
  store: MetalStore;
  config: MetalConfig;
  /** Command runner for adapters. Default is the real `execFile` runner. */
  exec?: Exec;
  /** dnsmasq reload; default is chosen from `config.reload`. */
  reloader?: DnsmasqReloader;
  hostsFile?: DhcpHostsFile;
  /** How the control plane talks to storage agents. Default is HTTP with `agentTimeoutMs`. */
  storageAgents?: StorageAgents;
  /** Where `${NAME}` in agent tokens and `IRONLENS_SECRET_KEY` are read. Default is `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * The names of ironlens' settings (the CLI's settings table): no agent token may name one as
   * `${NAME}`, beside every `IRONLENS_*`, `IPXE_CP_*` and `KIND_*` name. Default: the prefixes only.
   */
  reservedEnv?: readonly string[];
  /** Seals agent tokens and CHAP secrets at rest. Default is `SecretBox.fromEnv(env, config.dataDir)`. */
  secrets?: SecretBox;
  /** Where warnings go (records a renderer refused, …). Default is stderr. */
  warn?: WarnFn;
  /** The clock of the registration window, the report rate limit and reports' `last_seen`. Default is `Date.now`. */
  now?: () => number;
  /** The process' metrics: the boot control plane adds its own (boot-vars cache, dnsmasq, devices, workers, agents). Default: none. */
  metrics?: Metrics;
  /**
   * Where writes are told to the other replicas on the same database (`openChangeFeed`). With a
   * shared feed (PostgreSQL) this process does not write the hosts file until `MetalReplication`
   * elects it. Default is a {@link LocalChangeFeed}: alone, nobody to tell, always the writer.
   */
  changes?: ChangeFeed;
  /** Opens a BMC for a device's credentials (issue 21). Default: Redfish over HTTP(S), IPMI through `ipmitool` run by `exec`. */
  bmc?: BmcConnector;
  /** ironlens' own dnsmasq (`IRONLENS_BOOT_SERVICES`, issue 30). Default: none. */
  bootServices?: { status(): BootServicesStatus };
  /** The Kubernetes nodes workers are (issue 31: a rollout drains them). Default: none (no worker is a node). */
  clusterNodes?: ClusterNodes;
  /** The shared job runner rollouts run on. Default: one of its own over `store` (which then needs `jobsMigrations`). */
  runner?: JobRunner;
  /** How often a rollout's waits re-read the store when nothing woke them. Default is `2000` ms. */
  rolloutPollMs?: number;
}

/** The real BMC adapters: Redfish over HTTP(S), IPMI through `ipmitool -I lanplus`. */
export function bmcConnectorFor(config: MetalConfig, exec: Exec): BmcConnector {
  return (c) =>
    c.driver === 'redfish'
      ? new RedfishBmc({ url: c.url, username: c.username, password: c.password, verifyTls: c.verifyTls, timeoutMs: config.bmcTimeoutMs, allowLinkLocal: config.bmcAllowLinkLocal })
      : new IpmitoolBmc({ host: c.host, port: c.port, username: c.username, password: c.password, cipherSuite: c.cipherSuite, timeoutMs: config.bmcTimeoutMs, exec, allowLinkLocal: config.bmcAllowLinkLocal });
}

export function reloaderFor(config: MetalConfig, exec: Exec): DnsmasqReloader {
  const r = config.reload;
  if (r.kind === 'docker') return new DockerHupReloader(r.container, exec);
  if (r.kind === 'pid') return new PidFileReloader(r.file);
  if (r.kind === 'command') return new CommandReloader(r.argv, exec);
  if (r.kind === 'detect') return new DetectingReloader({ container: r.container, hostsFile: config.dnsmasqHostsFile, exec });
  return new NoReloader();
}

/** Hand-written constructor injection for the boot control plane. */
export function createMetalServices(deps: MetalDeps): MetalServices {
  const { store, config } = deps;
  const exec = deps.exec ?? realExec;
  const changes = deps.changes ?? new LocalChangeFeed();
  const ops = new OperationsLog(partOf(store));
  const deviceRepo = new DeviceRepository();
  const workerRepo = new WorkerRepository();
  const settingsRepo = new SettingsRepository();
  const settings = new SettingsService(store, settingsRepo, ops, config.autoRegisterDefault, config.autoRegisterWindowMinutes, deps.now, changes);
  const guard = new RenderGuard(ops, deps.warn);
  const metrics = deps.metrics && new MetalMetrics(deps.metrics);
  const dhcp = new DhcpHostsService(store, deviceRepo, deps.hostsFile ?? new FileDhcpHosts(config.dnsmasqHostsFile, config.dhcpLease), deps.reloader ?? reloaderFor(config, exec), ops, guard, metrics?.dnsmasq, changes);
  const secrets = deps.secrets ?? SecretBox.fromEnv(deps.env ?? process.env, config.dataDir);
  const agentRepo = new AgentRepository(secrets);
  const chapRepo = new ChapRepository(secrets);
  // Late-bound: agent changes clear the boot-vars cache, which needs the agent service.
  let bootVars: BootVarsService | undefined;
  const storageAgents = deps.storageAgents ?? new HttpStorageAgents({ timeoutMs: config.agentTimeoutMs, allowLinkLocal: config.agentAllowLinkLocal });
  const agents = new AgentService(store, agentRepo, new MasterTagRepository(), storageAgents, ops, { allowedEnv: config.agentTokenEnv, reservedEnv: deps.reservedEnv, env: deps.env }, () => bootVars?.invalidate(), changes);
  bootVars = new BootVarsService(store, workerRepo, deviceRepo, agents, config, (r) => void guard.refused('boot-vars', [r]), metrics?.bootVarsLookup, chapRepo, changes);
  metrics?.collectFrom(new InventoryService(store, deviceRepo, workerRepo, agents, Math.min(config.agentTimeoutMs, AGENT_PROBE_BUDGET_MS)));
  const reportGuard = new ReportGuard(ops, { registerPerMinute: config.reportRegisterPerMinute, now: deps.now });
  const powerRepo = new PowerRepository();
  const bmcRepo = new BmcRepository(secrets);
  const proof = new BootProofService(store, powerRepo, ops, config.bootConfirmTimeoutMs, metrics?.bootProof, deps.warn);
  const power = new PowerService(
    store,
    deviceRepo,
    bmcRepo,
    powerRepo,
    ops,
    // Every BMC text is cleaned of the BMC's address and user here, whatever the driver.
    cleaningBmcErrors(deps.bmc ?? bmcConnectorFor(config, exec)),
    new BmcScheduler({ limit: config.bmcConcurrency, staggerMs: config.bmcStaggerMs, maxReadsPerHost: config.bmcReadQueuePerHost, maxReads: config.bmcReadQueue }),
    proof,
    { stateCacheMs: config.bmcStateCacheMs, failureCacheMs: config.bmcFailureCacheMs, allowLinkLocal: config.bmcAllowLinkLocal },
    metrics?.bmcCalls,
  );
  bootVars.onSighting = (mac) => proof.seen(mac, 'boot_vars');
  const ledger = new LedgerWriter(store, { invalidate: () => bootVars?.invalidate(), sync: () => dhcp.sync() });
  const devices = new DeviceService(store, deviceRepo, workerRepo, settings, ledger, bootVars, ops, reportGuard, { maxPooled: config.reportMaxPooled, autoBootTimeout: config.autoBootTimeout, lastSeenSeconds: config.reportLastSeenSeconds }, power, deps.now);
  const rolloutRepo = new RolloutRepository();
  const storage = new StorageService(store, agents, agentRepo, workerRepo, deviceRepo, dhcp, ledger, ops, config.agentDiskTimeoutMs, { repo: chapRepo, enabled: config.iscsiChap }, rolloutRepo);
  const hostRepo = new HostReportRepository();
  // The boot timeline's first iSCSI login: the sessions the worker's agents saw on its targets.
  const logins = async (targets: Array<{ agent: string; iqn: string }>): Promise<string[]> => {
    const out: string[] = [];
    for (const agentId of new Set(targets.map((t) => t.agent))) {
      const listed = await storage.listLuns(agentId).catch(() => []);
      for (const t of listed) if (targets.some((x) => x.agent === agentId && x.iqn === t.iqn)) for (const s of t.sessions ?? []) out.push(s.first_seen_at);
    }
    return out;
  };
  const hostReports = new HostReportService(store, workerRepo, deviceRepo, chapRepo, hostRepo, ops, metrics?.hostReports, { now: deps.now, logins });
  // Issue 31: what a rollout waits for wakes it (the proof of boot, a host report, /boot-vars).
  const wakeups = new Wakeups();
  bootVars.onBoundAnswer((workerId) => {
    hostReports.noteBootVars(workerId);
    wakeups.notify(wakeKeys.bootVars(workerId));
  });
  hostReports.onAccepted = (workerId) => wakeups.notify(wakeKeys.report(workerId));
  proof.onBooted = (mac) => wakeups.notify(wakeKeys.boot(mac));
  const workers = new WorkerService(store, workerRepo, deviceRepo, devices, ledger, ops, storage, config.defaultArch, hostRepo, rolloutRepo);
  const rolloutMetrics =
    deps.metrics &&
    new RolloutMetrics(deps.metrics, async () => {
      const counts = new Map<string, number>();
      for (const w of await workerRepo.list(store.db)) {
        const d = defaultDisk(w);
        const m = d?.source.type === 'master' && d.source.name ? d.source.name : 'none';
        counts.set(m, (counts.get(m) ?? 0) + 1);
      }
      return counts;
    });
  const rollouts = new RolloutService({
    store,
    repo: rolloutRepo,
    workers: workerRepo,
    devices: deviceRepo,
    hosts: hostRepo,
    hostReports,
    ledger,
    storage,
    power,
    nodes: deps.clusterNodes ?? NO_CLUSTER_NODES,
    ops,
    wakeups,
    pollMs: deps.rolloutPollMs ?? 2000,
    now: deps.now ?? Date.now,
    runner: deps.runner ?? new JobRunner(new JobsRepository(partOf(store)), { observer: deps.metrics?.jobs }),
    observer: rolloutMetrics?.observer,
  });
  return {
    config,
    settings,
    devices,
    workers,
    bootVars,
    dhcp,
    agents,
    storage,
    hostReports,
    layout: new LayoutService(store, workerRepo, deviceRepo, agentRepo, settingsRepo, ops, { bmcs: bmcRepo, records: powerRepo, secrets, allowLinkLocal: config.bmcAllowLinkLocal }, deps.reservedEnv),
    power,
    bootScript: new BootScriptService(undefined, config.bootUrl),
    bootServices: deps.bootServices,
    rollouts,
    drift: new DriftService(store, workerRepo, deviceRepo, hostRepo, dhcp, storage, ops),
    operations: (q) => ops.list({ ...q, mac: q.mac ? requireMac(q.mac) : undefined }),
  };
}
