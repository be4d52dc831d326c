/**
 * The routes the seed control plane's current WebUI calls that seed 004 does not have (issue 33,
 * item 5; `dutyc/ipxe-all-ready` `webui/app/src/api/client.js` and its `api/control-plane-api.en.md`):
 * the registration window, removing an agent, master tags, the default boot by disk key, and the
 * `storager_ip` name of an agent's data-plane address. Each rule with the request that breaks it.
 * The storage agent is `FakeAgent` (its protocol, contract-tested against the real agent); the
 * WebUI's whole flow against a real agent on tgtd is in packages/cli/src/walkthrough.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const TOKEN = 'webui-t0ken';
const MASTER = '_tpl_debian_12.img';
let f: MetalFixture;
let agent: FakeAgent;
/** The fixture's clock: moved by the tests, never waited on. */
let clock = Date.parse('2026-08-21T10:00:00Z');

const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => f.app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, payload: payload as object });
const report = (mac: string) => f.app.inject({ url: `/devices/report?mac=${mac}` });
const pooled = async (mac: string) => (await api('GET', `/devices/${mac}`)).statusCode === 200;
const ops = async (op: string) => ((await api('GET', '/operations')).json().entries as Array<Record<string, unknown>>).filter((e) => e.op === op);

beforeEach(async () => {
  clock = Date.parse('2026-08-21T10:00:00Z');
  agent = await new FakeAgent({ masters: [MASTER, '_tpl_ubuntu_2204.img'] }).start();
  // Auto-register off, as a site that registers machines by hand runs it.
  f = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN, IPXE_CP_AUTO_REGISTER: 'false' }, { now: () => clock });
  expect((await api('POST', '/agents', { id: 'a1', base_url: agent.url, role: { disk: true, cd: true }, iscsi_server: '10.0.0.3' })).statusCode).toBe(201);
});
afterEach(async () => {
  await f.close();
  await agent.stop();
});

