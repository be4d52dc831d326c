import type { FastifyInstance } from 'fastify';
import type { BatchBindRequest, DeviceDeclaration } from '../services/device.service';
import type { MetalServices } from '../wiring';
import { deviceSchema, errorResponses, nullableString, security } from './schemas';

const declaration = {
  type: 'object',
  required: ['mac'],
  properties: { mac: { type: 'string' }, uuid: nullableString, manufacturer: nullableString, product: nullableString, serial: nullableString },
} as const;

const batchBody = {
  type: 'object',
  properties: {
    mode: { type: 'string', enum: ['manifest', 'sequential'], default: 'manifest' },
    pairs: {
      type: 'array',
      items: { type: 'object', required: ['mac', 'worker_id'], properties: { ...declaration.properties, worker_id: { type: 'string' } } },
    },
    macs: { type: 'array', items: { type: 'string' } },
    worker_ids: { type: 'array', items: { type: 'string' } },
  },
} as const;

export function deviceRoutes(app: FastifyInstance, s: MetalServices): void {
  const tags = ['devices'];
  app.get<{ Querystring: { state?: string } }>(
    '/devices',
    { schema: { tags, security, querystring: { type: 'object', properties: { state: { type: 'string', enum: ['all', 'pooled', 'bound', 'revoked'], default: 'all' } } }, response: { 200: { type: 'array', items: deviceSchema } } } },
    async (req) => s.devices.list(req.query.state),
  );
  app.get<{ Params: { mac: string } }>('/devices/:mac', { schema: { tags, security, response: { 200: deviceSchema, ...errorResponses } } }, async (req) => s.devices.get(req.params.mac));
  app.post<{ Body: DeviceDeclaration }>('/devices', { schema: { tags, security, body: declaration, response: { 201: deviceSchema, ...errorResponses } } }, async (req, reply) => {
    reply.status(201);
    return s.devices.register(req.body, { client: req.ip });
  });
  app.post<{ Body: { entries: DeviceDeclaration[] } }>(
    '/devices/import',
    { schema: { tags, security, body: { type: 'object', required: ['entries'], properties: { entries: { type: 'array', items: { type: 'object', additionalProperties: true } } } } } },
    async (req) => s.devices.import(req.body.entries, { client: req.ip }),
  );
  app.delete<{ Params: { mac: string } }>('/devices/:mac', { schema: { tags, security, summary: 'Revoke a device', response: { 200: deviceSchema, ...errorResponses } } }, async (req) =>
    s.devices.revoke(req.params.mac, { client: req.ip }),
  );
  app.post<{ Params: { mac: string }; Querystring: { worker_id: string; force?: boolean } }>(
    '/devices/:mac/bind',
    {
      schema: {
        tags,
        security,
        querystring: { type: 'object', required: ['worker_id'], properties: { worker_id: { type: 'string' }, force: { type: 'boolean', default: false } } },
        response: { 200: deviceSchema, ...errorResponses },
      },
    },
    async (req) => s.devices.bind(req.params.mac, req.query.worker_id, req.query.force === true, { client: req.ip }),
  );
  app.delete<{ Params: { mac: string } }>('/devices/:mac/bind', { schema: { tags, security, response: { 200: deviceSchema, ...errorResponses } } }, async (req) =>
    s.devices.unbind(req.params.mac, { client: req.ip }),
  );
  app.post<{ Body: BatchBindRequest }>('/devices/bind/batch/preview', { schema: { tags, security, body: batchBody } }, async (req) => s.devices.previewBatch(req.body));
  app.post<{ Body: BatchBindRequest }>('/devices/bind/batch', { schema: { tags, security, body: batchBody } }, async (req) => s.devices.bindBatch(req.body, { client: req.ip }));
}
