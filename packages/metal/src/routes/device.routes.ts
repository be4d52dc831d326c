import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import {
  type BatchBindRequest,
  batchBindBody,
  bmcErrorResponses,
  type DeviceBindQuery,
  type DeviceDeclaration,
  type DeviceImportRequest,
  type DeviceListQuery,
  deviceBindQuery,
  deviceDeclaration,
  deviceImportBody,
  deviceListQuery,
  deviceSchema,
  errorResponses,
  security,
} from '../api/schemas';
import type { MetalServices } from '../wiring';

export function deviceRoutes(app: FastifyInstance, s: MetalServices): void {
  const tags = ['devices'];
  app.get<{ Querystring: DeviceListQuery }>(
    '/devices',
    { schema: { tags, security, querystring: deviceListQuery, response: { 200: Type.Array(deviceSchema) } } },
    async (req) => s.devices.list(req.query.state),
  );
  app.get<{ Params: { mac: string } }>('/devices/:mac', { schema: { tags, security, response: { 200: deviceSchema, ...errorResponses } } }, async (req) => s.devices.get(req.params.mac));
  app.post<{ Body: DeviceDeclaration }>('/devices', { schema: { tags, security, body: deviceDeclaration, response: { 201: deviceSchema, ...errorResponses } } }, async (req, reply) => {
    reply.status(201);
    return s.devices.register(req.body, { client: req.ip });
  });
  app.post<{ Body: DeviceImportRequest }>('/devices/import', { schema: { tags, security, body: deviceImportBody } }, async (req) => s.devices.import(req.body.entries, { client: req.ip }));
  app.delete<{ Params: { mac: string } }>('/devices/:mac', { schema: { tags, security, summary: 'Revoke a device', response: { 200: deviceSchema, ...errorResponses } } }, async (req) =>
    s.devices.revoke(req.params.mac, { client: req.ip }),
  );
  app.post<{ Params: { mac: string }; Querystring: DeviceBindQuery }>(
    '/devices/:mac/bind',
    { schema: { tags, security, querystring: deviceBindQuery, response: { 200: deviceSchema, ...errorResponses, ...bmcErrorResponses } } },
    async (req) => {
      const bind = () => s.devices.bind(req.params.mac, req.query.worker_id, req.query.force === true, { client: req.ip });
      // ?reboot=true (issue 21): power-cycle into a one-time network boot, to come up as the new identity.
      return req.query.reboot === true ? s.power.withReboot(req.params.mac, { client: req.ip }, bind) : bind();
    },
  );
  app.delete<{ Params: { mac: string } }>('/devices/:mac/bind', { schema: { tags, security, response: { 200: deviceSchema, ...errorResponses } } }, async (req) =>
    s.devices.unbind(req.params.mac, { client: req.ip }),
  );
  app.post<{ Body: BatchBindRequest }>('/devices/bind/batch/preview', { schema: { tags, security, body: batchBindBody } }, async (req) => s.devices.previewBatch(req.body));
  app.post<{ Body: BatchBindRequest }>('/devices/bind/batch', { schema: { tags, security, body: batchBindBody } }, async (req) => s.devices.bindBatch(req.body, { client: req.ip }));
}
