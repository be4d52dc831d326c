import { type JobsTables, lockInTransaction, type OperationsTables, type Store } from '@ironlens/core';
import type { Generated, Kysely, Transaction } from 'kysely';

export interface WorkersTable {
  worker_id: string;
  hostname: string;
  arch: string;
  state: string;
  default_os: string | null;
  menu_default: string | null;
  menu_timeout: number | null;
  cd: string | null;
  created_at: string;
}
export interface DisksTable {
  worker_id: string;
  os: string;
  seq: number;
  agent: string;
  iqn: string;
  filename: string;
  backing: string;
  source: string;
}
export interface DevicesTable {
  mac: string;
  uuid: string | null;
  state: string;
  bound_worker_id: string | null;
  key_hash: string | null;
  source: string;
  fingerprint: string;
  first_seen: string | null;
  last_seen: string | null;
}
export interface AgentsTable {
  id: string;
  base_url: string;
  token: string | null;
  iscsi_server: string | null;
  role_disk: number;
  role_cd: number;
  tags: string;
  enabled: number;
  seq: number;
}
/** One CHAP account per worker (issue 13); the secret is sealed, never stored as plain text. */
export interface WorkerChapTable {
  worker_id: string;
  chap_user: string;
  secret_sealed: string;
  created_at: string;
}
/** A booted worker's last accepted host report (issue 24). */
export interface HostReportsTable {
  worker_id: string;
  mac: string;
  report: string;
  reported_at: string;
  report_ts: number;
  boot: string;
}
/** The operator's fixed IPv4 address per worker (issue 24), rendered into the hosts file. */
export interface WorkerAddressesTable {
  worker_id: string;
  ipv4: string;
}
/** The cluster a worker joined through a bootstrap by worker (issue 24). */
export interface WorkerClustersTable {
  worker_id: string;
  cluster_id: string;
  joined_at: string;
}
/** A device's BMC (issue 21); the password is sealed, never stored as plain text. */
export interface DeviceBmcTable {
  mac: string;
  driver: string;
  address: string;
  port: number | null;
  username: string;
  password_sealed: string;
  verify_tls: number;
  cipher_suite: number | null;
  updated_at: string;
}
/** A device's last power action and its proof of boot (issue 21). */
export interface DevicePowerTable {
  mac: string;
  action: string;
  boot: string | null;
  requested_at: string;
  bmc_ok: number;
  report_seen_at: string | null;
  boot_vars_seen_at: string | null;
  network_boot_seen_at: string | null;
  result: string | null;
  detail: string | null;
  deadline_ms: number | string | null;
}
/** A rollout (issue 31); `options` is JSON (timeouts), `requested` a pause or abort not done yet. */
export interface RolloutsTable {
  seq: Generated<number>;
  id: string;
  state: string;
  reason: string | null;
  master: string;
  max_unavailable: string;
  batch_size: number;
  options: string;
  current_batch: number | null;
  requested: string | null;
  job_id: string | null;
  actor: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}
/** One worker of a rollout: its phase, and what the rollout made for it (`state`, JSON). */
export interface RolloutWorkersTable {
  rollout_id: string;
  worker_id: string;
  batch: number;
  position: number;
  phase: string;
  reason: string | null;
  state: string;
  steps: string;
  started_at: string | null;
  finished_at: string | null;
}
/** A worker's image history (issue 31). */
export interface WorkerImagesTable {
  id: Generated<number>;
  worker_id: string;
  at: string;
  actor: string | null;
  master: string | null;
  os: string;
  agent: string;
  iqn: string;
  rollout_id: string | null;
  outcome: string;
  detail: string | null;
}
export interface SettingsTable {
  key: string;
  value: string;
}
/** A master image's annotation (the seed control plane's current WebUI): never checked against the agent's listing. */
export interface MasterTagsTable {
  agent_id: string;
  name: string;
  os: string;
  os_version: string;
  remark: string;
  updated_at: string;
}
export interface MetalTables {
  workers: WorkersTable;
  disks: DisksTable;
  devices: DevicesTable;
  agents: AgentsTable;
  settings: SettingsTable;
  worker_chap: WorkerChapTable;
  host_reports: HostReportsTable;
  worker_addresses: WorkerAddressesTable;
  worker_clusters: WorkerClustersTable;
  device_bmc: DeviceBmcTable;
  device_power: DevicePowerTable;
  rollouts: RolloutsTable;
  rollout_workers: RolloutWorkersTable;
  worker_images: WorkerImagesTable;
  master_tags: MasterTagsTable;
}

/** Every table the boot control plane's store holds: its own and the operations log. */
export type MetalDatabase = MetalTables & OperationsTables & JobsTables;

/** The store, typed by the metal tables. */
export type MetalStore = Store<MetalDatabase>;

/** A handle on the metal tables: the store itself or an open transaction. */
export type MetalDb = Kysely<MetalDatabase> | Transaction<MetalDatabase>;

/** An open transaction on the metal tables. */
export type MetalTrx = Transaction<MetalDatabase>;

/**
 * Takes the ledger's lock inside a transaction ({@link lockInTransaction}). Every transaction
 * that reads workers, disks or devices to decide a write to them takes it first, so that on
 * PostgreSQL (several replicas, concurrent transactions) they run one after another, as they do
 * on SQLite: the one-to-one binding and the checks before an insert see what the last write left.
 */
export function lockLedger(trx: MetalDb): Promise<void> {
  return lockInTransaction(trx, 'ironlens.metal.ledger');
}
