import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import {
  batchBindResultSchema,
  batchPreviewSchema,
  deviceImportResultSchema,
  batchBindBody,
  bmcErrorResponses,
  type DeviceImportRequest,
  deviceBindQuery,
  deviceDeclaration,
  deviceImportBody,
  deviceListQuery,
  deviceSchema,
  errorResponses,
  security,
  macParams,
} from '../api/schemas';
import type { MetalServices } from '../wiring';
import { BMC_IN_BODY, BMC_IN_IMPORT } from '../permissions';

export function deviceRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['devices'];
  app.get(
    '/devices',
    { schema: { tags, security, querystring: deviceListQuery, response: { 200: Type.Array(deviceSchema) } } },
    async (req) => s.devices.list(req.query.state),
  );
  app.get('/devices/:mac', { schema: { params: macParams, tags, security, response: { 200: deviceSchema, ...errorResponses } } }, async (req) => s.devices.get(req.params.mac));
  app.post('/devices', { config: { bodyPermissions: [BMC_IN_BODY] }, schema: { tags, security, body: deviceDeclaration, response: { 201: deviceSchema, ...errorResponses } } }, async (req, reply) => {
    reply.status(201);
    return s.devices.register(req.body, { client: req.ip });
  });
  app.post('/devices/import', { config: { bodyPermissions: [BMC_IN_IMPORT] }, schema: { tags, security, body: deviceImportBody, response: { 200: deviceImportResultSchema, ...errorResponses } } }, async (req) => s.devices.import(req.body.entries as DeviceImportRequest['entries'], { client: req.ip }));
  app.delete('/devices/:mac', { schema: { params: macParams, tags, security, summary: 'Revoke a device', response: { 200: deviceSchema, ...errorResponses } } }, async (req) =>
    s.devices.revoke(req.params.mac, { client: req.ip }),
  );
  app.post(
    '/devices/:mac/bind',
    { schema: { params: macParams, tags, security, querystring: deviceBindQuery, response: { 200: deviceSchema, ...errorResponses, ...bmcErrorResponses } } },
    async (req) => {
      const bind = () => s.devices.bind(req.params.mac, req.query.worker_id, req.query.force === true, { client: req.ip });
      // ?reboot=true (issue 21): power-cycle into a one-time network boot, to come up as the new identity.
      return req.query.reboot === true ? s.power.withReboot(req.params.mac, { client: req.ip }, bind) : bind();
    },
  );
  app.delete('/devices/:mac/bind', { schema: { params: macParams, tags, security, response: { 200: deviceSchema, ...errorResponses } } }, async (req) =>
    s.devices.unbind(req.params.mac, { client: req.ip }),
  );
  app.post('/devices/bind/batch/preview', { schema: { tags, security, body: batchBindBody, response: { 200: batchPreviewSchema, ...errorResponses } } }, async (req) => s.devices.previewBatch(req.body));
  app.post('/devices/bind/batch', { schema: { tags, security, body: batchBindBody, response: { 200: batchBindResultSchema, ...errorResponses } } }, async (req) => s.devices.bindBatch(req.body, { client: req.ip }));
}
