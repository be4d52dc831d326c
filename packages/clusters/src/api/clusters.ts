/**
 * The cluster manager's API (seed 000, `/api/cluster/…`, `/api/v1/versions` and the legacy
 * `/api/cluster-overview/…`) in one place: each TypeBox schema below is a route's validation or
 * response serialization, its part of the OpenAPI document, and (through `Static<>`) the type the
 * services return and the console reads (issue 19).
 *
 * The response serializer (fast-json-stringify) writes the properties a schema lists, in the
 * order listed, and drops any other: every field a service answers is listed here, in the order
 * the service builds it. A value that is open by nature (a Kubernetes object passed through) is
 * open on that one property only. `src/api/answers.test.ts` compares, route by route, the JSON
 * answered with the object the service returned.
 *
 * Imports TypeBox and nothing else of the server (`@ironlens/clusters/api`), so the console's
 * bundle can take its types and constants from here.
 */
import { AnyObject, Nullable, StringEnum } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';
import { GatewayStatusSchema } from './gateway';

// --- constants the schemas state and the services apply ----------------------------------

/** Gateway providers a registration may name. */
export const GATEWAY_PROVIDERS = ['envoy-ai-gateway', 'istio', 'agentgateway', 'gke'] as const;
export type GatewayProvider = (typeof GATEWAY_PROVIDERS)[number];

/** ProxyConfigDTO's modes: `none` direct; `system` ironlens' own HTTPS_PROXY/HTTP_PROXY/NO_PROXY; `custom` the values given. */
/**
 * ProxyConfigDTO's modes a request may name. `auto` (Lens' own, its default): the ironlens process'
 * own `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`; `system` (ironlens' earlier name for it) is stored as
 * `auto`; `custom` the values given; `none` direct even when the process has a proxy (an ironlens
 * extension Lens does not know: its editor shows it as auto).
 */
export const PROXY_MODES = ['auto', 'custom', 'none', 'system'] as const;
export type ProxyMode = (typeof PROXY_MODES)[number];
/** The modes a record holds (and answers): `system` is read back as `auto`. */
export const STORED_PROXY_MODES = ['auto', 'custom', 'none'] as const;
export type StoredProxyMode = (typeof STORED_PROXY_MODES)[number];

/**
 * Planning discovery's allow-list: the only reads a session may ask for, with the path each
 * reads (anything else answers 422 `invalid_planning_resource`). The route's `resource` enum and
 * docs/clusters.md are generated from / checked against it.
 */
export const PLANNING_RESOURCES = {
  version: '/version',
  nodes: '/api/v1/nodes',
  deviceclasses: '/apis/resource.k8s.io/v1/deviceclasses',
  resourceslices: '/apis/resource.k8s.io/v1/resourceslices',
  runtimeclasses: '/apis/node.k8s.io/v1/runtimeclasses',
} as const;
export type PlanningResource = keyof typeof PLANNING_RESOURCES;

/** Download states of a pinned source. */
export const DOWNLOAD_STATES = ['idle', 'downloading', 'ready', 'failed'] as const;
/** States of one pre-pulled image. */
export const IMAGE_STATES = ['ready', 'pulling', 'failed'] as const;

const NullableString = Nullable(Type.String());

// --- requests ----------------------------------------------------------------------------

/** ProxyConfigDTO as a request sends it (PATCH; the registration form's `proxy` field is this as JSON). Lens refuses other fields too. */
export const ProxyConfigSchema = Type.Object(
  {
    /** The modes `PROXY_MODES` lists (a mode added there is accepted here). Default is `auto` (Lens' ProxyConfigDTO default). */
    mode: Type.Optional(StringEnum(PROXY_MODES)),
    httpProxy: Type.Optional(NullableString),
    httpsProxy: Type.Optional(NullableString),
    noProxy: Type.Optional(NullableString),
  },
  { additionalProperties: false },
);

export const ClusterIdParams = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }) });
export type ClusterIdParams = Static<typeof ClusterIdParams>;

export const SessionIdParams = Type.Object({ session_id: Type.String({ minLength: 1, maxLength: 128 }) });
export type SessionIdParams = Static<typeof SessionIdParams>;

