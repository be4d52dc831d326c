import { AppError, type Exec, OperationsLog, type Store, exec as realExec } from '@ironlens/core';
import { CommandReloader, type DhcpHostsFile, type DnsmasqReloader, DockerHupReloader, FileDhcpHosts, NoReloader, PidFileReloader } from './adapters/dnsmasq.adapter';
import type { MetalConfig } from './config';
import { requireMac } from './domain/identifiers';
import { DeviceRepository } from './repositories/device.repository';
import { SettingsRepository } from './repositories/settings.repository';
import { WorkerRepository } from './repositories/worker.repository';
import { BootVarsService, type DataPlaneLookup } from './services/boot-vars.service';
import { DeviceService } from './services/device.service';
import { DhcpHostsService } from './services/dhcp-hosts.service';
import { SettingsService } from './services/settings.service';
import { WorkerService, type WorkerStorage } from './services/worker.service';

export interface MetalServices {
  config: MetalConfig;
  store: Store;
  ops: OperationsLog;
  settings: SettingsService;
  devices: DeviceService;
  workers: WorkerService;
  bootVars: BootVarsService;
  dhcp: DhcpHostsService;
  operations(q: { since?: number; limit?: number; mac?: string }): ReturnType<OperationsLog['list']>;
}

export interface MetalDeps {
  store: Store;
  config: MetalConfig;
  /** Command runner for adapters. Default is the real `execFile` runner. */
  exec?: Exec;
  /** dnsmasq reload; default is chosen from `config.reload`. */
  reloader?: DnsmasqReloader;
  hostsFile?: DhcpHostsFile;
  /** The storage side (agents); default refuses storage work until agents are wired. */
  storage?: WorkerStorage;
  dataPlane?: DataPlaneLookup;
}

export function reloaderFor(config: MetalConfig, exec: Exec): DnsmasqReloader {
  const r = config.reload;
  if (r.kind === 'docker') return new DockerHupReloader(r.container, exec);
  if (r.kind === 'pid') return new PidFileReloader(r.file);
  if (r.kind === 'command') return new CommandReloader(r.argv, exec);
  return new NoReloader();
}

/** Storage before any agent is wired: workers without disks only. */
const noStorage: WorkerStorage & DataPlaneLookup = {
  async createInstallCd() {
    throw new AppError('agent_none_available', 'no storage agent is configured for the install CD');
  },
  async removeCd() {},
  async removeTargets(w) {
    if (w.disks.length || w.cd) throw new AppError('agent_none_available', 'no storage agent is configured to remove the targets');
  },
  async dataPlane() {
    return null;
  },
};

/** Hand-written constructor injection for the boot control plane. */
export function createMetalServices(deps: MetalDeps): MetalServices {
  const { store, config } = deps;
  const exec = deps.exec ?? realExec;
  const ops = new OperationsLog(store);
  const deviceRepo = new DeviceRepository();
  const workerRepo = new WorkerRepository();
  const settings = new SettingsService(store, new SettingsRepository(), ops, config.autoRegisterDefault);
  const dhcp = new DhcpHostsService(store, deviceRepo, deps.hostsFile ?? new FileDhcpHosts(config.dnsmasqHostsFile), deps.reloader ?? reloaderFor(config, exec), ops);
  const bootVars = new BootVarsService(store, workerRepo, deviceRepo, deps.dataPlane ?? noStorage, config);
  const devices = new DeviceService(store, deviceRepo, workerRepo, settings, dhcp, bootVars, ops);
  const workers = new WorkerService(store, workerRepo, deviceRepo, devices, dhcp, bootVars, ops, deps.storage ?? noStorage, config.defaultArch);
  return {
    config,
    store,
    ops,
    settings,
    devices,
    workers,
    bootVars,
    dhcp,
    operations: (q) => ops.list({ ...q, mac: q.mac ? requireMac(q.mac) : undefined }),
  };
}
