import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import {
  autoRegisterBody,
  autoRegisterSchema,
  bootVarsQuery,
  deviceReportQuery,
  detailSchema,
  errorResponses,
  healthSchema,
  ipxeScriptAnswer,
  operationsQuery,
  operationsSchema,
  registrationWindowBody,
  registrationWindowClosedSchema,
  registrationWindowSchema,
  security,
} from '../api/schemas';
import type { MetalServices } from '../wiring';

const IPXE = 'text/plain; charset=utf-8';

/** The paths iPXE calls, open by design (seed §1.3, §5, §16.6), and the settings and operations log beside them. */
export function bootRoutes(app: FastifyInstance, s: MetalServices): void {
  ipxeRoutes(app, s);
  settingsAndOperationsRoutes(app, s);
}

/** `/healthz`, `/boot-vars`, `/devices/report`: what a booting machine calls, without a token. */
function ipxeRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/healthz',
    { schema: { tags: ['health'], summary: 'Health check (no auth)', description: "With IRONLENS_BOOT_SERVICES on, `boot_services` says how ironlens' own dnsmasq is doing.", response: { 200: healthSchema } } },
    async () => (s.bootServices ? { status: 'ok', boot_services: s.bootServices.status() } : { status: 'ok' }),
  );

  app.get(
    '/boot.ipxe',
    {
      schema: {
        tags: ['boot'],
        summary: "The boot script iPXE chains, with the control plane's URL filled in (no auth)",
        description: 'packages/metal/assets/boot.ipxe with `set cp-url <IRONLENS_BOOT_URL>` (or, with boot services on, the provisioning interface\'s address and this listener\'s port); unchanged when no URL is known.',
        response: { 200: ipxeScriptAnswer },
      },
    },
    async (_req, reply) => reply.type(IPXE).send(s.bootScript.render()),
  );

  app.get(
    '/boot-vars',
    { schema: { tags: ['boot'], summary: 'Per-worker iPXE boot variables (no auth, read-only)', querystring: bootVarsQuery, response: { 200: ipxeScriptAnswer } } },
    // Not async: a cached answer is sent in the same tick, with no promise per request.
    (req, reply) => {
      // An error sent is rendered by the error handler, as a rejected handler's would be.
      const failed = (err: unknown) => reply.send(err as never);
      if (req.query.format === 'json') {
        s.bootVars.resolve(req.query).then((a) => reply.send(a.vars), failed);
        return;
      }
      const text = s.bootVars.script(req.query);
      reply.type(IPXE);
      if (typeof text === 'string') reply.send(text);
      else text.then((t) => reply.send(t), failed);
    },
  );

  app.get(
    '/devices/report',
    {
      schema: {
        tags: ['devices'],
        summary: "iPXE's device report: 11 fingerprint fields (no auth)",
        description:
          'Answers a valid, empty iPXE script (`#!ipxe`), so `chain` succeeds without side effects on the script. A registration refused by the per-source rate limit or the pool cap is answered the reboot loop (`set menu-default reboot`), never an error page.',
        querystring: deviceReportQuery,
        response: { 200: ipxeScriptAnswer },
      },
    },
    // Not async: a repeated report of a known device is answered in the same tick.
    (req, reply) => {
      const q = req.url.indexOf('?');
      const out = s.devices.report(req.query, { client: req.ip }, q === -1 ? undefined : req.url.slice(q + 1));
      reply.type(IPXE);
      if (!(out instanceof Promise)) reply.send(out.script);
      else out.then((o) => reply.send(o.script), (err: unknown) => reply.send(err as never));
    },
  );
}

/** §12, §16.5: the auto-register switch, the registration window and the operations log. */
function settingsAndOperationsRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/settings/auto-register', { schema: { tags: ['settings'], security, response: { 200: autoRegisterSchema } } }, async () => s.settings.autoRegisterView());
  app.put(
    '/settings/auto-register',
    { schema: { tags: ['settings'], security, body: autoRegisterBody, response: { 200: autoRegisterSchema, 422: detailSchema } } },
    async (req) => s.settings.putAutoRegister(req.body.enabled, { client: req.ip }),
  );

  // The seed control plane's current WebUI: auto-register open for 1-60 minutes (docs/metal.md).
  const windowPath = '/settings/registration-window';
  app.get(windowPath, { config: { permission: 'metal:setting:read' }, schema: { tags: ['settings'], security, summary: 'The registration window: auto-register open for a bounded time', response: { 200: registrationWindowSchema } } }, async () =>
    s.settings.registrationWindow(),
  );
  app.post(
    windowPath,
    {
      config: { permission: 'metal:setting:write' },
      schema: { tags: ['settings'], security, summary: 'Open the registration window for ttl_minutes (1-60); it closes by itself', body: registrationWindowBody, response: { 201: registrationWindowSchema, ...errorResponses } },
    },
    async (req, reply) => {
      const view = await s.settings.openRegistrationWindow(req.body.ttl_minutes, { client: req.ip });
      reply.status(201);
      return view;
    },
  );
  app.delete(
    windowPath,
    { config: { permission: 'metal:setting:write' }, schema: { tags: ['settings'], security, summary: 'Close the registration window early', response: { 200: registrationWindowClosedSchema, ...errorResponses } } },
    async (req) => s.settings.closeRegistrationWindow({ client: req.ip }),
  );

  app.get(
    '/operations',
    { schema: { tags: ['operations'], security, summary: 'The operations log, incrementally', querystring: operationsQuery, response: { 200: operationsSchema } } },
    async (req) => s.operations(req.query),
  );
}
