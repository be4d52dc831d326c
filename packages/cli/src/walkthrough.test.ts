/**
 * Seed 004 §13, the operator's walkthrough, against real listeners: `ironlens serve`'s
 * provisioning listener, a real storage agent (`startAgent`) driving a real tgtd. Also the
 * storage paths of §6, §7.1–7.4, §10, §14, §15: agent errors passed through, an agent
 * that is down, install CDs. Every call is real HTTP.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { testDatabaseEnv } from '@ironlens/core/testing';
import { type AgentOnTgtd, startAgentOnTgtd } from '@ironlens/agent/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from './serve';

const CP_TOKEN = 'cp-walkthrough-token';
const CONSOLE_TOKEN = 'console-walkthrough-token';
const AGENT_TOKEN = 'agent-walkthrough-token';
const BASE_IQN = 'iqn.2026-07.com.controller';

let diskDir: string;
let agent: AgentOnTgtd;
let cp: Running;
let base: string;

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${CP_TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text };
}

async function tgtTargets(): Promise<string> {
  return (await exec(['tgtadm', '-C', String(agent.tgtd.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show'])).stdout;
}

beforeAll(async () => {
  agent = await startAgentOnTgtd({
    token: AGENT_TOKEN,
    baseIqn: BASE_IQN,
    files: { '_tpl_ubuntu_2204.img': Buffer.alloc(4 * 1024 * 1024, 7), 'Win11_24H2.iso': Buffer.alloc(1024 * 1024, 1) },
    tmpPrefix: 'ironlens-walkthrough-',
  });
  diskDir = agent.diskDir;
  cp = await serve({
    ...(await testDatabaseEnv()),
    IRONLENS_DATA_DIR: join(agent.dir, 'data'),
    IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
    // The console, for the WebUI's routes through its /api/metal proxy.
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: CONSOLE_TOKEN,
    KIND_K8S_SKIP_VERSION_LIST: '1',
    IPXE_CP_TOKEN: CP_TOKEN,
    IPXE_CP_DNSMASQ_RELOAD: 'false',
    IPXE_CP_AGENT_TIMEOUT: '3',
    // What `${IPXE_AGENT_WALKTHROUGH_TOKEN}` in an agent token expands to (IPXE_CP_AGENT_TOKEN_ENV allows IPXE_AGENT_*).
    IPXE_AGENT_WALKTHROUGH_TOKEN: AGENT_TOKEN,
  });
  base = cp.urls.boot;
});

afterAll(async () => {
  await cp?.close();
  await agent?.stop();
});

describe('§13 walkthrough against a real agent and tgtd', () => {
  it('13.1–13.2: health, and no boot vars for a machine nobody knows', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const r = await fetch(`${base}/boot-vars?mac=000c29b98b00&hostname=worker-00`);
    expect(await r.text()).toBe('#!ipxe\n# no per-worker boot vars found\n');
  });

  it('13.3: probes and registers the agent; the token is never returned', async () => {
    const probe = await api('POST', '/agents/probe', { base_url: `${agent.url}/`, token: '${IPXE_AGENT_WALKTHROUGH_TOKEN}' });
    expect(probe.status).toBe(200);
    expect(probe.json).toMatchObject({ role: { disk: true, cd: true }, tags: ['storage', 'stgt'], backend: 'stgt', base_iqn: BASE_IQN, iscsi_server: '127.0.0.1' });
    expect((await api('POST', '/agents/probe', { base_url: agent.url, token: 'wrong' })).status).toBe(502);
    expect((await api('POST', '/agents/probe', { base_url: 'http://127.0.0.1:1' })).status).toBe(502);
    expect((await api('POST', '/agents/probe', { base_url: 'ftp://x' })).status).toBe(400);

    const created = await api('POST', '/agents', {
      id: 'Storage-STGT-01',
      base_url: `${agent.url}/`,
      token: '${IPXE_AGENT_WALKTHROUGH_TOKEN}',
      iscsi_server: '192.168.80.3',
      role: { disk: true, cd: true },
      tags: ['storage', 'stgt'],
    });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ id: 'storage-stgt-01', base_url: agent.url, iscsi_server: '192.168.80.3', storager_ip: '192.168.80.3', role: { disk: true, cd: true }, enabled: true, tags: ['storage', 'stgt'] });
    expect((await api('POST', '/agents', { id: 'storage-stgt-01', base_url: agent.url })).status).toBe(409);
    expect((await api('POST', '/agents', { id: 'bad id!', base_url: agent.url })).status).toBe(400);

    const live = await api('GET', '/agents?live=true');
    expect(live.json[0]).toMatchObject({ id: 'storage-stgt-01', health: 'ok', capabilities: { backend: 'stgt', base_iqn: BASE_IQN } });
    expect(live.text).not.toContain(AGENT_TOKEN);
    expect(live.text).not.toContain('IPXE_AGENT_WALKTHROUGH_TOKEN');
    // Editing with an empty token keeps the stored one: the agent still answers.
    const put = await api('PUT', '/agents/storage-stgt-01', { base_url: agent.url, token: '', iscsi_server: '192.168.80.3', role: { disk: true, cd: true }, tags: ['storage', 'stgt'] });
    expect(put.status).toBe(200);
    expect((await api('GET', '/agents/storage-stgt-01/luns')).status).toBe(200);
    expect((await api('PUT', '/agents/nope', { base_url: agent.url })).status).toBe(404);
  });

  it('13.4–13.6: worker, system disk on the agent, default OS; /boot-vars projects the disk', async () => {
    expect((await api('POST', '/devices', { mac: '00:0c:29:b9:8b:00' })).status).toBe(201);
    const w = await api('POST', '/workers', { worker_id: 'worker-00', mac: '00:0c:29:b9:8b:00' });
    expect(w.json).toMatchObject({ state: 'registered', disks: [], mac: '00:0c:29:b9:8b:00' });

    const disk = await api('POST', '/workers/worker-00/luns/disk', { type: 'empty', os: 'ubuntu', size: '64M' });
    expect(disk.status).toBe(200);
    expect(disk.json.state).toBe('ready');
    expect(disk.json.disks).toEqual([
      {
        agent: 'storage-stgt-01',
        iqn: `${BASE_IQN}:worker-00.ubuntu`,
        filename: 'worker-00.ubuntu.img',
        backing: join(diskDir, 'worker-00.ubuntu.img'),
        os: 'ubuntu',
        source: { type: 'empty', size: '64M' },
        os_tag: 'ubuntu',
      },
    ]);
    expect(await tgtTargets()).toContain(`${BASE_IQN}:worker-00.ubuntu`);
    expect(statSync(join(diskDir, 'worker-00.ubuntu.img')).size).toBe(64 * 1024 * 1024);
    // The disk admits only the worker's initiator name, the one boot.ipxe sets (${base-iqn}:${hostname}).
    const luns = (await api('GET', '/agents/storage-stgt-01/luns')).json as { iqn: string; acl: string[] }[];
    expect(luns.find((t) => t.iqn === `${BASE_IQN}:worker-00.ubuntu`)?.acl).toEqual([`${BASE_IQN}:worker-00`]);
    // A hostname other than the worker id: the target and the initiator follow the hostname
    // (boot.ipxe's root path is ${base-iqn}:${hostname}.<os>), the file keeps the worker id.
    expect((await api('POST', '/workers', { worker_id: 'worker-h', hostname: 'rack1-node7' })).status).toBe(200);
    expect((await api('POST', '/workers/worker-h/luns/disk', { type: 'empty', os: 'debian', size: '1M' })).status).toBe(200);
    const hl = (await api('GET', '/agents/storage-stgt-01/luns')).json as { iqn: string; acl: string[] }[];
    expect(hl.find((t) => t.iqn === `${BASE_IQN}:rack1-node7.debian`)?.acl).toEqual([`${BASE_IQN}:rack1-node7`]);
    expect((await api('GET', '/workers/worker-h')).json.disks[0]).toMatchObject({ iqn: `${BASE_IQN}:rack1-node7.debian`, filename: 'worker-h.debian.img' });
    expect((await api('DELETE', '/workers/worker-h?delete_disk=true')).status).toBe(200);

    const clone = await api('POST', '/workers/worker-00/luns/disk', { type: 'master', os: 'debian', name: '_tpl_ubuntu_2204.img' });
    expect(clone.json.disks.map((d: { os: string }) => d.os)).toEqual(['ubuntu', 'debian']);
    expect(statSync(join(diskDir, 'worker-00.debian.img')).size).toBe(4 * 1024 * 1024);

    expect((await api('POST', '/workers/worker-00/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).status).toBe(409);
    expect((await api('POST', '/workers/worker-00/luns/disk', { type: 'empty', os: 'plan9', size: '1G' })).status).toBe(400);
    expect((await api('POST', '/workers/worker-00/luns/disk', { type: 'master', os: 'centos' })).status).toBe(400);
    expect((await api('POST', '/workers/worker-00/luns/disk', { type: 'empty', os: 'centos' })).status).toBe(400);
    expect((await api('POST', '/workers/nope/luns/disk', { type: 'empty', os: 'centos', size: '1G' })).status).toBe(404);
    const missing = await api('POST', '/workers/worker-00/luns/disk', { type: 'master', os: 'centos', name: '_tpl_missing.img' });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ agent: 'storage-stgt-01', error: expect.any(String) });
    expect((await api('GET', '/workers/worker-00')).json.disks).toHaveLength(2);

    expect((await api('PUT', '/workers/worker-00/default-os', { os: 'windows' })).status).toBe(400);
    const set = await api('PUT', '/workers/worker-00/default-os', { os: 'Ubuntu' });
    expect(set.json.default_os).toBe('ubuntu');
    const vars = await fetch(`${base}/boot-vars?mac=00:0c:29:b9:8b:00&hostname=worker-00&format=json`);
    expect(await vars.json()).toEqual({ base_iqn: BASE_IQN, iscsi_server: '192.168.80.3', iscsi_sep: ':::1:', menu_default: 'ubuntu', menu_timeout: 5000 });
    const script = await (await fetch(`${base}/boot-vars?mac=000c29b98b00&hostname=worker-00`)).text();
    expect(script).toBe(`#!ipxe\n# boot vars for worker-00\nset base-iqn ${BASE_IQN}\nset iscsi-server 192.168.80.3\nset iscsi-sep :::1:\nset menu-default ubuntu\nset menu-timeout 5000\n`);
  });

  it('13.7–13.8: ledger and live status agree; masters are listed', async () => {
    const status = await api('GET', '/workers/worker-00/status');
    expect(status.json.worker.worker_id).toBe('worker-00');
    expect(status.json.actual.disks).toEqual([
      { os: 'ubuntu', exists: true, target: { iqn: `${BASE_IQN}:worker-00.ubuntu`, luns: [{ backing: join(diskDir, 'worker-00.ubuntu.img') }] } },
      { os: 'debian', exists: true, target: { iqn: `${BASE_IQN}:worker-00.debian`, luns: [{ backing: join(diskDir, 'worker-00.debian.img') }] } },
    ]);
    const masters = await api('GET', '/masters');
    expect(masters.json.agents).toHaveLength(1);
    expect(masters.json.agents[0]).toMatchObject({ agent: 'storage-stgt-01', iscsi_server: '192.168.80.3' });
    expect(masters.json.agents[0].masters.map((m: { name: string }) => m.name)).toEqual(['_tpl_ubuntu_2204.img']);
  });

  it('§7.4: deleting the default disk clears default_os; delete_file removes the image', async () => {
    const r = await api('DELETE', '/workers/worker-00/luns/disk/ubuntu?delete_file=true');
    expect(r.status).toBe(200);
    expect(r.json.default_os).toBeUndefined();
    expect(r.json.disks.map((d: { os: string }) => d.os)).toEqual(['debian']);
    expect(existsSync(join(diskDir, 'worker-00.ubuntu.img'))).toBe(false);
    expect(await tgtTargets()).not.toContain(`${BASE_IQN}:worker-00.ubuntu`);
    expect((await api('DELETE', '/workers/worker-00/luns/disk/ubuntu')).status).toBe(404);
    // The projection falls back to the remaining disk, and to the reboot loop for the menu.
    const vars = await (await fetch(`${base}/boot-vars?hostname=worker-00&format=json`)).json();
    expect(vars).toMatchObject({ base_iqn: BASE_IQN, menu_default: 'reboot', menu_timeout: 1 });
  });

  it('§14: LUN management passes the agent errors through', async () => {
    const bad = await api('POST', '/agents/storage-stgt-01/luns/disk', { iqn: 'iqn.2001-01.org.other:x', size: '1M' });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ agent: 'storage-stgt-01', error: expect.stringContaining('mismatch') });
    const made = await api('POST', '/agents/storage-stgt-01/luns/disk', { iqn: `${BASE_IQN}:manual-01`, size: '8M' });
    expect(made.status).toBeLessThan(300);
    expect(made.json).toMatchObject({ iqn: `${BASE_IQN}:manual-01`, backing: join(diskDir, 'manual-01.img') });
    // Without an initiator (the spec's request), the target stays open to every initiator.
    expect((await api('GET', '/agents/storage-stgt-01/luns')).json).toContainEqual(expect.objectContaining({ iqn: `${BASE_IQN}:manual-01`, acl: ['ALL'] }));
    const del = await api('DELETE', `/agents/storage-stgt-01/luns?iqn=${BASE_IQN}:manual-01&delete_file=true`);
    expect(del.json).toMatchObject({ deleted: `${BASE_IQN}:manual-01`, delete_file: true });
    const gone = await api('DELETE', `/agents/storage-stgt-01/luns?iqn=${BASE_IQN}:manual-01`);
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ agent: 'storage-stgt-01', error: 'iqn not found' });
    const ignored = await api('DELETE', `/agents/storage-stgt-01/luns?iqn=${BASE_IQN}:manual-01&ignore_missing=true`);
    expect(ignored.json).toEqual({ deleted: `${BASE_IQN}:manual-01`, delete_file: false, ignored_missing: true });
    const scan = await api('POST', '/agents/storage-stgt-01/luns/scan');
    expect(scan.json).toHaveProperty('created');
    expect(scan.json).toHaveProperty('skipped');
    expect((await api('GET', '/agents/nope/luns')).status).toBe(404);
  });

  it('an agent that is down: 503 for its LUNs and disks, its own error entry in /masters', async () => {
    expect((await api('POST', '/agents', { id: 'ghost', base_url: 'http://127.0.0.1:1', role: { disk: true, cd: false }, tags: ['stgt'] })).status).toBe(201);
    const luns = await api('GET', '/agents/ghost/luns');
    expect(luns.status).toBe(503);
    expect(luns.json.agent).toBe('ghost');
    expect((await api('POST', '/workers/worker-00/luns/disk', { type: 'empty', os: 'centos', size: '1G', disk_agent: 'ghost' })).status).toBe(503);
    const masters = await api('GET', '/masters');
    expect(masters.status).toBe(200);
    expect(masters.json.agents.find((a: { agent: string }) => a.agent === 'ghost')).toMatchObject({ masters: [], error: expect.any(String) });
    const live = await api('GET', '/agents?live=true');
    expect(live.json.find((a: { id: string }) => a.id === 'ghost').health).toBe('unreachable');
    const ops = (await api('GET', '/operations')).json.entries;
    expect(ops.some((e: { op: string; status: string; agent: string }) => e.op === 'master.list' && e.status === 'failed' && e.agent === 'ghost')).toBe(true);
    expect((await api('PUT', '/agents/ghost', { base_url: 'http://127.0.0.1:1', enabled: false })).status).toBe(200);
  });

  it('§7.1.3: batch disks on named agents set default_os; existing ones are skipped', async () => {
    await api('POST', '/workers/batch', { count: 2, name_prefix: 'gpu-' });
    const r = await api('POST', '/workers/luns/disk/batch', {
      type: 'master',
      os: 'ubuntu',
      name: '_tpl_ubuntu_2204.img',
      targets: [
        { worker_id: 'gpu-01', agent: 'storage-stgt-01' },
        { worker_id: 'gpu-02', agent: 'storage-stgt-01' },
        { worker_id: 'gpu-09', agent: 'storage-stgt-01' },
      ],
    });
    expect(r.json.succeeded).toEqual([
      { worker_id: 'gpu-01', agent: 'storage-stgt-01', iqn: `${BASE_IQN}:gpu-01.ubuntu` },
      { worker_id: 'gpu-02', agent: 'storage-stgt-01', iqn: `${BASE_IQN}:gpu-02.ubuntu` },
    ]);
    expect(r.json.failed).toEqual([{ worker_id: 'gpu-09', agent: 'storage-stgt-01', error: 'worker not found: gpu-09' }]);
    expect((await api('GET', '/workers/gpu-01')).json.default_os).toBe('ubuntu');
    const again = await api('POST', '/workers/luns/disk/batch', { type: 'master', os: 'ubuntu', name: '_tpl_ubuntu_2204.img', targets: [{ worker_id: 'gpu-01', agent: 'storage-stgt-01' }] });
    expect(again.json.skipped).toEqual([{ worker_id: 'gpu-01', reason: 'already has a ubuntu system disk' }]);
  });

  it('§7.2: windows_iso adds an install CD (state installing); deleting the worker removes CD and disk targets but keeps the ISO', async () => {
    const w = await api('POST', '/workers', { worker_id: 'win-build', hostname: 'winbox', windows_iso: 'Win11_24H2.iso', boot: { menu_default: 'menu-install', menu_timeout: 3000 } });
    expect(w.status).toBe(200);
    expect(w.json).toMatchObject({ state: 'installing', disks: [], cd: { agent: 'storage-stgt-01', iqn: `${BASE_IQN}:winbox.windows.iso`, iso: 'Win11_24H2.iso' } });
    await api('POST', '/workers/win-build/luns/disk', { type: 'empty', os: 'windows', size: '80G' });
    expect((await api('GET', '/workers/win-build')).json.state).toBe('installing');
    // IQNs follow the hostname, which is what boot.ipxe's root path is made of.
    expect(await tgtTargets()).toContain(`${BASE_IQN}:winbox.windows.iso`);
    expect((await api('GET', '/workers/win-build')).json.disks[0]).toMatchObject({ iqn: `${BASE_IQN}:winbox.windows`, filename: 'win-build.windows.img' });
    const winLuns = (await api('GET', '/agents/storage-stgt-01/luns')).json as { iqn: string; acl: string[] }[];
    // Both admit the worker's initiator name, built from its hostname, not its id.
    expect(winLuns.find((t) => t.iqn === `${BASE_IQN}:winbox.windows.iso`)?.acl).toEqual([`${BASE_IQN}:winbox`]);
    expect(winLuns.find((t) => t.iqn === `${BASE_IQN}:winbox.windows`)?.acl).toEqual([`${BASE_IQN}:winbox`]);
    const del = await api('DELETE', '/workers/win-build?delete_disk=true');
    expect(del.json).toEqual({ deleted: 'win-build', delete_disk: true, dnsmasq_removed: false });
    const after = await tgtTargets();
    expect(after).not.toContain('winbox');
    expect(existsSync(join(diskDir, 'Win11_24H2.iso'))).toBe(true);
    expect(existsSync(join(diskDir, 'win-build.windows.img'))).toBe(false);
    expect((await api('POST', '/workers', { worker_id: 'win-2', windows_iso: 'nope.iso' })).status).toBe(404);
    expect((await api('GET', '/workers/win-2')).status).toBe(404);
  });

  it('13.9: deleting a worker keeps its images when asked, and the device returns to the pool', async () => {
    const del = await api('DELETE', '/workers/worker-00?delete_disk=false');
    expect(del.json).toEqual({ deleted: 'worker-00', delete_disk: false, dnsmasq_removed: true });
    expect(await tgtTargets()).not.toContain('worker-00');
    expect(existsSync(join(diskDir, 'worker-00.debian.img'))).toBe(true);
    expect((await api('GET', '/devices/00:0c:29:b9:8b:00')).json).toMatchObject({ state: 'pooled', bound_worker_id: null });
  });
});

/**
 * The seed control plane's current WebUI (`dutyc/ipxe-all-ready` `webui/app/src/api/client.js`,
 * issue 33 item 5), call by call as its client makes them: a bearer token, `Content-Type:
 * application/json` only when there is a body, query parameters without empty values, every
 * answer read as JSON. Its nginx strips `/api/cp` and sends the rest to the provisioning listener,
 * so the paths are seed 004's; the newer routes are replayed through the console's `/api/metal`
 * proxy as well. The same real agent and tgtd as the walkthrough.
 */
