import type { JobsTables, OperationsTables } from '@ironlens/core';
import type { Kysely, Transaction } from 'kysely';

export interface ClustersTable {
  id: string;
  name: string;
  /** lower(name) while the record is not a draft, NULL for drafts: a unique index keeps names unique among non-drafts. */
  active_name: string | null;
  description: string;
  created_at: string;
  updated_at: string;
  draft: number;
  /** ProxyConfigDTO as JSON. */
  proxy: string;
  /** The kubeconfig sealed by SecretBox (`v1:…`), never plain text. */
  kubeconfig_sealed: string;
  gateway_provider: string | null;
  gateway_namespace: string;
  gateway_name: string;
  gateway_public_url: string | null;
  gateway_port: number | null;
  gateway_authz_host: string | null;
  inotify_max_user_instances: number;
  hf_secret_namespace: string | null;
  hf_secret_name: string | null;
  /** When a write ironlens sent first got an answer from the cluster's API server; null: never (issue 33). Written only by `markReached`. */
  reached_at?: string | null;
}

export interface ClusterSessionsTable {
  id: string;
  cluster_id: string;
  created_at: string;
  active: number;
}

export interface ClusterDownloadsTable {
  cluster_id: string;
  /** `llmD` or `llmDBenchmark`. */
  component: string;
  ref: string;
  state: string;
  path: string | null;
  error: string | null;
  job_id: string | null;
  updated_at: string;
}

export interface ClusterPrepullsTable {
  cluster_id: string;
  accelerators: string;
  images: string;
  job_id: string | null;
  requested_at: string;
}

/** Access keys of a registration's gateway (issue 22): only the SHA-256 of a key is kept. */
export interface ClusterGatewayKeysTable {
  cluster_id: string;
  name: string;
  /** Hex SHA-256 of the whole key; unique. */
  key_hash: string;
  created_at: string;
  last_used_at: string | null;
}

/** What the last gateway reconcile applied and how it ended (issue 22). */
export interface ClusterGatewayStateTable {
  cluster_id: string;
  /** Hash of the rendered objects and chart releases last applied; equal: nothing to re-apply. */
  applied_hash: string | null;
  /** The provider installed by the last successful reconcile. */
  applied_provider: string | null;
  /** JSON list of `{apiVersion, kind, name, namespace}` ironlens applied itself (pruned when no longer rendered). */
  applied_objects: string | null;
  job_id: string | null;
  /** `running`, `success`, `failed`, `cancelled`. */
  state: string;
  error: string | null;
  /** Why the authorization hook could not be applied (the API server's message), or null. */
  hook_error: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** Model deployments (issue 28): one row per execution, its current and last-ready revision. */
export interface ClusterDeploymentsTable {
  id: string;
  /** Lens' run id (`POST /runs/{run_id}/cancel`); unique. */
  run_id: string;
  cluster_id: string;
  session_id: string | null;
  name: string;
  display_name: string;
  description: string;
  /** Lens' DeploymentStatus. */
  status: string;
  revision: number;
  /** The desired DeploymentSpec (JSON). */
  spec: string;
  /** The spec of the last revision that was ready (JSON): what a failed update rolls back to. */
  ready_spec: string | null;
  /** PlacementAnswer (JSON). */
  placement: string | null;
  /** What was applied (JSON: objects, release, publication), for a delete that removes exactly that. */
  applied: string | null;
  /** The last readiness evaluation (JSON). */
  readiness: string | null;
  reason: string | null;
  /** The last log lines of the container behind a fatal reason. */
  logs: string | null;
  /** Lens' failure `{title, detail, code, status}` (JSON). */
  failure: string | null;
  /** The last answered smoke request (JSON). */
  smoke: string | null;
  /** The gateway's public URL when it became ready (the execution's `endpoint`). */
  endpoint: string | null;
  job_id: string | null;
  stage: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface ClusterTables {
  clusters: ClustersTable;
  cluster_sessions: ClusterSessionsTable;
  cluster_downloads: ClusterDownloadsTable;
  cluster_prepulls: ClusterPrepullsTable;
  cluster_gateway_keys: ClusterGatewayKeysTable;
  cluster_gateway_state: ClusterGatewayStateTable;
  cluster_deployments: ClusterDeploymentsTable;
}

/**
 * Every table the cluster manager's store holds (`clustersMigrations`, and core's
 * `operationsMigrations` and `jobsMigrations`): its own, the operations log and the jobs.
 */
export type ClustersDatabase = ClusterTables & OperationsTables & JobsTables;

/** A handle on the cluster manager's tables: the store itself or an open transaction. */
export type ClustersDb = Kysely<ClustersDatabase> | Transaction<ClustersDatabase>;
