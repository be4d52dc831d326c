/**
 * The TypeBox helpers every API's schemas share (issue 19: they were written three times).
 * Imports TypeBox and core's text rule (`schema/text.ts`, which imports nothing) and nothing
 * else, so an API's schema module that a client (the console) imports stays free of server code. Each nullable helper renders `null` its own way, and each
 * API keeps the rendering its seed's document and validation errors were built on:
 * - {@link OrNull}: a JSON Schema type list, `type: ['string', 'null']` (metal, seed 004);
 * - {@link Nullable}: `anyOf: [T, {type: 'null'}]`, `nullable: true` in OpenAPI 3.0 (kind's and the
 *   cluster manager's answers);
 * - {@link NullableInput}: OpenAPI 3.0's own `nullable: true` keyword, which Ajv reads natively, so a
 *   wrong value gets one error (`must be integer`), not one per `anyOf` member (kind's requests).
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/** `T` or `null` as a JSON Schema type list (`type: ['string', 'null']`). `T` must have one `type`. */
export const OrNull = <T extends TSchema>(schema: T) => {
  const json = JSON.parse(JSON.stringify(schema)) as { type: string };
  return Type.Unsafe<Static<T> | null>({ ...json, type: [json.type, 'null'] });
};

/** `T` or `null` as `anyOf` (rendered `nullable: true` in the OpenAPI 3.0 document). */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `T` or `null` for request schemas, in OpenAPI 3.0's `nullable: true` keyword. */
export const NullableInput = <T extends TSchema>(schema: T) => Type.Unsafe<Static<T> | null>({ ...JSON.parse(JSON.stringify(schema)), nullable: true });

/** A string restricted to `values` as a plain JSON Schema `enum` (not TypeBox's `anyOf` of literals). */
export const StringEnum = <const T extends readonly string[]>(values: T, options: { default?: T[number]; description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

/** An object whose keys are not described (`{type: 'object', additionalProperties: true}`). */
export const AnyObject = () => Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });

/** Text with no control or bidirectional formatting character (core's one definition, `schema/text.ts`): a schema `pattern`. */
export { SAFE_TEXT_PATTERN } from './text';
