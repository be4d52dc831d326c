import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import {
  type BatchCreateInput,
  batchCreateBody,
  type CreateWorkerInput,
  createWorkerBody,
  type DefaultOsRequest,
  defaultOsBody,
  errorResponses,
  security,
  type WorkerDeleteBatchRequest,
  type WorkerDeleteQuery,
  type WorkerAddressRequest,
  type WorkerMacRequest,
  workerAddressBody,
  workerDeleteBatchBody,
  workerDeletedSchema,
  workerDeleteQuery,
  workerMacBody,
  workerSchema,
} from '../api/schemas';
import type { MetalServices } from '../wiring';

export function workerRoutes(app: FastifyInstance, s: MetalServices): void {
  const tags = ['workers'];
  const one = { 200: workerSchema, ...errorResponses };

  app.post<{ Body: CreateWorkerInput }>(
    '/workers',
    {
      schema: {
        tags,
        security,
        summary: 'Register a worker identity (mac optional: binds a pooled device)',
        body: createWorkerBody,
        response: one,
      },
    },
    async (req) => s.workers.create(req.body, { client: req.ip }),
  );

  app.post<{ Body: BatchCreateInput }>(
    '/workers/batch',
    {
      schema: {
        tags,
        security,
        body: batchCreateBody,
      },
    },
    async (req) => s.workers.createBatch(req.body, { client: req.ip }),
  );

  app.get('/workers', { schema: { tags, security, response: { 200: Type.Array(workerSchema) } } }, async () => s.workers.list());
  app.get<{ Params: { worker_id: string } }>('/workers/:worker_id', { schema: { tags, security, response: one } }, async (req) => s.workers.get(req.params.worker_id));

  app.put<{ Params: { worker_id: string }; Body: WorkerMacRequest }>(
    '/workers/:worker_id/mac',
    { schema: { tags, security, body: workerMacBody, response: one } },
    async (req) => s.workers.setMac(req.params.worker_id, req.body.mac, { client: req.ip }),
  );

  app.put<{ Params: { worker_id: string }; Body: DefaultOsRequest }>(
    '/workers/:worker_id/default-os',
    { schema: { tags, security, body: defaultOsBody, response: one } },
    async (req) => s.workers.setDefaultOs(req.params.worker_id, req.body ?? {}, { client: req.ip }),
  );

  app.put<{ Params: { worker_id: string }; Body: WorkerAddressRequest }>(
    '/workers/:worker_id/address',
    {
      config: { permission: 'metal:worker:write' },
      schema: { tags, security, summary: "Set or remove the worker's fixed IPv4 address (the hosts file gives it to the bound MAC)", body: workerAddressBody, response: one },
    },
    async (req) => s.workers.setFixedAddress(req.params.worker_id, req.body.fixed_address, { client: req.ip }),
  );

  app.delete<{ Params: { worker_id: string }; Querystring: WorkerDeleteQuery }>(
    '/workers/:worker_id',
    { schema: { tags, security, querystring: workerDeleteQuery, response: { 200: workerDeletedSchema, ...errorResponses } } },
    async (req) =>
      s.workers.delete(req.params.worker_id, { deleteDisk: req.query.delete_disk === true, ignoreMissingTarget: req.query.ignore_missing_target === true }, { client: req.ip }),
  );

  app.post<{ Body: WorkerDeleteBatchRequest }>(
    '/workers/delete/batch',
    { schema: { tags, security, body: workerDeleteBatchBody } },
    async (req) => s.workers.deleteBatch(req.body.worker_ids, { deleteDisk: req.body.delete_disk === true, ignoreMissingTarget: req.body.ignore_missing_target === true }, { client: req.ip }),
  );
}
