import { Authenticator, installAccessControl } from '@ironlens/core';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import {
  CancelView,
  ClusterDetails,
  ClusterList,
  ClusterNameParams,
  CreateAccepted,
  CreateClusterBody,
  DeleteView,
  DetailError,
  HealthView,
  JOBS_LIMIT_DEFAULT,
  JobIdParams,
  JobList,
  JobView,
  JobsQuery,
  KubeconfigFile,
  StatsView,
  VersionsView,
  WorkloadsView,
} from '../api/schemas';
import type { KindServices } from '../services/kind-services';

const tags = ['kind'];

/**
 * The seed's REST API (`/api/v1/...` relative to where the plugin is mounted). Thin: schema, one service call.
 * Every shape is a schema of `../api/schemas` (validation, serialization, OpenAPI and types in one).
 * With `token`, every route here answers 401 `{"detail": ...}` without `Authorization: Bearer <token>`
 * (compared in constant time); the dashboard and the docs are outside this context and stay open.
 */
export async function kindApiRoutes(instance: FastifyInstance, opts: { services: KindServices; token?: string }): Promise<void> {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { environment, clusters, jobs } = opts.services;
  if (opts.token) {
    installAccessControl(app, { authenticator: new Authenticator([{ variable: 'KIND_K8S_TOKEN', token: opts.token }]) });
    // The OpenAPI document says so, and Swagger UI offers its "Authorize" button.
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, security: [{ bearer: [] }] };
    });
  }

  app.get('/health', { schema: { tags, summary: 'Environment: kind, kubectl, container engine', response: { 200: HealthView } } }, () => environment.health());

  app.get('/versions', { schema: { tags, summary: 'Stable kindest/node tags (empty when KIND_K8S_SKIP_VERSION_LIST is set)', response: { 200: VersionsView } } }, () =>
    environment.versions(),
  );

  app.get('/stats', { schema: { tags, summary: 'Dashboard summary', response: { 200: StatsView } } }, () => clusters.stats());

  app.get('/clusters', { schema: { tags, summary: 'Clusters: kind get clusters ∪ the clusters directory', response: { 200: ClusterList } } }, () =>
    clusters.list(),
  );

  // A body that fails its schema answers 400 here, as the seed says (the plugin's error handling maps it).
  app.post(
    '/clusters',
    { schema: { tags, summary: 'Create a cluster in the background (202 + job_id)', body: CreateClusterBody, response: { 202: CreateAccepted, 400: DetailError, 409: DetailError } } },
    async (req, reply) => {
      const accepted = await clusters.create(req.body);
      const poll = `${app.prefix}/jobs/${accepted.job_id}`;
      return reply.status(202).send({ ...accepted, message: `Cluster creation runs in the background; poll GET ${poll}` });
    },
  );

  app.get(
    '/clusters/:name',
    { schema: { tags, summary: 'Details and kubectl get nodes -o wide from the saved kubeconfig', params: ClusterNameParams, response: { 200: ClusterDetails, 400: DetailError, 404: DetailError } } },
    (req) => clusters.get(req.params.name),
  );

  app.get(
    '/clusters/:name/kubeconfig',
    { schema: { tags, summary: 'Download the saved kubeconfig', params: ClusterNameParams, produces: ['application/yaml'], response: { 200: { content: { 'application/yaml': { schema: KubeconfigFile } } }, 400: DetailError, 404: DetailError } } },
    async (req, reply) => {
      const { filename, content } = await clusters.kubeconfig(req.params.name);
      return reply.type('application/yaml').header('content-disposition', `attachment; filename="${filename}"`).header('cache-control', 'no-store').send(content);
    },
  );

  app.get(
    '/clusters/:name/workloads',
    { schema: { tags, summary: 'kubectl get nodes -o wide and get pods -A', params: ClusterNameParams, response: { 200: WorkloadsView, 400: DetailError } } },
    (req) => clusters.workloads(req.params.name),
  );

  app.delete(
    '/clusters/:name',
    {
      schema: {
        tags,
        summary: 'kind delete cluster and remove clusters/{name}/',
        params: ClusterNameParams,
        response: { 200: DeleteView, 400: DetailError, 404: DetailError, 409: DetailError, 500: DetailError },
      },
    },
    (req) => clusters.delete(req.params.name),
  );

  app.get(
    '/jobs',
    { schema: { tags, summary: 'Recent creation jobs, newest first', querystring: JobsQuery, response: { 200: JobList } } },
    (req) => jobs.list(req.query.limit ?? JOBS_LIMIT_DEFAULT),
  );

  app.get('/jobs/:job_id', { schema: { tags, summary: 'One job, with progress_stage and progress_percent', params: JobIdParams, response: { 200: JobView, 404: DetailError } } }, (req) =>
    jobs.get(req.params.job_id),
  );

  app.post(
    '/jobs/:job_id/cancel',
    {
      schema: {
        tags,
        summary: 'Cancel a creation job (kills the running step, deletes what it made)',
        params: JobIdParams,
        response: { 200: CancelView, 400: DetailError, 404: DetailError },
      },
    },
    (req) => jobs.cancel(req.params.job_id),
  );
}
