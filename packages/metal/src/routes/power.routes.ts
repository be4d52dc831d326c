import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import {
  bmcBody,
  bmcDeletedSchema,
  bmcErrorResponses,
  bmcSchema,
  errorResponses,
  powerActionBody,
  powerAnswerSchema,
  powerBatchBody,
  powerBatchSchema,
  powerStateSchema,
  security,
  macParams,
} from '../api/schemas';
import type { MetalServices } from '../wiring';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's one permission (`area:object:verb`, or `public`; enforced by issue 20's access hook). */
    permission?: string;
  }
}

/**
 * Issue 21: a BMC per device, power state and actions (one, or many at once), a one-time
 * network boot, and the proof that the machine booted (`last_power` on the device).
 */
export function powerRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['power'];
  const errors = { ...errorResponses, ...bmcErrorResponses };

  app.get(
    '/devices/:mac/bmc',
    { config: { permission: 'metal:bmc:read' }, schema: { params: macParams, tags, security, summary: "A device's BMC (never its password: password_set)", response: { 200: bmcSchema, ...errorResponses } } },
    async (req) => s.power.getBmc(req.params.mac),
  );
  app.put(
    '/devices/:mac/bmc',
    {
      config: { permission: 'metal:bmc:write' },
      schema: { params: macParams,
        tags,
        security,
        summary: "Set a device's BMC: redfish (url, username, password, verify_tls) or ipmi (host, port, username, password)",
        description: 'The password is sealed with the secrets key and never shown again; an update without a password keeps the stored one.',
        body: bmcBody,
        response: { 200: bmcSchema, ...errorResponses },
      },
    },
    async (req) => s.power.putBmc(req.params.mac, req.body, { client: req.ip }),
  );
  app.delete(
    '/devices/:mac/bmc',
    { config: { permission: 'metal:bmc:write' }, schema: { params: macParams, tags, security, summary: "Remove a device's BMC", response: { 200: bmcDeletedSchema, ...errorResponses } } },
    async (req) => s.power.deleteBmc(req.params.mac, { client: req.ip }),
  );

  app.get(
    '/devices/:mac/power',
    { config: { permission: 'metal:power:read' }, schema: { params: macParams, tags, security, summary: 'Power state, read from the BMC (cached a few seconds)', response: { 200: powerStateSchema, ...errors } } },
    async (req) => s.power.state(req.params.mac),
  );
  app.post(
    '/devices/:mac/power',
    {
      config: { permission: 'metal:power:operate' },
      schema: { params: macParams,
        tags,
        security,
        summary: 'Power on, off, cycle or soft-off; boot: "network" sets a one-time network boot first',
        description: 'Answers the action, the state read back and last_power (the proof of boot: pending until the device report and /boot-vars come, no_network_boot after IRONLENS_BOOT_CONFIRM_TIMEOUT_MS).',
        body: powerActionBody,
        response: { 200: powerAnswerSchema, ...errors },
      },
    },
    async (req) => s.power.act(req.params.mac, { action: req.body.action, boot: req.body.boot ?? null }, { client: req.ip }),
  );
  app.post(
    '/devices/power',
    {
      config: { permission: 'metal:power:operate' },
      schema: {
        tags,
        security,
        summary: 'One power action on many devices: one result per MAC',
        description: 'Calls to one BMC host go one at a time; IRONLENS_BMC_CONCURRENCY calls at most in flight; IRONLENS_BMC_STAGGER_MS between power-ons.',
        body: powerBatchBody,
        response: { 200: powerBatchSchema, ...errorResponses },
      },
    },
    async (req) => s.power.batch({ macs: req.body.macs, action: req.body.action, boot: req.body.boot ?? null }, { client: req.ip }),
  );
}