/**
 * Planning discovery's path parameters: `resource` is an enum generated from the allow-list
 * (`PLANNING_RESOURCES`), so the OpenAPI document and docs/clusters.md name exactly what is read.
 */
export const PlanningParams = Type.Object({
  session_id: Type.String({ minLength: 1, maxLength: 128 }),
  resource: Type.Union(
    (Object.keys(PLANNING_RESOURCES) as PlanningResource[]).map((k) => Type.Literal(k)),
    { description: `one of ${Object.keys(PLANNING_RESOURCES).join(', ')} (others: 422 invalid_planning_resource)` },
  ),
});
export type PlanningParams = Static<typeof PlanningParams>;

export const ClusterIdQuery = Type.Object({ clusterId: Type.String({ minLength: 1, maxLength: 64 }) });
export type ClusterIdQuery = Static<typeof ClusterIdQuery>;

/** `DELETE /api/cluster/clusters/{id}`: `force` skips a remote cleanup that fails (admins; issue 33). */
export const DeleteClusterQuery = Type.Object({ force: Type.Optional(Type.Boolean({ default: false })) });
export type DeleteClusterQuery = Static<typeof DeleteClusterQuery>;

export const ListQuery = Type.Object({ includeDrafts: Type.Boolean({ default: false }) });
export type ListQuery = Static<typeof ListQuery>;

export const PortQuery = Type.Object({ port: Type.Integer() });
export type PortQuery = Static<typeof PortQuery>;

/** A version field of the record: accepted (Lens' clients send them back) and ignored, the stack profile's values win. */
const IgnoredVersion = Type.Optional(Nullable(Type.String({ maxLength: 256, description: 'ignored: the stack profile pins the versions' })));

/** ClusterSettingsUpdateRequest (Lens' fields; any other is refused, as Lens does); version fields are accepted and ignored. */
export const ClusterSettingsUpdateSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 253 })),
    description: Type.Optional(Type.String({ description: 'at most 4096 characters (422 invalid_cluster_description past it)' })),
    proxy: Type.Optional(ProxyConfigSchema),
    llmDRef: IgnoredVersion,
    llmDBenchmarkRef: IgnoredVersion,
    routerVersion: IgnoredVersion,
    gieVersion: IgnoredVersion,
    ippVersion: IgnoredVersion,
    gatewayProvider: Type.Optional(NullableString),
    gatewayNamespace: Type.Optional(NullableString),
    gatewayName: Type.Optional(NullableString),
    gatewayPort: Type.Optional(Nullable(Type.Integer())),
    gatewayPublicUrl: Type.Optional(NullableString),
    gatewayAuthzHost: Type.Optional(NullableString),
    // null (Lens' editor with the field empty): unchanged, as Lens takes it.
    inotifyMaxUserInstances: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 2147483647 }))),
    draft: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ClusterSettingsUpdateBody = Static<typeof ClusterSettingsUpdateSchema>;

export const HfTokenSecretCreateSchema = Type.Object({
  namespace: Type.String(),
  name: Type.String(),
  token: Type.String(),
});
export type HfTokenSecretCreateBody = Static<typeof HfTokenSecretCreateSchema>;

export const HfTokenSecretUpdateSchema = Type.Object({
  namespace: Type.Optional(NullableString),
  name: Type.Optional(NullableString),
  token: Type.String(),
});
export type HfTokenSecretUpdateBody = Static<typeof HfTokenSecretUpdateSchema>;

export const PrepullSchema = Type.Object({ accelerators: Type.Array(Type.String(), { default: [], maxItems: 16 }) }, { additionalProperties: false });
export type PrepullBody = Static<typeof PrepullSchema>;

export const NodeNamesSchema = Type.Object({
  names: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { minItems: 1, maxItems: 256 }),
});
export type NodeNamesBody = Static<typeof NodeNamesSchema>;

