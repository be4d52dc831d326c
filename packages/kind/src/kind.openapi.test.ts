import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTestPanel, type TestPanel } from './testing/panel';

// The OpenAPI document is generated from the TypeBox schemas in `api/schemas.ts`, which also
// validate the requests and serialize the answers. These expectations are the seed's fields,
// written out by hand: a field renamed, dropped or retyped in a schema shows up here.

interface Schema {
  type?: string;
  nullable?: boolean;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
}
interface Operation {
  parameters?: Array<{ in: string; name: string; required?: boolean; schema: Schema }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}

let panel: TestPanel;
let paths: Record<string, Record<string, Operation>>;

beforeAll(async () => {
  panel = await newTestPanel();
  const r = await panel.app.inject({ url: '/openapi.json' });
  expect(r.statusCode).toBe(200);
  paths = r.json().paths;
});
afterAll(async () => {
  await panel.close();
});

function jsonSchema(method: string, path: string, status: number): Schema {
  const op = paths[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  const res = op.responses[String(status)];
  if (!res?.content) throw new Error(`${method.toUpperCase()} ${path} documents no ${status} body`);
  return (res.content['application/json'] ?? Object.values(res.content)[0]).schema;
}

/** Each property's name with its type, `?` for nullable: `{ error: 'string?' }`. */
function fields(schema: Schema | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([k, v]) => [k, `${v.type ?? 'any'}${v.nullable ? '?' : ''}`]));
}

const JOB_FIELDS = {
  job_id: 'string',
  kind: 'string',
  status: 'string',
  cluster_name: 'string?',
  created_at_utc: 'string',
  message: 'string?',
  result: 'any',
  progress_stage: 'string?',
  progress_percent: 'integer?',
  error: 'string?',
  cancel_requested: 'boolean',
  started_at_utc: 'string?',
  finished_at_utc: 'string?',
  log_tail: 'array',
  // issue 20: who started the job (an added field).
  actor: 'string?',
};
const SUMMARY_FIELDS = { name: 'string', registered_in_kind: 'boolean', has_local_kubeconfig: 'boolean', meta: 'object?' };

