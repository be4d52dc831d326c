/**
 * Every route of every listener declares its answer (issue 19): the OpenAPI documents of the
 * provisioning listener (metal), the console listener (the kind panel, the cluster manager, the
 * bootstrap) and the storage agent are read route by route, and a route whose 2xx answer has no
 * schema fails the test, unless it is in `NOT_YET` below. `NOT_YET` is the list of routes still
 * without one: it may only shrink (a listed route that has a schema now fails the test too, so
 * the list stays true).
 *
 * The console listener's answers (the cluster manager, the bootstrap, the kind panel, the access
 * routes) are described field by field (issue 19): a part of a 2xx schema of one of its routes
 * that is open (any JSON, or an object without properties) fails the test, unless
 * `CONSOLE_OPEN_BY_DESIGN` names it with its reason.
 *
 * The provisioning listener's and the storage agent's answers are exact (issue 19): fastify
 * serializes with fast-json-stringify, which drops every field a schema does not list, so an
 * open "any object" in a 2xx answer hides what the route really answers. Such an object fails
 * the test, unless it is in `OPEN_BY_DESIGN` with the reason.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildAgentApp } from '@ironlens/agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from './serve';

type Doc = { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>> };

/** Routes without a declared 2xx answer schema, by document. Shrink it; never grow it. */
const NOT_YET: Record<string, string[]> = {
  metal: [],
  console: [],
  agent: [],
};

/** The cluster manager's routes in the console listener's document. */
const CLUSTER_ROUTES = /^\/api\/(cluster\/|cluster-overview\/|v1\/versions$|v1\/model-service\/|v1\/internal\/model-gateway\/)/;

const GATEWAY_OPEN = {
  '.members[]': 'Lens’ member list, answered empty: its items have no shape of ironlens’ own',
  '.lastOperation.detailJson{}': 'Lens’ free-form operation detail',
};
/** The open parts of the console listener's answers, by route and JSON path, each with its reason. */
const CONSOLE_OPEN_BY_DESIGN: Record<string, Record<string, string>> = {
  'GET /api/cluster/sessions/{session_id}/planning-discovery/{resource}': { '.result': 'the allow-listed Kubernetes read (VersionInfo or a …List), passed through as the cluster answered it' },
  'GET /api/cluster/clusters/{cluster_id}/gateway/status': GATEWAY_OPEN,
  'GET /api/v1/model-service/admin/gateway/status': Object.fromEntries(Object.entries(GATEWAY_OPEN).map(([k, v]) => [`.clusters[]${k}`, v])),
  'GET /api/cluster/overview': Object.fromEntries(Object.entries(GATEWAY_OPEN).map(([k, v]) => [`.gateway${k}`, v])),
  'POST /api/cluster/clusters/{cluster_id}/gateway/reconcile': { '.job.result': 'what a job returned: each job kind returns its own' },
  'GET /api/cluster/clusters/{cluster_id}/gateway/jobs/{job_id}': { '.job.result': 'what a job returned: each job kind returns its own' },
  'GET /kind/api/v1/jobs': { '[].result': 'what a kind job returned: each job kind returns its own' },
  'GET /kind/api/v1/jobs/{job_id}': { '.result': 'what a kind job returned: each job kind returns its own' },
  'POST /api/cluster/clusters/{cluster_id}/gateway/jobs/{job_id}/cancel': { '.job.result': 'what a job returned: each job kind returns its own' },
};

