import { type Static, Type } from '@sinclair/typebox';
import { PLANNING_RESOURCES, type PlanningResource } from '../services/platform.service';

/** TypeBox schemas of the cluster manager's requests: validation, OpenAPI and types from one place. */

export const ProxyConfigSchema = Type.Object(
  {
    mode: Type.Optional(Type.String({ description: 'none | system | custom' })),
    httpProxy: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    httpsProxy: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    noProxy: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  { additionalProperties: true },
);

const NullableString = Type.Union([Type.String(), Type.Null()]);

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

export const ListQuery = Type.Object({ includeDrafts: Type.Boolean({ default: false }) });
export type ListQuery = Static<typeof ListQuery>;

export const PortQuery = Type.Object({ port: Type.Integer() });
export type PortQuery = Static<typeof PortQuery>;

/** ClusterSettingsUpdateRequest; version fields are accepted and ignored. */
export const ClusterSettingsUpdateSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 253 })),
    description: Type.Optional(Type.String({ description: 'at most 4096 characters (422 invalid_cluster_description past it)' })),
    proxy: Type.Optional(ProxyConfigSchema),
    llmDRef: Type.Optional(Type.Unknown()),
    llmDBenchmarkRef: Type.Optional(Type.Unknown()),
    routerVersion: Type.Optional(Type.Unknown()),
    gieVersion: Type.Optional(Type.Unknown()),
    ippVersion: Type.Optional(Type.Unknown()),
    gatewayProvider: Type.Optional(NullableString),
    gatewayNamespace: Type.Optional(NullableString),
    gatewayName: Type.Optional(NullableString),
    gatewayPort: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    gatewayPublicUrl: Type.Optional(NullableString),
    gatewayAuthzHost: Type.Optional(NullableString),
    inotifyMaxUserInstances: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647 })),
    draft: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
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

export const PrepullSchema = Type.Object({ accelerators: Type.Array(Type.String(), { default: [], maxItems: 16 }) }, { additionalProperties: true });
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
    gatewayProvider: { type: 'string', enum: ['envoy-ai-gateway', 'istio', 'agentgateway', 'gke'] },
    gatewayNamespace: { type: 'string' },
    gatewayPublicUrl: { type: 'string' },
    gatewayPort: { type: 'integer', minimum: 30000, maximum: 32767 },
    gatewayAuthzHost: { type: 'string' },
    inotifyMaxUserInstances: { type: 'integer', default: 8192 },
    draft: { type: 'boolean', default: false },
  },
} as const;