/** The multipart form of POST /api/cluster/clusters, for the OpenAPI document. */
export const RegisterFormDoc = {
  type: 'object',
  required: ['name', 'file'],
  properties: {
    name: { type: 'string' },
    description: { type: 'string' },
    file: { type: 'string', format: 'binary', description: 'UTF-8 kubeconfig' },
    proxy: { type: 'string', description: 'ProxyConfigDTO as JSON' },
    llmDRef: { type: 'string', description: 'ignored: the stack profile decides' },
    llmDBenchmarkRef: { type: 'string', description: 'ignored: the stack profile decides' },
    gatewayProvider: { type: 'string', enum: [...GATEWAY_PROVIDERS] },
    gatewayNamespace: { type: 'string' },
    gatewayPublicUrl: { type: 'string' },
    gatewayPort: { type: 'integer', minimum: 30000, maximum: 32767 },
    gatewayAuthzHost: { type: 'string' },
    inotifyMaxUserInstances: { type: 'integer', default: 8192 },
    draft: { type: 'boolean', default: false },
  },
} as const;

// --- answers -----------------------------------------------------------------------------

/** `GET /api/v1/versions`: the llm-d stack profile (`packages/clusters/profile/llm-d-stack.json`), as is. */
export const StackProfileSchema = Type.Object({
  llm_d: Type.String(),
  min_k8s_version: Type.String(),
  llm_d_router: Type.String(),
  llm_d_lensmark: Type.String(),
  llm_d_inference_payload_processor: Type.String(),
  k8s_gateway_api: Type.String(),
  k8s_gateway_api_inference_extension: Type.String(),
  gateway_providers: Type.Object({
    istio: Type.String(),
    envoy_gateway: Type.String(),
    envoy_ai_gateway: Type.String(),
    agentgateway: Type.String(),
  }),
});
export type StackProfile = Static<typeof StackProfileSchema>;

/** `GET /api/cluster/lens-hosts`: candidate addresses of this host. */
export const LensHostsSchema = Type.Object({ items: Type.Array(Type.String()) });
export type LensHostsAnswer = Static<typeof LensHostsSchema>;

/** ProxyConfigDTO as a record holds it (every field present; `null` when unset). */
export const ProxyConfigView = Type.Object({
  mode: StringEnum(STORED_PROXY_MODES),
  httpProxy: NullableString,
  httpsProxy: NullableString,
  noProxy: NullableString,
});
export type ProxyConfig = Static<typeof ProxyConfigView>;

/** Where the cluster's HF_TOKEN Secret is (the token itself is never answered). */
export const HfTokenSecretRefSchema = Type.Object({ namespace: Type.String(), name: Type.String() });
export type HfTokenSecretRef = Static<typeof HfTokenSecretRefSchema>;

/** ClusterRecord as the API returns it (no kubeconfig); the version fields are the stack profile's. */
export const ClusterRecordSchema = Type.Object({
  id: Type.String({ description: '8 hex digits' }),
  name: Type.String(),
  description: Type.String(),
  createdAt: Type.String({ description: 'ISO 8601 UTC, to the second' }),
  ready: Type.Boolean({ description: '/readyz answered within the probe timeout' }),
  proxy: ProxyConfigView,
  llmDRef: Type.String(),
  llmDBenchmarkRef: Type.String(),
  llmDRepoPath: NullableString,
  llmDBenchmarkRepoPath: NullableString,
  hfTokenSecret: Nullable(HfTokenSecretRefSchema),
  draft: Type.Boolean(),
  gatewayProvider: Nullable(Type.String({ description: GATEWAY_PROVIDERS.join(' | ') })),
  gatewayNamespace: Type.String(),
  gatewayName: Type.String(),
  gatewayPublicUrl: NullableString,
  gatewayPort: Nullable(Type.Integer()),
  gatewayAuthzHost: NullableString,
  inotifyMaxUserInstances: Type.Integer(),
  routerVersion: Type.String(),
  gieVersion: Type.String(),
  ippVersion: Type.String(),
});
export type ClusterRecord = Static<typeof ClusterRecordSchema>;

/** ClustersResponse. */
export const ClusterListSchema = Type.Object({ items: Type.Array(ClusterRecordSchema) });
export type ClusterList = Static<typeof ClusterListSchema>;

/** CreateClusterResponse / ClusterSessionResponse: the record and its Lens session (`null` after a PATCH). */
export const ClusterWithSessionSchema = Type.Object({ cluster: ClusterRecordSchema, sessionId: NullableString });
export type ClusterWithSession = Static<typeof ClusterWithSessionSchema>;

