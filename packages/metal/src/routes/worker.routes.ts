import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import {
  batchCreateBody,
  createWorkerBody,
  defaultDiskBody,
  defaultOsBody,
  errorResponses,
  security,
  workerAddressBody,
  workerBatchResultSchema,
  workerDeleteBatchBody,
  workerDeleteBatchResultSchema,
  workerDeletedSchema,
  workerDeleteQuery,
  workerMacBody,
  workerSchema,
  workerParams,
} from '../api/schemas';
import type { MetalServices } from '../wiring';

export function workerRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['workers'];
  const one = { 200: workerSchema, ...errorResponses };

  app.post(
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

  app.post(
    '/workers/batch',
    {
      schema: {
        tags,
        security,
        body: batchCreateBody,
        response: { 200: workerBatchResultSchema, ...errorResponses },
      },
    },
    async (req) => s.workers.createBatch(req.body, { client: req.ip }),
  );

  app.get('/workers', { schema: { tags, security, response: { 200: Type.Array(workerSchema) } } }, async () => s.workers.list());
  app.get('/workers/:worker_id', { schema: { params: workerParams, tags, security, response: one } }, async (req) => s.workers.get(req.params.worker_id));

  app.put(
    '/workers/:worker_id/mac',
    { schema: { params: workerParams, tags, security, body: workerMacBody, response: one } },
    async (req) => s.workers.setMac(req.params.worker_id, req.body.mac, { client: req.ip }),
  );

  app.put(
    '/workers/:worker_id/default-os',
    { schema: { params: workerParams, tags, security, body: defaultOsBody, response: one } },
    async (req) => s.workers.setDefaultOs(req.params.worker_id, req.body ?? {}, { client: req.ip }),
  );

  app.put(
    '/workers/:worker_id/default-disk',
    {
      config: { permission: 'metal:worker:write' },
      schema: { params: workerParams, tags, security, summary: "Default boot by disk key (the seed control plane's current WebUI): /default-os with disk = the disk's os_tag", body: defaultDiskBody, response: one },
    },
    async (req) => s.workers.setDefaultDisk(req.params.worker_id, req.body ?? {}, { client: req.ip }),
  );

  app.put(
    '/workers/:worker_id/address',
    {
      config: { permission: 'metal:worker:write' },
      schema: { params: workerParams, tags, security, summary: "Set or remove the worker's fixed IPv4 address (the hosts file gives it to the bound MAC)", body: workerAddressBody, response: one },
    },
    async (req) => s.workers.setFixedAddress(req.params.worker_id, req.body.fixed_address, { client: req.ip }),
  );

  app.delete(
    '/workers/:worker_id',
    { schema: { params: workerParams, tags, security, querystring: workerDeleteQuery, response: { 200: workerDeletedSchema, ...errorResponses } } },
    async (req) =>
      s.workers.delete(req.params.worker_id, { deleteDisk: req.query.delete_disk === true, ignoreMissingTarget: req.query.ignore_missing_target === true }, { client: req.ip }),
  );

  app.post(
    '/workers/delete/batch',
    { schema: { tags, security, body: workerDeleteBatchBody, response: { 200: workerDeleteBatchResultSchema, ...errorResponses } } },
    async (req) => s.workers.deleteBatch(req.body.worker_ids, { deleteDisk: req.body.delete_disk === true, ignoreMissingTarget: req.body.ignore_missing_target === true }, { client: req.ip }),
  );
}
