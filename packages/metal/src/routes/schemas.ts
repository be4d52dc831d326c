/**
 * Schemas shared by the metal routes, in TypeBox: each gives the route's validation, the answer's
 * serialization and its part of the OpenAPI document, and (`Static<>`) its TypeScript type.
 *
 * The JSON they produce is the JSON Schema these routes have always had (`type: ['string',
 * 'null']` for a nullable value, no `required` in answers), so the validation errors, the answers
 * and the document stay as seed 004 clients know them. This module imports TypeBox and nothing
 * else. Property order is the answer's key order.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/** `T` or `null` as a JSON Schema type list (`type: ['string', 'null']`). */
const OrNull = <T extends TSchema>(schema: T) => {
  const json = JSON.parse(JSON.stringify(schema)) as { type: string };
  return Type.Unsafe<Static<T> | null>({ ...json, type: [json.type, 'null'] });
};

/** An object whose keys are not described (`{type: 'object', additionalProperties: true}`). */
const AnyObject = () => Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });

export const nullableString = OrNull(Type.String());

/** A worker's boot settings (`menu.ipxe`). */
export const bootSchema = OrNull(
  Type.Object({
    menu_default: Type.Optional(OrNull(Type.String({ description: 'menu.ipxe item id' }))),
    menu_timeout: Type.Optional(OrNull(Type.Integer({ description: 'milliseconds; 0 waits forever' }))),
  }),
);
export type BootSettings = Static<typeof bootSchema>;

export const diskSchema = Type.Object({
  agent: Type.Optional(Type.String()),
  iqn: Type.Optional(Type.String()),
  filename: Type.Optional(Type.String()),
  backing: Type.Optional(Type.String()),
  os: Type.Optional(Type.String()),
  source: Type.Optional(AnyObject()),
});
export type DiskView = Static<typeof diskSchema>;

const StringEnum = <const T extends readonly string[]>(values: T) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values] });

export const workerSchema = Type.Object({
  hostname: Type.Optional(Type.String()),
  arch: Type.Optional(Type.String()),
  state: Type.Optional(StringEnum(['registered', 'ready', 'installing'] as const)),
  disks: Type.Optional(Type.Array(diskSchema)),
  cd: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], additionalProperties: true })),
  worker_id: Type.Optional(Type.String()),
  mac: Type.Optional(OrNull(Type.String())),
  bound_device: Type.Optional(OrNull(Type.String())),
  readiness: Type.Optional(StringEnum(['ready', 'partial', 'idle'] as const)),
  default_os: Type.Optional(Type.String()),
  boot: Type.Optional(AnyObject()),
  changed: Type.Optional(Type.Boolean()),
});
export type WorkerView = Static<typeof workerSchema>;

export const deviceSchema = Type.Object({
  mac: Type.Optional(Type.String()),
  uuid: Type.Optional(OrNull(Type.String())),
  state: Type.Optional(StringEnum(['pooled', 'bound', 'revoked'] as const)),
  bound_worker_id: Type.Optional(OrNull(Type.String())),
  key_hash: Type.Optional(OrNull(Type.String())),
  source: Type.Optional(StringEnum(['ipxe', 'manual'] as const)),
  fingerprint: Type.Optional(AnyObject()),
  first_seen: Type.Optional(OrNull(Type.String())),
  last_seen: Type.Optional(OrNull(Type.String())),
});
export type DeviceView = Static<typeof deviceSchema>;

/** FastAPI's error shape, `{"detail": ...}` (an agent's error passes through as `{"agent", "error"}`). */
export const detailSchema = Type.Object({ detail: Type.Optional(Type.Unknown()) }, { additionalProperties: true });
export type DetailError = Static<typeof detailSchema>;

export const errorResponses = {
  400: detailSchema,
  401: detailSchema,
  404: detailSchema,
  409: detailSchema,
  422: detailSchema,
  500: detailSchema,
} as const;

export const security = [{ bearer: [] }];
