export { BootServices, type BootServicesStatus } from './boot-services/boot-services';
export { type BootServicesConfig, BootServicesConfigError, bootServicesConfigFromEnv } from './boot-services/boot-services.config';
export { dnsmasqArgv } from './boot-services/dnsmasq-argv';
export { DnsmasqService, type DnsmasqStatus, logSafe } from './boot-services/dnsmasq-service.adapter';
export { BootScriptService, checkBootUrl } from './services/boot-script.service';
export { DetectingReloader, type DnsmasqDetection, detectDnsmasq } from './adapters/dnsmasq-detect.adapter';
export { buildMetalApp, type MetalPluginOptions, metalPlugin, PUBLIC_PATHS } from './app';
export { type MetalConfig, metalConfigFromEnv, type ReloadMethod } from './config';
export * from './domain/identifiers';
export type {
  AgentLunTarget,
  AgentProbe,
  BatchBindResult,
  BatchPreview,
  BatchPreviewIssue,
  BatchPreviewMatch,
  DiskBatchResult,
  MastersListing,
  OperationsPage,
  TargetCheck,
  WorkerDeleted,
  WorkerStatus,
} from './api/schemas';
export * from './domain/types';
export { metalMigrations } from './repositories/metal.migrations';
export type { MetalDatabase, MetalStore } from './repositories/tables';
export type { DataPlaneLookup } from './services/boot-vars.service';
export { LIO_SEP, renderBootVarsScript, STGT_SEP } from './services/boot-vars.service';
export { ChapReconciler } from './services/chap-reconcile.service';
export { announceEverythingChanged, MetalReplication, type MetalReplicationOptions, type ReplicatedMetal } from './services/replication.service';
export type { WorkerStorage } from './services/worker.service';
export { createMetalServices, type MetalDeps, type MetalServices, reloaderFor } from './wiring';
export { ChapRepository } from './repositories/chap.repository';
export { checkedHost, primaryAddress, REPORT_MAX_AGE_S, signReport } from './services/host-report.service';
export type { BootTimeline, HostReportBody, HostView } from './api/schemas';
