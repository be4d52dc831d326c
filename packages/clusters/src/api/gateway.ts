/**
 * The shared inference gateway's API (issue 22): requests and answers, one TypeBox source for
 * validation, serialization, the OpenAPI document and the types (issue 19). TypeBox only.
 */
import { Nullable, StringEnum } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';

const NullableString = Nullable(Type.String());

// --- requests ----------------------------------------------------------------------------

export const GatewayParams = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }) });
export type GatewayParams = Static<typeof GatewayParams>;
export const GatewayKeyParams = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }), name: Type.String({ minLength: 1, maxLength: 63 }) });
export type GatewayKeyParams = Static<typeof GatewayKeyParams>;
export const GatewayJobParams = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }), job_id: Type.String({ minLength: 1, maxLength: 64 }) });
export type GatewayJobParams = Static<typeof GatewayJobParams>;
/** The external-authorization hook's parameters, the original path appended. */
export const GatewayAuthorizeParams = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }), '*': Type.String() });
export const GatewayKeyCreate = Type.Object({ name: Type.String({ minLength: 1, maxLength: 63 }) }, { additionalProperties: false });
export type GatewayKeyCreate = Static<typeof GatewayKeyCreate>;

// --- answers -----------------------------------------------------------------------------

/** A Kubernetes condition of the gateway's objects (message cut at 1000 characters). */
export const ConditionSchema = Type.Object({
  type: Type.String(),
  status: Type.String(),
  reason: Type.String(),
  message: Type.String(),
  lastTransitionTime: Type.Optional(Type.String()),
});
export type Condition = Static<typeof ConditionSchema>;

/** The last reconcile, in Lens' operation shape. */
export const GatewayOperationSchema = Type.Object({
  id: Type.String(),
  kind: Type.Literal('reconcile-gateway'),
  status: StringEnum(['running', 'succeeded', 'failed'] as const),
  clusterId: Type.String(),
  message: Type.String(),
  /** Lens' free-form operation detail (here the job's stage, percent and the hook's error): open on purpose. */
  detailJson: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'free-form detail' })),
  createdByUserId: NullableString,
  createdAt: Type.String(),
  finishedAt: NullableString,
});
export type GatewayOperationView = Static<typeof GatewayOperationSchema>;

/** The shared gateway of one cluster, from its objects' conditions. */
export const GatewayStatusSchema = Type.Object({
  clusterId: Type.String(),
  clusterName: Type.String(),
  /** Lens' member list; ironlens answers `[]` (no members of its own): items open. */
  members: Type.Array(Type.Unknown()),
  gatewayProvider: NullableString,
  gatewayState: StringEnum(['installed', 'missing', 'unknown'] as const),
  gatewayNamespace: Type.String(),
  gatewayName: Type.String(),
  gatewayReady: Nullable(Type.Boolean()),
  gatewayAddress: NullableString,
  gatewayPublicUrl: NullableString,
  gatewayPort: Nullable(Type.Integer()),
  gatewayNodeAddress: NullableString,
  ippState: StringEnum(['installed', 'missing', 'unknown'] as const),
  ippName: Type.String(),
  ippNamespace: Type.String(),
  lastOperation: Nullable(GatewayOperationSchema),
  gatewayClassName: NullableString,
  gatewayClassConditions: Type.Array(ConditionSchema),
  gatewayConditions: Type.Array(ConditionSchema),
  ippReady: Nullable(Type.Boolean()),
  authz: Type.Object({ state: StringEnum(['ready', 'failed', 'missing', 'disabled', 'unknown'] as const), path: Type.String(), endpoints: Type.Array(Type.String()), reason: NullableString }),
  controlPlane: Type.Object({
    state: StringEnum(['ready', 'progressing', 'missing', 'none', 'unknown'] as const),
    deployments: Type.Array(Type.Object({ namespace: Type.String(), name: Type.String(), available: Type.Boolean() })),
  }),
  error: NullableString,
});
export type GatewayStatusView = Static<typeof GatewayStatusSchema>;

/** `GET /api/v1/model-service/admin/gateway/status`: every cluster's gateway (Lens' shape). */
export const GatewayStatusListSchema = Type.Object({ clusters: Type.Array(GatewayStatusSchema) });
export type GatewayStatusList = Static<typeof GatewayStatusListSchema>;

/** A gateway reconcile job as the routes show it. */
export const GatewayJobSchema = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  subject: NullableString,
  status: Type.String({ description: 'queued | running | success | failed | cancelled' }),
  stage: NullableString,
  percent: Nullable(Type.Number()),
  message: NullableString,
  log: Type.Array(Type.String()),
  /** What the job returned: open (each job kind returns its own). */
  result: Type.Unknown(),
  error: NullableString,
  createdAt: Type.String(),
  startedAt: NullableString,
  finishedAt: NullableString,
});
export type GatewayJobView = Static<typeof GatewayJobSchema>;
export const GatewayJobAnswer = Type.Object({ job: GatewayJobSchema });
export type GatewayJobAnswer = Static<typeof GatewayJobAnswer>;

export const GatewayKeyCreated = Type.Object({ name: Type.String(), key: Type.String({ description: 'shown once; ironlens keeps only its SHA-256' }), createdAt: Type.String() });
export type GatewayKeyCreated = Static<typeof GatewayKeyCreated>;
export const GatewayKeySchema = Type.Object({ name: Type.String(), createdAt: Type.String(), lastUsedAt: NullableString });
export type GatewayKey = Static<typeof GatewayKeySchema>;
export const GatewayKeyList = Type.Object({ items: Type.Array(GatewayKeySchema) });
export type GatewayKeyList = Static<typeof GatewayKeyList>;
export const GatewayAllowed = Type.Object({ allowed: Type.Boolean() });
