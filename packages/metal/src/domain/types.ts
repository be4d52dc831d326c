/**
 * The ledger's records and the worker view. Every shape the API answers is a `Static<>` of its
 * schema in `../api/schemas` (issue 19: one source for the answer and its type); what is here
 * and not there is a record as stored (`WorkerRecord`, `Agent` with its token).
 */
import type { Cd, Device, DeviceState, Disk, DiskSource, Fingerprint, WorkerState, WorkerView } from '../api/schemas';
import type { Os } from './identifiers';

export type { Cd, Device, DeviceState, Disk, DiskSource, Fingerprint, WorkerState, WorkerView };

/** A worker's boot settings as stored (`menu.ipxe`). */
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

/** A storage agent as stored: with its token (`${ENV}` or the token itself), which no answer shows. */
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
    disks: w.disks.map((d) => ({ ...d, os_tag: d.os })),
    cd: w.cd,
    worker_id: w.worker_id,
    mac,
    bound_device: mac,
    readiness: mac && w.disks.length ? 'ready' : mac || w.disks.length ? 'partial' : 'idle',
  };
  if (w.default_os) v.default_os = w.default_os;
  const boot: NonNullable<WorkerView['boot']> = {};
  if (w.boot.menu_default != null) boot.menu_default = w.boot.menu_default;
  if (w.boot.menu_timeout != null) boot.menu_timeout = w.boot.menu_timeout;
  if (Object.keys(boot).length) v.boot = boot;
  return v;
}
