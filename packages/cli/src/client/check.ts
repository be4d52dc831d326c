/**
 * Checks an answer against its route's schema, the one an API package exports
 * (`@ironlens/metal/api`, `@ironlens/clusters/api`) and the route declares, with TypeBox's
 * `Value.Check`. The API packages build part of their schemas as plain JSON Schema (`OrNull`,
 * `StringEnum`, `Type.Unsafe`: a `type` list, an `enum`, and below them objects that lost
 * TypeBox's kind markers), which `Value.Check` cannot read; so each schema is first rebuilt, once,
 * from its JSON into TypeBox types of the same meaning. A keyword the rebuild does not know (one
 * that would constrain the answer) throws instead of being skipped, so a check never passes by
 * ignoring part of a schema.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

type Json = Record<string, unknown>;

/** Keywords that constrain a value, carried over to the TypeBox type as they are. */
const CONSTRAINTS = ['minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties'];
/** Keywords the rebuild reads itself. */
const STRUCTURE = ['type', 'const', 'enum', 'anyOf', 'oneOf', 'items', 'properties', 'required', 'additionalProperties', 'patternProperties', 'nullable'];
/**
 * Keywords that describe and do not constrain. `format` is one here: the server never validates
 * an answer's formats (it serializes them), and TypeBox refuses any format it has no checker for.
 */
const ANNOTATIONS = ['description', 'title', 'default', 'examples', 'format', 'deprecated', 'readOnly', 'writeOnly', '$id', '$schema'];
const KNOWN = new Set([...CONSTRAINTS, ...STRUCTURE, ...ANNOTATIONS]);

function constraints(s: Json): Json {
  const out: Json = {};
  for (const k of CONSTRAINTS) if (k in s) out[k] = s[k];
  return out;
}

function literal(v: unknown): TSchema {
  if (v === null) return Type.Null();
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return Type.Literal(v);
  throw new Error(`cannot check an enum or const value of type ${typeof v}`);
}

/** The TypeBox type of one JSON Schema node. */
function rebuild(s: Json, where: string): TSchema {
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw new Error(`cannot check the schema keyword ${JSON.stringify(k)} at ${where || 'the root'}`);
  const t = ((): TSchema => {
    if ('const' in s) return literal(s.const);
    if (Array.isArray(s.enum)) return Type.Union(s.enum.map(literal));
    const any = (s.anyOf ?? s.oneOf) as Json[] | undefined;
    if (Array.isArray(any)) return Type.Union(any.map((a, i) => rebuild(a, `${where}|${i}`)));
    if (Array.isArray(s.type)) return Type.Union(s.type.map((type) => rebuild({ ...s, type, nullable: undefined }, where)));
    const c = constraints(s);
    switch (s.type) {
      case 'string':
        return Type.String(c);
      case 'integer':
        return Type.Integer(c);
      case 'number':
        return Type.Number(c);
      case 'boolean':
        return Type.Boolean();
      case 'null':
        return Type.Null();
      case 'array':
        return Type.Array(s.items ? rebuild(s.items as Json, `${where}[]`) : Type.Unknown(), c);
      case 'object':
        return object(s, where, c);
      case undefined:
        return Type.Unknown();
      default:
        throw new Error(`cannot check the type ${JSON.stringify(s.type)} at ${where || 'the root'}`);
    }
  })();
  return s.nullable === true ? Type.Union([t, Type.Null()]) : t;
}

function object(s: Json, where: string, c: Json): TSchema {
  const required = new Set((s.required as string[] | undefined) ?? []);
  const props: Record<string, TSchema> = {};
  for (const [k, v] of Object.entries((s.properties as Record<string, Json> | undefined) ?? {})) {
    const t = rebuild(v, `${where}.${k}`);
    props[k] = required.has(k) ? t : Type.Optional(t);
  }
  // A required key the schema does not describe: present, any value.
  for (const k of required) props[k] ??= Type.Unknown();
  const extra = s.additionalProperties;
  const additionalProperties = extra === false ? false : extra && typeof extra === 'object' ? rebuild(extra as Json, `${where}{}`) : undefined;
  const patterns = Object.entries((s.patternProperties as Record<string, Json> | undefined) ?? {});
  if (patterns.length > 0) {
    if (patterns.length > 1 || Object.keys(props).length > 0) throw new Error(`cannot check an object with properties and patternProperties at ${where || 'the root'}`);
    const [pattern, value] = patterns[0];
    const inner = rebuild(value, `${where}{}`);
    // TypeBox's Record checks its one patternProperties entry, whatever the pattern.
    return { ...Type.Record(Type.String(), inner, c), patternProperties: { [pattern]: inner }, ...(additionalProperties !== undefined ? { additionalProperties } : {}) };
  }
  return Type.Object(props, { ...c, ...(additionalProperties !== undefined ? { additionalProperties } : {}) });
}

const rebuilt = new WeakMap<object, TSchema>();

/** The schema as TypeBox checks it (rebuilt once per schema). */
export function checkable(schema: TSchema): TSchema {
  let t = rebuilt.get(schema);
  if (!t) {
    t = rebuild(JSON.parse(JSON.stringify(schema)) as Json, '');
    rebuilt.set(schema, t);
  }
  return t;
}

/** Why `value` does not match `schema` (the first mismatch: its JSON pointer and what was expected), or `undefined` when it does. */
export function mismatch(schema: TSchema, value: unknown): string | undefined {
  const t = checkable(schema);
  if (Value.Check(t, value)) return undefined;
  const first = Value.Errors(t, value).First();
  return first ? `${first.path || '/'}: ${first.message}` : 'does not match';
}
