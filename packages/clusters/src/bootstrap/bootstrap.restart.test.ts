import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp, jobsMigrations, Store } from '@ironlens/core';
import { freeTcpPort, sleep, testStoreTarget, waitFor, waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BootstrapDatabase, bootstrapMigrations, bootstrapPlugin, createBootstrapServices } from './index';
import { GitHttpServer } from './testing/git-server';
import { processesMentioning, publishStandInKubespray, standInControl } from './testing/harness';
import { newKey, randomLoopbackPrefix, requireTool, TestSshd } from './testing/sshd';

// ironlens runs as a child process here, so that it can die for real (SIGKILL) in the middle of
// a playbook; the next start over the same store and data dir must account for it.
const dir = mkdtempSync(join(tmpdir(), 'ironlens-bootstrap-restart-'));
const prefix = randomLoopbackPrefix();
const dataDir = join(dir, 'data');
const dbFile = join(dir, 'ironlens.db');
const KUBECONFIG = 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n';
const control = standInControl(join(dir, 'control'), KUBECONFIG);
let sshd: TestSshd;
let git: GitHttpServer;
let child: ChildProcess | undefined;
let base = '';
// The same SQLite file, or the same PostgreSQL database, for both starts.
let target: Awaited<ReturnType<typeof testStoreTarget>>;

// Short job leases: on PostgreSQL the runner is shared (replicas), so the job of the killed
// process is failed once its lease ran out, by the next process's sweep, not at its start.
const LEASE = { IRONLENS_JOB_LEASE_MS: '1500', IRONLENS_JOB_HEARTBEAT_MS: '300' };

async function startChild(): Promise<void> {
  const port = await freeTcpPort('127.0.0.1');
  const script = new URL('./testing/serve-bootstrap.ts', import.meta.url).pathname;
  child = spawn(process.execPath, ['--import', 'tsx', script, dbFile, dataDir, '127.0.0.1', String(port)], {
    detached: true,
    env: { ...process.env, ...LEASE, IRONLENS_GITHUB_MIRROR: git.url, IRONLENS_BOOTSTRAP_SSH_TIMEOUT_S: '5', ...(target.url ? { IRONLENS_DATABASE_URL: target.url } : {}) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child!.stdout!.on('data', (d) => String(d).includes('listening') && resolve());
    child!.once('exit', (code) => reject(new Error(`serve-bootstrap exited ${code}`)));
  });
  base = `http://127.0.0.1:${port}`;
}

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

/** Waits through the list, which never takes the kubeconfig. */
async function waitListed(id: string, phases: string[]) {
  const end = Date.now() + 60_000;
  for (;;) {
    const item = (await api('GET', '/api/cluster/bootstrap')).body.items.find((i: { id: string }) => i.id === id);
    if (item && phases.includes(item.phase)) return item;
    if (Date.now() > end) throw new Error(`${id} is ${item?.phase}`);
    await sleep(100);
  }
}

async function waitLog(id: string, text: string) {
  const end = Date.now() + 60_000;
  for (;;) {
    const s = (await api('GET', `/api/cluster/bootstrap/${id}`)).body;
    if (s.logTail.includes(text)) return s;
    if (Date.now() > end) throw new Error(`no ${text} in ${s.phase}: ${s.logTail}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  target = await testStoreTarget(dbFile);
  requireTool('/usr/bin/ansible-playbook', 'Debian ansible-core');
  const clientKey = newKey(join(dir, 'client'));
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, readFileSync(`${clientKey}.pub`));
  sshd = await TestSshd.start({ dir: join(dir, 'sshd'), address: `${prefix}2`, hostKey: newKey(join(dir, 'host')), authorizedKeys: authorized });
  publishStandInKubespray(join(dir, 'git'), join(dir, 'work'), control);
  git = await GitHttpServer.start(join(dir, 'git'));
  await startChild();
  writeFileSync(authorized, `${readFileSync(`${clientKey}.pub`, 'utf8')}${(await api('GET', '/api/cluster/bootstrap/ssh-public-key')).body.publicKey}\n`);
}, 60_000);

afterAll(async () => {
  if (child?.pid && child.exitCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const pid of processesMentioning(dataDir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await git?.stop();
  await sshd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a restart of ironlens', () => {
  it('keeps finished jobs and their unread kubeconfig; fails the running one as interrupted and kills what it left', async () => {
    const nodes = [{ host: sshd.address, port: sshd.port, roles: ['control-plane'] }];
    const hostKeys = [{ host: sshd.address, port: sshd.port, fingerprint: sshd.fingerprint }];
    const done = (await api('POST', '/api/cluster/bootstrap', { nodes, hostKeys })).body.bootstrapId;
    expect((await waitListed(done, ['succeeded', 'failed', 'cancelled'])).phase).toBe('succeeded');

    control.hold(true);
    const running = (await api('POST', '/api/cluster/bootstrap', { nodes, hostKeys })).body.bootstrapId;
    await waitLog(running, 'HOLDING until the test lets go');
    const jobDir = join(dataDir, 'bootstrap', 'jobs', running);

    // ironlens dies; the playbook it started (a process group of its own) lives on.
    process.kill(-child!.pid!, 'SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    expect(processesMentioning(jobDir).length).toBeGreaterThan(0);

    // The next start, over the same store and data dir (in this process now).
    const store = await Store.open<BootstrapDatabase>({ ...target, migrations: [...jobsMigrations, ...bootstrapMigrations] });
    const runtime = await createBootstrapServices({ store, env: { ...process.env, ...LEASE, IRONLENS_GITHUB_MIRROR: git.url }, dataDir });
    const app = await createHttpApp({ title: 't', docs: false });
    await app.register(bootstrapPlugin, { services: runtime.services });
    try {
      const read = async () => (await app.inject({ method: 'GET', url: `/api/cluster/bootstrap/${running}` })).json();
      // SQLite: failed by the start itself. PostgreSQL: once the lease ran out (1.5 s), and its
      // leftovers are then cleaned up by the janitor.
      const after = target.url ? await waitFor('the lease to run out', read, (j) => j.phase !== 'running', 10_000) : await read();
      if (target.url) await waitUntil('the janitor to clean up', () => !existsSync(jobDir), 5000);
      expect(after.phase).toBe('failed');
      expect(after.error).toBe('interrupted by a restart');
      expect(after.logTail).toContain('HOLDING until the test lets go');
      // Killed (SIGKILL to its process group) just before its directory went: the kernel ends it a moment later.
      await waitUntil('what the job left behind to end', () => processesMentioning(jobDir).length === 0, 5000);
      expect(existsSync(jobDir)).toBe(false);

      const kept = (await app.inject({ method: 'GET', url: `/api/cluster/bootstrap/${done}` })).json();
      expect(kept.phase).toBe('succeeded');
      expect(kept.kubeconfig).toBe(KUBECONFIG);
      expect((await app.inject({ method: 'GET', url: `/api/cluster/bootstrap/${done}` })).json().kubeconfig).toBeNull();
    } finally {
      control.hold(false);
      await runtime.close();
      await app.close();
      await store.close();
    }
  }, 120_000);
});
