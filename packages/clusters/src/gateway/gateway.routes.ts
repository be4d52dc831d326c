import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { GatewayService } from './gateway.service';

/** Routes of the shared inference gateway (issue 22). */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's one permission (`area:object:verb`, or `public`); the same declaration as core's access hook. */
    permission?: string;
  }
}

const security = [{ bearer: [] }];
const tags = ['clusters: gateway'];

const Params = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }) });
type Params = Static<typeof Params>;
const KeyParams = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }), name: Type.String({ minLength: 1, maxLength: 63 }) });
type KeyParams = Static<typeof KeyParams>;
const JobParams = Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }), job_id: Type.String({ minLength: 1, maxLength: 64 }) });
type JobParams = Static<typeof JobParams>;
const KeyCreate = Type.Object({ name: Type.String({ minLength: 1, maxLength: 63 }) }, { additionalProperties: false });
type KeyCreate = Static<typeof KeyCreate>;

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const NStr = Nullable(Type.String());

/** seed 000's problem+json error body. */
export const Problem = Type.Object(
  { type: Type.String(), title: Type.String(), status: Type.Integer(), detail: Type.String(), code: Type.String(), errors: Type.Optional(Type.Array(Type.Unknown())) },
);

const ConditionSchema = Type.Object({
  type: Type.String(),
  status: Type.String(),
  reason: Type.String(),
  message: Type.String(),
  lastTransitionTime: Type.Optional(Type.String()),
});

const OperationSchema = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  status: Type.String({ description: 'running | succeeded | failed' }),
  clusterId: Type.String(),
  message: Type.String(),
  detailJson: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  createdByUserId: NStr,
  createdAt: Type.String(),
  finishedAt: NStr,
});

export const GatewayStatusSchema = Type.Object({
  clusterId: Type.String(),
  clusterName: Type.String(),
  members: Type.Array(Type.Unknown()),
  gatewayProvider: NStr,
  gatewayState: Type.String({ description: 'installed | missing | unknown' }),
  gatewayNamespace: Type.String(),
  gatewayName: Type.String(),
  gatewayReady: Type.Union([Type.Boolean(), Type.Null()]),
  gatewayAddress: NStr,
  gatewayPublicUrl: NStr,
  gatewayPort: Type.Union([Type.Integer(), Type.Null()]),
  gatewayNodeAddress: NStr,
  ippState: Type.String(),
  ippName: Type.String(),
  ippNamespace: Type.String(),
  lastOperation: Type.Union([OperationSchema, Type.Null()]),
  gatewayClassName: NStr,
  gatewayClassConditions: Type.Array(ConditionSchema),
  gatewayConditions: Type.Array(ConditionSchema),
  ippReady: Type.Union([Type.Boolean(), Type.Null()]),
  authz: Type.Object({ state: Type.String(), path: Type.String(), endpoints: Type.Array(Type.String()), reason: NStr }),
  controlPlane: Type.Object({
    state: Type.String(),
    deployments: Type.Array(Type.Object({ namespace: Type.String(), name: Type.String(), available: Type.Boolean() })),
  }),
  error: NStr,
});

const JobSchema = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  subject: NStr,
  status: Type.String(),
  stage: NStr,
  percent: Type.Union([Type.Integer(), Type.Null()]),
  message: NStr,
  log: Type.Array(Type.String()),
  result: Type.Unknown(),
  error: NStr,
  createdAt: Type.String(),
  startedAt: NStr,
  finishedAt: NStr,
});

const KeyCreated = Type.Object({ name: Type.String(), key: Type.String({ description: 'shown once; ironlens keeps only its SHA-256' }), createdAt: Type.String() });
const KeyList = Type.Object({ items: Type.Array(Type.Object({ name: Type.String(), createdAt: Type.String(), lastUsedAt: NStr })) });
const Allowed = Type.Object({ allowed: Type.Boolean() });

const problems = { 401: Problem, 403: Problem, 404: Problem, 409: Problem, 422: Problem, 429: Problem, 502: Problem, 504: Problem };

function jobView(j: import('@ironlens/core').Job) {
  return {
    id: j.id,
    kind: j.kind,
    subject: j.subject,
    status: j.status,
    stage: j.stage,
    percent: j.percent,
    message: j.message,
    log: j.log,
    result: j.result,
    error: j.error,
    createdAt: j.createdAt,
    startedAt: j.startedAt,
    finishedAt: j.finishedAt,
  };
}

/** The path prefix of the hook: the only gateway route that takes no console token. */
export const AUTHORIZE_PREFIX = '/api/v1/internal/model-gateway/authorize/cluster/';

