import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitHttpServer, newKey, publishStandInKubespray, randomLoopbackPrefix, requireTool, standInControl, TestSshd } from '@ironlens/clusters/bootstrap-testing';
import { partOf } from '@ironlens/core';
import { sleep, testDatabaseEnv } from '@ironlens/core/testing';
import { createMetalServices, metalConfigFromEnv } from '@ironlens/metal';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Running, serve } from './serve';

// biome-ignore lint/suspicious/noExplicitAny: JSON answers of several shapes, read by the assertions
type Json = any;

// Bootstrap from workers (issue 24) through `ironlens serve`'s own wiring: two workers report
// (POST /hosts/report on the provisioning listener) the loopback address and host key of a real
// sshd each (on port 22 of its own 127.x address); host-keys, preflight and a bootstrap by
// `workerId` use them with no typed address or fingerprint, and with `register` each worker
// shows the cluster it joined. The admin kubeconfig is a real control plane's (kube-harness).
const dir = mkdtempSync(join(tmpdir(), `ironlens-bootstrap-workers-${process.pid}-`));
const dataDir = join(dir, 'data');
const TOKEN = `console-${Date.now().toString(36)}`;
const MAC_A = '52:54:00:24:0b:01';
const MAC_B = '52:54:00:24:0b:02';
const MAC_C = '52:54:00:24:0b:03';
let kube: KubeHarness;
let a: TestSshd;
let b: TestSshd;
let git: GitHttpServer;
let running: Running;
let consoleUrl: string;
let bootUrl: string;

async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}
const api = (method: string, path: string, body?: unknown) => call(consoleUrl, method, path, body);

function report(mac: string, hostname: string, s: TestSshd) {
  return {
    mac,
    hostname,
    addresses: [{ interface: 'eth0', mac, ipv4: [s.address], ipv6: [] }],
    ssh_host_keys: [{ algorithm: 'ssh-ed25519', fingerprint: s.fingerprint }],
    os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' },
    kernel: '6.1.0-28-amd64',
    hardware: { cpu_model: 'QEMU Virtual CPU', cpus: 1, memory_bytes: 1700 * 1048576, disks: [], nics: [{ name: 'eth0', mac, speed_mbps: null }], accelerators: [] },
  };
}

async function postReport(body: unknown): Promise<number> {
  const res = await fetch(`${bootUrl}/hosts/report`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(Math.floor(Date.now() / 1000)) },
    body: JSON.stringify(body),
  });
  return res.status;
}

beforeAll(async () => {
  requireTool('/usr/bin/ansible-playbook', 'Debian ansible-core');
  kube = await startKubeCluster({ nodes: 'test' });
  const authorized = join(dir, 'authorized_keys');
  writeFileSync(authorized, '');
  const prefix = randomLoopbackPrefix();
  [a, b] = await Promise.all(
    ['a', 'b'].map((n, i) => TestSshd.start({ dir: join(dir, `sshd-${n}`), address: `${prefix}${i + 2}`, port: 22, hostKey: newKey(join(dir, `host-${n}`)), authorizedKeys: authorized })),
  );
  publishStandInKubespray(join(dir, 'git'), join(dir, 'work'), standInControl(join(dir, 'control'), kube.kubeconfig));
  git = await GitHttpServer.start(join(dir, 'git'));
  const env = {
    ...(await testDatabaseEnv()),
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    IRONLENS_DATA_DIR: dataDir,
    IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: TOKEN,
    IPXE_CP_TOKEN: TOKEN,
    IRONLENS_GITHUB_MIRROR: git.url,
    IPXE_CP_DNSMASQ_RELOAD: 'false',
  } as Record<string, string>;
  const store = await openStore(env);
  const metal = createMetalServices({ store: partOf(store), config: metalConfigFromEnv(env, dataDir) });
  for (const [id, mac] of [
    ['w-a', MAC_A],
    ['w-b', MAC_B],
    ['w-c', MAC_C],
  ]) {
    await metal.devices.register({ mac }, {});
    await metal.workers.create({ worker_id: id, mac }, {});
  }
  await store.close();
  running = await serve(env, () => {});
  consoleUrl = running.urls.console;
  bootUrl = running.urls.boot;
  // The master image carries ironlens' own key: the nodes give no credentials.
  appendFileSync(authorized, `${(await api('GET', '/api/cluster/bootstrap/ssh-public-key')).json.publicKey}\n`);
  expect(await postReport(report(MAC_A, 'w-a', a))).toBe(200);
  expect(await postReport(report(MAC_B, 'w-b', b))).toBe(200);
}, 600_000);

