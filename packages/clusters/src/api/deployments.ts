/**
 * Model deployments (issue 28): requests and answers of `/api/v1/deployments/…` (llm-d Lens'
 * deployment module: its paths and field names where Lens has the route) and of the model
 * service (`/api/v1/model-service/models`, the OpenAI-style `/v1/models`). One TypeBox source for
 * validation, serialization, the OpenAPI document and the types (issue 19). TypeBox only.
 */
import { Nullable, StringEnum } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';

const NullableString = Nullable(Type.String());

/** Lens' `DeploymentStatus` (execution). ironlens writes `rolling_back`/`rolled_back` for an update that failed. */
export const DEPLOYMENT_STATUSES = ['draft', 'validated', 'rendered', 'deploying', 'ready', 'failed', 'rolling_back', 'rolled_back', 'cleaned'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
/** What `?status`/`?statuses` accept: Lens' set, `cleaned_up` (Lens' twin of `cleaned`) included. */
export const DEPLOYMENT_STATUS_FILTERS = [...DEPLOYMENT_STATUSES, 'cleaned_up'] as const;

/** llm-d's well-lit paths ironlens deploys; `baseline` is Lens' direct vLLM (not on the gateway). */
export const DEPLOYMENT_PATHS = ['optimized-baseline', 'pd-disaggregation', 'wide-ep', 'baseline'] as const;
export type DeploymentPath = (typeof DEPLOYMENT_PATHS)[number];

/** Accelerators and Lens' alias keys for them (`hardware_profile.py`). */
export const ACCELERATORS = ['nvidia', 'intel', 'cpu'] as const;
export type Accelerator = (typeof ACCELERATORS)[number];
export const ACCELERATOR_ALIASES = ['nvidia', 'cuda', 'gpu', 'nvidia_gpu', 'intel', 'xpu', 'intel_gpu', 'intel-xpu', 'cpu'] as const;

export const STORAGE_TYPES = ['local-cache', 'pvc', 'model-cache'] as const;

/** A Hugging Face model id (`org/name` or `name`): it reaches vLLM's arguments, a route's header match and a label. */
export const MODEL_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$';
/** A vLLM argument name without its dashes (`max-lora-rank`). */
export const VLLM_ARG_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$';
/** A vLLM argument value: printable, no control characters (it is one element of the container's argv). */
export const VLLM_ARG_VALUE_PATTERN = '^[\\x20-\\x7e]{0,512}$';

const VllmArgument = Type.Object(
  {
    name: Type.String({ pattern: VLLM_ARG_NAME_PATTERN, description: 'the argument without its leading dashes' }),
    value: Type.String({ pattern: VLLM_ARG_VALUE_PATTERN, description: '`true`/`false` make a flag `--x`/`--no-x`; anything else `--x=value`' }),
  },
  { additionalProperties: false },
);
export type VllmArgument = Static<typeof VllmArgument>;

const RoleSize = Type.Object(
  { replicas: Type.Integer({ minimum: 1, maximum: 32 }), tensor_parallel_size: Type.Integer({ minimum: 1, maximum: 16 }) },
  { additionalProperties: false },
);

/** `POST /api/v1/deployments/standard-vllm-runs`: Lens' `StandardKubernetesServiceRequest` plus ironlens' fields. */
export const StandardVllmRunRequest = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 300, pattern: MODEL_PATTERN }),
    deployment_name: Type.String({ minLength: 1, maxLength: 120 }),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    cluster_session_id: Type.Optional(Type.String({ minLength: 36, maxLength: 36, description: 'an active session of the cluster (Lens); or `cluster_id`' })),
    cluster_id: Type.Optional(Type.String({ pattern: '^[0-9a-f]{8}$', description: 'ironlens: the cluster, instead of a session' })),
    replicas: Type.Integer({ minimum: 1, maximum: 32, description: 'model-server replicas (decode replicas on the P/D and wide-EP paths)' }),
    tensor_parallel_size: Type.Integer({ minimum: 1, maximum: 16, description: 'accelerators per replica (per data-parallel rank on wide-EP)' }),
    storage_type: Type.Optional(StringEnum(STORAGE_TYPES, { default: 'local-cache' })),
    storage_volume_id: Type.Optional(Type.String({ maxLength: 120, description: 'model-cache: the PersistentVolume holding the weights' })),
    model_cache_path: Type.Optional(Type.String({ maxLength: 1024, description: 'accepted for Lens clients and ignored: ironlens never mounts a host path' })),
    pvc_name: Type.Optional(Type.String({ maxLength: 253 })),
    max_model_len: Type.Optional(Type.Integer({ minimum: 256, maximum: 131072, default: 4096 })),
    gpu_memory_utilization: Type.Optional(Type.Number({ minimum: 0.5, maximum: 0.98, default: 0.9 })),
    max_num_seqs: Type.Optional(Type.Integer({ minimum: 1, maximum: 4096, default: 256 })),
    max_num_batched_tokens: Type.Optional(Type.Integer({ minimum: 256, maximum: 131072, default: 8192 })),
    enable_prefix_caching: Type.Optional(Type.Boolean({ default: true })),
    enforce_eager: Type.Optional(Type.Boolean({ default: false })),
    vllm_arguments: Type.Optional(Type.Array(VllmArgument, { maxItems: 32 })),
    use_cluster_proxy: Type.Optional(Type.Boolean({ default: true })),
    http_proxy: Type.Optional(Type.String({ maxLength: 1000 })),
    https_proxy: Type.Optional(Type.String({ maxLength: 1000 })),
    no_proxy: Type.Optional(Type.String({ maxLength: 2000 })),
    // ironlens' additions
    path: Type.Optional(StringEnum(DEPLOYMENT_PATHS, { default: 'optimized-baseline', description: "llm-d's well-lit path" })),
    accelerator: Type.Optional(StringEnum(ACCELERATOR_ALIASES, { default: 'nvidia', description: 'nvidia (cuda, gpu), intel (xpu), cpu' })),
    node: Type.Optional(Type.String({ minLength: 1, maxLength: 253, description: 'pin: every model server on this node' })),
    gpu_product: Type.Optional(Type.String({ minLength: 1, maxLength: 63, pattern: '^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$', description: 'pin: the GPU product label (GFD `nvidia.com/gpu.product`, `gpu.intel.com/product`)' })),
    prefill: Type.Optional(RoleSize),
    wide_ep: Type.Optional(
      Type.Object(
        {
          group_size: Type.Integer({ minimum: 1, maximum: 16, description: 'pods per LeaderWorkerSet group' }),
          data_parallel_local: Type.Integer({ minimum: 1, maximum: 8, description: 'data-parallel ranks per pod (one port each)' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type StandardVllmRunRequest = Static<typeof StandardVllmRunRequest>;

/** `PATCH …/executions/{id}`: Lens' metadata, and ironlens' runtime fields (a new revision, rolled back when it fails). */
export const DeploymentPatchRequest = Type.Object(
  {
    display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 32 })),
    tensor_parallel_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 16 })),
    vllm_arguments: Type.Optional(Type.Array(VllmArgument, { maxItems: 32 })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type DeploymentPatchRequest = Static<typeof DeploymentPatchRequest>;

export const ExecutionParams = Type.Object({ execution_id: Type.String({ minLength: 1, maxLength: 64 }) });
export type ExecutionParams = Static<typeof ExecutionParams>;
export const PodLogParams = Type.Object({ execution_id: Type.String({ minLength: 1, maxLength: 64 }), pod_name: Type.String({ minLength: 1, maxLength: 253 }) });
export type PodLogParams = Static<typeof PodLogParams>;
export const RunParams = Type.Object({ run_id: Type.String({ minLength: 1, maxLength: 64 }) });
export type RunParams = Static<typeof RunParams>;

export const ExecutionListQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(DEPLOYMENT_STATUS_FILTERS)),
    statuses: Type.Optional(Type.Array(StringEnum(DEPLOYMENT_STATUS_FILTERS), { maxItems: 16 })),
    cluster_id: Type.Optional(Type.String({ maxLength: 64 })),
    query: Type.Optional(Type.String({ maxLength: 200 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 200 })),
  },
  { additionalProperties: false },
);
export type ExecutionListQuery = Static<typeof ExecutionListQuery>;