type Schema = Record<string, unknown>;
/** The JSON paths of the open parts of a schema: any JSON (`{}`), or an object with no properties. */
function openParts(s: unknown, path: string, out: string[]): string[] {
  if (!s || typeof s !== 'object') return out;
  const schema = s as Schema;
  for (const k of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(schema[k])) for (const x of schema[k] as unknown[]) openParts(x, path, out);
  if (['anyOf', 'oneOf', 'allOf', 'enum', 'const'].some((k) => k in schema)) return out;
  const types = ([] as unknown[]).concat(schema.type ?? []);
  if (types.length === 0) out.push(path);
  if (types.includes('object')) {
    const props = (schema.properties ?? {}) as Record<string, unknown>;
    const patterns = (schema.patternProperties ?? {}) as Record<string, unknown>;
    if (Object.keys(props).length === 0 && Object.keys(patterns).length === 0 && typeof schema.additionalProperties !== 'object') out.push(path);
    for (const [k, v] of Object.entries(props)) openParts(v, `${path}.${k}`, out);
    for (const v of Object.values(patterns)) openParts(v, `${path}{}`, out);
    if (typeof schema.additionalProperties === 'object') openParts(schema.additionalProperties, `${path}{}`, out);
  }
  if (types.includes('array')) openParts(schema.items ?? {}, `${path}[]`, out);
  return [...new Set(out)];
}

/** `METHOD /path <json path>` of every open part of a route's 2xx answers. */
function openConsoleAnswers(doc: Doc): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      for (const [code, r] of Object.entries(op.responses ?? {})) {
        if (!/^2\d\d$/.test(code) || code === '204') continue;
        for (const c of Object.values(r.content ?? {})) for (const p of openParts(c.schema, '', [])) out.push(`${method.toUpperCase()} ${path} ${p || '(the whole answer)'}`);
      }
    }
  }
  return [...new Set(out)].sort();
}

/**
 * The open objects a metal or agent 2xx answer may hold, by `METHOD path status` and the JSON
 * pointer of the object in the answer's schema, with why it is open.
 */
const OPEN_BY_DESIGN: Record<string, string> = {
  'GET /operations 200 /properties/entries/items': "an operation's fields are its kind's own (op, mac, worker_id, counts, client, …): the log records each kind as it is",
};

type Json = { [k: string]: unknown };

/** JSON pointers of the open objects in a schema: `additionalProperties: true`, or an object (or a schema with no type) that names no property. */
function openObjects(schema: unknown, at = ''): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Json;
  const out: string[] = [];
  const keys = Object.keys(s).filter((k) => k !== 'description' && k !== 'title' && k !== 'default');
  const typed = s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'));
  if (s.additionalProperties === true) out.push(at);
  else if (typed && !s.properties && !s.additionalProperties && !s.patternProperties) out.push(at);
  else if (at === '' && keys.length === 0) out.push(at);
  for (const [k, v] of Object.entries(s)) {
    if (k === 'properties' && v && typeof v === 'object') for (const [name, p] of Object.entries(v as Json)) out.push(...openObjects(p, `${at}/properties/${name}`));
    else if (k === 'items' || k === 'additionalProperties') out.push(...openObjects(v, `${at}/${k}`));
    else if ((k === 'anyOf' || k === 'oneOf' || k === 'allOf') && Array.isArray(v)) for (const [i, x] of v.entries()) out.push(...openObjects(x, `${at}/${k}/${i}`));
  }
  return out;
}

/** Every open object of every 2xx JSON answer of a document, as `METHOD path status pointer`. */
function openAnswers(doc: Doc): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [code, r] of Object.entries(op.responses ?? {})) {
        if (!/^2\d\d$/.test(code)) continue;
        const schema = r.content?.['application/json']?.schema;
        if (schema === undefined) continue;
        for (const at of openObjects(schema)) out.push(`${method.toUpperCase()} ${path} ${code} ${at || '/'}`.replace(/ \/$/, ' /'));
      }
    }
  }
  return out.sort();
}

function withoutAnswer(doc: Doc): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const ok = Object.entries(op.responses ?? {}).some(([code, r]) => code === '204' || (/^2\d\d$/.test(code) && Object.values(r.content ?? {}).some((c) => c.schema !== undefined)));
      if (!ok) out.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return out.sort();
}

