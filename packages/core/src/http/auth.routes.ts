import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { OperationsLog } from '../audit/operations';
import { ANONYMOUS, type NamedTokens } from '../auth/access';
import { permissionsOf, ROLES } from '../auth/permissions';
import { AppError } from '../errors';
import { NullableInput, StringEnum } from '../schema/typebox';
import { installErrorHandling, renderDetail } from './app';

export interface AuthRoutesOptions {
  tokens: NamedTokens;
  /** Records `auth.token.create` / `auth.token.revoke` (never the token). Default: not recorded. */
  operations?: OperationsLog;
}

// The access API's requests and answers (TypeBox: the validation, the serialization, the OpenAPI
// document and the handlers' types from one source).

/** Seed 004's error body. */
const Detail = Type.Object({ detail: Type.Optional(Type.String()) }, { additionalProperties: true });
/** A named token, never its secret. */
const TokenInfo = Type.Object({
  name: Type.String(),
  role: StringEnum(ROLES),
  created_at: Type.String(),
  expires_at: NullableInput(Type.String()),
  last_used_at: NullableInput(Type.String()),
  revoked_at: NullableInput(Type.String()),
});
/** A token just created: its info and the token, this once. */
const TokenCreated = Type.Object({ ...TokenInfo.properties, token: Type.String() });
const TokenList = Type.Object({ tokens: Type.Array(TokenInfo) });
const WhoAmI = Type.Object({ name: Type.String(), role: Type.String(), permissions: Type.Array(Type.String()) });
const TokenCreate = Type.Object(
  { name: Type.String({ maxLength: 64 }), role: StringEnum(ROLES), expires: Type.Optional(Type.String({ maxLength: 16, description: '10s, 5m, 12h, 30d' })) },
  { additionalProperties: false },
);
const TokenParams = Type.Object({ name: Type.String({ maxLength: 64 }) });
const Revoked = Type.Object({ revoked: Type.String() });

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
        response: { 200: WhoAmI, 401: Detail },
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
      schema: { tags, security, summary: 'Named tokens, without their secrets', response: { 200: TokenList, 401: Detail, 403: Detail } },
    },
    async () => ({ tokens: await tokens.list() }),
  );

  app.post<{ Body: Static<typeof TokenCreate> }>(
    '/tokens',
    {
      config: { permission: 'auth:token:admin' },
      schema: {
        tags,
        security,
        summary: 'Create a named token; the answer holds the token, this once',
        body: TokenCreate,
        response: { 201: TokenCreated, 400: Detail, 401: Detail, 403: Detail, 409: Detail },
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

  app.delete<{ Params: Static<typeof TokenParams> }>(
    '/tokens/:name',
    {
      config: { permission: 'auth:token:admin' },
      schema: {
        tags,
        security,
        summary: 'Revoke a named token (every replica refuses it within a second)',
        params: TokenParams,
        response: { 200: Revoked, 401: Detail, 403: Detail, 404: Detail },
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
