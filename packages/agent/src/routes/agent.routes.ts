import { AppError, Authenticator, declareRoutePermissions, installAccessControl, installErrorHandling, renderDetail } from '@ironlens/core';
import type { FastifyPluginAsync } from 'fastify';
import type { LunService } from '../services/lun.service';
import type { MasterCatalog } from '../services/master.service';

export interface AgentRoutesOptions {
  luns: LunService;
  masters: MasterCatalog;
  /** Bearer token; when empty, auth is off. `/healthz` is always open. */
  token: string | undefined;
}

const detail = { type: 'object', properties: { detail: {} } } as const;
const errors = { 400: detail, 401: detail, 404: detail, 409: detail, 500: detail } as const;
const lunTarget = {
  type: 'object',
  properties: {
    iqn: { type: 'string' },
    tid: { type: 'integer', description: 'stgt target id (absent on lio)' },
    luns: { type: 'array', items: { type: 'object', properties: { backing: { type: 'string' } } } },
    acl: {
      type: 'array',
      items: { type: 'string' },
      description: 'who may log in: ["ALL"] (every initiator), or initiator names (IQNs); stgt also lists address rules added by hand; [] nobody',
    },
    accounts: { type: 'array', items: { type: 'string' }, description: 'CHAP users a login must prove (stgt); absent without CHAP, and on lio' },
  },
} as const;
const initiatorField = {
  type: 'string',
  description: 'the only initiator name (IQN, lowercase) the target admits; leave it out for a target open to every initiator',
} as const;
const chapField = {
  type: 'object',
  required: ['user', 'password'],
  properties: {
    user: { type: 'string', description: 'CHAP user name: lowercase letters, digits, ".", "_", ":", "-"' },
    password: { type: 'string', description: 'CHAP secret: 12-16 letters and digits; never answered, logged or written to a file by the agent' },
  },
  description: 'the CHAP account the initiator must log in with (needs initiator)',
} as const;
const chapUserField = { type: 'string', description: 'present when a login must prove this CHAP user' } as const;
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
export const agentRoutes: FastifyPluginAsync<AgentRoutesOptions> = async (app, opts) => {
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

  app.get('/healthz', { schema: { tags: ['agent'], summary: 'Liveness (no auth)', response: { 200: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } } } }, async () => ({ status: 'ok' }));

  app.get(
    '/capabilities',
    {
      schema: {
        tags: ['agent'],
        summary: 'Backend, file system and roles of this agent',
        security: secured,
        response: {
          200: {
            type: 'object',
            properties: {
              backend: { type: 'string', enum: ['stgt', 'lio'] },
              fs_type: { type: 'string' },
              cd: { type: 'boolean' },
              persistent: { type: 'string' },
              base_iqn: { type: 'string' },
              clone: { type: 'string' },
              empty_disk: { type: 'string' },
            },
          },
        },
      },
    },
    async () => luns.capabilities(),
  );

  app.get(
    '/luns',
    { schema: { tags: ['luns'], summary: 'Targets and their LUNs', security: secured, response: { 200: { type: 'array', items: lunTarget }, 500: detail } } },
    async () => luns.list(),
  );

  app.post<{ Body: { iqn: string; filename?: string; master?: string; size?: string | number; initiator?: string; chap?: { user: string; password: string } } }>(
    '/luns/disk',
    {
      schema: {
        tags: ['luns'],
        summary: 'Create a disk target: clone a master or make a blank sparse disk',
        security: secured,
        body: {
          type: 'object',
          required: ['iqn'],
          properties: {
            iqn: { type: 'string', description: 'must start with base_iqn + ":"' },
            filename: { type: 'string', description: 'backing file in DISK_DIR; default <iqn suffix>.img' },
            master: { type: 'string', description: 'master image in DISK_DIR (exactly one of master, size)' },
            size: { anyOf: [{ type: 'string' }, { type: 'integer' }], description: 'blank disk size: bytes or 40G, 512M, 1T, 100K' },
            initiator: initiatorField,
            chap: chapField,
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              iqn: { type: 'string' },
              backing: { type: 'string' },
              filename: { type: 'string' },
              clone: { type: 'string', enum: ['reflink', 'copy'], nullable: true },
              size: { type: 'integer' },
              initiator: { type: 'string', description: 'present when the target admits only this initiator' },
              chap_user: chapUserField,
            },
          },
          ...errors,
        },
      },
    },
    async (req) => luns.createDisk(req.body),
  );

  app.post<{ Body: { iso: string; iqn?: string; initiator?: string; chap?: { user: string; password: string } } }>(
    '/luns/cd',
    {
      schema: {
        tags: ['luns'],
        summary: 'Create a read-only CD target from an ISO in DISK_DIR',
        security: secured,
        body: {
          type: 'object',
          required: ['iso'],
          properties: {
            iso: { type: 'string', description: 'ISO file name in DISK_DIR' },
            iqn: { type: 'string', description: 'default base_iqn:<iso name lowercased>' },
            initiator: initiatorField,
            chap: chapField,
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              iqn: { type: 'string' },
              backing: { type: 'string' },
              filename: { type: 'string' },
              initiator: { type: 'string', description: 'present when the target admits only this initiator' },
              chap_user: chapUserField,
            },
          },
          ...errors,
        },
      },
    },
    async (req) => luns.createCd(req.body),
  );

  app.delete<{ Querystring: { iqn: string; delete_file?: boolean; ignore_missing?: boolean } }>(
    '/luns',
    {
      schema: {
        tags: ['luns'],
        summary: 'Delete a target, optionally with its backing file (never a master)',
        security: secured,
        querystring: {
          type: 'object',
          required: ['iqn'],
          properties: {
            iqn: { type: 'string' },
            delete_file: { type: 'boolean', default: false },
            ignore_missing: { type: 'boolean', default: false },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              deleted: { type: 'string' },
              delete_file: { type: 'boolean' },
              file_deleted: { type: 'boolean' },
              ignored_missing: { type: 'boolean' },
            },
          },
          ...errors,
        },
      },
    },
    async (req) => luns.delete({ iqn: req.query.iqn, deleteFile: req.query.delete_file === true, ignoreMissing: req.query.ignore_missing === true }),
  );

  app.post<{ Body: { chap?: { user: string; password: string }[] } | undefined }>(
    '/luns/scan',
    {
      schema: {
        tags: ['luns'],
        summary: 'Rebuild missing targets from the image files in DISK_DIR',
        description: 'A target recorded with a CHAP user is rebuilt only when the body carries that credential (the agent keeps no secret).',
        security: secured,
        body: { type: 'object', nullable: true, properties: { chap: { type: 'array', items: chapField } } },
        response: {
          200: {
            type: 'object',
            properties: {
              created: { type: 'array', items: { type: 'object', properties: { iqn: { type: 'string' }, cd: { type: 'boolean' }, filename: { type: 'string' } } } },
              skipped: {
                type: 'array',
                items: { type: 'object', properties: { iqn: { type: 'string', nullable: true }, filename: { type: 'string' }, reason: { type: 'string' } } },
              },
            },
          },
          500: detail,
        },
      },
    },
    async (req) => luns.scan({ chap: req.body?.chap }),
  );

  app.get(
    '/masters',
    {
      schema: {
        tags: ['masters'],
        summary: 'Master images (files with _tpl_ in DISK_DIR), rescanned every 30 s',
        security: secured,
        response: {
          200: {
            type: 'object',
            properties: {
              masters: {
                type: 'array',
                items: { type: 'object', properties: { name: { type: 'string' }, size: { type: 'integer' }, mtime: { type: 'integer' } } },
              },
            },
          },
        },
      },
    },
    async () => ({ masters: await masters.list() }),
  );
};
