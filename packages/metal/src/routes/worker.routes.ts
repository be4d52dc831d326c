import type { FastifyInstance } from 'fastify';
import type { BatchCreateInput, CreateWorkerInput } from '../services/worker.service';
import type { MetalServices } from '../wiring';
import { bootSchema, errorResponses, nullableString, security, workerSchema } from './schemas';

const deleteQuery = {
  type: 'object',
  properties: { delete_disk: { type: 'boolean', default: false }, ignore_missing_target: { type: 'boolean', default: false } },
} as const;

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
        body: {
          type: 'object',
          required: ['worker_id'],
          properties: { worker_id: { type: 'string' }, mac: nullableString, hostname: nullableString, arch: nullableString, windows_iso: nullableString, boot: bootSchema },
        },
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
        body: {
          type: 'object',
          required: ['count'],
          properties: {
            count: { type: 'integer', minimum: 1, maximum: 100 },
            name_prefix: { type: 'string', default: 'worker-' },
            macs: { type: ['array', 'null'], items: { type: 'string' } },
            arch: nullableString,
            boot: bootSchema,
          },
        },
      },
    },
    async (req) => s.workers.createBatch(req.body, { client: req.ip }),
  );

  app.get('/workers', { schema: { tags, security, response: { 200: { type: 'array', items: workerSchema } } } }, async () => s.workers.list());
  app.get<{ Params: { worker_id: string } }>('/workers/:worker_id', { schema: { tags, security, response: one } }, async (req) => s.workers.get(req.params.worker_id));

  app.put<{ Params: { worker_id: string }; Body: { mac: string } }>(
    '/workers/:worker_id/mac',
    { schema: { tags, security, body: { type: 'object', required: ['mac'], properties: { mac: { type: 'string' } } }, response: one } },
    async (req) => s.workers.setMac(req.params.worker_id, req.body.mac, { client: req.ip }),
  );

  app.put<{ Params: { worker_id: string }; Body: Record<string, unknown> }>(
    '/workers/:worker_id/default-os',
    {
      schema: {
        tags,
        security,
        body: { type: 'object', properties: { os: nullableString, menu_default: nullableString, menu_timeout: { type: ['integer', 'null', 'string'] } } },
        response: one,
      },
    },
    async (req) => s.workers.setDefaultOs(req.params.worker_id, req.body ?? {}, { client: req.ip }),
  );

  app.delete<{ Params: { worker_id: string }; Querystring: { delete_disk?: boolean; ignore_missing_target?: boolean } }>(
    '/workers/:worker_id',
    { schema: { tags, security, querystring: deleteQuery, response: { 200: { type: 'object', properties: { deleted: { type: 'string' }, delete_disk: { type: 'boolean' }, dnsmasq_removed: { type: 'boolean' } } }, ...errorResponses } } },
    async (req) =>
      s.workers.delete(req.params.worker_id, { deleteDisk: req.query.delete_disk === true, ignoreMissingTarget: req.query.ignore_missing_target === true }, { client: req.ip }),
  );

  app.post<{ Body: { worker_ids: unknown[]; delete_disk?: boolean; ignore_missing_target?: boolean } }>(
    '/workers/delete/batch',
    {
      schema: {
        tags,
        security,
        body: {
          type: 'object',
          required: ['worker_ids'],
          properties: { worker_ids: { type: 'array', items: { type: 'string' } }, delete_disk: { type: 'boolean', default: false }, ignore_missing_target: { type: 'boolean', default: false } },
        },
      },
    },
    async (req) => s.workers.deleteBatch(req.body.worker_ids, { deleteDisk: req.body.delete_disk === true, ignoreMissingTarget: req.body.ignore_missing_target === true }, { client: req.ip }),
  );
}