afterAll(async () => {
  await running?.close();
  await git?.stop();
  await a?.stop();
  await b?.stop();
  await kube?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens serve: bootstrap from workers', () => {
  it('reads host keys, runs preflight and refuses unknown, unreported and mispinned workers, by workerId', async () => {
    const keys = await api('POST', '/api/cluster/bootstrap/host-keys', { nodes: [{ workerId: 'w-a' }, { workerId: 'w-b' }] });
    expect(keys.status).toBe(200);
    expect(keys.json.items).toEqual([
      { host: a.address, port: 22, algorithm: 'ssh-ed25519', fingerprint: a.fingerprint, workerId: 'w-a' },
      { host: b.address, port: 22, algorithm: 'ssh-ed25519', fingerprint: b.fingerprint, workerId: 'w-b' },
    ]);

    const nodes = [
      { workerId: 'w-a', roles: ['control-plane'] },
      { workerId: 'w-b', roles: ['worker'] },
    ];
    // Workers only: no hostKeys at all (issue 33), ironlens pins what they reported.
    const pre = await api('POST', '/api/cluster/bootstrap/preflight', { nodes });
    expect(pre.status).toBe(200);
    expect(pre.json.items.map((i: Json) => [i.host, i.workerId, i.state])).toEqual([
      [a.address, 'w-a', 'passed'],
      [b.address, 'w-b', 'passed'],
    ]);
    expect(pre.json.items[0].checks.find((c: Json) => c.id === 'ssh').status).toBe('passed');
    expect(pre.json.allPassed).toBe(true);

    // A pin given for a worker must be one it reported; the host form is unchanged beside it.
    const mixed = await api('POST', '/api/cluster/bootstrap/preflight', {
      nodes: [{ workerId: 'w-a', roles: ['control-plane'] }, { host: b.address, port: 22, roles: ['worker'] }],
      hostKeys: [
        { host: a.address, port: 22, fingerprint: a.fingerprint },
        { host: b.address, port: 22, fingerprint: b.fingerprint },
      ],
    });
    expect(mixed.json.allPassed).toBe(true);
    const mismatch = await api('POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys: [{ host: a.address, port: 22, fingerprint: b.fingerprint }] });
    expect(mismatch.status).toBe(422);
    expect(mismatch.json).toMatchObject({ status: 422, code: 'bootstrap_host_keys_mismatch' });

    const unknown = await api('POST', '/api/cluster/bootstrap/preflight', { nodes: [{ workerId: 'w-nope', roles: ['control-plane'] }] });
    expect(unknown.status).toBe(422);
    expect(unknown.json).toMatchObject({ status: 422, code: 'bootstrap_worker_unknown' });
    const unreported = await api('POST', '/api/cluster/bootstrap', { nodes: [{ workerId: 'w-c', roles: ['control-plane'] }] });
    expect(unreported.status).toBe(422);
    expect(unreported.json).toMatchObject({ status: 422, code: 'bootstrap_worker_unreported' });
    // An empty list is the same; a host-form node still needs its pin (the specific code, not the schema's).
    expect((await api('POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys: [] })).json.allPassed).toBe(true);
    const hostForm = await api('POST', '/api/cluster/bootstrap/preflight', { nodes: [{ host: a.address, port: 22, roles: ['control-plane'] }] });
    expect(hostForm.json).toMatchObject({ status: 422, code: 'bootstrap_host_keys_mismatch' });
  }, 120_000);

  it('bootstraps by workerId with register: the job ends registered and each worker shows the cluster it joined', async () => {
    const nodes = [
      { workerId: 'w-a', roles: ['control-plane'] },
      { workerId: 'w-b', roles: ['worker'] },
    ];
    const start = await api('POST', '/api/cluster/bootstrap', { nodes, hostKeys: [], register: { name: 'From Workers' } });
    expect(start.status).toBe(200);
    const id = start.json.bootstrapId;
    let status: Json;
    const end = Date.now() + 300_000;
    for (;;) {
      status = (await api('GET', `/api/cluster/bootstrap/${id}`)).json;
      if (['succeeded', 'failed', 'cancelled'].includes(status.phase) || Date.now() > end) break;
      await sleep(250);
    }
    expect(status.phase, `${status.error}\n${status.logTail}`).toBe('succeeded');
    expect(status.clusterId).toMatch(/^[0-9a-f]{8}$/);
    expect(status.logTail).toContain(`workers w-a, w-b joined cluster ${status.clusterId}`);
    const summary = (await api('GET', '/api/cluster/bootstrap')).json.items.find((j: Json) => j.id === id);
    expect(summary.nodes.map((n: Json) => n.workerId)).toEqual(['w-a', 'w-b']);

    for (const w of ['w-a', 'w-b']) expect((await call(bootUrl, 'GET', `/workers/${w}`)).json.cluster_id).toBe(status.clusterId);
    expect((await call(bootUrl, 'GET', '/workers/w-c')).json.cluster_id).toBeNull();
    const cluster = (await api('GET', '/api/cluster/clusters')).json.items.find((c: { id: string }) => c.id === status.clusterId);
    expect(cluster).toMatchObject({ name: 'From Workers', ready: true });
  }, 400_000);
});