describe('the OpenAPI document lists the seed’s fields', () => {
  it.each([
    ['get', '/api/v1/health', 200, { status: 'string', kind_in_path: 'boolean', kubectl_in_path: 'boolean', container_cli: 'string', container_engine_ok: 'boolean', container_engine_detail: 'string?' }],
    ['get', '/api/v1/versions', 200, { tags: 'array', skipped: 'boolean', reason: 'string', error: 'string' }],
    ['get', '/api/v1/stats', 200, { kind_clusters_count: 'integer', local_cluster_dirs_count: 'integer', total_workers_from_meta: 'integer?', jobs_total: 'integer', jobs_recent_failed: 'integer' }],
    ['post', '/api/v1/clusters', 202, { job_id: 'string', status: 'string', message: 'string' }],
    ['get', '/api/v1/clusters/{name}', 200, { ...SUMMARY_FIELDS, kubeconfig_path: 'string?', kubectl_get_nodes_rc: 'integer?', kubectl_get_nodes: 'string?' }],
    ['get', '/api/v1/clusters/{name}/workloads', 200, { cluster_name: 'string', nodes_rc: 'integer?', nodes_output: 'string?', pods_rc: 'integer?', pods_output: 'string?', error: 'string?' }],
    ['delete', '/api/v1/clusters/{name}', 200, { name: 'string', kind_delete_ok: 'boolean', summary: 'string' }],
    ['get', '/api/v1/jobs/{job_id}', 200, JOB_FIELDS],
    ['post', '/api/v1/jobs/{job_id}/cancel', 200, { job_id: 'string', cancel_requested: 'boolean', message: 'string' }],
  ])('%s %s %i', (method, path, status, expected) => {
    expect(fields(jsonSchema(method, path, status))).toEqual(expected);
  });

  it('lists arrays of clusters and of jobs', () => {
    const clusters = jsonSchema('get', '/api/v1/clusters', 200);
    expect(clusters.type).toBe('array');
    expect(fields(clusters.items)).toEqual(SUMMARY_FIELDS);
    expect(fields(clusters.items?.properties?.meta)).toEqual({
      cluster_name: 'string',
      kubernetes_version_tag: 'string?',
      node_image: 'string?',
      worker_nodes: 'integer',
      kubeconfig_patched_for_host: 'boolean',
      nodes_ready: 'boolean',
      container_cli: 'string',
      created_at_utc: 'string',
    });
    const jobs = jsonSchema('get', '/api/v1/jobs', 200);
    expect(jobs.type).toBe('array');
    expect(fields(jobs.items)).toEqual(JOB_FIELDS);
    expect(jobs.items?.properties?.status.enum).toEqual(['queued', 'running', 'success', 'failed', 'cancelled']);
  });

  it('documents every error answer as {"detail": ...}', () => {
    const errors: Array<[string, string, number[]]> = [
      ['post', '/api/v1/clusters', [400, 409]],
      ['get', '/api/v1/clusters/{name}', [400, 404]],
      ['get', '/api/v1/clusters/{name}/kubeconfig', [400, 404]],
      ['get', '/api/v1/clusters/{name}/workloads', [400]],
      ['delete', '/api/v1/clusters/{name}', [400, 404, 409, 500]],
      ['get', '/api/v1/jobs/{job_id}', [404]],
      ['post', '/api/v1/jobs/{job_id}/cancel', [400, 404]],
    ];
    for (const [method, path, statuses] of errors) {
      for (const status of statuses) expect(Object.keys(fields(jsonSchema(method, path, status))), `${method} ${path} ${status}`).toEqual(['detail']);
    }
  });

  it('documents the kubeconfig download as YAML', () => {
    expect(Object.keys(paths['/api/v1/clusters/{name}/kubeconfig'].get.responses['200'].content ?? {})).toEqual(['application/yaml']);
  });

  it('keeps the request body, path parameters and the jobs limit', () => {
    const body = paths['/api/v1/clusters'].post.requestBody?.content['application/json'].schema;
    expect(body?.required).toEqual(['name']);
    expect(body?.properties).toMatchObject({
      name: { type: 'string' },
      kubernetes_version: { type: 'string', nullable: true },
      workers: { type: 'integer', nullable: true, minimum: 0, maximum: 10, default: 1 },
    });
    expect(paths['/api/v1/jobs'].get.parameters).toEqual([{ in: 'query', name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 200, default: 30 } }]);
    expect(paths['/api/v1/clusters/{name}'].get.parameters?.map((p) => [p.in, p.name, p.required])).toEqual([['path', 'name', true]]);
    expect(paths['/api/v1/jobs/{job_id}/cancel'].post.parameters?.map((p) => [p.in, p.name, p.required])).toEqual([['path', 'job_id', true]]);
  });
});

describe('meta.json, read from disk', () => {
  it('shows a meta.json whose known keys have the wrong type as no meta, not as a failed list', async () => {
    const p = await newTestPanel();
    try {
      for (const [name, meta] of [
        ['odd', { cluster_name: 'odd', worker_nodes: 'two', extra: 1 }],
        ['fine', { cluster_name: 'fine', worker_nodes: 3, written_by: 'an older version' }],
      ] as const) {
        mkdirSync(join(p.clustersDir, name), { recursive: true });
        writeFileSync(join(p.clustersDir, name, 'meta.json'), JSON.stringify(meta));
      }
      const r = await p.app.inject({ url: '/api/v1/clusters' });
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual([
        { name: 'fine', registered_in_kind: false, has_local_kubeconfig: false, meta: { cluster_name: 'fine', worker_nodes: 3, written_by: 'an older version' } },
        { name: 'odd', registered_in_kind: false, has_local_kubeconfig: false, meta: null },
      ]);
      expect((await p.app.inject({ url: '/api/v1/stats' })).json().total_workers_from_meta).toBe(3);
    } finally {
      await p.close();
    }
  });
});