export const PodLogQuery = Type.Object(
  {
    container: Type.Optional(Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' })),
    tail: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, default: 200 })),
    previous: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);
export type PodLogQuery = Static<typeof PodLogQuery>;

export const DeleteExecutionQuery = Type.Object({ delete_namespace: Type.Optional(Type.Boolean({ default: true })) }, { additionalProperties: false });
export type DeleteExecutionQuery = Static<typeof DeleteExecutionQuery>;

// --- answers -----------------------------------------------------------------------------

const Failure = Type.Object({ title: Type.String(), detail: Type.String(), code: Type.String(), status: Type.String() });
export type DeploymentFailure = Static<typeof Failure>;

const CustomParameter = Type.Object({ target: Type.String(), kind: Type.String(), name: Type.String(), value: Type.String() });

/** One readiness fact and who asserted it (a controller's condition, ironlens' own check, the model server's answer). */
export const ReadinessCheck = Type.Object({
  ok: Type.Boolean(),
  reason: NullableString,
  by: Type.String({ description: 'who asserted it: a controller name, `ironlens` (its own check of the objects), `model-server`' }),
});
export type ReadinessCheck = Static<typeof ReadinessCheck>;

export const Readiness = Type.Object({
  pods: ReadinessCheck,
  inferencePool: Nullable(ReadinessCheck),
  httpRoute: Nullable(ReadinessCheck),
  smoke: ReadinessCheck,
  /** `transient` keeps the deployment deploying; `fatal` fails it (Lens' rules). */
  verdict: StringEnum(['ready', 'transient', 'fatal'] as const),
  checkedAt: Type.String(),
});
export type Readiness = Static<typeof Readiness>;

