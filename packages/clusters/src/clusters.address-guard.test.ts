import { type ChildProcess, spawn } from 'node:child_process';
import { type LookupAddress, promises as dns } from 'node:dns';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort, sleep, waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedLookup, type HostResolver, isLinkLocalAddress } from './adapters/address-guard';
import { ClientNodeKube } from './adapters/kube.adapter';
import { type ClustersTestApp, multipart, startClustersApp } from './testing/app';
import { HostileApiServer } from './testing/hostile-api-server';

// Issue 18, finding 7, the gap left by h18a: a kubeconfig server given as a NAME that resolves
// to a link-local / metadata address. The names are answered by a real dnsmasq on loopback
// (no external DNS here); the cluster manager resolves through it (the `resolve` hook) and the
// adapter's guard checks every answer when it connects. Traffic stays on loopback: the guard is
// checked on its own first (the interlock in `refusedByTheGuard`), so a broken guard fails the
// test before any request that could connect to 169.254.x is made.

const DNSMASQ = '/usr/sbin/dnsmasq';
const dir = mkdtempSync(join(tmpdir(), `ironlens-dns-guard-${process.pid}-`));
const hostsFile = join(dir, 'hosts');
let dnsmasq: ChildProcess | undefined;
let resolver: HostResolver;
let api: HostileApiServer;
let t: ClustersTestApp;

/** Names dnsmasq answers, and the forbidden address each resolves to. */
const EVIL: Record<string, string> = {
  'metadata.evil.test': '169.254.169.254',
  'v6.evil.test': 'fe80::1',
  'mapped.evil.test': '::ffff:169.254.169.254',
  'ec2.evil.test': 'fd00:ec2::254',
};

