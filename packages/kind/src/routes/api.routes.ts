import { AppError, installBearerGuard } from '@ironlens/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type CreateClusterRequest, WORKERS_DEFAULT, WORKERS_MAX } from '../services/clusters.service';
import type { KindServices } from '../services/kind-services';

const tags = ['kind'];
const nameParam = { type: 'object', required: ['name'], properties: { name: { type: 'string', description: 'kind cluster name' } } } as const;
const jobParam = { type: 'object', required: ['job_id'], properties: { job_id: { type: 'string' } } } as const;
const detail = { type: 'object', properties: { detail: {} } } as const;
const anyObject = { type: 'object', additionalProperties: true } as const;

const jobView = {
  type: 'object',
  additionalProperties: true,
  properties: {
    job_id: { type: 'string' },
    kind: { type: 'string' },
    status: { type: 'string', enum: ['queued', 'running', 'success', 'failed', 'cancelled'] },
    cluster_name: { type: 'string', nullable: true },
    created_at_utc: { type: 'string' },
    message: { type: 'string', nullable: true },
    result: { nullable: true },
    progress_stage: { type: 'string', nullable: true },
    progress_percent: { type: 'integer', nullable: true },
    error: { type: 'string', nullable: true },
    cancel_requested: { type: 'boolean' },
    started_at_utc: { type: 'string', nullable: true },
    finished_at_utc: { type: 'string', nullable: true },
    log_tail: { type: 'array', items: { type: 'string' } },
  },
} as const;

const clusterSummary = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    registered_in_kind: { type: 'boolean' },
    has_local_kubeconfig: { type: 'boolean' },
    meta: { type: 'object', nullable: true, additionalProperties: true },
  },
} as const;

/** FastAPI answers a body that fails its model with 400 on this route (the seed says so), in the 422 list shape. */
function bodyError(req: FastifyRequest): AppError {
  const v = req.validationError as (Error & { validation?: Array<{ keyword: string; instancePath?: string; message?: string; params?: Record<string, unknown> }> }) | undefined;
  const list = (v?.validation ?? []).map((e) => ({
    type: e.keyword,
    loc: ['body', ...String(e.instancePath || '').split('/').filter(Boolean), ...(e.params && 'missingProperty' in e.params ? [String(e.params.missingProperty)] : [])],
    msg: e.message ?? 'invalid',
  }));
  return new AppError('request_invalid', v?.message ?? 'request body is invalid', { detail: list.length ? list : (v?.message ?? 'request body is invalid') }, 400);
}

/**
 * The seed's REST API (`/api/v1/...` relative to where the plugin is mounted). Thin: schema, one service call.
 * With `token`, every route here answers 401 `{"detail": ...}` without `Authorization: Bearer <token>`
 * (compared in constant time); the dashboard and the docs are outside this context and stay open.
 */
export async function kindApiRoutes(app: FastifyInstance, opts: { services: KindServices; token?: string }): Promise<void> {
  const { environment, clusters, jobs } = opts.services;
  if (opts.token) {
    installBearerGuard(app, { token: opts.token, publicPaths: () => false });
    // The OpenAPI document says so, and Swagger UI offers its "Authorize" button.
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, security: [{ bearer: [] }] };
    });
  }

  app.get('/health', { schema: { tags, summary: 'Environment: kind, kubectl, container engine', response: { 200: anyObject } } }, () => environment.health());

  app.get('/versions', { schema: { tags, summary: 'Stable kindest/node tags (empty when KIND_K8S_SKIP_VERSION_LIST is set)', response: { 200: anyObject } } }, () =>
    environment.versions(),
  );

  app.get('/stats', { schema: { tags, summary: 'Dashboard summary', response: { 200: anyObject } } }, () => clusters.stats());

  app.get('/clusters', { schema: { tags, summary: 'Clusters: kind get clusters ∪ the clusters directory', response: { 200: { type: 'array', items: clusterSummary } } } }, () =>
    clusters.list(),
  );

  app.post(
    '/clusters',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create a cluster in the background (202 + job_id)',
        body: {
          type: 'object',
          required: ['name'],
          properties: {
            name: { type: 'string', description: 'lowercase letters, digits, . and -, at most 50 characters' },
            kubernetes_version: { type: 'string', nullable: true, description: '1.29.4 or v1.29.4; empty for kind’s default node image' },
            workers: { type: 'integer', nullable: true, minimum: 0, maximum: WORKERS_MAX, default: WORKERS_DEFAULT },
          },
        },
        response: { 202: { type: 'object', properties: { job_id: { type: 'string' }, status: { type: 'string' }, message: { type: 'string' } } }, 400: detail, 409: detail },
      },
    },
    async (req, reply) => {
      if (req.validationError) throw bodyError(req);
      const accepted = await clusters.create(req.body as CreateClusterRequest);
      const poll = `${app.prefix}/jobs/${accepted.job_id}`;
      return reply.status(202).send({ ...accepted, message: `Cluster creation runs in the background; poll GET ${poll}` });
    },
  );

  app.get('/clusters/:name', { schema: { tags, summary: 'Details and kubectl get nodes -o wide from the saved kubeconfig', params: nameParam, response: { 200: anyObject, 400: detail, 404: detail } } }, (req) =>
    clusters.get((req.params as { name: string }).name),
  );

  app.get(
    '/clusters/:name/kubeconfig',
    { schema: { tags, summary: 'Download the saved kubeconfig', params: nameParam, produces: ['application/yaml'], response: { 400: detail, 404: detail } } },
    async (req, reply) => {
      const { filename, content } = await clusters.kubeconfig((req.params as { name: string }).name);
      return reply.type('application/yaml').header('content-disposition', `attachment; filename="${filename}"`).header('cache-control', 'no-store').send(content);
    },
  );

  app.get('/clusters/:name/workloads', { schema: { tags, summary: 'kubectl get nodes -o wide and get pods -A', params: nameParam, response: { 200: anyObject, 400: detail } } }, (req) =>
    clusters.workloads((req.params as { name: string }).name),
  );

  app.delete(
    '/clusters/:name',
    { schema: { tags, summary: 'kind delete cluster and remove clusters/{name}/', params: nameParam, response: { 200: anyObject, 400: detail, 404: detail, 409: detail, 500: detail } } },
    (req) => clusters.delete((req.params as { name: string }).name),
  );

  app.get(
    '/jobs',
    {
      schema: {
        tags,
        summary: 'Recent creation jobs, newest first',
        querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 200, default: 30 } } },
        response: { 200: { type: 'array', items: jobView } },
      },
    },
    (req) => jobs.list((req.query as { limit: number }).limit),
  );

  app.get('/jobs/:job_id', { schema: { tags, summary: 'One job, with progress_stage and progress_percent', params: jobParam, response: { 200: jobView, 404: detail } } }, (req) =>
    jobs.get((req.params as { job_id: string }).job_id),
  );

  app.post(
    '/jobs/:job_id/cancel',
    {
      schema: {
        tags,
        summary: 'Cancel a creation job (kills the running step, deletes what it made)',
        params: jobParam,
        response: { 200: { type: 'object', properties: { job_id: { type: 'string' }, cancel_requested: { type: 'boolean' }, message: { type: 'string' } } }, 400: detail, 404: detail },
      },
    },
    (req) => jobs.cancel((req.params as { job_id: string }).job_id),
  );
}