export const PlacementRow = Type.Object({
  node: Type.String(),
  product: NullableString,
  resource: NullableString,
  allocatable: Type.Integer(),
  requested: Type.Integer(),
  free: Type.Integer(),
  /** ironlens' host report of this node's machine, when ironlens booted it (issue 24). */
  reported: Nullable(Type.Object({ workerId: Type.String(), accelerators: Type.Integer(), product: NullableString })),
  /** A mismatch between the host report and what the node offers, with its likely cause. */
  mismatch: NullableString,
});
export type PlacementRow = Static<typeof PlacementRow>;

export const PlacementAnswer = Type.Object({
  accelerator: StringEnum(ACCELERATORS),
  resource: NullableString,
  /** Accelerators asked for: replicas × tensor_parallel_size, per role. */
  needed: Type.Integer(),
  /** Where each replica fits (the scheduler places them; pins are node selectors). */
  assignments: Type.Array(Type.Object({ role: Type.String(), replica: Type.Integer(), node: Type.String(), devices: Type.Integer() })),
  nodes: Type.Array(PlacementRow),
  pins: Type.Object({ node: NullableString, gpuProduct: NullableString }),
});
export type PlacementAnswer = Static<typeof PlacementAnswer>;

/** Lens' execution payload (`DeploymentExecutionContext.api_payload`) plus ironlens' fields. */
export const DeploymentExecutionSchema = Type.Object({
  execution_id: Type.String(),
  status: StringEnum(DEPLOYMENT_STATUSES),
  cluster_id: Type.String(),
  cluster_session_id: NullableString,
  namespace: Type.String(),
  name: Type.String(),
  display_name: Type.String(),
  description: Type.String(),
  model: Type.String(),
  backend: Type.String(),
  guide: Type.String(),
  endpoint: NullableString,
  forwarded_endpoint: NullableString,
  replicas: Type.Integer(),
  tensor_parallel_size: Type.Integer(),
  image: Type.String(),
  preserve_deployment: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
  max_model_len: Type.Integer(),
  gpu_memory_utilization: Type.Number(),
  enable_prefix_caching: Type.Boolean(),
  max_num_seqs: Type.Integer(),
  max_num_batched_tokens: Type.Integer(),
  storage_type: Type.String(),
  storage_volume_id: Type.String(),
  mount_path: Type.String(),
  pvc_name: Type.String(),
  failure: Nullable(Failure),
  custom_parameters: Type.Array(CustomParameter),
  baseline_endpoint: NullableString,
  service_ref: NullableString,
  // ironlens
  run_id: Type.String(),
  path: StringEnum(DEPLOYMENT_PATHS),
  accelerator: StringEnum(ACCELERATORS),
  revision: Type.Integer(),
  prefill: Nullable(RoleSize),
  wide_ep: Nullable(Type.Object({ group_size: Type.Integer(), data_parallel_local: Type.Integer() })),
  pins: Type.Object({ node: NullableString, gpuProduct: NullableString }),
  /** The job's current stage while one runs, else the last one. */
  stage: NullableString,
  /** Why it is not ready (a scheduler message, a container's waiting reason…), or null. */
  reason: NullableString,
  /** The container's last log lines for a fatal reason. */
  logs: NullableString,
  readiness: Nullable(Readiness),
  placement: Nullable(PlacementAnswer),
  gateway: Nullable(
    Type.Object({
      route: Type.String({ description: 'namespace/name of the HTTPRoute' }),
      pool: Type.String({ description: 'namespace/name of the InferencePool' }),
      baseModel: Type.String(),
      header: Type.String(),
      url: NullableString,
    }),
  ),
  smoke: Nullable(Type.Object({ latency_ms: Type.Number(), at: Type.String(), status_code: Type.Integer(), text: Type.String() })),
  /** A copyable curl line; the key is the `$KEY` placeholder (a gateway key is shown once, at its creation). */
  curl: NullableString,
  job: Nullable(Type.Object({ id: Type.String(), kind: Type.String(), status: Type.String(), stage: NullableString, percent: Nullable(Type.Number()), log: Type.Array(Type.String()), error: NullableString })),
});
export type DeploymentExecution = Static<typeof DeploymentExecutionSchema>;

