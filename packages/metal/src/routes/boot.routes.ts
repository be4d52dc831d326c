import type { FastifyInstance } from 'fastify';
import type { MetalServices } from '../wiring';
import { detailSchema, security } from './schemas';

const IPXE = 'text/plain; charset=utf-8';

/** The paths iPXE calls, open by design (seed §1.3, §5, §16.6), and the settings and operations log beside them. */
export function bootRoutes(app: FastifyInstance, s: MetalServices): void {
  ipxeRoutes(app, s);
  settingsAndOperationsRoutes(app, s);
}

/** `/healthz`, `/boot-vars`, `/devices/report`: what a booting machine calls, without a token. */
function ipxeRoutes(app: FastifyInstance, s: MetalServices): void {
  app.get('/healthz', { schema: { tags: ['health'], summary: 'Health check (no auth)', response: { 200: { type: 'object', properties: { status: { type: 'string' } } } } } }, async () => ({ status: 'ok' }));

  app.get<{ Querystring: { mac?: string; hostname?: string; format?: string } }>(
    '/boot-vars',
    {
      schema: {
        tags: ['boot'],
        summary: 'Per-worker iPXE boot variables (no auth, read-only)',
        querystring: {
          type: 'object',
          properties: {
            mac: { type: 'string', description: 'MAC, with or without separators' },
            hostname: { type: 'string' },
            format: { type: 'string', enum: ['ipxe', 'json'], default: 'ipxe' },
          },
        },
      },
    },
    // Not async: a cached answer is sent in the same tick, with no promise per request.
    (req, reply) => {
      if (req.query.format === 'json') return s.bootVars.resolve(req.query).then((a) => reply.send(a.vars));
      const text = s.bootVars.script(req.query);
      reply.type(IPXE);
      return typeof text === 'string' ? reply.send(text) : text.then((t) => reply.send(t));
    },
  );

  app.get<{ Querystring: Record<string, string> }>(
    '/devices/report',
    {
      schema: {
        tags: ['devices'],
        summary: "iPXE's device report: 11 fingerprint fields (no auth)",
        description:
          'Answers a valid, empty iPXE script (`#!ipxe`), so `chain` succeeds without side effects on the script. A registration refused by the per-source rate limit or the pool cap is answered the reboot loop (`set menu-default reboot`), never an error page.',
        querystring: {
          type: 'object',
          required: ['mac'],
          properties: {
            mac: { type: 'string' },
            uuid: { type: 'string' },
            manufacturer: { type: 'string' },
            product: { type: 'string' },
            serial: { type: 'string' },
            cpumodel: { type: 'string' },
            'mem-total': { type: 'string', description: 'decimal or 0x hex' },
            'mem-type': { type: 'string' },
            'mem-speed': { type: 'string', description: 'decimal or 0x hex' },
            chip: { type: 'string' },
            busid: { type: 'string' },
          },
        },
      },
    },
    async (req, reply) => {
      const { script } = await s.devices.report(req.query, { client: req.ip });
      return reply.type(IPXE).send(script);
    },
  );
}

/** §12, §16.5: the auto-register switch and the operations log. */
function settingsAndOperationsRoutes(app: FastifyInstance, s: MetalServices): void {
  const enabledSchema = {
    type: 'object',
    properties: { enabled: { type: 'boolean' }, closes_at: { type: 'string', description: 'when a registration window (IRONLENS_AUTO_REGISTER_WINDOW_MINUTES) runs: the moment auto-register closes by itself' } },
  } as const;
  app.get('/settings/auto-register', { schema: { tags: ['settings'], security, response: { 200: enabledSchema } } }, async () => s.settings.autoRegisterView());
  app.put<{ Body: { enabled: boolean } }>(
    '/settings/auto-register',
    {
      schema: {
        tags: ['settings'],
        security,
        body: { type: 'object', required: ['enabled'], properties: { enabled: { type: 'boolean' } } },
        response: { 200: enabledSchema, 422: detailSchema },
      },
    },
    async (req) => s.settings.putAutoRegister(req.body.enabled, { client: req.ip }),
  );

  app.get<{ Querystring: { since?: number; limit?: number; mac?: string } }>(
    '/operations',
    {
      schema: {
        tags: ['operations'],
        security,
        summary: 'The operations log, incrementally',
        querystring: {
          type: 'object',
          properties: {
            since: { type: 'integer', minimum: 0, default: 0 },
            limit: { type: 'integer', minimum: 1, maximum: 100000, default: 1000 },
            mac: { type: 'string' },
          },
        },
      },
    },
    async (req) => s.operations(req.query),
  );
}
