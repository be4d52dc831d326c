/**
 * Every route of every listener declares its answer (issue 19): the OpenAPI documents of the
 * provisioning listener (metal), the console listener (the kind panel, the cluster manager, the
 * bootstrap) and the storage agent are read route by route, and a route whose 2xx answer has no
 * schema fails the test, unless it is in `NOT_YET` below. `NOT_YET` is the list of routes still
 * without one: it may only shrink (a listed route that has a schema now fails the test too, so
 * the list stays true).
 *
 * Every 2xx answer of the three documents is described field by field (issue 19): fastify
 * serializes with fast-json-stringify, which writes only what a schema lists, so an open part
 * (any JSON, an object without properties, an object open to any further property) hides what
 * the route really answers. One checker (`openParts`) finds them, and an open part fails the
 * test unless `OPEN_BY_DESIGN` names it, by document, route and JSON path, with its reason; a
 * listed part that is described now fails it too (the list stays true).
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
const JOB_RESULT = 'what a job returned: each job kind returns its own';
const KIND_JOB_RESULT = 'what a kind job returned: each job kind returns its own';
const KIND_META = 'a cluster’s meta.json: the keys this version writes are listed, keys written by other versions are kept as they are';
const AS_GIVEN = 'the value the request gave for the item that failed, echoed as given (any JSON: that it is not a valid one is why it failed)';

/**
 * The open parts of 2xx answers, by document, route (`METHOD /path`) and JSON path in the
 * answer (`.field`, `[]` an item, `{}` a value of a map; `` the whole answer), each with why it
 * is open.
 */
const OPEN_BY_DESIGN: Record<string, Record<string, Record<string, string>>> = {
  console: {
    'GET /api/cluster/sessions/{session_id}/planning-discovery/{resource}': { '.result': 'the allow-listed Kubernetes read (VersionInfo or a …List), passed through as the cluster answered it' },
    'GET /api/cluster/clusters/{cluster_id}/gateway/status': GATEWAY_OPEN,
    'GET /api/v1/model-service/admin/gateway/status': Object.fromEntries(Object.entries(GATEWAY_OPEN).map(([k, v]) => [`.clusters[]${k}`, v])),
    'GET /api/cluster/overview': Object.fromEntries(Object.entries(GATEWAY_OPEN).map(([k, v]) => [`.gateway${k}`, v])),
    'POST /api/cluster/clusters/{cluster_id}/gateway/reconcile': { '.job.result': JOB_RESULT },
    'GET /api/cluster/clusters/{cluster_id}/gateway/jobs/{job_id}': { '.job.result': JOB_RESULT },
    'GET /kind/api/v1/clusters': { '[].meta': KIND_META },
    'GET /kind/api/v1/clusters/{name}': { '.meta': KIND_META },
    'GET /kind/api/v1/jobs': { '[].result': KIND_JOB_RESULT },
    'GET /kind/api/v1/jobs/{job_id}': { '.result': KIND_JOB_RESULT },
    'POST /api/cluster/clusters/{cluster_id}/gateway/jobs/{job_id}/cancel': { '.job.result': JOB_RESULT },
  },
  metal: {
    'GET /operations': { '.entries[]': "an operation's fields are its kind's own (op, mac, worker_id, counts, client, …): the log records each kind as it is" },
    'POST /devices/bind/batch': { '.failed[].mac': AS_GIVEN },
    'POST /devices/bind/batch/preview': { '.conflicts[].mac': AS_GIVEN, '.not_found[].mac': AS_GIVEN },
    'POST /devices/import': { '.failed[].mac': AS_GIVEN },
    'POST /devices/power': { '.failed[].mac': AS_GIVEN },
    'POST /workers/batch': { '.failed[].mac': AS_GIVEN },
    'POST /workers/delete/batch': { '.failed[].worker_id': AS_GIVEN },
  },
  agent: {},
};

type Schema = Record<string, unknown>;
/**
 * The JSON paths of the open parts of a schema: any JSON (no type: `{}`, `Type.Unknown()`), an
 * object that names no property (nor a pattern or a schema for its values), or an object that
 * takes any further property (`additionalProperties: true`). fastify serializes with
 * fast-json-stringify, which writes only what a schema lists: an open part hides what the
 * route really answers.
 */
