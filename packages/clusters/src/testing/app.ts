import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp, type Env, jobsMigrations, operationsMigrations, Store } from '@ironlens/core';
import { freeTcpPort, testStoreTarget } from '@ironlens/core/testing';
import type { FastifyInstance } from 'fastify';
import { stringify } from 'yaml';
import { clustersPlugin } from '../plugin';
import { clustersMigrations } from '../shared/clusters.migrations';
import type { ClustersDatabase } from '../shared/tables';
import { type ClusterServices, type ClusterServicesDeps, createClusterServices } from '../wiring';

export interface ClustersTestApp {
  app: FastifyInstance;
  services: ClusterServices;
  store: Store<ClustersDatabase>;
  dataDir: string;
  /** Where the store lives: `{file}` (SQLite) or `{url}` (the suite's PostgreSQL run). */
  target: { file?: string; url?: string };
  /** Closes app, services and store, then opens new ones on the same store file and data dir. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Env;
  token?: string;
  dataDir?: string;
  deps?: Partial<Omit<ClusterServicesDeps, 'store' | 'env' | 'dataDir'>>;
}

/** The cluster manager on a throw-away store and data dir, as `ironlens serve` mounts it (at the root). */
export async function startClustersApp(opts: TestAppOptions = {}): Promise<ClustersTestApp> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'ironlens-clusters-'));
  const env: Env = { IRONLENS_LENS_HOSTS: '192.0.2.10,lens.example', ...opts.env };
  // Reused by restart(): the same SQLite file, or the same PostgreSQL database.
  const target = await testStoreTarget(join(dataDir, 'ironlens.db'));
  const open = async () => {
    const store = await Store.open<ClustersDatabase>({ ...target, migrations: [...operationsMigrations, ...jobsMigrations, ...clustersMigrations] });
    const services = createClusterServices({ store, env, dataDir, ...opts.deps });
    const app = await createHttpApp({ title: 'clusters test', docs: false });
    await app.register(clustersPlugin, { services, token: opts.token });
    await app.ready();
    return { store, services, app };
  };
  let cur = await open();
  const t: ClustersTestApp = {
    get app() {
      return cur.app;
    },
    get services() {
      return cur.services;
    },
    get store() {
      return cur.store;
    },
    dataDir,
    target,
    async restart() {
      await cur.app.close();
      await cur.services.close();
      await cur.store.close();
      cur = await open();
    },
    async close() {
      await cur.app.close();
      await cur.services.close();
      await cur.store.close();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}

/** A multipart/form-data body for `inject`. */
export function multipart(fields: Record<string, string>, file?: { name?: string; content: string | Buffer; filename?: string }): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----ironlens${Math.random().toString(16).slice(2)}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  if (file) {
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.name ?? 'file'}"; filename="${file.filename ?? 'kubeconfig.yaml'}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
      Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content),
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/**
 * A kubeconfig with a real client key and self-signed certificate (made by `openssl`), pointing
 * at `server`. Throws when openssl is missing.
 */
export function kubeconfigWithKey(server: string, user = 'tester'): { kubeconfig: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-kc-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', `/CN=${user}`], {
      stdio: 'pipe',
    });
    const keyPem = readFileSync(join(dir, 'k.pem'), 'utf8');
    const certPem = readFileSync(join(dir, 'c.pem'), 'utf8');
    const kubeconfig = stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': Buffer.from(certPem).toString('base64') } }],
      users: [{ name: user, user: { 'client-certificate-data': Buffer.from(certPem).toString('base64'), 'client-key-data': Buffer.from(keyPem).toString('base64') } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user } }],
      'current-context': 'c',
    });
    return { kubeconfig, keyPem };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A loopback port nothing listens on (core's `freeTcpPort`, named for what these tests use it for: a dead API server). */
export const closedPort = (): Promise<number> => freeTcpPort();
