import type { FastifyInstance } from 'fastify';
import type { OperationsLog } from '../audit/operations';
import { AppError } from '../errors';
import { installErrorHandling, renderDetail } from './app';
import { ANONYMOUS, type NamedTokens } from '../auth/access';
import { permissionsOf, ROLES } from '../auth/permissions';

export interface AuthRoutesOptions {
  tokens: NamedTokens;
  /** Records `auth.token.create` / `auth.token.revoke` (never the token). Default: not recorded. */
  operations?: OperationsLog;
}

const detail = { type: 'object', properties: { detail: { type: 'string' } }, additionalProperties: true } as const;
const tokenInfo = {
  type: 'object',
  required: ['name', 'role', 'created_at', 'expires_at', 'last_used_at', 'revoked_at'],
  properties: {
    name: { type: 'string' },
    role: { type: 'string', enum: [...ROLES] },
    created_at: { type: 'string' },
    expires_at: { type: 'string', nullable: true },
    last_used_at: { type: 'string', nullable: true },
    revoked_at: { type: 'string', nullable: true },
  },
} as const;
const tags = ['auth'];
const security = [{ bearer: [] }];

/**
 * The access API (issue 20), in seed 004's `{"detail"}` shape, served under `/api/auth` on both
 * listeners of `ironlens serve`: `GET /whoami` (any token), and for admins `GET /tokens` (no
 * secrets, with `last_used_at`), `POST /tokens` (the token, once), `DELETE /tokens/{name}`.
 */
export async function authRoutes(app: FastifyInstance, opts: AuthRoutesOptions): Promise<void> {
  try {
    installErrorHandling(app, renderDetail);
  } catch {
    // A not-found handler for this prefix exists already; the error handler is set regardless.
  }
  const { tokens } = opts;

  app.get(
    '/whoami',
    {
      config: { permission: 'auth:whoami:read' },
      schema: {
        tags,
        security,
        summary: 'Who this token is: name, role and the permissions it holds',
        response: {
          200: {
            type: 'object',
            required: ['name', 'role', 'permissions'],
            properties: { name: { type: 'string' }, role: { type: 'string' }, permissions: { type: 'array', items: { type: 'string' } } },
          },
          401: detail,
        },
      },
    },
    async (req) => {
      const p = req.principal ?? ANONYMOUS;
      return { name: p.name, role: p.role, permissions: permissionsOf(p.role) };
    },
  );

  app.get(
    '/tokens',
    {
      config: { permission: 'auth:token:admin' },
      schema: { tags, security, summary: 'Named tokens, without their secrets', response: { 200: { type: 'object', properties: { tokens: { type: 'array', items: tokenInfo } } }, 401: detail, 403: detail } },
    },
    async () => ({ tokens: await tokens.list() }),
  );

  app.post<{ Body: { name: string; role: string; expires?: string } }>(
    '/tokens',
    {
      config: { permission: 'auth:token:admin' },
      schema: {
        tags,
        security,
        summary: 'Create a named token; the answer holds the token, this once',
        body: {
          type: 'object',
          required: ['name', 'role'],
          additionalProperties: false,
          properties: { name: { type: 'string', maxLength: 64 }, role: { type: 'string', enum: [...ROLES] }, expires: { type: 'string', maxLength: 16, description: '10s, 5m, 12h, 30d' } },
        },
        response: { 201: { ...tokenInfo, required: [...tokenInfo.required, 'token'], properties: { ...tokenInfo.properties, token: { type: 'string' } } }, 400: detail, 401: detail, 403: detail, 409: detail },
      },
    },
    async (req, reply) => {
      const created = await tokens.repo.create(req.body);
      tokens.invalidate();
      await opts.operations?.append({ op: 'auth.token.create', name: created.name, role: created.role, expires_at: created.expires_at, client: req.ip });
      reply.header('cache-control', 'no-store');
      return reply.status(201).send(created);
    },
  );

  app.delete<{ Params: { name: string } }>(
    '/tokens/:name',
    {
      config: { permission: 'auth:token:admin' },
      schema: {
        tags,
        security,
        summary: 'Revoke a named token (every replica refuses it within a second)',
        params: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 64 } } },
        response: { 200: { type: 'object', properties: { revoked: { type: 'string' } } }, 401: detail, 403: detail, 404: detail },
      },
    },
    async (req) => {
      if (!(await tokens.repo.revoke(req.params.name))) throw new AppError('token_not_found', `no token named ${req.params.name}`);
      tokens.invalidate();
      await opts.operations?.append({ op: 'auth.token.revoke', name: req.params.name, client: req.ip });
      return { revoked: req.params.name };
    },
  );
}
