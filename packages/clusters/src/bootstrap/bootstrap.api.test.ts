import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp, jobsMigrations, OperationsLog, type OperationsTables, operationsMigrations, partOf, Store } from '@ironlens/core';
import { dumpDatabase, sleep, testStoreTarget } from '@ironlens/core/testing';
import type { FastifyInstance } from 'fastify';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BootstrapDatabase, type BootstrapRuntime, bootstrapMigrations, bootstrapPlugin, createBootstrapServices } from './index';
import type { ClusterRegistrar } from './registrar';
import { GitHttpServer } from './testing/git-server';
import { processesMentioning, publishStandInKubespray, standInControl, Tarpit } from './testing/harness';
import { newKey, randomLoopbackPrefix, requireTool, sshKeygenFingerprint, TestSshd } from './testing/sshd';

// One set of real components for the whole file: three sshd (two good hosts, one with a key of
// its own for the mismatch), a fourth whose key is swapped mid-run, a smart-HTTP git server as
// the GitHub mirror serving the stand-in Kubespray, the real ansible-playbook, a SQLite store (PostgreSQL in the suite's PostgreSQL run).
const dir = mkdtempSync(join(tmpdir(), 'ironlens-bootstrap-'));
const prefix = randomLoopbackPrefix();
const dataDir = join(dir, 'data');
const dbFile = join(dir, 'store', 'ironlens.db');
const CLIENT_KEY_MARKER = `IRONLENS-TEST-CLIENT-KEY-${Date.now().toString(36)}`;
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: 'https://127.0.0.1:6443'}
  name: cluster.local
users:
- name: kubernetes-admin
  user: {client-key-data: ${Buffer.from(CLIENT_KEY_MARKER).toString('base64')}}
contexts: []
`;
// Quotes, a backslash and a `$`: each escaping on the way changes it (issue 29, finding 14).
const PASSWORD = `pw-${Date.now().toString(36)}-pa"ss\\wo'rd$x`;
/** The password as the stand-in playbook prints it: shell-quoted (both spellings of a quote), inside Ansible's JSON. */
const PASSWORD_PRINTED = [`'${PASSWORD.replace(/'/g, `'"'"'`)}'`, `'${PASSWORD.replace(/'/g, `'\\''`)}'`].map((q) => JSON.stringify(q).slice(1, -1));
const PROXY_PASSWORD = `proxy-pass-${Date.now().toString(36)}`;
const LOGIN_PASSWORD = `login-${Date.now().toString(36)}-P4ss`;

let a: TestSshd; // control plane
let b: TestSshd; // worker
let c: TestSshd; // a different key
let d: TestSshd; // key swapped mid-run
let e: TestSshd; // root may log in with a password
let git: GitHttpServer;
let store: Store<BootstrapDatabase & OperationsTables>;
let storeTarget: Awaited<ReturnType<typeof testStoreTarget>>;
let runtime: BootstrapRuntime;
let app: FastifyInstance;
let clientKeyText: string;
const control = standInControl(join(dir, 'control'), KUBECONFIG);
const bodies: string[] = [];

/** A small in-test registrar that records its calls (the lead wires the cluster manager's real one). */
class RecordingRegistrar implements ClusterRegistrar {
  calls: Array<{ name: string; description?: string; kubeconfig: string }> = [];
  gate: Promise<void> = Promise.resolve();
  fail = false;
  async register(input: { name: string; description?: string; kubeconfig: string }): Promise<{ id: string }> {
    this.calls.push(input);
    await this.gate;
    if (this.fail) throw new Error('a cluster with this name already exists');
    return { id: `c${this.calls.length.toString(16).padStart(7, '0')}` };
  }
}
const registrar = new RecordingRegistrar();

async function call(method: 'GET' | 'POST', url: string, payload?: unknown) {
  const res = await app.inject({ method, url, payload: payload as object });
  bodies.push(res.body);
  return res;
}

async function waitPhase(id: string, phases: string[], timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const res = await call('GET', `/api/cluster/bootstrap/${id}`);
    const body = res.json();
    if (phases.includes(body.phase)) return body;
    if (Date.now() > end) throw new Error(`bootstrap ${id} still ${body.phase}: ${body.logTail}`);
    await sleep(100);
  }
}

async function waitLog(id: string, text: string, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const body = (await call('GET', `/api/cluster/bootstrap/${id}`)).json();
    if (body.logTail.includes(text)) return body;
    if (['succeeded', 'failed', 'cancelled'].includes(body.phase)) throw new Error(`ended ${body.phase} before logging ${text}: ${body.error}\n${body.logTail}`);
    if (Date.now() > end) throw new Error(`no ${text} in the log of ${id} (${body.phase}):\n${body.logTail}`);
    await sleep(100);
  }
}

