/** The answer checker: what each JSON Schema form of the API packages accepts and refuses, and that it never skips a keyword. */
import { Nullable, OrNull, StringEnum } from '@ironlens/core/typebox';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { CALLS } from './api';
import { checkable, mismatch } from './check';

describe('mismatch', () => {
  it('reads the plain JSON Schema forms of the API packages (type lists, enums with null, records) as they mean', () => {
    const s = Type.Object({
      uuid: OrNull(Type.String({ maxLength: 4 })),
      state: StringEnum(['pooled', 'bound'] as const),
      boot: Type.Unsafe<'network' | null>({ type: ['string', 'null'], enum: ['network', null] }),
      by: Type.Record(Type.String(), Type.Integer()),
      inner: OrNull(Type.Object({ n: Type.Integer({ minimum: 0 }) }, { additionalProperties: false })),
      error: Nullable(Type.String()),
      note: Type.Optional(Type.String()),
    });
    const ok = { uuid: null, state: 'bound', boot: null, by: { a: 1 }, inner: { n: 2 }, error: 'x' };
    expect(mismatch(s, ok)).toBeUndefined();
    expect(mismatch(s, { ...ok, uuid: 'abcd', boot: 'network', inner: null, error: null, note: 'n' })).toBeUndefined();
    expect(mismatch(s, { ...ok, uuid: 'abcde' })).toMatch(/^\/uuid: /);
    expect(mismatch(s, { ...ok, uuid: 5 })).toMatch(/^\/uuid: /);
    expect(mismatch(s, { ...ok, state: 'lost' })).toMatch(/^\/state: /);
    expect(mismatch(s, { ...ok, boot: 'disk' })).toMatch(/^\/boot: /);
    expect(mismatch(s, { ...ok, by: { a: 'one' } })).toMatch(/^\/by\/a: /);
    expect(mismatch(s, { ...ok, inner: { n: -1 } })).toMatch(/^\/inner/);
    expect(mismatch(s, { ...ok, inner: { n: 1, extra: true } })).toMatch(/^\/inner/);
    expect(mismatch(s, { ...ok, note: 7 })).toMatch(/^\/note: /);
    const { error: _, ...missing } = ok;
    expect(mismatch(s, missing)).toMatch(/^\/error: Expected required property/);
    expect(mismatch(Type.Array(s), 'no')).toMatch(/^\/: Expected array/);
  });

  it('reads OpenAPI 3.0’s nullable (NullableInput) as the type or null', () => {
    const s = Type.Unsafe({ type: 'integer', nullable: true, minimum: 1 });
    expect(mismatch(s, null)).toBeUndefined();
    expect(mismatch(s, 3)).toBeUndefined();
    expect(mismatch(s, 0)).toBeDefined();
    expect(mismatch(s, 'x')).toBeDefined();
  });

  it('a required key its schema does not describe must be there; any value goes', () => {
    const s = Type.Unsafe({ type: 'object', required: ['x'] });
    expect(mismatch(s, { x: null })).toBeUndefined();
    expect(mismatch(s, {})).toMatch(/^\/x: /);
  });

  it('throws on a keyword it cannot check, instead of passing what it would refuse', () => {
    expect(() => checkable(Type.Unsafe({ type: 'object', properties: { a: { type: 'string', not: { const: 'x' } } } }))).toThrow(/cannot check the schema keyword "not" at \.a/);
    expect(() => checkable(Type.Unsafe({ allOf: [{ type: 'string' }] }))).toThrow(/"allOf"/);
    expect(() => checkable(Type.Unsafe({ type: 'object', patternProperties: { '^a': {}, '^b': {} } }))).toThrow(/patternProperties/);
  });

  it('checks every answer schema the client uses', () => {
    for (const [name, c] of Object.entries(CALLS)) expect(() => checkable(c.answer), name).not.toThrow();
  });
});
