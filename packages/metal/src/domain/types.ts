import type { BootTimeline, HostView } from '../api/schemas';
import type { Os } from './identifiers';
import type { LastPower } from './power';

export type DeviceState = 'pooled' | 'bound' | 'revoked';
export type WorkerState = 'registered' | 'ready' | 'installing';

export interface Fingerprint {
  manufacturer?: string | null;
  product?: string | null;
  serial?: string | null;
  cpumodel?: string | null;
  mem_total?: number | null;
  mem_type?: string | null;
  mem_speed?: number | null;
  chip?: string | null;
  busid?: string | null;
}

/** A device record, in the seed's shape (§16). */
export interface Device {
  mac: string;
  uuid: string | null;
  state: DeviceState;
  bound_worker_id: string | null;
  key_hash: string | null;
  source: 'ipxe' | 'manual';
  fingerprint: Fingerprint;
  first_seen: string | null;
  last_seen: string | null;
  /** The last power action and its proof of boot (issue 21); only on devices that had one. */
  last_power?: LastPower;
}

export interface DiskSource {
  type: 'master' | 'empty';
  name?: string;
  size?: string;
}

export interface Disk {
  agent: string;
  iqn: string;
  filename: string;
  backing: string;
  os: Os;
  source: DiskSource;
}

export interface Cd {
  agent: string;
  iqn: string;
  iso: string;
  backing: string;
}

export interface Boot {
  menu_default?: string | null;
  menu_timeout?: number | null;
}

/** A worker as stored (the ledger; the MAC lives on the device side). */
export interface WorkerRecord {
  worker_id: string;
  hostname: string;
  arch: string;
  state: WorkerState;
  default_os: Os | null;
  boot: Boot;
  disks: Disk[];
  cd: Cd | null;
}

/** A worker as the API shows it: the ledger plus the projected binding. */
export interface WorkerView {
  hostname: string;
  arch: string;
  state: WorkerState;
  disks: Disk[];
  cd: Cd | null;
  worker_id: string;
  mac: string | null;
  bound_device: string | null;
  readiness: 'ready' | 'partial' | 'idle';
  default_os?: Os;
  boot?: Boot;
  /** Issue 24: the last host report, its boot's timeline, the address ironlens reaches it at, the operator's fixed address. */
  host?: HostView | null;
  boot_timeline?: BootTimeline | null;
  address?: string | null;
  fixed_address?: string | null;
  cluster_id?: string | null;
}

export interface Agent {
  id: string;
  base_url: string;
  token: string | null;
  iscsi_server: string | null;
  role: { disk: boolean; cd: boolean };
  tags: string[];
  enabled: boolean;
}

export function workerView(w: WorkerRecord, mac: string | null): WorkerView {
  const v: WorkerView = {
    hostname: w.hostname,
    arch: w.arch,
    state: w.state,
    disks: w.disks,
    cd: w.cd,
    worker_id: w.worker_id,
    mac,
    bound_device: mac,
    readiness: mac && w.disks.length ? 'ready' : mac || w.disks.length ? 'partial' : 'idle',
  };
  if (w.default_os) v.default_os = w.default_os;
  const boot: Boot = {};
  if (w.boot.menu_default != null) boot.menu_default = w.boot.menu_default;
  if (w.boot.menu_timeout != null) boot.menu_timeout = w.boot.menu_timeout;
  if (Object.keys(boot).length) v.boot = boot;
  return v;
}
