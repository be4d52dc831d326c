import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import {
  GatewayAllowed,
  GatewayAuthorizeParams,
  GatewayJobAnswer,
  GatewayJobParams,
  GatewayKeyCreate,
  GatewayKeyCreated,
  GatewayKeyList,
  GatewayKeyParams,
  GatewayParams,
  GatewayStatusListSchema,
  GatewayStatusSchema,
  type GatewayJobView,
} from '../api/gateway';
import { NoContent, problems } from '../api/problem';
import type { GatewayService } from './gateway.service';

/** Routes of the shared inference gateway (issue 22). Schemas: `../api/gateway` (issue 19). */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's one permission (`area:object:verb`, or `public`); the same declaration as core's access hook. */
    permission?: string;
  }
}

const security = [{ bearer: [] }];
const tags = ['clusters: gateway'];

const errors = problems(401, 403, 404, 409, 422, 429, 500, 502, 504);

function jobView(j: import('@ironlens/core').Job): GatewayJobView {
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

export function gatewayRoutes(instance: FastifyInstance, gw: GatewayService): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/cluster/clusters/:cluster_id/gateway/status',
    {
      config: { permission: 'cluster:gateway:read' },
      schema: { tags, security, params: GatewayParams, summary: 'The shared gateway, from its objects’ conditions', response: { 200: GatewayStatusSchema, ...errors } },
    },
    async (req) => gw.status(req.params.cluster_id),
  );

  app.get(
    '/api/v1/model-service/admin/gateway/status',
    {
      config: { permission: 'cluster:gateway:read' },
      schema: { tags, security, summary: 'The shared gateway of every cluster (Lens’ shape)', response: { 200: GatewayStatusListSchema, ...errors } },
    },
    async () => gw.allStatus(),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/gateway/reconcile',
    {
      config: { permission: 'cluster:gateway:update' },
      schema: { tags, security, params: GatewayParams, summary: 'Reconcile the shared gateway now (a job)', response: { 202: GatewayJobAnswer, ...errors } },
    },
    async (req, reply) => reply.code(202).send({ job: jobView(await gw.reconcile(req.params.cluster_id)) }),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/gateway/jobs/:job_id',
    {
      config: { permission: 'cluster:gateway:read' },
      schema: { tags, security, params: GatewayJobParams, summary: 'A gateway reconcile job: stages, log tail, outcome', response: { 200: GatewayJobAnswer, ...errors } },
    },
    async (req) => ({ job: jobView(await gw.job(req.params.cluster_id, req.params.job_id)) }),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/gateway/jobs/:job_id/cancel',
    {
      config: { permission: 'cluster:gateway:update' },
      schema: { tags, security, params: GatewayJobParams, summary: 'Cancel a gateway reconcile job', response: { 200: GatewayJobAnswer, ...errors } },
    },
    async (req) => ({ job: jobView(await gw.cancel(req.params.cluster_id, req.params.job_id)) }),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/gateway/keys',
    {
      config: { permission: 'cluster:gateway-key:create' },
      schema: { tags, security, params: GatewayParams, body: GatewayKeyCreate, summary: 'Create a gateway access key (shown once)', response: { 201: GatewayKeyCreated, ...errors } },
    },
    async (req, reply) => reply.code(201).send(await gw.createKey(req.params.cluster_id, req.body.name)),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/gateway/keys',
    {
      config: { permission: 'cluster:gateway-key:read' },
      schema: { tags, security, params: GatewayParams, summary: 'Gateway access keys: names, created, last used', response: { 200: GatewayKeyList, ...errors } },
    },
    async (req) => gw.listKeys(req.params.cluster_id),
  );

  app.delete(
    '/api/cluster/clusters/:cluster_id/gateway/keys/:name',
    {
      config: { permission: 'cluster:gateway-key:delete' },
      schema: { tags, security, params: GatewayKeyParams, summary: 'Revoke a gateway access key', response: { 204: NoContent, ...errors } },
    },
    async (req, reply) => {
      await gw.deleteKey(req.params.cluster_id, req.params.name);
      return reply.code(204).send(null);
    },
  );

  // The provider's external-authorization call: any method, the original path appended.
  const authorize = async (req: import('fastify').FastifyRequest<{ Params: GatewayParams }>, reply: import('fastify').FastifyReply) => {
    const auth = req.headers.authorization;
    const { headers } = await gw.authorize(req.params.cluster_id, Array.isArray(auth) ? auth[0] : auth, req.ip);
    for (const [k, v] of Object.entries(headers)) reply.header(k, v);
    return reply.code(200).send({ allowed: true });
  };
  const hookOpts = {
    // The gateway calls behind its own names (the console's Host check would answer 421).
    config: { permission: 'public', extraHosts: (name: string, req: import('fastify').FastifyRequest) => gw.hookServesHost((req.params as GatewayParams).cluster_id, name) },
    schema: { tags, summary: 'External authorization of the gateway (its own access keys; no console token)', params: GatewayParams, response: { 200: GatewayAllowed, ...problems(401, 403, 404, 429, 500) } },
  };
  app.all('/api/v1/internal/model-gateway/authorize/cluster/:cluster_id', hookOpts, authorize);
  app.all(
    '/api/v1/internal/model-gateway/authorize/cluster/:cluster_id/*',
    { ...hookOpts, schema: { ...hookOpts.schema, params: GatewayAuthorizeParams } },
    authorize,
  );
}