describe('the registration window (GET/POST/DELETE /settings/registration-window)', () => {
  const CLOSED = { open: false, opened_at: null, ttl_minutes: null, closes_at: null, remaining_seconds: 0 };

  it('opens auto-register for ttl_minutes, answers 201 with the window, and closes by itself', async () => {
    expect((await api('GET', '/settings/registration-window')).json()).toEqual(CLOSED);
    const opened = await api('POST', '/settings/registration-window', { ttl_minutes: 30 });
    expect(opened.statusCode).toBe(201);
    expect(opened.json()).toEqual({ open: true, opened_at: '2026-08-21T10:00:00+00:00', ttl_minutes: 30, closes_at: '2026-08-21T10:30:00+00:00', remaining_seconds: 1800 });
    // Seed 004's switch shows it: on, with the moment it closes.
    expect((await api('GET', '/settings/auto-register')).json()).toEqual({ enabled: true, closes_at: '2026-08-21T10:30:00+00:00' });
    await report('52:54:00:33:00:01');
    expect(await pooled('52:54:00:33:00:01')).toBe(true);
    clock += 10 * 60_000 + 500;
    expect((await api('GET', '/settings/registration-window')).json()).toMatchObject({ open: true, remaining_seconds: 1199 });
    clock += 20 * 60_000;
    expect((await api('GET', '/settings/registration-window')).json()).toEqual(CLOSED);
    expect((await api('GET', '/settings/auto-register')).json()).toEqual({ enabled: false });
    await report('52:54:00:33:00:02');
    expect(await pooled('52:54:00:33:00:02')).toBe(false);
    expect(await ops('settings.auto_register')).toEqual([expect.objectContaining({ enabled: true, via: 'settings.registration_window' }), expect.objectContaining({ enabled: false, reason: 'window_closed' })]);
    expect(await ops('settings.registration_window')).toEqual([expect.objectContaining({ status: 'open', ttl_minutes: 30, closes_at: '2026-08-21T10:30:00+00:00' })]);
  });

  it('refuses a ttl outside 1-60 (400), a ttl that is not an integer (422), and a second window while one is open (409)', async () => {
    for (const ttl of [0, 61, -5]) expect((await api('POST', '/settings/registration-window', { ttl_minutes: ttl })).statusCode, String(ttl)).toBe(400);
    for (const body of [{ ttl_minutes: '30' }, { ttl_minutes: 1.5 }, {}]) expect((await api('POST', '/settings/registration-window', body)).statusCode, JSON.stringify(body)).toBe(422);
    expect((await api('GET', '/settings/auto-register')).json()).toEqual({ enabled: false });
    expect((await api('POST', '/settings/registration-window', { ttl_minutes: 1 })).statusCode).toBe(201);
    expect((await api('POST', '/settings/registration-window', { ttl_minutes: 60 })).statusCode).toBe(409);
    // Once it has closed by itself, a new one opens over the old record.
    clock += 60_000;
    expect((await api('POST', '/settings/registration-window', { ttl_minutes: 60 })).json()).toMatchObject({ open: true, ttl_minutes: 60, remaining_seconds: 3600 });
  });

  it('DELETE closes it early (auto-register off), forgets one that closed by itself, and is a 409 without any', async () => {
    expect((await api('DELETE', '/settings/registration-window')).statusCode).toBe(409);
    await api('POST', '/settings/registration-window', { ttl_minutes: 15 });
    const closed = await api('DELETE', '/settings/registration-window');
    expect(closed.statusCode).toBe(200);
    expect(closed.json()).toEqual({ open: false });
    expect((await api('GET', '/settings/auto-register')).json()).toEqual({ enabled: false });
    await report('52:54:00:33:00:03');
    expect(await pooled('52:54:00:33:00:03')).toBe(false);
    expect((await api('DELETE', '/settings/registration-window')).statusCode).toBe(409);
    await api('POST', '/settings/registration-window', { ttl_minutes: 5 });
    clock += 5 * 60_000;
    expect((await api('DELETE', '/settings/registration-window')).statusCode).toBe(200);
    expect((await ops('settings.registration_window')).map((e) => e.status)).toEqual(['open', 'close', 'open', 'close']);
  });

  it('seed 004’s switch takes over: PUT /settings/auto-register ends the window and keeps the value it sets', async () => {
    await api('POST', '/settings/registration-window', { ttl_minutes: 10 });
    expect((await api('PUT', '/settings/auto-register', { enabled: true })).json()).toEqual({ enabled: true });
    expect((await api('GET', '/settings/registration-window')).json()).toEqual(CLOSED);
    clock += 60 * 60_000;
    // No deadline left: on until switched off, as seed 004 §5.1 says.
    expect((await api('GET', '/settings/auto-register')).json()).toEqual({ enabled: true });
    expect((await api('DELETE', '/settings/registration-window')).statusCode).toBe(409);
  });

  it('a window opened over a permanently-on switch leaves auto-register off when it closes', async () => {
    await api('PUT', '/settings/auto-register', { enabled: true });
    await api('POST', '/settings/registration-window', { ttl_minutes: 2 });
    clock += 2 * 60_000;
    expect((await api('GET', '/settings/auto-register')).json()).toEqual({ enabled: false });
  });
});

describe('DELETE /agents/{agent_id}', () => {
  it('refuses (409 agent_in_use) while a worker’s system disk or install CD is on the agent; then removes it with its master tags', async () => {
    expect((await api('DELETE', '/agents/nobody')).statusCode).toBe(404);
    await api('POST', '/workers', { worker_id: 'w1' });
    expect((await api('POST', '/workers/w1/luns/disk', { type: 'master', os: 'debian', name: MASTER })).statusCode).toBe(200);
    await api('PUT', `/agents/a1/masters/${MASTER}/tag`, { os: 'debian', os_version: '12' });
    const refused = await api('DELETE', '/agents/A1');
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ disks: ['w1'], cds: [] });
    expect((await api('GET', '/agents?live=false')).json().map((a: { id: string }) => a.id)).toEqual(['a1']);
    expect((await api('DELETE', '/workers/w1/luns/disk/debian')).statusCode).toBe(200);
    await api('POST', '/workers', { worker_id: 'w2', windows_iso: 'win.iso' });
    expect((await api('DELETE', '/agents/a1')).json()).toMatchObject({ disks: [], cds: ['w2'] });
    expect((await api('DELETE', '/workers/w2')).statusCode).toBe(200);
    const deleted = await api('DELETE', '/agents/a1');
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ deleted: 'a1', master_tags_removed: true });
    expect((await api('GET', '/agents?live=false')).json()).toEqual([]);
    expect(await ops('agent.delete')).toEqual([expect.objectContaining({ agent: 'a1', master_tags_removed: 1 })]);
    // Registered again under the same id, it has no tags left.
    await api('POST', '/agents', { id: 'a1', base_url: agent.url, role: { disk: true } });
    expect((await api('GET', '/masters')).json().agents[0].masters).toEqual([
      { name: MASTER, size: 0, mtime: 0 },
      { name: '_tpl_ubuntu_2204.img', size: 0, mtime: 0 },
    ]);
  });
});