export const DeploymentExecutionList = Type.Object({ items: Type.Array(DeploymentExecutionSchema) });
export type DeploymentExecutionList = Static<typeof DeploymentExecutionList>;

/** Lens' `DeploymentRun` with one case, and the execution's id at the top (ironlens' convenience). */
export const DeploymentRunSchema = Type.Object({
  id: Type.String(),
  status: StringEnum(['queued', 'running', 'succeeded', 'partially_succeeded', 'failed', 'cleaned', 'cancelling', 'cancelled'] as const),
  source_configurations: Type.Array(Type.Object({ ordinal: Type.Integer(), provider_ref: Type.String(), format: Type.String() })),
  cases: Type.Array(
    Type.Object({
      id: Type.String(),
      run_id: Type.String(),
      ordinal: Type.Integer(),
      source_configuration_ordinal: Type.Integer(),
      provider_ref: Type.String(),
      component: Type.String(),
      depends_on: Type.Array(Type.String()),
      status: Type.String(),
      attempt: Type.Integer(),
      parent_case_id: NullableString,
      execution_id: Type.String(),
      failure: Nullable(Failure),
    }),
  ),
  failure_policy: Type.String(),
  provenance: Type.Object({
    deployment_source: Type.Object({ kind: Type.String() }),
    cluster_id: Type.String(),
    cluster_session_id: NullableString,
    deployment_name: Type.String(),
    description: Type.String(),
  }),
  created_at: Type.String(),
  started_at: NullableString,
  finished_at: NullableString,
  execution_id: Type.String(),
});
export type DeploymentRun = Static<typeof DeploymentRunSchema>;

