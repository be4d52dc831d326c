/**
 * Response shapes of the seed 004 API that are not a stored record (batch results, probe,
 * masters, status). The services return them and the web console imports them
 * (`import type` only), so the client's view of the API cannot drift from the server's.
 */
import type { OperationEntry } from '@ironlens/core';
import type { AgentMaster, AgentTarget } from '../adapters/storage-agent';
import type { Os } from './identifiers';
import type { WorkerView } from './types';

/** One manifest pair that can be bound (§16.9). */
export interface BatchPreviewMatch {
  mac: string;
  worker_id: string;
  device_state: string;
  worker_state: string;
  /** Declared fields (`manufacturer`, `product`, `serial`, `uuid`) that differ from the device's report. */
  fingerprint_mismatch: { fields: string[] } | null;
}

/** A pair that cannot be bound as it stands, with why. */
export interface BatchPreviewIssue {
  mac: unknown;
  worker_id: string;
  reason: string;
}

/** `POST /devices/bind/batch/preview`: writes nothing. */
export interface BatchPreview {
  matched: BatchPreviewMatch[];
  conflicts: BatchPreviewIssue[];
  not_found: BatchPreviewIssue[];
  summary: { total: number; ok: number; conflict: number; not_found: number };
}

/** `POST /devices/bind/batch`: each pair independent. */
export interface BatchBindResult {
  succeeded: Array<{ mac: string; worker_id: string; fingerprint_mismatch?: { fields: string[] } }>;
  skipped: Array<{ mac: string; worker_id: string; reason: string }>;
  failed: Array<{ mac: unknown; worker_id: string; error: string }>;
}

/** `POST /agents/probe`: what a registration would hold, nothing written. */
export interface AgentProbe {
  base_url: string;
  role: { disk: boolean; cd: boolean };
  tags: string[];
  iscsi_server: string;
  enabled: boolean;
  backend: string;
  fs_type?: string;
  base_iqn?: string;
  clone?: string;
  empty_disk?: string;
  persistent?: string;
}

/** `GET /masters`: every enabled disk agent's master images; an agent that failed has `error`. */
export interface MastersListing {
  agents: Array<{ agent: string; iscsi_server: string | null; masters: AgentMaster[]; error?: string }>;
}

/** `POST /workers/luns/disk/batch`. */
export interface DiskBatchResult {
  succeeded: Array<{ worker_id: string; agent: string; iqn: string }>;
  skipped: Array<{ worker_id: string; reason: string }>;
  failed: Array<{ worker_id: string | null; agent: string; error: string }>;
}

/** One target on an agent (`GET /agents/{id}/luns`, as the agent lists it). */
export type AgentLunTarget = AgentTarget;

/** A target check of `GET /workers/{id}/status`. */
export interface TargetCheck {
  exists: boolean | null;
  target: { iqn: string; luns: Array<{ backing?: string }> } | null;
  error?: string;
}

/** `GET /workers/{id}/status` (§10): the ledger next to what dnsmasq and the agents hold. */
export interface WorkerStatus {
  worker: WorkerView;
  actual: {
    dnsmasq: { hostname: string; mac: string } | null;
    disks: Array<{ os: Os } & TargetCheck>;
    cd: TargetCheck | null;
  };
}

/** `GET /operations`. */
export interface OperationsPage {
  next_cursor: number;
  entries: OperationEntry[];
}

/** `DELETE /workers/{id}`. */
export interface WorkerDeleted {
  deleted: string;
  delete_disk: boolean;
  dnsmasq_removed: boolean;
}