function openParts(s: unknown, path = ''): string[] {
  if (!s || typeof s !== 'object') return [];
  const schema = s as Schema;
  const out: string[] = [];
  for (const k of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(schema[k])) for (const x of schema[k] as unknown[]) out.push(...openParts(x, path));
  if (['anyOf', 'oneOf', 'allOf', 'enum', 'const'].some((k) => k in schema)) return [...new Set(out)];
  const types = ([] as unknown[]).concat(schema.type ?? []);
  if (types.length === 0) out.push(path);
  if (types.includes('object')) {
    const props = (schema.properties ?? {}) as Record<string, unknown>;
    const patterns = (schema.patternProperties ?? {}) as Record<string, unknown>;
    if (schema.additionalProperties === true) out.push(path);
    else if (Object.keys(props).length === 0 && Object.keys(patterns).length === 0 && typeof schema.additionalProperties !== 'object') out.push(path);
    for (const [k, v] of Object.entries(props)) out.push(...openParts(v, `${path}.${k}`));
    for (const v of Object.values(patterns)) out.push(...openParts(v, `${path}{}`));
    if (typeof schema.additionalProperties === 'object') out.push(...openParts(schema.additionalProperties, `${path}{}`));
  }
  if (types.includes('array')) out.push(...openParts(schema.items ?? {}, `${path}[]`));
  return [...new Set(out)];
}

/** `METHOD /path <json path>` of every open part of a document's 2xx answers (204 has none). */
function openAnswers(doc: Doc): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      for (const [code, r] of Object.entries(op.responses ?? {})) {
        if (!/^2\d\d$/.test(code) || code === '204') continue;
        for (const c of Object.values(r.content ?? {})) for (const p of openParts(c.schema)) out.push(`${method.toUpperCase()} ${path} ${p || '(the whole answer)'}`);
      }
    }
  }
  return [...new Set(out)].sort();
}

/** The allow-list of a document as `METHOD /path <json path>`, the form `openAnswers` gives. */
const allowed = (name: string) => Object.entries(OPEN_BY_DESIGN[name]).flatMap(([route, parts]) => Object.keys(parts).map((p) => `${route} ${p || '(the whole answer)'}`));

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

  it('console: the cluster manager is in the document', () => {
    expect(Object.keys(docs.console.paths).filter((p) => CLUSTER_ROUTES.test(p)).length).toBeGreaterThan(25);
  });
  for (const name of ['console', 'metal', 'agent']) {
    it(`${name}: every 2xx answer is described field by field, but for the parts open by design (OPEN_BY_DESIGN, with the reason)`, () => {
      const open = openAnswers(docs[name]);
      expect(
        open.filter((o) => !allowed(name).includes(o)),
        'open answers (describe them, or name them in OPEN_BY_DESIGN with a reason)',
      ).toEqual([]);
      expect(
        allowed(name).filter((a) => !open.includes(a)),
        'listed in OPEN_BY_DESIGN but described now: remove them from the list',
      ).toEqual([]);
    });
  }

  it('the check finds an open part wherever it is in an answer: `{}`, an object without properties or open to more, an open item or value', () => {
    expect(openParts({})).toEqual(['']);
    expect(openParts({ type: 'object', additionalProperties: true })).toEqual(['']);
    expect(openParts({ type: 'object', properties: { a: { type: 'array', items: {} }, b: { type: 'object', patternProperties: { '^(.*)$': {} } } } })).toEqual(['.a[]', '.b{}']);
    expect(openParts({ type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'null' }] }, b: { type: 'object', patternProperties: { '^(.*)$': { type: 'integer' } } } } })).toEqual([]);
    const doc = (schema: unknown): Doc => ({ paths: { '/x': { get: { responses: { '200': { content: { 'application/json': { schema } } } } } } } });
    expect(openAnswers(doc({ type: 'object', additionalProperties: true }))).toEqual(['GET /x (the whole answer)']);
    expect(openAnswers(doc({}))).toEqual(['GET /x (the whole answer)']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { type: 'array', items: { type: ['object', 'null'] } } } }))).toEqual(['GET /x .a[]']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { anyOf: [{ type: 'object', properties: {}, additionalProperties: true }, { type: 'null' }] } } }))).toEqual(['GET /x .a']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { type: 'string' }, b: {} } }))).toEqual(['GET /x .b']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true }))).toEqual(['GET /x (the whole answer)']);
    expect(openAnswers(doc({ type: 'object', properties: { a: { type: 'string' }, m: { type: 'object', additionalProperties: { type: 'integer' } } }, additionalProperties: false }))).toEqual([]);
  });
});
