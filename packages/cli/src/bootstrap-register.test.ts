import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitHttpServer, newKey, publishStandInKubespray, randomLoopbackPrefix, requireTool, standInControl, TestSshd } from '@ironlens/clusters/bootstrap-testing';
import { dumpDatabase, sleep, testDatabaseEnv } from '@ironlens/core/testing';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from './serve';

// The loop the bootstrap closes, through `ironlens serve`'s own wiring: a Kubespray run (the
// stand-in playbook, real ansible-playbook over a real sshd) hands its admin kubeconfig straight
// to the cluster manager. The kubeconfig is the one of a real control plane (kube-harness), so
// the registered cluster answers `ready: true` — and the kubeconfig is never handed out.
const dir = mkdtempSync(join(tmpdir(), 'ironlens-bootstrap-register-'));
const dataDir = join(dir, 'data');
const TOKEN = `console-${Date.now().toString(36)}`;
let kube: KubeHarness;
let sshd: TestSshd;
let git: GitHttpServer;
let running: Running;
let base: string;
let dbEnv: Record<string, string>;
let control: ReturnType<typeof standInControl>;
const marker = join(dir, 'PWNED');

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

beforeAll(async () => {
  requireTool('/usr/bin/ansible-playbook', 'Debian ansible-core');
  kube = await startKubeCluster({ nodes: 'test', gpu: true });
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, '');
  sshd = await TestSshd.start({ dir: join(dir, 'sshd'), address: `${randomLoopbackPrefix()}2`, hostKey: newKey(join(dir, 'host')), authorizedKeys: authorized });
  control = standInControl(join(dir, 'control'), kube.kubeconfig);
  publishStandInKubespray(join(dir, 'git'), join(dir, 'work'), control);
  git = await GitHttpServer.start(join(dir, 'git'));
  dbEnv = await testDatabaseEnv();
  running = await serve({
    ...dbEnv,
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    IRONLENS_DATA_DIR: dataDir,
    IRONLENS_BOOT_LISTEN: 'off',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: TOKEN,
    IRONLENS_GITHUB_MIRROR: git.url,
    IPXE_CP_DNSMASQ_RELOAD: 'false',
  });
  base = running.urls.console;
  // The node gives no credentials: ironlens logs in with its own key.
  appendFileSync(authorized, `${(await call('GET', '/api/cluster/bootstrap/ssh-public-key')).json.publicKey}\n`);
}, 600_000);

