import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import {
  type AgentInput,
  type AgentListQuery,
  type AgentProbeRequest,
  agentBody,
  agentCreateBody,
  agentListQuery,
  agentProbeBody,
  agentViewSchema,
  type DirectCdRequest,
  type DirectDiskRequest,
  type DiskBatchRequest,
  type DiskDeleteQuery,
  type DiskRequest,
  bmcErrorResponses,
  diskBatchBody,
  diskBody,
  diskDeleteQuery,
  errorResponses,
  type LunDeleteQuery,
  lunCdBody,
  lunDeleteQuery,
  lunDiskBody,
  security,
  workerSchema,
} from '../api/schemas';
import type { MetalServices } from '../wiring';

/** Seed 004 §6, §7.1–7.4, §10, §14, §15: everything that needs a storage agent. */
export function storageRoutes(app: FastifyInstance, s: MetalServices): void {
  agentRoutes(app, s);
  lunRoutes(app, s);
  workerDiskRoutes(app, s);
}

/** §6: the agent registry and its probe. */
function agentRoutes(app: FastifyInstance, s: MetalServices): void {
  const ag = s.agents;
  const agentTags = ['agents'];
  app.get<{ Querystring: AgentListQuery }>(
    '/agents',
    { schema: { tags: agentTags, security, querystring: agentListQuery, response: { 200: Type.Array(agentViewSchema) } } },
    async (req) => ag.listViews(req.query.live !== false),
  );
  app.post<{ Body: AgentInput }>('/agents', { schema: { tags: agentTags, security, body: agentCreateBody, response: { 201: agentViewSchema, ...errorResponses } } }, async (req, reply) => {
    reply.status(201);
    return ag.create(req.body, { client: req.ip });
  });
  app.post<{ Body: AgentProbeRequest }>(
    '/agents/probe',
    { schema: { tags: agentTags, security, summary: 'Probe an agent (preview, writes nothing)', body: agentProbeBody } },
    async (req) => ag.probe(req.body),
  );
  app.put<{ Params: { agent_id: string }; Body: AgentInput }>('/agents/:agent_id', { schema: { tags: agentTags, security, body: agentBody, response: { 200: agentViewSchema, ...errorResponses } } }, async (req) =>
    ag.update(req.params.agent_id, req.body, { client: req.ip }),
  );
}

/** §14, §15: direct LUN management on one agent, and the masters of all. */
function lunRoutes(app: FastifyInstance, s: MetalServices): void {
  const st = s.storage;
  const lunTags = ['luns'];
  app.get<{ Params: { agent_id: string } }>('/agents/:agent_id/luns', { schema: { tags: lunTags, security } }, async (req) => st.listLuns(req.params.agent_id));
  app.post<{ Params: { agent_id: string }; Body: DirectDiskRequest }>(
    '/agents/:agent_id/luns/disk',
    { schema: { tags: lunTags, security, body: lunDiskBody } },
    async (req) => st.createLunDisk(req.params.agent_id, req.body, { client: req.ip }),
  );
  app.post<{ Params: { agent_id: string }; Body: DirectCdRequest }>(
    '/agents/:agent_id/luns/cd',
    { schema: { tags: lunTags, security, body: lunCdBody } },
    async (req) => st.createLunCd(req.params.agent_id, req.body, { client: req.ip }),
  );
  app.delete<{ Params: { agent_id: string }; Querystring: LunDeleteQuery }>(
    '/agents/:agent_id/luns',
    { schema: { tags: lunTags, security, querystring: lunDeleteQuery } },
    async (req) => st.deleteLun(req.params.agent_id, req.query, { client: req.ip }),
  );
  app.post<{ Params: { agent_id: string } }>('/agents/:agent_id/luns/scan', { schema: { tags: lunTags, security } }, async (req) => st.scan(req.params.agent_id, { client: req.ip }));

  app.get('/masters', { schema: { tags: ['masters'], security, summary: 'Master images on every enabled disk agent' } }, async (req) => st.masters({ client: req.ip }));
}

/** §7.1–7.4, §10: workers' system disks, and the ledger against what the agents hold. */
function workerDiskRoutes(app: FastifyInstance, s: MetalServices): void {
  const st = s.storage;
  const tags = ['workers'];
  app.post<{ Params: { worker_id: string }; Body: DiskRequest }>(
    '/workers/:worker_id/luns/disk',
    { schema: { tags, security, body: diskBody, response: { 200: workerSchema, ...errorResponses, ...bmcErrorResponses } } },
    async (req) => {
      const { reboot, ...disk } = req.body;
      const create = () => st.createWorkerDisk(req.params.worker_id, disk, { client: req.ip });
      // reboot: true (issue 21): power-cycle the worker's bound device into its new disk.
      return reboot === true ? s.power.withReboot(await s.power.boundMac(req.params.worker_id), { client: req.ip }, create) : create();
    },
  );
  app.post<{ Body: DiskBatchRequest }>(
    '/workers/luns/disk/batch',
    { schema: { tags, security, body: diskBatchBody } },
    async (req) => st.createWorkerDisksBatch(req.body, { client: req.ip }),
  );
  app.delete<{ Params: { worker_id: string; os: string }; Querystring: DiskDeleteQuery }>(
    '/workers/:worker_id/luns/disk/:os',
    { schema: { tags, security, querystring: diskDeleteQuery, response: { 200: workerSchema, ...errorResponses } } },
    async (req) => st.deleteWorkerDisk(req.params.worker_id, req.params.os, req.query, { client: req.ip }),
  );
  app.get<{ Params: { worker_id: string } }>('/workers/:worker_id/status', { schema: { tags, security } }, async (req) => st.status(req.params.worker_id));
}