const node = (s: TestSshd, roles: string[], extra: Record<string, unknown> = {}) => ({ host: s.address, port: s.port, roles, username: 'root', ...extra });
const pin = (s: TestSshd, fingerprint = s.fingerprint) => ({ host: s.address, port: s.port, fingerprint });

beforeAll(async () => {
  requireTool('/usr/bin/ansible-playbook', 'Debian ansible-core');
  requireTool('/usr/bin/sudo', 'Debian sudo');
  const clientKey = newKey(join(dir, 'client'));
  clientKeyText = readFileSync(clientKey, 'utf8');
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, readFileSync(`${clientKey}.pub`));
  [a, b, c, d] = await Promise.all(
    ['a', 'b', 'c', 'd'].map((n, i) => TestSshd.start({ dir: join(dir, `sshd-${n}`), address: `${prefix}${i + 2}`, hostKey: newKey(join(dir, `host-${n}`)), authorizedKeys: authorized })),
  );
  e = await TestSshd.start({ dir: join(dir, 'sshd-e'), address: `${prefix}6`, hostKey: newKey(join(dir, 'host-e')), authorizedKeys: join(dir, 'nobody-authorized'), rootPassword: LOGIN_PASSWORD });
  publishStandInKubespray(join(dir, 'git'), join(dir, 'kubespray-work'), control);
  git = await GitHttpServer.start(join(dir, 'git'));
  storeTarget = await testStoreTarget(dbFile);
  store = await Store.open<BootstrapDatabase & OperationsTables>({ ...storeTarget, migrations: [...operationsMigrations, ...jobsMigrations, ...bootstrapMigrations] });
  const env = { ...process.env, IRONLENS_GITHUB_MIRROR: git.url, IRONLENS_BOOTSTRAP_SSH_TIMEOUT_S: '5', IRONLENS_SECRET_KEY: undefined };
  runtime = await createBootstrapServices({ store: partOf(store), env, dataDir, registrar, operations: new OperationsLog(partOf(store)) });
  app = await createHttpApp({ title: 'test', docs: false });
  await app.register(bootstrapPlugin, { services: runtime.services });
  await app.ready();
  // Nodes that give no credentials are reached with ironlens' own key.
  appendFileSync(authorized, `${(await call('GET', '/api/cluster/bootstrap/ssh-public-key')).json().publicKey}\n`);
}, 60_000);

afterAll(async () => {
  await runtime?.close();
  await app?.close();
  await store?.close();
  await git?.stop();
  await Promise.all([a, b, c, d, e].map((s) => s?.stop()));
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens SSH key', () => {
  it('is an ed25519 key created under the data dir with mode 0600', async () => {
    const res = await call('GET', '/api/cluster/bootstrap/ssh-public-key');
    expect(res.statusCode).toBe(200);
    expect(res.json().publicKey).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/=]+ ironlens$/);
    const file = join(dataDir, 'bootstrap', 'ssh', 'id_ed25519');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toContain('BEGIN OPENSSH PRIVATE KEY');
  });
});