afterAll(async () => {
  await running?.close();
  await git?.stop();
  await sshd?.stop();
  await kube?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function bootstrapUntilDone(register: { name: string; description?: string }): Promise<any> {
  const nodes = [{ host: sshd.address, port: sshd.port, roles: ['control-plane', 'worker'], username: 'root' }];
  const hostKeys = [{ host: sshd.address, port: sshd.port, fingerprint: sshd.fingerprint }];
  const start = await call('POST', '/api/cluster/bootstrap', { nodes, hostKeys, register });
  expect(start.status, JSON.stringify(start.json)).toBe(200);
  const end = Date.now() + 300_000;
  for (;;) {
    const status = (await call('GET', `/api/cluster/bootstrap/${start.json.bootstrapId}`)).json;
    if (['succeeded', 'failed', 'cancelled'].includes(status.phase) || Date.now() > end) return status;
    await sleep(250);
  }
}

describe('ironlens serve: bootstrap with register', () => {
  it('registers the new cluster with the cluster manager, which sees it ready, and never hands out the kubeconfig', async () => {
    const keys = await call('POST', '/api/cluster/bootstrap/host-keys', { nodes: [{ host: sshd.address, port: sshd.port }] });
    expect(keys.status).toBe(200);
    expect(keys.json.items[0].fingerprint).toBe(sshd.fingerprint);
    const nodes = [{ host: sshd.address, port: sshd.port, roles: ['control-plane', 'worker'], username: 'root' }];
    const hostKeys = [{ host: sshd.address, port: sshd.port, fingerprint: sshd.fingerprint }];
    const start = await call('POST', '/api/cluster/bootstrap', { nodes, hostKeys, register: { name: 'Lab One', description: 'bootstrapped by ironlens' } });
    expect(start.status).toBe(200);
    const id = start.json.bootstrapId;
    let status: any;
    const end = Date.now() + 300_000;
    for (;;) {
      status = (await call('GET', `/api/cluster/bootstrap/${id}`)).json;
      if (['succeeded', 'failed', 'cancelled'].includes(status.phase) || Date.now() > end) break;
      await sleep(250);
    }
    expect(status.phase, `${status.error}\n${status.logTail}`).toBe('succeeded');
    expect(status.kubeconfig).toBeNull();
    expect(status.clusterId).toMatch(/^[0-9a-f]{8}$/);

    const list = await call('GET', '/api/cluster/clusters');
    const cluster = list.json.items.find((c: { id: string }) => c.id === status.clusterId);
    expect(cluster).toMatchObject({ name: 'Lab One', description: 'bootstrapped by ironlens', ready: true });
    const version = await call('GET', `/api/cluster/clusters/${status.clusterId}/kubernetes-version`);
    expect(version.json).toMatchObject({ reachable: true, version: '1.36', supported: true });

    // The admin kubeconfig's client key is nowhere in plain text: not in any answer, not under the data dir.
    const keyData = /client-key-data: (\S+)/.exec(kube.kubeconfig)![1];
    expect(JSON.stringify([status, list.json, version.json])).not.toContain(keyData);
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile() && statSync(p).size < 64 * 1024 * 1024) files.push(p);
      }
    };
    walk(dataDir);
    const leaking = files.filter((f) => readFileSync(f).includes(keyData));
    expect(leaking).toEqual([]);
    if (dbEnv.IRONLENS_DATABASE_URL) {
      // The store is the PostgreSQL database: every row of it, dumped, holds the cluster and no key.
      expect(files.some((f) => f.endsWith('ironlens.db'))).toBe(false);
      const dump = dumpDatabase(dbEnv.IRONLENS_DATABASE_URL);
      expect(dump).toContain('Lab One');
      expect(dump.includes(keyData), 'the client key is in the database').toBe(false);
    } else {
      expect(files.some((f) => f.endsWith('ironlens.db'))).toBe(true);
    }
  }, 400_000);

  it('refuses a node admin.conf whose user runs a command through a YAML merge key (issue 18): not registered, the command never runs', async () => {
    // A malicious node: its admin.conf is the real control plane's, with the user's credentials
    // replaced by an exec plugin that comes in through `<<`, which only js-yaml applies.
    const server = /server: (\S+)/.exec(kube.kubeconfig)![1];
    const ca = /certificate-authority-data: (\S+)/.exec(kube.kubeconfig)![1];
    writeFileSync(
      control.kubeconfigFile,
      `apiVersion: v1
kind: Config
clusters: [{name: lab, cluster: {server: "${server}", certificate-authority-data: ${ca}}}]
users:
- name: admin
  user:
    <<:
      exec:
        apiVersion: client.authentication.k8s.io/v1
        command: /bin/sh
        args: [-c, "id > ${marker}; echo '{\\"apiVersion\\":\\"client.authentication.k8s.io/v1\\",\\"kind\\":\\"ExecCredential\\",\\"status\\":{\\"token\\":\\"x\\"}}'"]
contexts: [{name: lab, context: {cluster: lab, user: admin}}]
current-context: lab
`,
      { mode: 0o600 },
    );
    try {
      const status = await bootstrapUntilDone({ name: 'Evil Node' });
      expect(status.phase, status.logTail).toBe('failed');
      expect(status.error).toMatch(/registering it failed: .*merge keys/);
      expect(status.clusterId).toBeNull();
      const list = await call('GET', '/api/cluster/clusters?includeDrafts=true');
      expect(list.json.items.some((c: { name: string }) => c.name === 'Evil Node')).toBe(false);
      expect(existsSync(marker)).toBe(false);
    } finally {
      writeFileSync(control.kubeconfigFile, kube.kubeconfig, { mode: 0o600 });
    }
  }, 400_000);
});