export const RunCancelAnswer = Type.Object({ id: Type.String(), status: Type.Literal('cancelling') });
export type RunCancelAnswer = Static<typeof RunCancelAnswer>;

const ContainerView = Type.Object({ name: Type.String(), image: Type.String(), ready: Type.Boolean(), restart_count: Type.Integer(), state: StringEnum(['running', 'waiting', 'terminated', 'unknown'] as const) });
export const PodView = Type.Object({
  name: Type.String(),
  namespace: Type.String(),
  phase: Type.String(),
  ready: Type.Boolean(),
  pod_ip: NullableString,
  node_name: NullableString,
  restarts: Type.Integer(),
  status_reason: Type.String(),
  containers: Type.Array(ContainerView),
  creation_timestamp: NullableString,
  // ironlens
  role: NullableString,
  message: NullableString,
});
export type PodView = Static<typeof PodView>;

export const ExecutionPods = Type.Object({ execution_id: Type.String(), namespace: Type.String(), pods: Type.Array(PodView), error: Type.Optional(Type.String()) });
export type ExecutionPods = Static<typeof ExecutionPods>;

export const EventView = Type.Object({ type: Type.String(), reason: Type.String(), message: Type.String(), object: Type.String(), count: Type.Integer(), last_timestamp: NullableString });
export const ExecutionEvents = Type.Object({ execution_id: Type.String(), namespace: Type.String(), events: Type.Array(EventView), error: Type.Optional(Type.String()) });
export type ExecutionEvents = Static<typeof ExecutionEvents>;

export const PodLogs = Type.Object({ execution_id: Type.String(), namespace: Type.String(), pod_name: Type.String(), container: Type.String(), logs: Type.String(), success: Type.Boolean() });
export type PodLogs = Static<typeof PodLogs>;

/** One published model (Lens' model-service group fields, camelCase) with its gateway URL. */
export const PublishedModel = Type.Object({
  id: Type.String({ description: 'the execution id' }),
  name: Type.String(),
  modelRef: Type.String(),
  displayName: Type.String(),
  description: Type.String(),
  selectionPolicy: Type.String(),
  status: StringEnum(['active', 'disabled'] as const),
  clusterId: Type.String(),
  clusterName: Type.String(),
  servedName: Type.String(),
  baseModel: Type.String(),
  createdByUserId: NullableString,
  createdAt: Type.String(),
  updatedAt: Type.String(),
  baseUrl: NullableString,
  header: Type.String(),
  curl: NullableString,
});
export type PublishedModel = Static<typeof PublishedModel>;
export const PublishedModelList = Type.Object({ items: Type.Array(PublishedModel) });
export type PublishedModelList = Static<typeof PublishedModelList>;

/** The OpenAI-style model list (`GET /v1/models`) for a gateway key's cluster. */
export const OpenAiModelList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Type.Object({ id: Type.String(), object: Type.Literal('model'), created: Type.Integer(), owned_by: Type.String() })),
});
export type OpenAiModelList = Static<typeof OpenAiModelList>;

/** `GET /api/cluster/clusters/{id}/accelerators`: where accelerators are free, per node (the wizard's "where it fits"). */
export const AcceleratorInventory = Type.Object({
  clusterId: Type.String(),
  accelerators: Type.Array(
    Type.Object({ accelerator: StringEnum(ACCELERATORS), resource: NullableString, products: Type.Array(Type.String()), nodes: Type.Array(PlacementRow) }),
  ),
  lws: Type.Boolean({ description: 'the cluster serves LeaderWorkerSet (wide-EP)' }),
});
export type AcceleratorInventory = Static<typeof AcceleratorInventory>;