/** The download state of one pinned source. */
export const DownloadStatusSchema = Type.Object({
  ref: Type.String(),
  state: StringEnum(DOWNLOAD_STATES),
  path: NullableString,
  error: NullableString,
});
export type DownloadStatus = Static<typeof DownloadStatusSchema>;
export type DownloadState = DownloadStatus['state'];

/** SoftwareDownloadStatusResponse. */
export const SoftwareDownloadStatusSchema = Type.Object({ llmD: DownloadStatusSchema, llmDBenchmark: DownloadStatusSchema });
export type SoftwareDownloadStatus = Static<typeof SoftwareDownloadStatusSchema>;

/** Image pre-pull: the overall state, ready/desired nodes, each image, each puller pod's node. */
export const PrepullStatusSchema = Type.Object({
  state: StringEnum(['idle', ...IMAGE_STATES] as const),
  desired: Type.Integer(),
  ready: Type.Integer(),
  images: Type.Array(Type.Object({ name: Type.String(), ready: Type.Integer(), desired: Type.Integer(), state: StringEnum(IMAGE_STATES) })),
  nodes: Type.Array(Type.Object({ node: Type.String(), phase: Type.String(), ready: Type.Boolean(), restarts: Type.Integer() })),
});
export type PrepullStatus = Static<typeof PrepullStatusSchema>;
export type ImageState = (typeof IMAGE_STATES)[number];

/** The outcome of applying one CRD bundle. */
export const BundleResultSchema = Type.Object({ ok: Type.Boolean(), message: Type.String() });
export type BundleResult = Static<typeof BundleResultSchema>;
export type BundleId = 'gateway_api' | 'gateway_api_inference_extension';

/** `POST …/crds`: each bundle's outcome. */
export const CrdApplySchema = Type.Object({ gateway_api: BundleResultSchema, gateway_api_inference_extension: BundleResultSchema });
export type CrdApplyResult = Static<typeof CrdApplySchema>;

const BundleState = StringEnum(['ready', 'missing'] as const);
/** `GET …/crds`: each bundle's CRDs Established (`ready`) or not (`missing`). */
export const CrdStatusSchema = Type.Object({ gateway_api: BundleState, gateway_api_inference_extension: BundleState });
export type CrdStatus = Static<typeof CrdStatusSchema>;

/** `GET …/kubernetes-version`: always 200; an unreachable cluster is `{reachable: false, error}`. */
export const KubernetesVersionSchema = Type.Union([
  Type.Object({ reachable: Type.Literal(true), version: Type.String({ description: 'major.minor' }), min_k8s_version: Type.String(), supported: Type.Boolean() }),
  Type.Object({ reachable: Type.Literal(false), error: Type.String(), min_k8s_version: Type.String() }),
]);
export type KubernetesVersionCheck = Static<typeof KubernetesVersionSchema>;

/** `GET …/gateway-port-check`: is the NodePort free, who holds it (`namespace/name`), and why not. */
export const GatewayPortCheckSchema = Type.Object({ available: Type.Boolean(), owner: NullableString, reason: Type.Optional(Type.String()) });
export type GatewayPortCheck = Static<typeof GatewayPortCheckSchema>;

/** One node of a cordon or uncordon. */
export const CordonResultSchema = Type.Object({ name: Type.String(), ok: Type.Boolean(), schedulingDisabled: Nullable(Type.Boolean()), error: NullableString });
export type CordonResult = Static<typeof CordonResultSchema>;
export const CordonResultsSchema = Type.Object({ items: Type.Array(CordonResultSchema) });
export type CordonResults = Static<typeof CordonResultsSchema>;

/** `GET /api/cluster/model-secrets`: Secrets holding `HF_TOKEN`, by namespace and name only. */
export const ModelSecretsSchema = Type.Object({
  hostManagedAvailable: Type.Boolean({ description: 'the cluster’s recorded HF token secret is among them' }),
  items: Type.Array(Type.Object({ namespace: Type.String(), name: Type.String(), hostManaged: Type.Boolean() })),
});
export type ModelSecrets = Static<typeof ModelSecretsSchema>;

