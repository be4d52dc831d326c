/**
 * The kind panel's API (seed 001) in one place: each TypeBox schema below is the route's
 * validation and response serialization, its part of the OpenAPI document, and (through
 * `Static<>`) the TypeScript type the services return and the dashboard reads.
 *
 * Exported as `@ironlens/kind/api`. This module imports TypeBox and nothing else, so the
 * browser bundle can `import type` from it without pulling in the server.
 *
 * Property order is the answer's key order: the response serializer writes declared
 * properties in the order they are declared here.
 */
import { Nullable, NullableInput, StringEnum } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';

// --- limits the schemas state and the services apply -------------------------------------

/** Most workers a cluster may be created with. */
export const WORKERS_MAX = 10;
/** Workers when the request names none. */
export const WORKERS_DEFAULT = 1;
/** Jobs `GET /jobs` lists when no `limit` is given. */
export const JOBS_LIMIT_DEFAULT = 30;
/** Largest `limit` of `GET /jobs`. */
export const JOBS_LIMIT_MAX = 200;

export const JOB_STATUSES = ['queued', 'running', 'success', 'failed', 'cancelled'] as const;

// --- requests ----------------------------------------------------------------------------

export const ClusterNameParams = Type.Object({ name: Type.String({ description: 'kind cluster name' }) });
export type ClusterNameParams = Static<typeof ClusterNameParams>;

export const JobIdParams = Type.Object({ job_id: Type.String() });
export type JobIdParams = Static<typeof JobIdParams>;

export const JobsQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: JOBS_LIMIT_MAX, default: JOBS_LIMIT_DEFAULT })) });
export type JobsQuery = Static<typeof JobsQuery>;

/** `POST /clusters`. The name's grammar and the version's form are checked by the service (400 with a sentence). */
export const CreateClusterBody = Type.Object({
  name: Type.String({ description: 'lowercase letters, digits, . and -, at most 50 characters' }),
  kubernetes_version: Type.Optional(NullableInput(Type.String({ description: '1.29.4 or v1.29.4; empty for kind’s default node image' }))),
  workers: Type.Optional(NullableInput(Type.Integer({ minimum: 0, maximum: WORKERS_MAX, default: WORKERS_DEFAULT }))),
});
export type CreateClusterBody = Static<typeof CreateClusterBody>;

// --- answers -----------------------------------------------------------------------------

/** FastAPI's error shape: `detail` is a sentence, or a list of `{type, loc, msg}` for a body that fails its schema. */
export const DetailError = Type.Object({ detail: Type.Unknown() });
export type DetailError = Static<typeof DetailError>;

export const HealthView = Type.Object({
  status: StringEnum(['ok', 'degraded'] as const),
  kind_in_path: Type.Boolean(),
  kubectl_in_path: Type.Boolean(),
  container_cli: Type.String(),
  container_engine_ok: Type.Boolean(),
  container_engine_detail: Nullable(Type.String()),
});
export type HealthView = Static<typeof HealthView>;

export const VersionsView = Type.Object({
  tags: Type.Array(Type.String(), { description: 'stable kindest/node tags, newest first' }),
  skipped: Type.Boolean(),
  reason: Type.Optional(Type.String({ description: 'why the list was not read (KIND_K8S_SKIP_VERSION_LIST)' })),
  error: Type.Optional(Type.String({ description: 'set when the registry could not be read (the list is then empty)' })),
});
export type VersionsView = Static<typeof VersionsView>;

export const StatsView = Type.Object({
  kind_clusters_count: Type.Integer(),
  local_cluster_dirs_count: Type.Integer(),
  total_workers_from_meta: Nullable(Type.Integer()),
  jobs_total: Type.Integer(),
  jobs_recent_failed: Type.Integer(),
});
export type StatsView = Static<typeof StatsView>;

/**
 * A cluster's `meta.json`, in the order the creation writes it. Keys written by other
 * versions are kept as they are (after these).
 */
export const ClusterMeta = Type.Object(
  {
    cluster_name: Type.Optional(Type.String()),
    kubernetes_version_tag: Type.Optional(Nullable(Type.String())),
    node_image: Type.Optional(Nullable(Type.String())),
    worker_nodes: Type.Optional(Type.Integer()),
    kubeconfig_patched_for_host: Type.Optional(Type.Boolean()),
    nodes_ready: Type.Optional(Type.Boolean()),
    container_cli: Type.Optional(Type.String()),
    created_at_utc: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
export type ClusterMeta = Static<typeof ClusterMeta> & { [key: string]: unknown };

const clusterSummaryProperties = {
  name: Type.String(),
  registered_in_kind: Type.Boolean(),
  has_local_kubeconfig: Type.Boolean(),
  meta: Nullable(ClusterMeta),
};

export const ClusterSummary = Type.Object(clusterSummaryProperties);
export type ClusterSummary = Static<typeof ClusterSummary>;

/** `GET /clusters`: kind's clusters and the clusters directory's, by name. */
export const ClusterList = Type.Array(ClusterSummary);

export const ClusterDetails = Type.Object({
  ...clusterSummaryProperties,
  kubeconfig_path: Nullable(Type.String()),
  kubectl_get_nodes_rc: Nullable(Type.Integer()),
  kubectl_get_nodes: Nullable(Type.String()),
});
export type ClusterDetails = Static<typeof ClusterDetails>;

/** `GET /clusters/{name}/kubeconfig`: the saved file, as `application/yaml`. */
export const KubeconfigFile = Type.String({ description: 'the cluster’s kubeconfig (YAML), with its cluster-admin credentials' });

export const WorkloadsView = Type.Object({
  cluster_name: Type.String(),
  nodes_rc: Nullable(Type.Integer()),
  nodes_output: Nullable(Type.String()),
  pods_rc: Nullable(Type.Integer()),
  pods_output: Nullable(Type.String()),
  error: Nullable(Type.String()),
});
export type WorkloadsView = Static<typeof WorkloadsView>;

export const DeleteView = Type.Object({
  name: Type.String(),
  kind_delete_ok: Type.Boolean(),
  summary: Type.String(),
});
export type DeleteView = Static<typeof DeleteView>;

/** `POST /clusters` → 202. */
export const CreateAccepted = Type.Object({
  job_id: Type.String(),
  status: Type.String(),
  message: Type.String(),
});
export type CreateAccepted = Static<typeof CreateAccepted>;

/** The seed's `JobView`, plus the log tail, error and timestamps. */
export const JobView = Type.Object(
  {
    job_id: Type.String(),
    kind: Type.String(),
    status: StringEnum(JOB_STATUSES),
    cluster_name: Nullable(Type.String()),
    created_at_utc: Type.String(),
    message: Nullable(Type.String()),
    result: Type.Unknown({ description: 'what the creation made; null until it succeeds' }),
    progress_stage: Nullable(Type.String()),
    progress_percent: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    cancel_requested: Type.Boolean(),
    started_at_utc: Nullable(Type.String()),
    finished_at_utc: Nullable(Type.String()),
    actor: Type.Optional(Nullable(Type.String({ description: 'who started it: the token’s name (issue 20), `ironlens` for ironlens itself' }))),
    log_tail: Type.Array(Type.String()),
  },
);
export type JobView = Static<typeof JobView>;
export type JobStatus = JobView['status'];

/** `GET /jobs`: newest first. */
export const JobList = Type.Array(JobView);

export const CancelView = Type.Object({
  job_id: Type.String(),
  cancel_requested: Type.Boolean(),
  message: Type.String(),
});
export type CancelView = Static<typeof CancelView>;
