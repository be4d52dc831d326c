import { AppError, Authenticator, declareRoutePermissions, installAccessControl, installErrorHandling, renderDetail } from '@ironlens/core';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import {
  AgentCapabilities,
  AgentDetail,
  AgentHealth,
  AgentTargetList,
  agentErrors,
  CdCreated,
  CreateCdBody,
  CreateDiskBody,
  DeleteLunQuery,
  DiskCreated,
  LunDeleted,
  MasterList,
  ScanBody,
  ScanResult,
} from '../api/schemas';
import type { LunService } from '../services/lun.service';
import type { MasterCatalog } from '../services/master.service';

export interface AgentRoutesOptions {
  luns: LunService;
  masters: MasterCatalog;
  /** Bearer token; when empty, auth is off. `/healthz` is always open. */
  token: string | undefined;
}

const secured = [{ bearer: [] }];

/** The permission of each route of the storage agent (docs/access.md). */
export const AGENT_ROUTE_PERMISSIONS: Readonly<Record<string, string>> = {
  'GET /healthz': 'public',
  'GET /capabilities': 'agent:capability:read',
  'GET /luns': 'agent:lun:read',
  'POST /luns/disk': 'agent:lun:write',
  'POST /luns/cd': 'agent:lun:write',
  'DELETE /luns': 'agent:lun:delete',
  'POST /luns/scan': 'agent:lun:write',
  'GET /masters': 'agent:master:read',
};

/**
 * The storage agent's HTTP API (seed 004 §6, §14, §15 as the control plane passes it
 * through): `/healthz`, `/capabilities`, `/luns…`, `/masters`. Errors in FastAPI's
 * `{"detail": "..."}` shape. Every answer is 200 on success.
 */
export const agentRoutes: FastifyPluginAsync<AgentRoutesOptions> = async (instance, opts) => {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { luns, masters } = opts;
  installErrorHandling(app, renderDetail);
  // The agent keeps its own token (IPXE_AGENT_TOKEN, an admin named env:IPXE_AGENT_TOKEN); every route declares its permission (issue 20).
  declareRoutePermissions(app, AGENT_ROUTE_PERMISSIONS);
  installAccessControl(app, { authenticator: new Authenticator([{ variable: 'IPXE_AGENT_TOKEN', token: opts.token }]) });
  // Like FastAPI, take an empty body sent as JSON (a bodyless POST /luns/scan from some clients).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new AppError('request_invalid', 'body is not valid JSON'), undefined);
    }
  });

  app.get('/healthz', { schema: { tags: ['agent'], summary: 'Liveness (no auth)', response: { 200: AgentHealth } } }, async () => ({ status: 'ok' }));

  app.get(
    '/capabilities',
    { schema: { tags: ['agent'], summary: 'Backend, file system and roles of this agent', security: secured, response: { 200: AgentCapabilities } } },
    async () => luns.capabilities(),
  );

  app.get('/luns', { schema: { tags: ['luns'], summary: 'Targets and their LUNs', security: secured, response: { 200: AgentTargetList, 500: AgentDetail } } }, async () => luns.list());

  app.post(
    '/luns/disk',
    {
      schema: {
        tags: ['luns'],
        summary: 'Create a disk target: clone a master or make a blank sparse disk',
        security: secured,
        body: CreateDiskBody,
        response: { 200: DiskCreated, ...agentErrors },
      },
    },
    async (req) => luns.createDisk(req.body),
  );

  app.post(
    '/luns/cd',
    {
      schema: { tags: ['luns'], summary: 'Create a read-only CD target from an ISO in DISK_DIR', security: secured, body: CreateCdBody, response: { 200: CdCreated, ...agentErrors } },
    },
    async (req) => luns.createCd(req.body),
  );

  app.delete(
    '/luns',
    {
      schema: {
        tags: ['luns'],
        summary: 'Delete a target, optionally with its backing file (never a master)',
        security: secured,
        querystring: DeleteLunQuery,
        response: { 200: LunDeleted, ...agentErrors },
      },
    },
    async (req) => luns.delete({ iqn: req.query.iqn, deleteFile: req.query.delete_file === true, ignoreMissing: req.query.ignore_missing === true }),
  );

  app.post(
    '/luns/scan',
    {
      schema: {
        tags: ['luns'],
        summary: 'Rebuild missing targets from the image files in DISK_DIR',
        description: 'A target recorded with a CHAP user is rebuilt only when the body carries that credential (the agent keeps no secret).',
        security: secured,
        body: ScanBody,
        response: { 200: ScanResult, 500: AgentDetail },
      },
    },
    async (req) => luns.scan({ chap: req.body?.chap }),
  );

  app.get(
    '/masters',
    { schema: { tags: ['masters'], summary: 'Master images (files with _tpl_ in DISK_DIR), rescanned every 30 s', security: secured, response: { 200: MasterList } } },
    async () => ({ masters: await masters.list() }),
  );
};