/** Legacy overview session (Lens' older front end). */
export const LegacySessionSchema = Type.Object({ id: Type.String(), serverId: Type.String(), createdAt: Type.String(), status: Type.Literal('connected') });
export type LegacySession = Static<typeof LegacySessionSchema>;

/**
 * Planning discovery: `{result}`, the allow-listed read as the cluster answered it (a VersionInfo,
 * or a `…List`: a Kubernetes object passed through, the one open property here), or `null` when
 * the read failed or answered something else.
 */
export const PlanningDiscoverySchema = Type.Object({
  result: Nullable(AnyObject()),
});
export type PlanningDiscovery = Static<typeof PlanningDiscoverySchema>;

/**
 * `GET /api/v1/system/database`: Lens' `DatabaseStatus` (its create-cluster wizard asks first and
 * stops unless `configured`). ironlens' store is chosen at start: `embedded` SQLite, or `external`
 * PostgreSQL (`IRONLENS_DATABASE_URL`) shown as `host:port/database`, never its user or password.
 */
export const DatabaseStatusSchema = Type.Object({
  configured: Type.Boolean(),
  mode: Nullable(StringEnum(['embedded', 'external'] as const)),
  engine: Nullable(StringEnum(['sqlite', 'postgresql'] as const)),
  displayTarget: NullableString,
});
export type DatabaseStatus = Static<typeof DatabaseStatusSchema>;

// --- the live overview -------------------------------------------------------------------

const NullableNumber = Nullable(Type.Number());

/**
 * One GPU of a node, in Lens' `GpuDeviceSummary` shape (issue 33): identity from the DRA
 * ResourceSlice, else DCGM's series, else the node's extended resource (`gpu-<i>`); figures from
 * DCGM through the cluster's Prometheus. A figure ironlens has no source for is `null`, never
 * an estimate (Lens invents PCI addresses and spreads node figures over devices; ironlens does not).
 */
export const GpuDeviceSchema = Type.Object({
  id: Type.String({ description: 'the DRA device name, else gpu-<index>' }),
  index: Type.Integer(),
  name: Type.String({ description: 'the product name (DRA productName/model, DCGM modelName, GFD/Intel product label)' }),
  pciAddress: Nullable(Type.String({ description: 'as the driver gives it (NVML: 00000000:18:00.0); null when unknown' })),
  uuid: Nullable(Type.String()),
  computeUsagePercent: NullableNumber,
  vramTotalBytes: Nullable(Type.Integer()),
  vramUsedBytes: Nullable(Type.Integer()),
  vramUsagePercent: NullableNumber,
  vramReadThroughputBytes: Nullable(Type.Integer()),
  vramWriteThroughputBytes: Nullable(Type.Integer()),
  vramTotalThroughputBytes: Nullable(Type.Integer()),
  vramBandwidthPercent: NullableNumber,
});
export type GpuDevice = Static<typeof GpuDeviceSchema>;

/**
 * One node of the overview. `cpu` is the capacity's quantity (fractional cores possible). After
 * seed 000's fields, those of Lens' `NodeSummary` (issue 33): use from the kubelet's Summary API and
 * the cluster's Prometheus, `null` when unknown.
 */
export const OverviewNodeSchema = Type.Object({
  name: Type.String(),
  version: Type.String(),
  osImage: Type.String(),
  ready: Type.Boolean(),
  schedulingDisabled: Type.Boolean(),
  cpu: Type.Number(),
  gpu: Type.Boolean(),
  gpuCount: Type.Integer(),
  gpuByProfile: Type.Record(Type.String(), Type.Integer(), { description: 'GPUs by accelerator profile (nvidia-cuda, intel-xpu)' }),
  vramBytes: Type.Integer(),
  role: StringEnum(['control-plane', 'worker'] as const),
  cachedImages: Type.Array(Type.String()),
  cpuUsagePercent: Nullable(Type.Number({ description: 'the Summary API: usageNanoCores of the capacity' })),
  memoryBytes: Type.Integer({ description: 'memory capacity' }),
  memoryUsagePercent: Nullable(Type.Number({ description: "the node's Prometheus node-exporter figures, else the Summary's working set of the capacity" })),
  gpuUsagePercent: Nullable(Type.Number({ description: 'the mean of its GPUs’ computeUsagePercent' })),
  vramUsagePercent: Nullable(Type.Number({ description: 'its GPUs’ VRAM used of total (DCGM)' })),
  gpus: Type.Array(GpuDeviceSchema),
  diskBytes: Nullable(Type.Integer({ description: "the Summary API's node filesystem capacity" })),
  diskUsedBytes: Nullable(Type.Integer()),
  diskUsagePercent: NullableNumber,
});
export type OverviewNode = Static<typeof OverviewNodeSchema>;

