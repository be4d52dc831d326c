import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { freeTcpPort } from '@ironlens/agent/testing';
import { partOf } from '@ironlens/core';
import { sleep, testDatabaseEnv } from '@ironlens/core/testing';
import { createMetalServices, metalConfigFromEnv } from '@ironlens/metal';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { describeAddress, isLoopback } from './address';
import { main, parseArgs } from './main';
import { openStore, serve } from './serve';

let dir: string;
// The test's store: the data dir's SQLite file, or a fresh PostgreSQL database in the suite's PostgreSQL run.
let dbEnv: Record<string, string>;
const env = () => ({ IRONLENS_DATA_DIR: join(dir, 'data'), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: 'off', IPXE_CP_DNSMASQ_RELOAD: 'false', ...dbEnv });

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-cli-'));
  dbEnv = await testDatabaseEnv();
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens serve', () => {
  it('re-renders dhcp-hosts.conf from the store at start (a crash between commit and file write is repaired)', async () => {
    const store = await openStore(env());
    const metal = createMetalServices({ store: partOf(store), config: metalConfigFromEnv(env(), join(dir, 'data')) });
    await metal.devices.register({ mac: '02:00:00:00:00:01' }, {});
    await metal.workers.create({ worker_id: 'w1', mac: '02:00:00:00:00:01' }, {});
    await store.close();
    const hosts = join(dir, 'data', 'dnsmasq', 'dhcp-hosts.conf');
    writeFileSync(hosts, 'stale\n');
    const running = await serve(env());
    try {
      expect(readFileSync(hosts, 'utf8')).toBe('02:00:00:00:00:01,w1,infinite\n');
      const res = await fetch(`${running.urls.boot}/workers/w1`);
      expect((await res.json()).mac).toBe('02:00:00:00:00:01');
    } finally {
      await running.close();
    }
  });

  it('writes the last_seen of the reports it answered before it closes the store (issue 32, item 9)', async () => {
    const running = await serve({ ...env(), IRONLENS_REPORT_LAST_SEEN_SECONDS: '0' });
    const report = () => fetch(`${running.urls.boot}/devices/report?mac=02:00:00:00:00:09&manufacturer=QEMU`);
    let first: string;
    try {
      expect((await report()).status).toBe(200);
      first = (await (await fetch(`${running.urls.boot}/devices/02:00:00:00:00:09`)).json()).last_seen;
      await sleep(1_100); // into the next second: the unchanged report's last_seen differs
      expect((await report()).status).toBe(200); // answered from memory; its last_seen is due within a second
    } finally {
      await running.close();
    }
    const store = await openStore(env());
    try {
      const metal = createMetalServices({ store: partOf(store), config: metalConfigFromEnv(env(), join(dir, 'data')) });
      const d = await metal.devices.get('02:00:00:00:00:09');
      expect(Date.parse(d.last_seen ?? '')).toBeGreaterThan(Date.parse(first));
    } finally {
      await store.close();
    }
  });

  it('switches a listener off with `off`', async () => {
    const running = await serve({ ...env(), IRONLENS_BOOT_LISTEN: 'off' });
    expect(running.urls).toEqual({});
    await running.close();
  });

  it('makes the console’s kind API require IRONLENS_CONSOLE_TOKEN when it is set; the dashboard and docs stay open', async () => {
    const token = 'console-token-for-test';
    const running = await serve({ ...env(), IRONLENS_BOOT_LISTEN: 'off', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_TOKEN: token });
    try {
      const url = `${running.urls.console}/kind/api/v1/jobs?limit=5`;
      const anonymous = await fetch(url);
      expect(anonymous.status).toBe(401);
      expect(typeof (await anonymous.json()).detail).toBe('string');
      expect((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const ok = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual([]);
      expect((await fetch(`${running.urls.console}/kind/`)).status).not.toBe(401);
      expect((await fetch(`${running.urls.console}/openapi.json`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });

  it('leaves the console’s kind API open without IRONLENS_CONSOLE_TOKEN (loopback by default)', async () => {
    const running = await serve({ ...env(), IRONLENS_BOOT_LISTEN: 'off', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0' });
    try {
      expect((await fetch(`${running.urls.console}/kind/api/v1/jobs?limit=5`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });

  it('closes the provisioning listener it opened when the console port is taken, and names the setting to change', async () => {
    const bootPort = await freeTcpPort();
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const takenPort = (taken.address() as AddressInfo).port;
    const lines: string[] = [];
    try {
      const err = await serve({ ...env(), IRONLENS_BOOT_LISTEN: `127.0.0.1:${bootPort}`, IRONLENS_CONSOLE_LISTEN: `127.0.0.1:${takenPort}` }, (l) => lines.push(l)).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toContain(`127.0.0.1:${takenPort}`);
      expect(err?.message).toContain('EADDRINUSE');
      expect(err?.message).toContain('IRONLENS_CONSOLE_LISTEN (--console-listen)');
      expect(lines.some((l) => l.startsWith(`provisioning API on 127.0.0.1:${bootPort}`))).toBe(true); // it did listen before the failure
      await expect(fetch(`http://127.0.0.1:${bootPort}/healthz`)).rejects.toThrow(); // and is closed now
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('names IRONLENS_BOOT_LISTEN when the provisioning port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    try {
      const port = (taken.address() as AddressInfo).port;
      await expect(serve({ ...env(), IRONLENS_BOOT_LISTEN: `127.0.0.1:${port}` }, () => {})).rejects.toThrow(/IRONLENS_BOOT_LISTEN \(--boot-listen\)/);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('prints a wildcard listener as every interface, and a bound one as itself', () => {
    expect(describeAddress('0.0.0.0', 4839)).toBe('0.0.0.0:4839 — every interface');
    expect(describeAddress('::', 4839)).toBe('[::]:4839 — every interface');
    expect(describeAddress('127.0.0.1', 8080)).toBe('127.0.0.1:8080');
    expect(describeAddress('::1', 8080)).toBe('[::1]:8080');
  });

  it('tells loopback addresses (the console needs no token there) from the others', () => {
    for (const a of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']) expect(isLoopback(a), a).toBe(true);
    for (const a of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.1', '::ffff:10.0.0.1', '1127.0.0.1']) expect(isLoopback(a), a).toBe(false);
  });

  it('tells the truth at start: the bound address, the missing provisioning token, the console token state', async () => {
    const lines: string[] = [];
    const bootPort = await freeTcpPort();
    const running = await serve({ ...env(), IRONLENS_BOOT_LISTEN: `127.0.0.2:${bootPort}`, IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0' }, (l) => lines.push(l));
    try {
      const consolePort = new URL(running.urls.console).port;
      expect(lines).toContain('dnsmasq reload: no reload');
      expect(lines.find((l) => l.startsWith('provisioning API on'))).toBe(`provisioning API on 127.0.0.2:${bootPort} (http://127.0.0.2:${bootPort}; docs at /docs, /redoc)`);
      expect(lines).toContain(`warning: IPXE_CP_TOKEN is not set: the provisioning API (workers, devices, agents, settings) is open to anyone who reaches 127.0.0.2:${bootPort}`);
      expect(lines.find((l) => l.startsWith('console on'))).toBe(
        `console on 127.0.0.1:${consolePort} (http://127.0.0.1:${consolePort}/; provisioning API at /api/metal, kind panel at /kind/, kind API at /kind/api/v1, cluster manager at /api/cluster; no token: IRONLENS_CONSOLE_TOKEN is not set)`,
      );
      expect(await (await fetch(`${running.urls.console}/healthz`)).json()).toEqual({ status: 'ok' });
    } finally {
      await running.close();
    }
    const quiet: string[] = [];
    const guarded = await serve({ ...env(), IPXE_CP_TOKEN: 'cp-token', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_TOKEN: 'console-token' }, (l) => quiet.push(l));
    await guarded.close();
    expect(quiet.some((l) => l.includes('IPXE_CP_TOKEN'))).toBe(false);
    expect(quiet.find((l) => l.startsWith('console on'))).toContain('bearer token required (IRONLENS_CONSOLE_TOKEN)');
    expect(quiet.join('\n')).not.toContain('console-token');
  });

  it('serves the cluster manager at seed 000’s paths on the console listener, behind IRONLENS_CONSOLE_TOKEN', async () => {
    const token = 'console-token-for-clusters';
    const running = await serve({ ...env(), IRONLENS_BOOT_LISTEN: 'off', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_TOKEN: token });
    try {
      const anonymous = await fetch(`${running.urls.console}/api/cluster/clusters`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('content-type')).toContain('application/problem+json');
      expect((await anonymous.json()).code).toBe('auth_required');
      const auth = { headers: { authorization: `Bearer ${token}` } };
      const list = await fetch(`${running.urls.console}/api/cluster/clusters`, auth);
      expect(await list.json()).toEqual({ items: [] });
      expect((await (await fetch(`${running.urls.console}/api/v1/versions`, auth)).json()).llm_d).toBe('v0.10.0');
    } finally {
      await running.close();
    }
  });

  it('on an ephemeral console port (0), the gateway’s authorization hook takes the port the console bound', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    // The reconcile's CRD bundles come from a mirror on that closed port too: nothing leaves loopback.
    const running = await serve({ ...env(), IRONLENS_BOOT_LISTEN: 'off', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_GITHUB_MIRROR: `http://127.0.0.1:${port}` });
    try {
      const kubeconfig = YAML.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}` } }],
        users: [{ name: 'u', user: { token: 'kube-token' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      });
      const form = new FormData();
      form.set('name', 'ephemeral-console');
      form.set('gatewayProvider', 'envoy-ai-gateway');
      form.set('gatewayAuthzHost', '192.0.2.10');
      form.set('file', new Blob([kubeconfig]), 'kubeconfig.yaml');
      const res = await fetch(`${running.urls.console}/api/cluster/clusters`, { method: 'POST', body: form });
      const body = (await res.json()) as { cluster: { id: string } };
      expect(res.status, JSON.stringify(body)).toBe(201);
      // The cluster and the mirror cannot be reached here: the reconcile fails there, not on the
      // hook's port; what the status says of that port needs no cluster.
      type Status = { authz: { state: string; reason: string | null }; lastOperation: { status: string; message: string } | null };
      let st: Status;
      const end = Date.now() + 60_000;
      for (;;) {
        st = (await (await fetch(`${running.urls.console}/api/cluster/clusters/${body.cluster.id}/gateway/status`)).json()) as Status;
        if (st.lastOperation && st.lastOperation.status !== 'running') break;
        if (Date.now() > end) throw new Error(`the reconcile did not finish: ${JSON.stringify(st)}`);
        await sleep(200);
      }
      expect(st.lastOperation.status).toBe('failed');
      expect(st.lastOperation.message).not.toMatch(/authz port|gateway_authz_port_unknown/);
      expect(st.authz.reason).toBeNull();
      expect(st.authz.state).not.toBe('failed');
    } finally {
      await running.close();
    }
  });

  it('maps flags onto the environment names', () => {
    expect(parseArgs(['serve', '--data-dir', '/x', '--boot-listen=127.0.0.1:1']).env).toEqual({ IRONLENS_DATA_DIR: '/x', IRONLENS_BOOT_LISTEN: '127.0.0.1:1' });
  });
});

describe('ironlens import / export', () => {
  it('imports the old file layout, including bindings that only dhcp-hosts.conf knows, and exports it back', async () => {
    const old = join(dir, 'old');
    for (const d of ['config', 'state', 'dnsmasq']) mkdirSync(join(old, d), { recursive: true });
    writeFileSync(
      join(old, 'config/agents.yml'),
      YAML.stringify({ agents: { 'storage-lio-01': { base_url: 'http://10.0.0.11:4840', token: '${LIO_TOKEN}', iscsi_server: '192.168.80.3', role: { disk: true, cd: false }, tags: ['storage', 'lio'], enabled: true } } }),
    );
    writeFileSync(
      join(old, 'state/workers.yml'),
      YAML.stringify({
        workers: {
          'worker-01': {
            hostname: 'worker-01',
            arch: 'x86_64',
            state: 'ready',
            default_os: 'ubuntu',
            disks: [{ agent: 'storage-lio-01', iqn: 'iqn.2026-07.com.controller:worker-01.ubuntu', filename: 'worker-01.ubuntu.img', backing: '/home/iscsi_img/worker-01.ubuntu.img', os: 'ubuntu', source: { type: 'master', name: '_tpl_ubuntu_2204.img' } }],
            cd: null,
          },
          'worker-02': { hostname: 'worker-02', arch: 'x86_64', state: 'registered', disks: [], cd: null },
        },
      }),
    );
    writeFileSync(join(old, 'state/devices.yml'), YAML.stringify({ devices: { '00:0c:29:00:00:02': { mac: '00:0c:29:00:00:02', state: 'bound', bound_worker_id: 'worker-02', source: 'ipxe', fingerprint: { serial: 'S2' } } } }));
    writeFileSync(join(old, 'state/settings.json'), '{"auto_register": false}\n');
    writeFileSync(
      join(old, 'state/operations.jsonl'),
      '{"id":1,"ts":"2026-07-27T14:20:00+00:00","op":"create_worker","status":"started","worker_id":"worker-01","client":"172.18.0.1"}\n{"id":7,"ts":"2026-07-27T14:25:00+00:00","op":"set_default_os","status":"ok","worker_id":"worker-01"}\n',
    );
    writeFileSync(join(old, 'dnsmasq/dhcp-hosts.conf'), '00:0c:29:00:00:01,worker-01\n00:0c:29:00:00:02,worker-02\n');

    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    let code: number;
    try {
      // `main` reads the process environment; the stubs are undone after the test.
      vi.stubEnv('IRONLENS_DATA_DIR', join(dir, 'data'));
      vi.stubEnv('IPXE_CP_DNSMASQ_RELOAD', 'false');
      for (const [k, v] of Object.entries(dbEnv)) vi.stubEnv(k, v);
      code = await main(['import', old]);
    } finally {
      process.stdout.write = write;
    }
    expect(code).toBe(0);
    expect(JSON.parse(out.join(''))).toMatchObject({ agents: 1, workers: 2, devices: 2, bindings_from_dhcp_hosts: 1, operations: 2 });
    expect(await main(['import', old])).toBe(1); // refuses to import over a ledger

    const running = await serve(env());
    try {
      const vars = await (await fetch(`${running.urls.boot}/boot-vars?mac=000c29000001&hostname=worker-01&format=json`)).json();
      expect(vars).toEqual({ base_iqn: 'iqn.2026-07.com.controller', iscsi_server: '192.168.80.3', iscsi_sep: '::::', menu_default: 'ubuntu', menu_timeout: 5000 });
      expect(await (await fetch(`${running.urls.boot}/settings/auto-register`)).json()).toEqual({ enabled: false });
      const ops = await (await fetch(`${running.urls.boot}/operations`)).json();
      expect(ops.entries[0]).toEqual({ id: 1, ts: '2026-07-27T14:20:00+00:00', op: 'create_worker', status: 'started', worker_id: 'worker-01', client: '172.18.0.1' });
      // New entries are numbered after the imported ids (PostgreSQL: the identity sequence was moved past them).
      expect((await fetch(`${running.urls.boot}/devices`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"mac":"02:00:00:00:00:09"}' })).status).toBe(201);
      const after = await (await fetch(`${running.urls.boot}/operations`)).json();
      expect(after.entries.map((e: { id: number; op: string }) => [e.id, e.op])).toEqual([
        [1, 'create_worker'],
        [7, 'set_default_os'],
        [8, 'device.register'],
      ]);
      expect(readFileSync(join(dir, 'data', 'dnsmasq', 'dhcp-hosts.conf'), 'utf8')).toBe('00:0c:29:00:00:01,worker-01,infinite\n00:0c:29:00:00:02,worker-02,infinite\n');
    } finally {
      await running.close();
    }

    const back = join(dir, 'back');
    const write2 = process.stdout.write.bind(process.stdout);
    process.stdout.write = (() => true) as typeof process.stdout.write;
    try {
      expect(await main(['export', back, '--data-dir', join(dir, 'data')])).toBe(0);
    } finally {
      process.stdout.write = write2;
    }
    const agents = YAML.parse(readFileSync(join(back, 'config/agents.yml'), 'utf8'));
    expect(agents.agents['storage-lio-01']).toMatchObject({ base_url: 'http://10.0.0.11:4840', token: '${LIO_TOKEN}', tags: ['storage', 'lio'] });
    const workers = YAML.parse(readFileSync(join(back, 'state/workers.yml'), 'utf8'));
    expect(workers.workers['worker-01']).toMatchObject({ hostname: 'worker-01', state: 'ready', default_os: 'ubuntu' });
    expect(workers.workers['worker-01'].mac).toBeUndefined();
    expect(readFileSync(join(back, 'dnsmasq/dhcp-hosts.conf'), 'utf8')).toBe('00:0c:29:00:00:01,worker-01\n00:0c:29:00:00:02,worker-02\n');
    expect(
      readFileSync(join(back, 'state/operations.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    ).toEqual([1, 7, 8]);
    expect(JSON.parse(readFileSync(join(back, 'state/settings.json'), 'utf8'))).toEqual({ auto_register: false });
  });
});
