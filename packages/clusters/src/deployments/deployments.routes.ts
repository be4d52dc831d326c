import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import {
  AcceleratorInventory,
  DeleteExecutionQuery,
  DeploymentExecutionList,
  DeploymentExecutionSchema,
  DeploymentPatchRequest,
  DeploymentRunSchema,
  ExecutionEvents,
  ExecutionListQuery,
  ExecutionParams,
  ExecutionPods,
  OpenAiModelList,
  PlacementAnswer,
  PodLogParams,
  PodLogQuery,
  PodLogs,
  PublishedModelList,
  RunCancelAnswer,
  RunParams,
  StandardVllmRunRequest,
} from '../api/deployments';
import { CLUSTER_ERRORS, COMMON_ERRORS, NoContent, problems } from '../api/problem';
import type { DeploymentService } from './deployment.service';

/**
 * Model deployments (issue 28) at llm-d Lens' paths (`/api/v1/deployments/…`,
 * `/api/v1/model-service/models`) and ironlens' additions (PATCH of runtime fields, the
 * execution's events, the placement preview, a cluster's accelerators), plus the OpenAI-style
 * `GET /v1/models` answered to a gateway key. Schemas: `../api/deployments`.
 */

const security = [{ bearer: [] }];
const tags = ['deployments'];
const errors = problems(...CLUSTER_ERRORS, 409);

export function deploymentRoutes(instance: FastifyInstance, svc: DeploymentService): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/v1/deployments/standard-vllm-runs',
    {
      config: { permission: 'deployment:run:create' },
      schema: {
        tags,
        security,
        body: StandardVllmRunRequest,
        summary: 'Deploy a model (placed first: 422 insufficient_accelerators names what is free where); a durable job applies it and proves it answers',
        response: { 200: DeploymentRunSchema, ...errors },
      },
    },
    async (req) => svc.create(req.body),
  );

  app.post(
    '/api/v1/deployments/placement',
    {
      config: { permission: 'deployment:placement:preview' },
      schema: {
        tags,
        security,
        body: StandardVllmRunRequest,
        summary: 'Where a deployment request would fit, without creating anything (ironlens)',
        response: { 200: Type.Object({ fits: Type.Boolean(), detail: Type.Union([Type.String(), Type.Null()]), placement: PlacementAnswer }), ...errors },
      },
    },
    async (req) => svc.preview(req.body),
  );

  app.get(
    '/api/v1/deployments/executions',
    {
      config: { permission: 'deployment:run:read' },
      schema: { tags, security, querystring: ExecutionListQuery, summary: 'Deployment executions (newest first)', response: { 200: DeploymentExecutionList, ...problems(...COMMON_ERRORS) } },
    },
    async (req) => svc.list(req.query),
  );

  app.get(
    '/api/v1/deployments/executions/:execution_id',
    {
      config: { permission: 'deployment:run:read' },
      schema: { tags, security, params: ExecutionParams, summary: 'One deployment execution: status, stage, readiness, placement, smoke, the curl line', response: { 200: DeploymentExecutionSchema, ...errors } },
    },
    async (req) => svc.get(req.params.execution_id),
  );

  app.patch(
    '/api/v1/deployments/executions/:execution_id',
    {
      config: { permission: 'deployment:execution:update' },
      schema: {
        tags,
        security,
        params: ExecutionParams,
        body: DeploymentPatchRequest,
        summary: "Lens' metadata; ironlens: replicas, tensor_parallel_size, vllm_arguments (a new revision, rolled back when it fails)",
        response: { 200: DeploymentExecutionSchema, ...errors },
      },
    },
    async (req) => svc.patch(req.params.execution_id, req.body),
  );

  app.delete(
    '/api/v1/deployments/executions/:execution_id',
    {
      config: { permission: 'deployment:execution:delete' },
      schema: { tags, security, params: ExecutionParams, querystring: DeleteExecutionQuery, summary: 'Remove exactly what the deployment applied (and its namespace)', response: { 204: NoContent, ...errors } },
    },
    async (req, reply) => {
      await svc.delete(req.params.execution_id, req.query.delete_namespace ?? true);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/deployments/executions/:execution_id/pods',
    {
      config: { permission: 'deployment:run:read' },
      schema: { tags, security, params: ExecutionParams, summary: "The deployment's pods (Lens' shape)", response: { 200: ExecutionPods, ...errors } },
    },
    async (req) => svc.pods(req.params.execution_id),
  );

  app.get(
    '/api/v1/deployments/executions/:execution_id/events',
    {
      config: { permission: 'deployment:run:read' },
      schema: { tags, security, params: ExecutionParams, summary: "The deployment namespace's events (ironlens)", response: { 200: ExecutionEvents, ...errors } },
    },
    async (req) => svc.events(req.params.execution_id),
  );

  app.get(
    '/api/v1/deployments/executions/:execution_id/pods/:pod_name/logs',
    {
      config: { permission: 'deployment:run:read' },
      schema: { tags, security, params: PodLogParams, querystring: PodLogQuery, summary: "A pod's container log, its last lines", response: { 200: PodLogs, ...errors } },
    },
    async (req) => svc.logs(req.params.execution_id, req.params.pod_name, req.query),
  );

  app.post(
    '/api/v1/deployments/runs/:run_id/cancel',
    {
      config: { permission: 'deployment:run:cancel' },
      schema: { tags, security, params: RunParams, summary: "Cancel a deployment run (Lens' path)", response: { 202: RunCancelAnswer, ...errors } },
    },
    async (req, reply) => reply.code(202).send(await svc.cancelRun(req.params.run_id)),
  );

  app.post(
    '/api/v1/deployments/executions/:execution_id/cancel',
    {
      config: { permission: 'deployment:run:cancel' },
      schema: { tags, security, params: ExecutionParams, summary: "Cancel the execution's running job (the issue's wording of Lens' run cancel)", response: { 202: RunCancelAnswer, ...errors } },
    },
    async (req, reply) => reply.code(202).send(await svc.cancelExecution(req.params.execution_id)),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/accelerators',
    {
      config: { permission: 'cluster:accelerator:read' },
      schema: {
        tags,
        security,
        params: Type.Object({ cluster_id: Type.String({ minLength: 1, maxLength: 64 }) }),
        summary: 'Accelerators per node: allocatable, requested, free; the host report of booted workers beside (ironlens)',
        response: { 200: AcceleratorInventory, ...errors },
      },
    },
    async (req) => svc.inventory(req.params.cluster_id),
  );

  app.get(
    '/api/v1/model-service/models',
    {
      config: { permission: 'model-service:model:read' },
      schema: { tags, security, summary: 'Models published on the shared gateways, per cluster, with the gateway URL', response: { 200: PublishedModelList, ...problems(...COMMON_ERRORS) } },
    },
    async () => svc.models(),
  );

  app.get(
    '/v1/models',
    {
      config: { permission: 'public' },
      schema: {
        tags,
        summary: "OpenAI-style model list of a gateway key's cluster (`Authorization: Bearer <gateway key>` or `x-api-key`; no console token)",
        response: { 200: OpenAiModelList, ...problems(401, 403, 429, 500) },
      },
    },
    async (req) => {
      const auth = req.headers.authorization ?? (typeof req.headers['x-api-key'] === 'string' ? `Bearer ${req.headers['x-api-key']}` : undefined);
      return svc.openAiModels(Array.isArray(auth) ? auth[0] : auth, req.ip);
    },
  );
}