/** A component's health from its workloads' ready/desired counts. */
export const ComponentStatusSchema = Type.Object({
  installed: Type.Boolean(),
  ready: Type.Integer(),
  desired: Type.Integer(),
  status: StringEnum(['ready', 'degraded', 'unavailable', 'missing'] as const),
});
export type ComponentStatus = Static<typeof ComponentStatusSchema>;

/** Capacity and use. A figure whose source is unavailable is `null` (unknown), never 0. */
export const HardwareSchema = Type.Object({
  nodes: Type.Integer(),
  cpuCores: Type.Number(),
  memoryBytes: Type.Number(),
  memoryUsagePercent: Nullable(Type.Number()),
  memoryAvailableBytes: Nullable(Type.Number()),
  diskBytes: Nullable(Type.Number()),
  diskUsedBytes: Nullable(Type.Number()),
  diskAvailableBytes: Nullable(Type.Number()),
  diskUsagePercent: Nullable(Type.Number()),
  gpuNodes: Type.Integer(),
  gpuCount: Type.Integer({ description: 'GPUs of Ready nodes' }),
  totalGpuCount: Type.Integer(),
  accelerators: Type.Array(Type.Object({ id: Type.String(), gpuCount: Type.Integer() })),
  vramBytes: Type.Integer(),
  allocatedGpuCount: Type.Integer(),
  availableGpuCount: Type.Integer(),
  usableGpuCount: Type.Integer(),
  cpuUsagePercent: Nullable(Type.Number({ description: 'Ready nodes’ usage of their cores (Summary API); null while any Ready node’s is missing' })),
  gpuUsagePercent: Nullable(Type.Number({ description: 'the mean of every GPU’s computeUsagePercent that is known' })),
  vramUsagePercent: Nullable(Type.Number({ description: 'VRAM used of total over the GPUs that report both' })),
  deviceMetrics: Type.Array(Type.String(), { description: 'the per-GPU figures (GpuDevice keys) at least one GPU has' }),
  configuredGpuLimit: Nullable(Type.Integer({ description: 'Lens’ PCI allow-list size; ironlens has none: null' })),
});
export type Hardware = Static<typeof HardwareSchema>;

export const OverviewNamespaceSchema = Type.Object({
  name: Type.String(),
  deployments: Type.Array(Type.Object({ name: Type.String(), desired: Type.Integer(), ready: Type.Integer(), available: Type.Integer() })),
  ready: Type.Integer({ description: 'deployments with every desired replica ready' }),
});

/**
 * `GET /api/cluster/overview`: the live overview. `gateway` (the shared gateway, the answer of
 * `GET …/gateway/status`; `null` when the gateway is not wired in or its status failed) and
 * `gatewayError` (why `gateway` is `null` after a failure; `null` otherwise) are ironlens additions
 * beside seed 000's fields.
 */
export const OverviewSchema = Type.Object({
  cluster: ClusterRecordSchema,
  fetchedAt: Type.String(),
  kubernetes: Type.Object({
    components: Type.Object({
      nvidiaDevicePlugin: ComponentStatusSchema,
      intelDevicePlugin: ComponentStatusSchema,
      monitoring: ComponentStatusSchema,
      acceleratorDevicePlugins: Type.Record(Type.String(), ComponentStatusSchema, { description: 'per accelerator profile (nvidia-cuda, intel-xpu): its device plugin and DRA driver workloads' }),
    }),
    nodes: Type.Array(OverviewNodeSchema),
    namespaces: Type.Array(OverviewNamespaceSchema),
    hardware: HardwareSchema,
  }),
  gateway: Nullable(GatewayStatusSchema),
  gatewayError: NullableString,
});
export type OverviewResponse = Static<typeof OverviewSchema>;