describe('master tags (PUT/DELETE /agents/{agent_id}/masters/{master_name}/tag)', () => {
  it('annotates a master (os lower-cased) and GET /masters shows it on that master only', async () => {
    const put = await api('PUT', `/agents/a1/masters/${MASTER}/tag`, { os: 'Debian', os_version: '12.5', remark: 'lab image, CUDA 12' });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toEqual({ agent: 'a1', name: MASTER, os: 'debian', os_version: '12.5', remark: 'lab image, CUDA 12' });
    expect((await api('GET', '/masters')).json()).toEqual({
      agents: [
        {
          agent: 'a1',
          iscsi_server: '10.0.0.3',
          storager_ip: '10.0.0.3',
          masters: [
            { name: MASTER, size: 0, mtime: 0, os: 'debian', os_version: '12.5', remark: 'lab image, CUDA 12' },
            { name: '_tpl_ubuntu_2204.img', size: 0, mtime: 0 },
          ],
        },
      ],
    });
    // What the WebUI sends by default: os_version and remark empty.
    expect((await api('PUT', '/agents/a1/masters/_tpl_ubuntu_2204.img/tag', { os: 'ubuntu', os_version: '', remark: '' })).json()).toEqual({ agent: 'a1', name: '_tpl_ubuntu_2204.img', os: 'ubuntu', os_version: '', remark: '' });
    // A master the agent does not list (it may be down) can be tagged; it shows nowhere.
    expect((await api('PUT', '/agents/a1/masters/_tpl_future.img/tag', { os: 'rocky' })).statusCode).toBe(200);
    expect((await api('DELETE', `/agents/a1/masters/${MASTER}/tag`)).json()).toEqual({ agent: 'a1', name: MASTER, removed: true });
    expect((await api('DELETE', `/agents/a1/masters/${MASTER}/tag`)).json()).toEqual({ agent: 'a1', name: MASTER, removed: false });
    expect((await api('GET', '/masters')).json().agents[0].masters[0]).toEqual({ name: MASTER, size: 0, mtime: 0 });
    expect((await ops('master.tag')).length).toBe(3);
    expect((await ops('master.tag.clear')).map((e) => e.removed)).toEqual([true, false]);
  });

  it('refuses an unknown agent (404) and a bad os, os_version, remark or master name (400)', async () => {
    expect((await api('PUT', `/agents/nobody/masters/${MASTER}/tag`, { os: 'debian' })).statusCode).toBe(404);
    expect((await api('DELETE', `/agents/nobody/masters/${MASTER}/tag`)).statusCode).toBe(404);
    for (const body of [{ os: '' }, { os: 'deb ian' }, { os: 'x'.repeat(33) }, { os: 'debian', os_version: '12;reboot' }, { os: 'debian', remark: 'a\u001b[2Jb' }, { os: 'debian', remark: 'txt\u202eexe' }, { os: 'debian', remark: 'r'.repeat(201) }]) {
      expect((await api('PUT', `/agents/a1/masters/${MASTER}/tag`, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await api('PUT', '/agents/a1/masters/.hidden/tag', { os: 'debian' })).statusCode).toBe(400);
    expect((await api('PUT', '/agents/a1/masters/a%20b/tag', { os: 'debian' })).statusCode).toBe(400);
    expect((await api('PUT', `/agents/a1/masters/${MASTER}/tag`, { os_version: '12' })).statusCode).toBe(422);
  });

  it('is an annotation only: a disk keeps seed 004’s os list whatever a tag says', async () => {
    await api('PUT', `/agents/a1/masters/${MASTER}/tag`, { os: 'rocky' });
    await api('POST', '/workers', { worker_id: 'w1' });
    expect((await api('POST', '/workers/w1/luns/disk', { type: 'master', os: 'rocky', name: MASTER })).statusCode).toBe(400);
  });
});

describe('PUT /workers/{worker_id}/default-disk', () => {
  beforeEach(async () => {
    await api('POST', '/workers', { worker_id: 'w1' });
  });

  it('names a disk by its os_tag (the disk’s os) and sets what /default-os sets', async () => {
    expect((await api('PUT', '/workers/w1/default-disk', { disk: 'debian' })).statusCode).toBe(409);
    const w = (await api('POST', '/workers/w1/luns/disk', { type: 'master', os: 'debian', name: MASTER })).json();
    expect(w.disks.map((d: { os: string; os_tag: string }) => [d.os, d.os_tag])).toEqual([['debian', 'debian']]);
    const set = await api('PUT', '/workers/w1/default-disk', { disk: 'debian', menu_timeout: 3000 });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ default_os: 'debian', boot: { menu_timeout: 3000 } });
    expect((await f.app.inject({ url: '/boot-vars?hostname=w1&format=json' })).json()).toMatchObject({ iscsi_server: '10.0.0.3', menu_default: 'debian', menu_timeout: 3000 });
    expect((await api('PUT', '/workers/w1/default-disk', { disk: 'ubuntu' })).statusCode).toBe(400);
    // The WebUI's generic OS item is the default disk's menu item.
    expect((await api('PUT', '/workers/w1/default-disk', { menu_default: 'boot-os' })).json()).toMatchObject({ boot: { menu_default: 'debian' } });
    expect((await api('PUT', '/workers/w1/default-disk', { disk: null, menu_default: null })).json().default_os).toBeUndefined();
    expect((await api('PUT', '/workers/w1/default-disk', { menu_default: 'boot-os' })).statusCode).toBe(400);
    // The WebUI deletes a disk by its os_tag: seed 004's path takes it as the os.
    expect((await api('DELETE', `/workers/w1/luns/disk/${w.disks[0].os_tag}`)).json().disks).toEqual([]);
  });

  it('answers as /default-os does: 400 with nothing to set, 400 for a bad menu item or timeout, 404 for an unknown worker', async () => {
    expect((await api('PUT', '/workers/w1/default-disk', {})).statusCode).toBe(400);
    expect((await api('PUT', '/workers/w1/default-disk', { menu_default: 'bios' })).statusCode).toBe(400);
    expect((await api('PUT', '/workers/w1/default-disk', { menu_timeout: -1 })).statusCode).toBe(400);
    expect((await api('PUT', '/workers/nobody/default-disk', { menu_default: 'exit' })).statusCode).toBe(404);
    expect((await api('PUT', '/workers/nobody/default-disk', { menu_default: 'boot-os' })).statusCode).toBe(404);
    expect((await api('PUT', '/workers/w1/default-disk', { menu_default: 'menu-install', menu_timeout: 0 })).json()).toMatchObject({ boot: { menu_default: 'menu-install', menu_timeout: 0 } });
  });
});

describe('storager_ip: the WebUI’s name of an agent’s data-plane address', () => {
  it('is taken as iscsi_server when that is not given, and answered beside it', async () => {
    const put = await api('PUT', '/agents/a1', { base_url: agent.url, storager_ip: '10.0.0.9', role: { disk: true, cd: true }, tags: ['storage', 'stgt'], enabled: true });
    expect(put.json()).toMatchObject({ iscsi_server: '10.0.0.9', storager_ip: '10.0.0.9' });
    expect((await api('GET', '/agents?live=false')).json()[0]).toMatchObject({ iscsi_server: '10.0.0.9', storager_ip: '10.0.0.9' });
    expect((await api('PUT', '/agents/a1', { base_url: agent.url, storager_ip: '10.0.0.9; reboot' })).statusCode).toBe(400);
    // iscsi_server wins when both are sent.
    expect((await api('PUT', '/agents/a1', { base_url: agent.url, iscsi_server: '10.0.0.3', storager_ip: '10.0.0.9' })).json().iscsi_server).toBe('10.0.0.3');
  });
});