let dir: string;
let running: Running;
const docs: Record<string, Doc> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `ironlens-openapi-${process.pid}-`));
  running = await serve({ IRONLENS_DATA_DIR: join(dir, 'data'), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IPXE_CP_DNSMASQ_RELOAD: 'false' }, () => {});
  docs.metal = (await (await fetch(`${running.urls.boot}/openapi.json`)).json()) as Doc;
  docs.console = (await (await fetch(`${running.urls.console}/openapi.json`)).json()) as Doc;
  mkdirSync(join(dir, 'disks'));
  const agent = await buildAgentApp({ diskDir: join(dir, 'disks'), baseIqn: 'iqn.2026-07.com.controller', cd: true, targets: {} as never });
  await agent.ready();
  docs.agent = agent.swagger() as unknown as Doc;
  await agent.close();
}, 60_000);
afterAll(async () => {
  await running?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('OpenAPI: every route declares its answer', () => {
  for (const name of ['metal', 'console', 'agent']) {
    it(`${name}: no route without a 2xx answer schema (but those still listed in NOT_YET)`, () => {
      const missing = withoutAnswer(docs[name]);
      expect(Object.keys(docs[name].paths).length).toBeGreaterThan(3);
      expect(missing.filter((r) => !NOT_YET[name].includes(r)), 'routes without an answer schema').toEqual([]);
      expect(NOT_YET[name].filter((r) => !missing.includes(r)), 'listed in NOT_YET but declared now: remove them from the list').toEqual([]);
    });
  }

  it('console: every answer (cluster manager, bootstrap, kind panel, access) is described field by field, but for the parts open by design', () => {
    const open = openConsoleAnswers(docs.console);
    const allowed = Object.entries(CONSOLE_OPEN_BY_DESIGN).flatMap(([route, parts]) => Object.keys(parts).map((p) => `${route} ${p}`));
    expect(Object.keys(docs.console.paths).filter((p) => CLUSTER_ROUTES.test(p)).length).toBeGreaterThan(25);
    expect(open.filter((o) => !allowed.includes(o)), 'open answers (describe them, or name them in CONSOLE_OPEN_BY_DESIGN with a reason)').toEqual([]);
    expect(allowed.filter((a) => !open.includes(a)), 'listed in CONSOLE_OPEN_BY_DESIGN but described now: remove them from the list').toEqual([]);
  });

  it('the check finds an open answer: `{}`, an object without properties, an open item or value', () => {
    expect(openParts({}, '', [])).toEqual(['']);
    expect(openParts({ type: 'object', additionalProperties: true }, '', [])).toEqual(['']);
    expect(openParts({ type: 'object', properties: { a: { type: 'array', items: {} }, b: { type: 'object', patternProperties: { '^(.*)$': {} } } } }, '', [])).toEqual(['.a[]', '.b{}']);
    expect(openParts({ type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'null' }] }, b: { type: 'object', patternProperties: { '^(.*)$': { type: 'integer' } } } } }, '', [])).toEqual([]);
  });
  for (const name of ['metal', 'agent']) {
    it(`${name}: no 2xx answer holds an open "any object" (but those allowed, with the reason, in OPEN_BY_DESIGN)`, () => {
      const open = openAnswers(docs[name]);
      expect(
        open.filter((o) => !(o in OPEN_BY_DESIGN)),
        'open objects in 2xx answers',
      ).toEqual([]);
    });
  }
  it('OPEN_BY_DESIGN names only open objects the documents still have', () => {
    const open = new Set([...openAnswers(docs.metal), ...openAnswers(docs.agent)]);
    expect(Object.keys(OPEN_BY_DESIGN).filter((o) => !open.has(o))).toEqual([]);
  });
  it('finds an open object wherever it is in an answer', () => {
    const doc = (schema: unknown): Doc => ({ paths: { '/x': { get: { responses: { '200': { content: { 'application/json': { schema } } } } } } } });
    expect(openAnswers(doc({ type: 'object', additionalProperties: true }))).toEqual(['GET /x 200 /']);
    expect(openAnswers(doc({}))).toEqual(['GET /x 200 /']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { type: 'array', items: { type: ['object', 'null'] } } } }))).toEqual(['GET /x 200 /properties/a/items']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { anyOf: [{ type: 'object', properties: {} , additionalProperties: true }, { type: 'null' }] } } }))).toEqual(['GET /x 200 /properties/a/anyOf/0']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { type: 'string' }, b: {} } }))).toEqual([]);
  });
});