describe('console token', () => {
  it('answers 401 problem+json without the bearer token, and serves with it', async () => {
    const guarded = await createHttpApp({ title: 'guarded', docs: false });
    await guarded.register(bootstrapPlugin, { services: runtime.services, token: 'tok-123' });
    try {
      const no = await guarded.inject({ method: 'GET', url: '/api/cluster/bootstrap' });
      expect(no.statusCode).toBe(401);
      expect(no.headers['content-type']).toContain('application/problem+json');
      expect(no.json()).toMatchObject({ status: 401, code: 'auth_required' });
      const wrong = await guarded.inject({ method: 'POST', url: '/api/cluster/bootstrap/host-keys', headers: { authorization: 'Bearer nope' }, payload: { nodes: [{ host: a.address }] } });
      expect(wrong.statusCode).toBe(401);
      const ok = await guarded.inject({ method: 'GET', url: '/api/cluster/bootstrap', headers: { authorization: 'Bearer tok-123' } });
      expect(ok.statusCode).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});

describe('OpenAPI', () => {
  it('documents every bootstrap path from the same schemas that validate', async () => {
    const documented = await createHttpApp({ title: 'docs', docs: true });
    await documented.register(bootstrapPlugin, { services: runtime.services });
    await documented.ready();
    try {
      const doc = documented.swagger() as { paths: Record<string, Record<string, unknown>> };
      expect(Object.keys(doc.paths).filter((p) => p.startsWith('/api/cluster/bootstrap')).sort()).toEqual([
        '/api/cluster/bootstrap',
        '/api/cluster/bootstrap/host-keys',
        '/api/cluster/bootstrap/preflight',
        '/api/cluster/bootstrap/ssh-public-key',
        '/api/cluster/bootstrap/{id}',
        '/api/cluster/bootstrap/{id}/cancel',
      ]);
    } finally {
      await documented.close();
    }
  });
});

describe('POST /api/cluster/bootstrap/host-keys', () => {
  it('expands a last-octet range and answers each host in order with the fingerprint ssh-keygen prints, or an error', async () => {
    const res = await call('POST', '/api/cluster/bootstrap/host-keys', { nodes: [{ host: `${prefix}2-3`, port: a.port }, { host: b.address, port: b.port }, { host: `${prefix}250` , port: 1 }] });
    expect(res.statusCode).toBe(200);
    const items = res.json().items;
    // a.port is a's; b listens on its own port, so b's address under a's port is refused.
    expect(items.map((i: { host: string; port: number }) => `${i.host}:${i.port}`)).toEqual([`${prefix}2:${a.port}`, `${prefix}3:${a.port}`, `${prefix}3:${b.port}`, `${prefix}250:1`]);
    expect(items[0]).toEqual({ host: a.address, port: a.port, algorithm: 'ssh-ed25519', fingerprint: sshKeygenFingerprint(join(dir, 'host-a.pub')) });
    expect(items[1]).toEqual({ host: `${prefix}3`, port: a.port, error: 'Connection refused' });
    expect(items[2]).toEqual({ host: b.address, port: b.port, algorithm: 'ssh-ed25519', fingerprint: sshKeygenFingerprint(join(dir, 'host-b.pub')) });
    expect(items[3].error).toBe('Connection refused');
  });

  it('removes duplicates and expands full ranges and comma lists', async () => {
    const res = await call('POST', '/api/cluster/bootstrap/host-keys', { nodes: [{ host: `${a.address},${a.address}`, port: a.port }, { host: `${prefix}2-${prefix}2`, port: a.port }] });
    expect(res.json().items).toHaveLength(1);
  });

  it('refuses more than 256 hosts in all, and a malformed spec, with problem+json 422', async () => {
    const many = await call('POST', '/api/cluster/bootstrap/host-keys', { nodes: [{ host: '10.0.0.0-10.0.0.200' }, { host: '10.0.1.0-10.0.1.60' }] });
    expect(many.statusCode).toBe(422);
    expect(many.headers['content-type']).toContain('application/problem+json');
    expect(many.json()).toMatchObject({ status: 422, code: 'bootstrap_too_many_hosts' });
    expect(Object.keys(many.json()).sort()).toEqual(['code', 'detail', 'status', 'title', 'type']);
    const bad = await call('POST', '/api/cluster/bootstrap/host-keys', { nodes: [{ host: '10.0.0.9-3' }] });
    expect(bad.json()).toMatchObject({ status: 422, code: 'bootstrap_host_invalid' });
    const schema = await call('POST', '/api/cluster/bootstrap/host-keys', { nodes: [] });
    expect(schema.json()).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(schema.headers['content-type']).toContain('application/problem+json');
  });

  it('reads at most 16 hosts at once, each bounded by its timeout', async () => {
    const tpPrefix = randomLoopbackPrefix();
    const pits = await Promise.all(Array.from({ length: 20 }, (_, i) => Tarpit.start(`${tpPrefix}${i + 10}`, 0)));
    // Every tarpit on its own port: one node row per pit.
    // Its own store: a second runtime's start-up recovery must not touch this file's jobs.
    const quickStore = await Store.open<BootstrapDatabase>({ ...(await testStoreTarget(':memory:')), migrations: [...jobsMigrations, ...bootstrapMigrations] });
    const quick = await createBootstrapServices({ store: quickStore, env: { ...process.env, IRONLENS_BOOTSTRAP_SSH_TIMEOUT_S: '1' }, dataDir: join(dir, 'data-quick') });
    try {
      const t0 = Date.now();
      const res = await quick.services.bootstrap.hostKeys(pits.map((p) => ({ host: p.address, port: p.port })));
      expect(res.items.map((i) => ('error' in i ? i.error : 'key'))).toEqual(Array(20).fill('Connection timed out'));
      // Sixteen connections at once; the other four only once the first ones timed out (1 s).
      const accepted = pits.flatMap((p) => p.accepted.map((t) => t - t0)).sort((x, y) => x - y);
      expect(accepted).toHaveLength(20);
      // The 17th connection came only when a slot was freed by a one-second timeout.
      expect(accepted[16] - accepted[0]).toBeGreaterThanOrEqual(900);
      expect(accepted[15] - accepted[0]).toBeLessThan(900);
      // Two rounds of one-second timeouts, not twenty.
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      await quick.close();
      await quickStore.close();
      await Promise.all(pits.map((p) => p.stop()));
    }
  });
});

describe('POST /api/cluster/bootstrap/preflight', () => {
  it('passes every check, in order, on hosts whose keys match their pins', async () => {
    const res = await call('POST', '/api/cluster/bootstrap/preflight', {
      nodes: [node(a, ['control-plane']), node(b, ['worker'], { privateKey: clientKeyText })],
      hostKeys: [pin(a), pin(b)],
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.allPassed, JSON.stringify(body)).toBe(true);
    expect(body.items.map((i: { host: string; state: string }) => [i.host, i.state])).toEqual([
      [a.address, 'passed'],
      [b.address, 'passed'],
    ]);
    expect(body.items[0].roles).toEqual(['control-plane']);
    expect(body.items[0].checks.map((ch: { id: string; status: string }) => `${ch.id}:${ch.status}`)).toEqual([
      'ssh:passed',
      'sudo:passed',
      'hostname:passed',
      'os:passed',
      'existing_k8s:passed',
      'memory:passed',
    ]);
    expect(body.items[0].checks[0]).toEqual({ id: 'ssh', label: 'SSH connectivity', status: 'passed', detail: 'reachable' });
  });

  it('fails ssh on a host whose key differs from its pin and skips the rest', async () => {
    const res = await call('POST', '/api/cluster/bootstrap/preflight', {
      nodes: [node(a, ['control-plane']), node(c, ['worker'], { privateKey: clientKeyText })],
      hostKeys: [pin(a), pin(c, a.fingerprint)],
    });
    const body = res.json();
    expect(body.allPassed).toBe(false);
    const item = body.items[1];
    expect(item.state).toBe('failed');
    expect(item.checks.map((ch: { id: string; status: string }) => `${ch.id}:${ch.status}`)).toEqual([
      'ssh:failed',
      'sudo:skipped',
      'hostname:skipped',
      'os:skipped',
      'existing_k8s:skipped',
      'memory:skipped',
    ]);
    expect(item.checks[0].detail).toContain(c.fingerprint);
    // c never saw a login attempt: the connection ended at the key exchange.
    expect(c.log).not.toMatch(/Accepted publickey|Failed publickey|Postponed publickey/);
  });

  it('refuses pins that do not cover exactly the expanded hosts, and no control plane, before connecting', async () => {
    const before = a.log.length;
    const missing = await call('POST', '/api/cluster/bootstrap/preflight', { nodes: [node(a, ['control-plane']), node(b, ['worker'])], hostKeys: [pin(a)] });
    expect(missing.json()).toMatchObject({ status: 422, code: 'bootstrap_host_keys_mismatch' });
    // hostKeys left out (allowed for workers, issue 33): a host-form node has no pin.
    const none = await call('POST', '/api/cluster/bootstrap', { nodes: [node(a, ['control-plane'])] });
    expect(none.json()).toMatchObject({ status: 422, code: 'bootstrap_host_keys_mismatch' });
    const extra = await call('POST', '/api/cluster/bootstrap/preflight', { nodes: [node(a, ['control-plane'])], hostKeys: [pin(a), pin(b)] });
    expect(extra.json()).toMatchObject({ status: 422, code: 'bootstrap_host_keys_mismatch' });
    const noCp = await call('POST', '/api/cluster/bootstrap/preflight', { nodes: [node(a, ['worker'])], hostKeys: [pin(a)] });
    expect(noCp.json()).toMatchObject({ status: 422, code: 'bootstrap_control_plane_missing' });
    const start = await call('POST', '/api/cluster/bootstrap', { nodes: [node(a, ['worker'])], hostKeys: [pin(a)] });
    expect(start.json()).toMatchObject({ status: 422, code: 'bootstrap_control_plane_missing' });
    const badRole = await call('POST', '/api/cluster/bootstrap/preflight', { nodes: [{ host: a.address, roles: ['etcd'] }], hostKeys: [pin(a)] });
    expect(badRole.statusCode).toBe(422);
    expect(a.log.slice(before)).not.toContain('Connection from');
  });
});

describe('bootstrap jobs', () => {
  it('is cancelled while Kubespray is being fetched, killing git by process group', async () => {
    git.stall(true);
    try {
      const start = await call('POST', '/api/cluster/bootstrap', { nodes: [node(a, ['control-plane'])], hostKeys: [pin(a)] });
      const id = start.json().bootstrapId;
      await waitLog(id, 'cloning Kubespray');
      await waitPhase(id, ['provisioning']);
      // Wait for git to be in flight against the mirror.
      const end = Date.now() + 10_000;
      while (processesMentioning(git.url).length === 0 && Date.now() < end) await sleep(50);
      expect(processesMentioning(git.url).length).toBeGreaterThan(0);
      const cancel = await call('POST', `/api/cluster/bootstrap/${id}/cancel`);
      expect(cancel.statusCode).toBe(204);
      const done = await waitPhase(id, ['cancelled', 'failed', 'succeeded'], 10_000);
      expect(done.phase).toBe('cancelled');
      expect(processesMentioning(git.url)).toEqual([]);
    } finally {
      git.stall(false);
    }
  });

  it('runs the whole job through the mirror: inventory contract, proxy, pinned keys; the kubeconfig is handed out exactly once', async () => {
    const start = await call('POST', '/api/cluster/bootstrap', {
      nodes: [node(a, ['control-plane']), node(b, ['worker'], { privateKey: clientKeyText, password: PASSWORD })],
      hostKeys: [pin(a), pin(b)],
      proxy: { mode: 'custom', httpProxy: `http://ops:${PROXY_PASSWORD}@proxy.example:3128`, httpsProxy: 'http://proxy.example:3128', noProxy: '127.0.0.1,localhost,.svc' },
    });
    expect(start.statusCode).toBe(200);
    const id = start.json().bootstrapId;
    expect(id).toMatch(/^bootstrap-[0-9a-f]{12}$/);
    const first = await waitPhase(id, ['succeeded', 'failed', 'cancelled']);
    expect(first.phase, `${first.error}\n${first.logTail}`).toBe('succeeded');
    expect(first.kubeconfig).toBe(KUBECONFIG);
    expect(first.error).toBeNull();
    const na = a.address.replace(/\./g, '-');
    const nb = b.address.replace(/\./g, '-');
    expect(first.logTail).toContain(`INVENTORY cp=${na} etcd=${na} node=${nb} proxy=http://[redacted]@proxy.example:3128`);
    expect(first.logTail).toContain(`reached ${hostname()} as root`);
    expect(first.logTail).toContain('sudo password is [redacted]');
    // Shell-quoted inside JSON, both spellings: redacted whole, nothing of the password left.
    expect(first.logTail.match(/"msg": "'\[redacted\]'"/g)?.length).toBe(2);
    for (const n of [PASSWORD, ...PASSWORD_PRINTED, 'ss\\wo', 'rd$x']) expect(first.logTail).not.toContain(n);
    for (const phase of ['queued', 'preflight', 'provisioning', 'running', 'kubeconfig_ready']) expect(first.logTail).toContain(`==> ${phase}`);
    expect(git.requests.some((r) => r.includes('/kubernetes-sigs/kubespray.git/'))).toBe(true);

    const second = (await call('GET', `/api/cluster/bootstrap/${id}`)).json();
    expect(second.phase).toBe('succeeded');
    expect(second.kubeconfig).toBeNull();
    // Nothing of the job directory (keys, passwords, admin.conf) is left.
    expect(existsSync(join(dataDir, 'bootstrap', 'jobs', id))).toBe(false);
    const list = (await call('GET', '/api/cluster/bootstrap')).json();
    const item = list.items.find((i: { id: string }) => i.id === id);
    expect(item).toMatchObject({ phase: 'succeeded', kubeconfigDelivered: true, clusterId: null });
    expect(item.nodes).toEqual([
      { host: a.address, port: a.port, roles: ['control-plane'], username: 'root' },
      { host: b.address, port: b.port, roles: ['worker'], username: 'root' },
    ]);
  }, 120_000);

  it('logs in with a password alone: preflight over ssh2, the playbook through sshpass, the password nowhere', async () => {
    const nodes = [node(a, ['control-plane']), node(e, ['worker'], { password: LOGIN_PASSWORD })];
    const hostKeys = [pin(a), pin(e)];
    const wrong = (await call('POST', '/api/cluster/bootstrap/preflight', { nodes: [node(a, ['control-plane']), node(e, ['worker'], { password: 'wrong' })], hostKeys })).json();
    expect(wrong.items[1].checks[0]).toMatchObject({ id: 'ssh', status: 'failed' });
    const pre = (await call('POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys })).json();
    expect(pre.allPassed, JSON.stringify(pre)).toBe(true);
    const id = (await call('POST', '/api/cluster/bootstrap', { nodes, hostKeys })).json().bootstrapId;
    const done = await waitPhase(id, ['succeeded', 'failed', 'cancelled']);
    expect(done.phase, `${done.error}\n${done.logTail}`).toBe('succeeded');
    expect(done.logTail).toContain('sudo password is [redacted]');
    expect(done.logTail).not.toContain(LOGIN_PASSWORD);
    expect(e.log).toMatch(/Accepted password for root/);
  }, 120_000);

  it('registers the cluster itself when asked, naming the new cluster instead of returning the kubeconfig', async () => {
    const before = registrar.calls.length;
    const start = await call('POST', '/api/cluster/bootstrap', { nodes: [node(a, ['control-plane', 'worker'])], hostKeys: [pin(a)], register: { name: 'lab', description: 'made by ironlens' } });
    const id = start.json().bootstrapId;
    const done = await waitPhase(id, ['succeeded', 'failed', 'cancelled']);
    expect(done.phase, done.logTail).toBe('succeeded');
    expect(done.kubeconfig).toBeNull();
    expect(registrar.calls.slice(before)).toEqual([{ name: 'lab', description: 'made by ironlens', kubeconfig: KUBECONFIG }]);
    expect(done.clusterId).toBe(`c${registrar.calls.length.toString(16).padStart(7, '0')}`);
    const na = a.address.replace(/\./g, '-');
    expect(done.logTail).toContain(`INVENTORY cp=${na} etcd=${na} node=${na} proxy=unset`);
    expect((await call('GET', `/api/cluster/bootstrap/${id}`)).json()).toMatchObject({ kubeconfig: null, clusterId: done.clusterId });
  }, 120_000);

  it('fails when a host key changes in the middle of a run, although Kubespray turns checking off', async () => {
    control.arm(true);
    const start = await call('POST', '/api/cluster/bootstrap', { nodes: [node(d, ['control-plane'])], hostKeys: [pin(d)] });
    const id = start.json().bootstrapId;
    try {
      await waitLog(id, 'WAITING for the host key swap');
      await d.restartWithKey(newKey(join(dir, 'host-d2')));
      control.swapped();
      const done = await waitPhase(id, ['succeeded', 'failed', 'cancelled']);
      expect(done.phase).toBe('failed');
      expect(done.logTail).toContain(`reached ${hostname()} as root`);
      expect(done.logTail).toMatch(/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
      expect(done.kubeconfig).toBeNull();
      expect(done.error).toContain('ansible-playbook cluster.yml exited');
    } finally {
      control.arm(false);
      rmSync(control.swappedFile, { force: true });
    }
  }, 120_000);

  it('cancels a queued job and a running one; ansible-playbook dies with its process group', async () => {
    control.hold(true);
    try {
      const first = (await call('POST', '/api/cluster/bootstrap', { nodes: [node(a, ['control-plane'], { privateKey: clientKeyText, password: PASSWORD })], hostKeys: [pin(a)] })).json()
        .bootstrapId;
      await waitLog(first, 'HOLDING until the test lets go');
      const running = (await call('GET', `/api/cluster/bootstrap/${first}`)).json();
      expect(running.phase).toBe('running');
      const jobDir = join(dataDir, 'bootstrap', 'jobs', first);
      expect(processesMentioning(jobDir).length).toBeGreaterThan(0);
      // While it runs, the credentials sit in 0600 files of a 0700 directory, nowhere else in it.
      const name = a.address.replace(/\./g, '-');
      expect(statSync(jobDir).mode & 0o777).toBe(0o700);
      expect(statSync(join(jobDir, 'secrets', `${name}.key`)).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(jobDir, 'secrets', `${name}.key`), 'utf8')).toBe(clientKeyText);
      expect(statSync(join(jobDir, 'host_vars', `${name}.yml`)).mode & 0o777).toBe(0o600);
      // The password as Ansible reads it back from its host_vars (YAML, `!unsafe` so Jinja leaves it alone).
      const hostVars = YAML.parse(readFileSync(join(jobDir, 'host_vars', `${name}.yml`), 'utf8'), { customTags: [{ tag: '!unsafe', resolve: (v: string) => v }] }) as Record<string, string>;
      expect(hostVars.ansible_become_password).toBe(PASSWORD);
      for (const f of ['inventory.yml', 'known_hosts', join('group_vars', 'all', 'ironlens.yml')]) {
        for (const n of [PASSWORD, JSON.stringify(PASSWORD).slice(1, -1), 'ss\\wo']) expect(readFileSync(join(jobDir, f), 'utf8')).not.toContain(n);
      }
      expect(readFileSync(join(jobDir, 'known_hosts'), 'utf8')).toBe(`[${a.address}]:${a.port} ${readFileSync(join(dir, 'host-a.pub'), 'utf8').split(' ').slice(0, 2).join(' ')}\n`);

      // One job runs at a time: the second waits queued, and is cancelled there.
      const bLog = b.log.length;
      const second = (await call('POST', '/api/cluster/bootstrap', { nodes: [node(b, ['control-plane'], { privateKey: clientKeyText })], hostKeys: [pin(b)] })).json().bootstrapId;
      expect((await call('GET', `/api/cluster/bootstrap/${second}`)).json().phase).toBe('queued');
      expect((await call('POST', `/api/cluster/bootstrap/${second}/cancel`)).statusCode).toBe(204);
      expect((await waitPhase(second, ['cancelled', 'failed', 'succeeded'], 5000)).phase).toBe('cancelled');
      expect(b.log.slice(bLog)).not.toContain('Connection from');

      expect((await call('POST', `/api/cluster/bootstrap/${first}/cancel`)).statusCode).toBe(204);
      const done = await waitPhase(first, ['cancelled', 'failed', 'succeeded'], 10_000);
      expect(done.phase).toBe('cancelled');
      expect(done.kubeconfig).toBeNull();
      expect(processesMentioning(jobDir)).toEqual([]);
      expect(existsSync(jobDir)).toBe(false);
      // A finished job stays as it ended; an unknown one is 404.
      expect((await call('POST', `/api/cluster/bootstrap/${first}/cancel`)).statusCode).toBe(204);
      expect((await call('GET', `/api/cluster/bootstrap/${first}`)).json().phase).toBe('cancelled');
      const unknown = await call('POST', '/api/cluster/bootstrap/bootstrap-000000000000/cancel');
      expect(unknown.json()).toMatchObject({ status: 404, code: 'bootstrap_not_found' });
      expect((await call('GET', '/api/cluster/bootstrap/bootstrap-000000000000')).statusCode).toBe(404);
    } finally {
      control.hold(false);
    }
  }, 120_000);

  it('cancels during preflight, without waiting for a host that never answers', async () => {
    const pit = await Tarpit.start(`${prefix}40`);
    try {
      const t0 = Date.now();
      const id = (await call('POST', '/api/cluster/bootstrap', { nodes: [{ host: pit.address, port: pit.port, roles: ['control-plane'] }], hostKeys: [{ host: pit.address, port: pit.port, fingerprint: a.fingerprint }] })).json()
        .bootstrapId;
      await waitPhase(id, ['preflight']);
      while (pit.open === 0) await sleep(20);
      expect((await call('POST', `/api/cluster/bootstrap/${id}/cancel`)).statusCode).toBe(204);
      const done = await waitPhase(id, ['cancelled', 'failed', 'succeeded'], 5000);
      expect(done.phase).toBe('cancelled');
      // Well inside the 5 s ssh timeout: the connection was dropped, not waited out.
      expect(Date.now() - t0).toBeLessThan(4000);
      const end = Date.now() + 1000;
      while (pit.open > 0 && Date.now() < end) await sleep(20);
      expect(pit.open).toBe(0);
    } finally {
      await pit.stop();
    }
  });

  it('cancels while the kubeconfig is being registered', async () => {
    let open!: () => void;
    registrar.gate = new Promise((r) => (open = r));
    try {
      const id = (await call('POST', '/api/cluster/bootstrap', { nodes: [node(a, ['control-plane'])], hostKeys: [pin(a)], register: { name: 'slow' } })).json().bootstrapId;
      await waitPhase(id, ['kubeconfig_ready']);
      expect((await call('POST', `/api/cluster/bootstrap/${id}/cancel`)).statusCode).toBe(204);
      const done = await waitPhase(id, ['cancelled', 'failed', 'succeeded'], 5000);
      expect(done.phase).toBe('cancelled');
      expect(done.kubeconfig).toBeNull();
    } finally {
      open();
      registrar.gate = Promise.resolve();
    }
  }, 120_000);

  it('keeps the kubeconfig for its one hand-out when registering fails', async () => {
    registrar.fail = true;
    try {
      const id = (await call('POST', '/api/cluster/bootstrap', { nodes: [node(a, ['control-plane'])], hostKeys: [pin(a)], register: { name: 'taken' } })).json().bootstrapId;
      const done = await waitPhase(id, ['succeeded', 'failed', 'cancelled']);
      expect(done.phase).toBe('failed');
      expect(done.error).toContain('registering it failed: a cluster with this name already exists');
      expect(done.kubeconfig).toBe(KUBECONFIG);
      expect(done.clusterId).toBeNull();
      expect((await call('GET', `/api/cluster/bootstrap/${id}`)).json().kubeconfig).toBeNull();
    } finally {
      registrar.fail = false;
    }
  }, 120_000);

  it('fails a job that outlives its deadline, killing the playbook', async () => {
    const quickStore = await Store.open<BootstrapDatabase>({ ...(await testStoreTarget(':memory:')), migrations: [...jobsMigrations, ...bootstrapMigrations] });
    const quickData = join(dir, 'data-deadline');
    const quick = await createBootstrapServices({ store: quickStore, env: { ...process.env, IRONLENS_GITHUB_MIRROR: git.url, IRONLENS_BOOTSTRAP_TIMEOUT_S: '4' }, dataDir: quickData });
    control.hold(true);
    try {
      const { bootstrapId } = await quick.services.bootstrap.start({ nodes: [node(a, ['control-plane'], { privateKey: clientKeyText })] as never, hostKeys: [pin(a)] });
      const jobDir = join(quickData, 'bootstrap', 'jobs', bootstrapId);
      const end = Date.now() + 30_000;
      let status = await quick.services.bootstrap.status(bootstrapId);
      while (!['succeeded', 'failed', 'cancelled'].includes(status.phase) && Date.now() < end) {
        await sleep(200);
        status = await quick.services.bootstrap.status(bootstrapId);
      }
      expect(status.phase).toBe('failed');
      expect(status.error).toBe('the bootstrap took longer than its deadline (4 s)');
      expect(processesMentioning(jobDir)).toEqual([]);
    } finally {
      control.hold(false);
      await quick.close();
      await quickStore.close();
    }
  }, 60_000);

  it('never lets a secret from the request reach a response, the store or the operations log', async () => {
    // The SQLite file and its WAL, as bytes (on PostgreSQL, a dump of every row): no password, no
    // key line, no kubeconfig credential.
    await sleep(300);
    const files = storeTarget.url ? [dumpDatabase(storeTarget.url)] : readdirSync(join(dir, 'store')).map((f) => readFileSync(join(dir, 'store', f)).toString('latin1'));
    if (storeTarget.url) expect(files[0]).toMatch(/INSERT INTO public\.operations .*'bootstrap\.start'/);
    const keyLines = clientKeyText.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'));
    const needles = [PASSWORD, ...PASSWORD_PRINTED, PROXY_PASSWORD, LOGIN_PASSWORD, CLIENT_KEY_MARKER, Buffer.from(CLIENT_KEY_MARKER).toString('base64'), ...keyLines];
    expect(files.join('').length).toBeGreaterThan(0);
    for (const n of needles) {
      expect(files.some((f) => f.includes(n)), `store holds ${n.slice(0, 12)}…`).toBe(false);
      expect(bodies.some((body) => body.includes(n) && n !== Buffer.from(CLIENT_KEY_MARKER).toString('base64')), `a response holds ${n.slice(0, 12)}…`).toBe(false);
    }
    // Only the hand-outs carried the credential, by design (the whole job, the password-only job,
    // the job whose registration failed); every other response went without.
    const handOuts = bodies.filter((body) => body.startsWith('{') && typeof JSON.parse(body).kubeconfig === 'string');
    expect(handOuts).toHaveLength(3);
    expect(bodies.filter((body) => body.includes(Buffer.from(CLIENT_KEY_MARKER).toString('base64')))).toEqual(handOuts);
    // The operations log names the jobs and hosts, nothing more.
    const ops = await store.db.selectFrom('operations').selectAll().where('op', 'like', 'bootstrap.%').execute();
    expect(new Set(ops.map((o) => o.op))).toEqual(new Set(['bootstrap.start', 'bootstrap.cancel', 'bootstrap.kubeconfig_handed_out']));
    // Nothing secret left on disk either: job dirs are gone.
    expect(readdirSync(join(dataDir, 'bootstrap', 'jobs'))).toEqual([]);
  });
});
