import type { FastifyInstance } from 'fastify';
import type { AgentInput } from '../services/agent.service';
import type { DirectCdRequest, DirectDiskRequest, DiskRequest } from '../services/storage.service';
import type { MetalServices } from '../wiring';
import { errorResponses, nullableString, security, workerSchema } from './schemas';

const agentBody = {
  type: 'object',
  required: ['base_url'],
  properties: {
    id: { type: 'string' },
    base_url: { type: 'string' },
    token: nullableString,
    iscsi_server: nullableString,
    role: { type: ['object', 'null'], properties: { disk: { type: 'boolean' }, cd: { type: 'boolean' } } },
    tags: { type: ['array', 'null'], items: { type: 'string' } },
    enabled: { type: ['boolean', 'null'] },
  },
} as const;

const agentView = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    base_url: { type: 'string' },
    iscsi_server: { type: ['string', 'null'] },
    role: { type: 'object', properties: { disk: { type: 'boolean' }, cd: { type: 'boolean' } } },
    enabled: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    health: { type: 'string' },
    capabilities: { type: ['object', 'null'], additionalProperties: true },
    error: { type: 'string' },
  },
} as const;

const diskBody = {
  type: 'object',
  required: ['type', 'os'],
  properties: { type: { type: 'string' }, os: { type: 'string' }, name: nullableString, size: nullableString, disk_agent: nullableString },
} as const;

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
  app.get<{ Querystring: { live?: boolean } }>(
    '/agents',
    { schema: { tags: agentTags, security, querystring: { type: 'object', properties: { live: { type: 'boolean', default: true } } }, response: { 200: { type: 'array', items: agentView } } } },
    async (req) => ag.listViews(req.query.live !== false),
  );
  app.post<{ Body: AgentInput }>('/agents', { schema: { tags: agentTags, security, body: { ...agentBody, required: ['id', 'base_url'] }, response: { 201: agentView, ...errorResponses } } }, async (req, reply) => {
    reply.status(201);
    return ag.create(req.body, { client: req.ip });
  });
  app.post<{ Body: { base_url: string; token?: string; agent_id?: string } }>(
    '/agents/probe',
    { schema: { tags: agentTags, security, summary: 'Probe an agent (preview, writes nothing)', body: { type: 'object', required: ['base_url'], properties: { base_url: { type: 'string' }, token: nullableString, agent_id: nullableString } } } },
    async (req) => ag.probe(req.body),
  );
  app.put<{ Params: { agent_id: string }; Body: AgentInput }>('/agents/:agent_id', { schema: { tags: agentTags, security, body: agentBody, response: { 200: agentView, ...errorResponses } } }, async (req) =>
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
    { schema: { tags: lunTags, security, body: { type: 'object', required: ['iqn'], properties: { iqn: { type: 'string' }, filename: { type: 'string' }, master: { type: 'string' }, size: { anyOf: [{ type: 'string' }, { type: 'integer' }] }, initiator: { type: 'string' } } } } },
    async (req) => st.createLunDisk(req.params.agent_id, req.body, { client: req.ip }),
  );
  app.post<{ Params: { agent_id: string }; Body: DirectCdRequest }>(
    '/agents/:agent_id/luns/cd',
    { schema: { tags: lunTags, security, body: { type: 'object', required: ['iso'], properties: { iso: { type: 'string' }, iqn: { type: 'string' }, initiator: { type: 'string' } } } } },
    async (req) => st.createLunCd(req.params.agent_id, req.body, { client: req.ip }),
  );
  app.delete<{ Params: { agent_id: string }; Querystring: { iqn: string; delete_file?: boolean; ignore_missing?: boolean } }>(
    '/agents/:agent_id/luns',
    {
      schema: {
        tags: lunTags,
        security,
        querystring: { type: 'object', required: ['iqn'], properties: { iqn: { type: 'string' }, delete_file: { type: 'boolean', default: false }, ignore_missing: { type: 'boolean', default: false } } },
      },
    },
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
    { schema: { tags, security, body: diskBody, response: { 200: workerSchema, ...errorResponses } } },
    async (req) => st.createWorkerDisk(req.params.worker_id, req.body, { client: req.ip }),
  );
  app.post<{ Body: DiskRequest & { targets: Array<{ worker_id: string; agent: string }> } }>(
    '/workers/luns/disk/batch',
    {
      schema: {
        tags,
        security,
        body: {
          type: 'object',
          required: ['type', 'os', 'targets'],
          properties: {
            ...diskBody.properties,
            targets: { type: 'array', items: { type: 'object', required: ['worker_id', 'agent'], properties: { worker_id: { type: 'string' }, agent: { type: 'string' } } } },
          },
        },
      },
    },
    async (req) => st.createWorkerDisksBatch(req.body, { client: req.ip }),
  );
  app.delete<{ Params: { worker_id: string; os: string }; Querystring: { delete_file?: boolean; ignore_missing_target?: boolean } }>(
    '/workers/:worker_id/luns/disk/:os',
    {
      schema: {
        tags,
        security,
        querystring: { type: 'object', properties: { delete_file: { type: 'boolean', default: false }, ignore_missing_target: { type: 'boolean', default: false } } },
        response: { 200: workerSchema, ...errorResponses },
      },
    },
    async (req) => st.deleteWorkerDisk(req.params.worker_id, req.params.os, req.query, { client: req.ip }),
  );
  app.get<{ Params: { worker_id: string } }>('/workers/:worker_id/status', { schema: { tags, security } }, async (req) => st.status(req.params.worker_id));
}
