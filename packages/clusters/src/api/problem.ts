import { type Static, type TObject, Type } from '@sinclair/typebox';
import { PlacementRow } from './deployments';

/** One schema violation of a 422 `validation_failed` (FastAPI's `detail` item shape). */
export const ValidationItem = Type.Object({ type: Type.String(), loc: Type.Array(Type.String()), msg: Type.String() });

/**
 * Seed 000's error body, `application/problem+json` (RFC 9457): `type`, `title`, `status`,
 * `detail` and the catalog `code`; `errors` on a 422 `validation_failed`; `permission`, `actor`
 * and `role` on a 403 `permission_denied` (issue 20). Every error a route of the cluster manager
 * answers (the bootstrap's and the gateway's included) is serialized through this schema, so a
 * field the renderer adds must be listed here or it is dropped.
 */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'the stable key (docs/errors.md)' }),
    errors: Type.Optional(Type.Array(ValidationItem)),
    permission: Type.Optional(Type.String()),
    actor: Type.Optional(Type.String()),
    role: Type.Optional(Type.String()),
    free: Type.Optional(Type.Array(PlacementRow, { description: '422 insufficient_accelerators: what is free where (issue 28)' })),
  },
  { description: 'application/problem+json' },
);
export type Problem = Static<typeof Problem>;

/** The error statuses a route answers, each with the problem+json body (`response` of a route schema). */
export function problems<const S extends readonly number[]>(...statuses: S): { [K in S[number]]: TObject<(typeof Problem)['properties']> } {
  return Object.fromEntries(statuses.map((s) => [s, Problem])) as never;
}

/** What any route of the console listener can answer: no or a wrong token, a role without the permission, too many failed logins, a schema violation, a defect. */
export const COMMON_ERRORS = [401, 403, 422, 429, 500] as const;
/** What a route that reads or writes a registered cluster adds: no such cluster, the API server failed or timed out. */
export const CLUSTER_ERRORS = [...COMMON_ERRORS, 404, 502, 504] as const;

/** `204`: no body. */
export const NoContent = Type.Null({ description: 'No content' });
