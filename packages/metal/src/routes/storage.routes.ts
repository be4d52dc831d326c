import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { roleAllows } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';
import {
  agentLunTargetSchema,
  agentProbeSchema,
  createdLunSchema,
  diskBatchResultSchema,
  lunDeletedSchema,
  mastersListingSchema,
  scanResultSchema,
  workerStatusSchema,
  agentBody,
  agentCreateBody,
  agentDeletedSchema,
  agentListQuery,
  agentProbeBody,
  agentViewSchema,
  bmcErrorResponses,
  diskBatchBody,
  diskBody,
  diskDeleteQuery,
  errorResponses,
  lunCdBody,
  lunDeleteQuery,
  lunDiskBody,
  masterTagBody,
  masterTagClearedSchema,
  masterTagParams,
  masterTagSchema,
  security,
  workerSchema,
  agentParams,
  workerDiskParams,
  workerParams,
} from '../api/schemas';
import type { MetalServices } from '../wiring';

/** Seed 004 §6, §7.1–7.4, §10, §14, §15: everything that needs a storage agent. */
export function storageRoutes(app: FastifyInstance, s: MetalServices): void {
  agentRoutes(app, s);
  lunRoutes(app, s);
  workerDiskRoutes(app, s);
}

/** §6: the agent registry and its probe. */
function agentRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const ag = s.agents;
  const agentTags = ['agents'];
  app.get(
    '/agents',
    { schema: { tags: agentTags, security, querystring: agentListQuery, response: { 200: Type.Array(agentViewSchema) } } },
    async (req) => ag.listViews(req.query.live !== false),
  );
  app.post('/agents', { schema: { tags: agentTags, security, body: agentCreateBody, response: { 201: agentViewSchema, ...errorResponses } } }, async (req, reply) => {
    reply.status(201);
    return ag.create(req.body, { client: req.ip });
  });
  app.post(
    '/agents/probe',
    { schema: { tags: agentTags, security, summary: 'Probe an agent (preview, writes nothing)', body: agentProbeBody, response: { 200: agentProbeSchema, ...errorResponses } } },
    // A `${NAME}` in the body's token is expanded only for a caller who may register agents, and logged.
    async (req) => ag.probe(req.body, { client: req.ip, mayWriteAgents: req.principal !== undefined && roleAllows(req.principal.role, 'metal:agent:write') }),
  );
  app.put('/agents/:agent_id', { schema: { params: agentParams, tags: agentTags, security, body: agentBody, response: { 200: agentViewSchema, ...errorResponses } } }, async (req) =>
    ag.update(req.params.agent_id, req.body, { client: req.ip }),
  );
  // The seed control plane's current WebUI (docs/metal.md): remove an agent, annotate its masters.
  app.delete(
    '/agents/:agent_id',
    {
      config: { permission: 'metal:agent:delete' },
      schema: { params: agentParams, tags: agentTags, security, summary: 'Remove an agent and its master tags (409 while a worker’s disk or CD is on it)', response: { 200: agentDeletedSchema, ...errorResponses } },
    },
    async (req) => ag.delete(req.params.agent_id, { client: req.ip }),
  );
  const tagPath = '/agents/:agent_id/masters/:master_name/tag';
  app.put(
    tagPath,
    { config: { permission: 'metal:master:tag' }, schema: { params: masterTagParams, tags: ['masters'], security, summary: 'Tag a master image (os, os_version: annotations merged into GET /masters)', body: masterTagBody, response: { 200: masterTagSchema, ...errorResponses } } },
    async (req) => ag.setMasterTag(req.params.agent_id, req.params.master_name, req.body, { client: req.ip }),
  );
  app.delete(
    tagPath,
    { config: { permission: 'metal:master:tag' }, schema: { params: masterTagParams, tags: ['masters'], security, summary: "Clear a master image's tag", response: { 200: masterTagClearedSchema, ...errorResponses } } },
    async (req) => ag.clearMasterTag(req.params.agent_id, req.params.master_name, { client: req.ip }),
  );
}

/** §14, §15: direct LUN management on one agent, and the masters of all. */
function lunRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const st = s.storage;
  const lunTags = ['luns'];
  app.get('/agents/:agent_id/luns', { schema: { params: agentParams, tags: lunTags, security, response: { 200: Type.Array(agentLunTargetSchema), ...errorResponses } } }, async (req) => st.listLuns(req.params.agent_id));
  app.post(
    '/agents/:agent_id/luns/disk',
    { schema: { params: agentParams, tags: lunTags, security, body: lunDiskBody, response: { 200: createdLunSchema, ...errorResponses } } },
    async (req) => st.createLunDisk(req.params.agent_id, req.body, { client: req.ip }),
  );
  app.post(
    '/agents/:agent_id/luns/cd',
    { schema: { params: agentParams, tags: lunTags, security, body: lunCdBody, response: { 200: createdLunSchema, ...errorResponses } } },
    async (req) => st.createLunCd(req.params.agent_id, req.body, { client: req.ip }),
  );
  app.delete(
    '/agents/:agent_id/luns',
    { schema: { params: agentParams, tags: lunTags, security, querystring: lunDeleteQuery, response: { 200: lunDeletedSchema, ...errorResponses } } },
    async (req) => st.deleteLun(req.params.agent_id, req.query, { client: req.ip }),
  );
  app.post('/agents/:agent_id/luns/scan', { schema: { params: agentParams, tags: lunTags, security, response: { 200: scanResultSchema, ...errorResponses } } }, async (req) => st.scan(req.params.agent_id, { client: req.ip }));

  app.get('/masters', { schema: { tags: ['masters'], security, summary: 'Master images on every enabled disk agent', response: { 200: mastersListingSchema, ...errorResponses } } }, async (req) => st.masters({ client: req.ip }));
}

/** §7.1–7.4, §10: workers' system disks, and the ledger against what the agents hold. */
function workerDiskRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const st = s.storage;
  const tags = ['workers'];
  app.post(
    '/workers/:worker_id/luns/disk',
    { schema: { params: workerParams, tags, security, body: diskBody, response: { 200: workerSchema, ...errorResponses, ...bmcErrorResponses } } },
    async (req) => {
      const { reboot, ...disk } = req.body;
      const create = () => st.createWorkerDisk(req.params.worker_id, disk, { client: req.ip });
      // reboot: true (issue 21): power-cycle the worker's bound device into its new disk.
      return reboot === true ? s.power.withReboot(await s.power.boundMac(req.params.worker_id), { client: req.ip }, create) : create();
    },
  );
  app.post(
    '/workers/luns/disk/batch',
    { schema: { tags, security, body: diskBatchBody, response: { 200: diskBatchResultSchema, ...errorResponses } } },
    async (req) => st.createWorkerDisksBatch(req.body, { client: req.ip }),
  );
  app.delete(
    '/workers/:worker_id/luns/disk/:os',
    { schema: { params: workerDiskParams, tags, security, querystring: diskDeleteQuery, response: { 200: workerSchema, ...errorResponses } } },
    async (req) => st.deleteWorkerDisk(req.params.worker_id, req.params.os, req.query, { client: req.ip }),
  );
  app.get('/workers/:worker_id/status', { schema: { params: workerParams, tags, security, response: { 200: workerStatusSchema, ...errorResponses } } }, async (req) => s.drift.status(req.params.worker_id));
}