export function gatewayRoutes(app: FastifyInstance, gw: GatewayService): void {
  app.get<{ Params: Params }>(
    '/api/cluster/clusters/:cluster_id/gateway/status',
    {
      config: { permission: 'cluster:gateway:read' },
      schema: { tags, security, params: Params, summary: 'The shared gateway, from its objects’ conditions', response: { 200: GatewayStatusSchema, ...problems } },
    },
    async (req) => gw.status(req.params.cluster_id),
  );

  app.get(
    '/api/v1/model-service/admin/gateway/status',
    {
      config: { permission: 'cluster:gateway:read' },
      schema: { tags, security, summary: 'The shared gateway of every cluster (Lens’ shape)', response: { 200: Type.Object({ clusters: Type.Array(GatewayStatusSchema) }), ...problems } },
    },
    async () => gw.allStatus(),
  );

  app.post<{ Params: Params }>(
    '/api/cluster/clusters/:cluster_id/gateway/reconcile',
    {
      config: { permission: 'cluster:gateway:update' },
      schema: { tags, security, params: Params, summary: 'Reconcile the shared gateway now (a job)', response: { 202: Type.Object({ job: JobSchema }), ...problems } },
    },
    async (req, reply) => reply.code(202).send({ job: jobView(await gw.reconcile(req.params.cluster_id)) }),
  );

  app.get<{ Params: JobParams }>(
    '/api/cluster/clusters/:cluster_id/gateway/jobs/:job_id',
    {
      config: { permission: 'cluster:gateway:read' },
      schema: { tags, security, params: JobParams, summary: 'A gateway reconcile job: stages, log tail, outcome', response: { 200: Type.Object({ job: JobSchema }), ...problems } },
    },
    async (req) => ({ job: jobView(await gw.job(req.params.cluster_id, req.params.job_id)) }),
  );

  app.post<{ Params: JobParams }>(
    '/api/cluster/clusters/:cluster_id/gateway/jobs/:job_id/cancel',
    {
      config: { permission: 'cluster:gateway:update' },
      schema: { tags, security, params: JobParams, summary: 'Cancel a gateway reconcile job', response: { 200: Type.Object({ job: JobSchema }), ...problems } },
    },
    async (req) => ({ job: jobView(await gw.cancel(req.params.cluster_id, req.params.job_id)) }),
  );

  app.post<{ Params: Params; Body: KeyCreate }>(
    '/api/cluster/clusters/:cluster_id/gateway/keys',
    {
      config: { permission: 'cluster:gateway-key:create' },
      schema: { tags, security, params: Params, body: KeyCreate, summary: 'Create a gateway access key (shown once)', response: { 201: KeyCreated, ...problems } },
    },
    async (req, reply) => reply.code(201).send(await gw.createKey(req.params.cluster_id, req.body.name)),
  );

  app.get<{ Params: Params }>(
    '/api/cluster/clusters/:cluster_id/gateway/keys',
    {
      config: { permission: 'cluster:gateway-key:read' },
      schema: { tags, security, params: Params, summary: 'Gateway access keys: names, created, last used', response: { 200: KeyList, ...problems } },
    },
    async (req) => gw.listKeys(req.params.cluster_id),
  );

  app.delete<{ Params: KeyParams }>(
    '/api/cluster/clusters/:cluster_id/gateway/keys/:name',
    {
      config: { permission: 'cluster:gateway-key:delete' },
      schema: { tags, security, params: KeyParams, summary: 'Revoke a gateway access key', response: { 204: Type.Null(), ...problems } },
    },
    async (req, reply) => {
      await gw.deleteKey(req.params.cluster_id, req.params.name);
      return reply.code(204).send();
    },
  );

  // The provider's external-authorization call: any method, the original path appended.
  const authorize = async (req: import('fastify').FastifyRequest<{ Params: Params }>, reply: import('fastify').FastifyReply) => {
    const auth = req.headers.authorization;
    const { headers } = await gw.authorize(req.params.cluster_id, Array.isArray(auth) ? auth[0] : auth, req.ip);
    for (const [k, v] of Object.entries(headers)) reply.header(k, v);
    return reply.code(200).send({ allowed: true });
  };
  const hookOpts = {
    config: { permission: 'public' },
    schema: { tags, summary: 'External authorization of the gateway (its own access keys; no console token)', params: Params, response: { 200: Allowed, 401: Problem, 403: Problem, 429: Problem } },
  };
  app.all<{ Params: Params }>('/api/v1/internal/model-gateway/authorize/cluster/:cluster_id', hookOpts, authorize);
  app.all<{ Params: Params }>(
    '/api/v1/internal/model-gateway/authorize/cluster/:cluster_id/*',
    { ...hookOpts, schema: { ...hookOpts.schema, params: Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }), '*': Type.String() }) } },
    authorize,
  );
}