// biome-ignore lint/suspicious/noExplicitAny: JSON answers of many shapes, read by the assertions (the WebUI reads them as JSON too)
async function webui(baseUrl: string, token: string, path: string, opts: { method?: string; body?: unknown; params?: Record<string, unknown> } = {}): Promise<any> {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(opts.params ?? {})) if (v !== undefined && v !== null && v !== '') query.append(k, String(v));
  const url = `${baseUrl}${path}${query.size ? `?${query}` : ''}`;
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (opts.body) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method: opts.method ?? 'GET', headers, body: opts.body ? JSON.stringify(opts.body) : undefined });
  const json = await res.json();
  if (!res.ok) throw Object.assign(new Error(`${opts.method ?? 'GET'} ${path}: ${res.status} ${JSON.stringify(json)}`), { status: res.status, json });
  return json;
}
const refusal = (p: Promise<unknown>) => p.then(() => ({ status: 200 }), (err: { status: number; json: unknown }) => ({ status: err.status, json: err.json }));

describe('the seed control plane’s current WebUI, call by call (issue 33)', () => {
  const ui = (path: string, opts?: Parameters<typeof webui>[3]) => webui(base, CP_TOKEN, path, opts);
  const MASTER = '_tpl_ubuntu_2204.img';
  const MAC = '52:54:00:33:00:10';

  it('registration window, agents, master tags, workers, disks by os_tag, the default disk, the operations of one MAC, removal', async () => {
    expect(await ui('/healthz')).toEqual({ status: 'ok' });
    // The WebUI's sites register machines only inside a window: auto-register off first (seed 004's switch).
    await ui('/settings/auto-register', { method: 'PUT', body: { enabled: false } });
    expect(await ui('/settings/registration-window')).toEqual({ open: false, opened_at: null, ttl_minutes: null, closes_at: null, remaining_seconds: 0 });
    const opened = await ui('/settings/registration-window', { method: 'POST', body: { ttl_minutes: 10 } });
    expect(opened).toMatchObject({ open: true, ttl_minutes: 10 });
    expect(Date.parse(opened.closes_at) - Date.parse(opened.opened_at)).toBe(10 * 60_000);
    expect(await refusal(ui('/settings/registration-window', { method: 'POST', body: { ttl_minutes: 5 } }))).toMatchObject({ status: 409 });
    // A machine boots inside the window: iPXE's report puts it in the pool.
    expect((await fetch(`${base}/devices/report?mac=${MAC}&manufacturer=QEMU&serial=W1`)).status).toBe(200);
    expect(await ui('/settings/registration-window', { method: 'DELETE' })).toEqual({ open: false });
    expect((await fetch(`${base}/devices/report?mac=52:54:00:33:00:11`)).status).toBe(200);
    expect((await ui('/devices', { params: { state: 'all' } })).map((d: { mac: string }) => d.mac)).toContain(MAC);
    expect(await refusal(ui('/devices/52:54:00:33:00:11'))).toMatchObject({ status: 404 });

    // Agents: a second registry entry for the walkthrough's agent, edited as the WebUI edits (storager_ip, no token).
    await ui('/agents', { method: 'POST', body: { id: 'storage-webui', base_url: agent.url, token: '${IPXE_AGENT_WALKTHROUGH_TOKEN}', role: { disk: true, cd: false }, tags: ['storage', 'stgt'] } });
    const agents = await ui('/agents', { params: { live: true } });
    expect(agents.find((a: { id: string }) => a.id === 'storage-webui')).toMatchObject({ health: 'ok', storager_ip: null });
    const edited = await ui('/agents/storage-webui', { method: 'PUT', body: { base_url: agent.url, storager_ip: '192.168.80.7', role: { disk: true, cd: false }, tags: ['storage', 'stgt'], enabled: true } });
    expect(edited).toMatchObject({ iscsi_server: '192.168.80.7', storager_ip: '192.168.80.7' });
    // The stored token still works (the WebUI never sends one back) and probes by agent_id.
    expect(await ui('/agents/probe', { method: 'POST', body: { base_url: agent.url, agent_id: 'storage-webui' } })).toMatchObject({ backend: 'stgt', storager_ip: '127.0.0.1' });
    expect(Array.isArray(await ui('/agents/storage-webui/luns'))).toBe(true);

    // Masters and their tags.
    const tagged = await ui(`/agents/storage-webui/masters/${encodeURIComponent(MASTER)}/tag`, { method: 'PUT', body: { os: 'ubuntu', os_version: '22.04', remark: '' } });
    expect(tagged).toEqual({ agent: 'storage-webui', name: MASTER, os: 'ubuntu', os_version: '22.04', remark: '' });
    const masters = (await ui('/masters')).agents as Array<{ agent: string; storager_ip: string; masters: Array<Record<string, unknown>> }>;
    expect(masters.find((a) => a.agent === 'storage-webui')).toEqual({ agent: 'storage-webui', iscsi_server: '192.168.80.7', storager_ip: '192.168.80.7', masters: [expect.objectContaining({ name: MASTER, os: 'ubuntu', os_version: '22.04', remark: '' })] });
    expect(masters.find((a) => a.agent === 'storage-stgt-01')?.masters[0]).not.toHaveProperty('os');

    // Workers: one bound to the pooled machine, two by the batch.
    expect(await ui('/workers', { method: 'POST', body: { worker_id: 'webui-01', mac: MAC } })).toMatchObject({ mac: MAC, state: 'registered' });
    expect((await ui('/workers/batch', { method: 'POST', body: { count: 2, name_prefix: 'webui-b' } })).succeeded.map((w: { worker_id: string }) => w.worker_id)).toEqual(['webui-b01', 'webui-b02']);
    // A disk from the tagged master: the WebUI fills os/os_version from the tag and sends a remark; seed 004 keys it by os.
    const w = await ui('/workers/webui-01/luns/disk', { method: 'POST', body: { type: 'master', os: 'ubuntu', os_version: '22.04', name: MASTER, disk_agent: 'storage-webui', remark: 'from the tag' } });
    expect(w.disks).toEqual([expect.objectContaining({ agent: 'storage-webui', iqn: `${BASE_IQN}:webui-01.ubuntu`, os: 'ubuntu', os_tag: 'ubuntu' })]);
    expect(await tgtTargets()).toContain(`${BASE_IQN}:webui-01.ubuntu`);
    const batch = await ui('/workers/luns/disk/batch', { method: 'POST', body: { type: 'empty', os: 'debian', size: '8M', targets: [{ worker_id: 'webui-b01', agent: 'storage-webui' }] } });
    expect(batch.succeeded).toEqual([{ worker_id: 'webui-b01', agent: 'storage-webui', iqn: `${BASE_IQN}:webui-b01.debian` }]);

    // The default boot by the disk's os_tag, the menu's generic OS item; /boot-vars projects it.
    const set = await ui('/workers/webui-01/default-disk', { method: 'PUT', body: { disk: w.disks[0].os_tag, menu_default: 'boot-os', menu_timeout: 3000 } });
    expect(set).toMatchObject({ default_os: 'ubuntu', boot: { menu_default: 'ubuntu', menu_timeout: 3000 } });
    expect(await (await fetch(`${base}/boot-vars?mac=${MAC}&hostname=webui-01&format=json`)).json()).toEqual({ base_iqn: BASE_IQN, iscsi_server: '192.168.80.7', iscsi_sep: ':::1:', menu_default: 'ubuntu', menu_timeout: 3000 });
    expect((await ui('/workers/webui-01/status')).actual.disks).toEqual([expect.objectContaining({ os: 'ubuntu', exists: true })]);

    // The operations of one machine, paged as the WebUI pages them.
    const page = await ui('/operations', { params: { since: 0, limit: 50, mac: MAC.replace(/:/g, '-').toUpperCase() } });
    expect(page.entries.map((e: { op: string }) => e.op)).toEqual(['device.register', 'worker.create', 'device.bind']);
    expect(page.entries.every((e: { mac: string }) => e.mac === MAC)).toBe(true);
    expect((await ui('/operations', { params: { since: page.next_cursor, limit: 50, mac: MAC } })).entries).toEqual([]);

    // The agent holds disks: it stays until they are gone.
    expect(await refusal(ui('/agents/storage-webui', { method: 'DELETE' }))).toMatchObject({ status: 409, json: { disks: ['webui-01', 'webui-b01'], cds: [] } });
    expect((await ui(`/workers/webui-01/luns/disk/${w.disks[0].os_tag}`, { method: 'DELETE', params: { delete_file: true, ignore_missing_target: false } })).disks).toEqual([]);
    expect(existsSync(join(diskDir, 'webui-01.ubuntu.img'))).toBe(false);
    expect(await ui('/workers/webui-01', { method: 'DELETE', params: { delete_disk: false, ignore_missing_target: false } })).toEqual({ deleted: 'webui-01', delete_disk: false, dnsmasq_removed: true });
    expect((await ui('/workers/delete/batch', { method: 'POST', body: { worker_ids: ['webui-b01', 'webui-b02'], delete_disk: true, ignore_missing_target: true } })).succeeded).toHaveLength(2);
    expect(await ui(`/agents/storage-webui/masters/${encodeURIComponent(MASTER)}/tag`, { method: 'DELETE' })).toEqual({ agent: 'storage-webui', name: MASTER, removed: true });
    await ui(`/agents/storage-webui/masters/${encodeURIComponent(MASTER)}/tag`, { method: 'PUT', body: { os: 'ubuntu' } });
    expect(await ui('/agents/storage-webui', { method: 'DELETE' })).toEqual({ deleted: 'storage-webui', master_tags_removed: true });
    expect((await ui('/agents', { params: { live: false } })).map((a: { id: string }) => a.id)).not.toContain('storage-webui');
  });

  it('the newer routes through the console’s /api/metal proxy, with the console’s token', async () => {
    const metal = (path: string, opts?: Parameters<typeof webui>[3]) => webui(`${cp.urls.console}/api/metal`, CONSOLE_TOKEN, path, opts);
    expect(await metal('/settings/registration-window', { method: 'POST', body: { ttl_minutes: 1 } })).toMatchObject({ open: true, ttl_minutes: 1 });
    expect(await metal('/settings/registration-window')).toMatchObject({ open: true });
    expect(await metal('/settings/registration-window', { method: 'DELETE' })).toEqual({ open: false });
    expect(await metal(`/agents/storage-stgt-01/masters/${MASTER}/tag`, { method: 'PUT', body: { os: 'ubuntu', os_version: '22.04' } })).toMatchObject({ os: 'ubuntu' });
    expect((await metal('/masters')).agents.find((a: { agent: string }) => a.agent === 'storage-stgt-01').masters[0]).toMatchObject({ os: 'ubuntu', os_version: '22.04' });
    expect(await metal(`/agents/storage-stgt-01/masters/${MASTER}/tag`, { method: 'DELETE' })).toMatchObject({ removed: true });
    await metal('/workers', { method: 'POST', body: { worker_id: 'webui-proxy' } });
    expect(await metal('/workers/webui-proxy/default-disk', { method: 'PUT', body: { menu_default: 'exit', menu_timeout: 0 } })).toMatchObject({ boot: { menu_default: 'exit', menu_timeout: 0 } });
    expect(await metal('/workers/webui-proxy', { method: 'DELETE' })).toMatchObject({ deleted: 'webui-proxy' });
  });
});
