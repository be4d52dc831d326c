/**
 * Every route of every listener declares its answer (issue 19): the OpenAPI documents of the
 * provisioning listener (metal), the console listener (the kind panel, the cluster manager, the
 * bootstrap) and the storage agent are read route by route, and a route whose 2xx answer has no
 * schema fails the test, unless it is in `NOT_YET` below. `NOT_YET` is the list of routes still
 * without one: it may only shrink (a listed route that has a schema now fails the test too, so
 * the list stays true).
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
});
