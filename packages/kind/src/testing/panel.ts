import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jobsMigrations, Store } from '@ironlens/core';
import { testStoreTarget } from '@ironlens/core/testing';
import type { FastifyInstance } from 'fastify';
import { buildKindApp } from '../app';
import type { JobView } from '../api/schemas';
import { createKindServices, type KindDatabase, type KindRuntime, kindMigrations } from '../wiring';
import { type StandIns, type StandInTool, writeStandIns } from './standins';

export interface TestPanel {
  app: FastifyInstance;
  standins: StandIns;
  store: Store<KindDatabase>;
  runtime: KindRuntime;
  dir: string;
  clustersDir: string;
  dbFile: string;
  env: Record<string, string | undefined>;
  /** Polls a job until it finishes; returns the final view and every distinct (status, stage, percent) seen. */
  waitJob(id: string, timeoutMs?: number): Promise<{ final: JobView; seen: Array<{ status: string; stage: string | null; percent: number | null }> }>;
  /** Closes app, runtime and store, then opens them again over the same files (a process restart). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface TestPanelOptions {
  tools?: StandInTool[];
  env?: Record<string, string>;
  /** Built web assets. Default: a directory that does not exist (the dashboard answers 503). */
  webDist?: string;
  /** The build command the missing-build page names. Default: the one the CLI passes (`@ironlens/web`'s `WEB_BUILD_COMMAND`). */
  webBuildCommand?: string;
  /** Bearer token the API requires. Default: unset (open). */
  token?: string;
}

/** A standalone panel over stand-in tools, a real store (SQLite file, or PostgreSQL in the suite's PostgreSQL run) and a temporary clusters directory. */
export async function newTestPanel(opts: TestPanelOptions = {}): Promise<TestPanel> {
  const standins = writeStandIns(opts.tools);
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-kind-panel-'));
  const clustersDir = join(dir, 'clusters');
  const dbFile = join(dir, 'state.sqlite');
  const env = standins.env({ KIND_K8S_CLUSTERS_DIR: clustersDir, KIND_K8S_SKIP_VERSION_LIST: '1', ...opts.env });

  // Reused by restart(): the same SQLite file, or the same PostgreSQL database.
  const target = await testStoreTarget(dbFile);
  const open = async () => {
    const store = await Store.open<KindDatabase>({ ...target, migrations: [...jobsMigrations, ...kindMigrations] });
    const runtime = await createKindServices(env, store, { cwd: dir });
    const app = await buildKindApp({ services: runtime.services, webDist: opts.webDist ?? join(dir, 'no-web-build'), webBuildCommand: opts.webBuildCommand ?? 'npm run build -w @ironlens/web', token: opts.token });
    return { store, runtime, app };
  };
  let parts = await open();

  const panel: TestPanel = {
    get app() {
      return parts.app;
    },
    get store() {
      return parts.store;
    },
    get runtime() {
      return parts.runtime;
    },
    standins,
    dir,
    clustersDir,
    dbFile,
    env,
    async waitJob(id, timeoutMs = 20_000) {
      const seen: Array<{ status: string; stage: string | null; percent: number | null }> = [];
      const end = Date.now() + timeoutMs;
      for (;;) {
        const r = await parts.app.inject({ url: `/api/v1/jobs/${id}`, headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {} });
        if (r.statusCode !== 200) throw new Error(`GET job ${id}: ${r.statusCode} ${r.body}`);
        const j = r.json();
        const last = seen[seen.length - 1];
        if (!last || last.status !== j.status || last.stage !== j.progress_stage || last.percent !== j.progress_percent) {
          seen.push({ status: j.status, stage: j.progress_stage, percent: j.progress_percent });
        }
        if (['success', 'failed', 'cancelled'].includes(j.status)) return { final: j, seen };
        if (Date.now() > end) throw new Error(`job ${id} still ${j.status} at ${j.progress_stage}`);
        await new Promise((res) => setTimeout(res, 5));
      }
    },
    async restart() {
      await parts.app.close();
      await parts.runtime.close();
      await parts.store.close();
      parts = await open();
    },
    async close() {
      await parts.app.close();
      await parts.runtime.close();
      await parts.store.close();
      standins.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return panel;
}

/** A local HTTP server answering like Docker Hub's tags API, page by page. */
export async function startTagsFixture(pages: string[][], opts: { status?: number } = {}): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  let server: Server;
  await new Promise<void>((resolve) => {
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      if (opts.status && opts.status !== 200) {
        res.writeHead(opts.status, { 'content-type': 'application/json' });
        return res.end('{"message":"rate limited"}');
      }
      const u = new URL(req.url ?? '/', 'http://x');
      const page = Number(u.searchParams.get('page') ?? '1');
      const names = pages[page - 1] ?? [];
      const port = (server.address() as AddressInfo).port;
      const next = page < pages.length ? `http://127.0.0.1:${port}/v2/repositories/kindest/node/tags?page_size=100&page=${page + 1}` : null;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ count: pages.flat().length, next, previous: null, results: names.map((name) => ({ name, tag_status: 'active' })) }));
    }).listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server!.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v2/repositories/kindest/node/tags?page_size=100`,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
