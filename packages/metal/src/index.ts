export { buildMetalApp, metalPlugin, type MetalPluginOptions, PUBLIC_PATHS } from './app';
export { type MetalConfig, metalConfigFromEnv, type ReloadMethod } from './config';
export * from './domain/identifiers';
export * from './domain/types';
export { metalMigrations } from './repositories/metal.migrations';
export { createMetalServices, type MetalDeps, type MetalServices, reloaderFor } from './wiring';
export { renderBootVarsScript, STGT_SEP, LIO_SEP } from './services/boot-vars.service';
export type { WorkerStorage } from './services/worker.service';
export type { DataPlaneLookup } from './services/boot-vars.service';