/** A resolver asking the test's dnsmasq (A and AAAA), never the system's servers. */
function dnsmasqResolver(port: number): HostResolver {
  const r = new dns.Resolver({ timeout: 2000, tries: 1 });
  r.setServers([`127.0.0.1:${port}`]);
  return async (host) => {
    const [a, aaaa] = await Promise.allSettled([r.resolve4(host), r.resolve6(host)]);
    const out: LookupAddress[] = [
      ...(a.status === 'fulfilled' ? a.value.map((address) => ({ address, family: 4 })) : []),
      ...(aaaa.status === 'fulfilled' ? aaaa.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (!out.length) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return out;
  };
}

const lookupOnce = (lookup: ReturnType<typeof guardedLookup>, host: string) =>
  new Promise<string>((resolve, reject) => lookup(host, {}, (e, address) => (e ? reject(e) : resolve(String(address)))));

/** The interlock: the guard itself refuses the name before the test lets anything connect to it. */
async function refusedByTheGuard(host: string): Promise<void> {
  await expect(lookupOnce(guardedLookup(resolver), host)).rejects.toMatchObject({ code: 'cluster_address_forbidden' });
}

async function register(server: string): Promise<string> {
  const { payload, headers } = multipart({ name: `c-${Math.random().toString(36).slice(2, 8)}` }, { content: api.kubeconfig(server) });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster.id;
}

const overview = (id: string) => t.app.inject({ method: 'GET', url: `/api/cluster/overview?clusterId=${id}` });

beforeAll(async () => {
  if (!existsSync(DNSMASQ)) throw new Error(`${DNSMASQ} is missing: install the Debian package dnsmasq-base (scripts/install-test-deps.sh)`);
  writeFileSync(hostsFile, '127.0.0.1 rebind.test\n');
  const port = await freeTcpPort();
  const args = ['--keep-in-foreground', '--conf-file=/dev/null', '--no-resolv', '--no-hosts', '--bind-interfaces', '--listen-address=127.0.0.1'];
  args.push(`--port=${port}`, '--user=root', '--pid-file=', `--addn-hosts=${hostsFile}`, '--address=/good.test/127.0.0.1', '--log-facility=-');
  for (const [name, address] of Object.entries(EVIL)) args.push(`--address=/${name}/${address}`);
  dnsmasq = spawn(DNSMASQ, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  dnsmasq.stderr?.on('data', (c) => (stderr += c));
  resolver = dnsmasqResolver(port);
  await waitUntil(`dnsmasq answering on 127.0.0.1:${port}`, async () => {
    if (dnsmasq?.exitCode !== null) throw new Error(`dnsmasq exited: ${stderr.trim()}`);
    return (await resolver('good.test').catch(() => [])).length > 0;
  });
  api = new HostileApiServer();
  await api.start();
  t = await startClustersApp({ env: { IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '5000' }, deps: { resolve: resolver } });
});

afterAll(async () => {
  await t?.close();
  await api?.stop();
  if (dnsmasq?.pid) process.kill(-dnsmasq.pid, 'SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('link-local and metadata addresses', () => {
  it('tells them from other addresses, in every spelling', () => {
    for (const a of [
      '169.254.169.254',
      '169.254.0.1',
      'fe80::1',
      'FEBF::1',
      '[fe80::1%eth0]',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '0:0:0:0:0:ffff:a9fe:1',
      '::169.254.169.254',
      '64:ff9b::169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      'fd00:ec2::254',
      'fd00:ec2:0:0:0:0:0:254',
      '100.100.100.200',
    ]) {
      expect(isLinkLocalAddress(a), a).toBe(true);
    }
    for (const a of ['127.0.0.1', '10.0.0.5', '169.255.0.1', '::1', '::', 'fec0::1', '::ffff:7f00:1', '64:ff9b::7f00:1', 'fd00:ec2::253', '192.168.80.3', 'good.test']) {
      expect(isLinkLocalAddress(a), a).toBe(false);
    }
  });
});

describe('a kubeconfig server NAME resolving to a link-local / metadata address (finding 7)', () => {
  it('connects to a name that resolves to loopback, through the hook (the resolver is really used)', async () => {
    const id = await register(`http://good.test:${new URL(api.url).port}`);
    const before = api.count('/api/v1/nodes');
    const res = await overview(id);
    expect(res.statusCode, res.body).toBe(200);
    expect(api.count('/api/v1/nodes')).toBeGreaterThan(before);
  });

  it.each(Object.entries(EVIL))('refuses the connection to %s (%s) with 422 cluster_address_forbidden', async (name, address) => {
    await refusedByTheGuard(name);
    const id = await register(`http://${name}:6443`);
    const res = await overview(id);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().code).toBe('cluster_address_forbidden');
    expect(res.json().message ?? res.body).toContain(address);
    const version = await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/kubernetes-version` });
    expect(version.json()).toMatchObject({ reachable: false });
    expect(version.json().error).toContain('IRONLENS_CLUSTER_ALLOW_LINK_LOCAL');
    const list = await t.app.inject({ method: 'GET', url: '/api/cluster/clusters' });
    expect(list.json().items.find((c: { id: string }) => c.id === id)).toMatchObject({ ready: false });
  });

  it('refuses the connection to an HTTP proxy whose name resolves to a metadata address (the cluster\'s proxy settings)', async () => {
    await refusedByTheGuard('metadata.evil.test');
    const proxy = JSON.stringify({ mode: 'custom', httpProxy: 'http://metadata.evil.test:3128', httpsProxy: 'http://metadata.evil.test:3128', noProxy: null });
    const { payload, headers } = multipart({ name: `p-${process.pid}`, proxy }, { content: api.kubeconfig(`http://good.test:${new URL(api.url).port}`) });
    const reg = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
    expect(reg.statusCode, reg.body).toBe(201);
    const res = await overview(reg.json().cluster.id);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().code).toBe('cluster_address_forbidden');
  });

  it('refuses a name that resolved to loopback before and to 169.254.169.254 at the next connection (DNS rebinding)', async () => {
    const id = await register(`http://rebind.test:${new URL(api.url).port}`);
    expect((await overview(id)).statusCode).toBe(200);
    writeFileSync(hostsFile, '169.254.169.254 rebind.test\n');
    process.kill(dnsmasq!.pid!, 'SIGHUP');
    await waitUntil('dnsmasq to reread its hosts file', async () => (await resolver('rebind.test')).some((a) => a.address === '169.254.169.254'));
    await refusedByTheGuard('rebind.test');
    api.dropConnections();
    await sleep(300); // the client's keep-alive socket sees the close, so the next request connects anew
    const res = await overview(id);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().code).toBe('cluster_address_forbidden');
  });
});

describe('the guard in the adapter', () => {
  const kubeFor = (server: string, resolve: HostResolver, allowLinkLocal = false) =>
    new ClientNodeKube(api.kubeconfig(server), { proxy: { mode: 'none', httpProxy: null, httpsProxy: null, noProxy: null }, timeoutMs: 5000, resolve, allowLinkLocal });

  it('checks every answer: one forbidden address among good ones refuses the name', async () => {
    const calls: string[] = [];
    const kube = kubeFor(`http://localhost:${new URL(api.url).port}`, async (host) => {
      calls.push(host);
      return [
        { address: '127.0.0.1', family: 4 },
        { address: 'fe80::1', family: 6 },
      ];
    });
    try {
      await expect(kube.version()).rejects.toMatchObject({ code: 'cluster_address_forbidden' });
      expect(calls).toEqual(['localhost']);
    } finally {
      kube.close();
    }
  });

  it('IRONLENS_CLUSTER_ALLOW_LINK_LOCAL=1 (allowLinkLocal) leaves resolution to the system: the hook is not used', async () => {
    const calls: string[] = [];
    const resolve: HostResolver = async (host) => {
      calls.push(host);
      return [{ address: '169.254.169.254', family: 4 }];
    };
    // "localhost" comes from /etc/hosts (loopback); the hook that would say 169.254.x is not asked.
    const kube = kubeFor(`http://localhost:${new URL(api.url).port}`, resolve, true);
    try {
      await expect(kube.version()).resolves.toMatchObject({ major: '1' });
      expect(calls).toEqual([]);
    } finally {
      kube.close();
    }
  });
});
