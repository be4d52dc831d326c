/**
 * Per-worker iSCSI CHAP in `/boot-vars` (issue 13): the account reaches the script answered
 * to the worker's bound MAC, and nothing else: not the hostname-only answer, not the JSON
 * form, not any other response. Real store and services, the FakeAgent stand-in (HTTP on
 * loopback) as the storage agent.
 */

import { waitFor } from '@ironlens/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { refusedBootVars, renderBootVarsScript } from './boot-vars.service';

const MAC = '02:00:00:00:00:01';
const MAC2 = '02:00:00:00:00:02';
const NO_VARS = '#!ipxe\n# no per-worker boot vars found\n';

describe('renderBootVarsScript with a CHAP account', () => {
  const vars = { base_iqn: 'iqn.2026-07.com.controller', iscsi_server: '10.0.0.10', iscsi_sep: ':::1:', menu_default: 'ubuntu', menu_timeout: 5000 };

  it("sets iPXE's username and password after the iSCSI variables", () => {
    expect(renderBootVarsScript({ vars, subject: 'w1', chap: { user: 'il-w1', password: 'Ab3dEf6hIj9kLm2n' } })).toBe(`#!ipxe
# boot vars for w1
set base-iqn iqn.2026-07.com.controller
set iscsi-server 10.0.0.10
set iscsi-sep :::1:
set username il-w1
set password Ab3dEf6hIj9kLm2n
set menu-default ubuntu
set menu-timeout 5000
`);
    expect(renderBootVarsScript({ vars, subject: 'w1' })).toBe(`#!ipxe
# boot vars for w1
set base-iqn iqn.2026-07.com.controller
set iscsi-server 10.0.0.10
set iscsi-sep :::1:
set menu-default ubuntu
set menu-timeout 5000
`);
  });

  it('refuses an account outside its grammar, naming the field and never the value', () => {
    for (const [chap, field] of [
      [{ user: 'il-w1', password: 'Ab3dEf6hIj9k\nchain http://evil/x' }, 'chap_password'],
      [{ user: 'il-w1', password: 'short' }, 'chap_password'],
      [{ user: 'il-w1\nshell', password: 'Ab3dEf6hIj9kLm2n' }, 'chap_user'],
      [{ user: '', password: '' }, 'chap_user'],
    ] as const) {
      expect(refusedBootVars({ vars, subject: 'w1', chap })).toContain(field);
      expect(renderBootVarsScript({ vars, subject: 'w1', chap })).toBe(NO_VARS);
    }
  });
});

describe('/boot-vars with IRONLENS_ISCSI_CHAP=true', () => {
  let f: MetalFixture;
  let agent: FakeAgent;
  const api = (method: string, url: string, payload?: unknown) => f.app.inject({ method: method as 'GET', url, payload: payload as object });
  const text = async (q: string) => (await f.app.inject({ url: `/boot-vars?${q}` })).body;
  /** The account the control plane sent the agent with the disk: the secret the bound answer must carry. */
  const sentChap = () => {
    const call = agent.calls.find((c) => c.path === '/luns/disk');
    if (!call) throw new Error('no POST /luns/disk reached the agent');
    return (call.body as { chap?: { user: string; password: string } }).chap;
  };

  beforeEach(async () => {
    f = await newMetalFixture({ IRONLENS_ISCSI_CHAP: 'true' });
    agent = await new FakeAgent().start();
    expect((await api('POST', '/agents', { id: 'a1', base_url: agent.url, iscsi_server: '10.0.0.10', role: { disk: true, cd: true }, tags: ['storage', 'stgt'] })).statusCode).toBe(201);
    await f.services.devices.import([{ mac: MAC }, { mac: MAC2 }], {});
    expect((await api('POST', '/workers', { worker_id: 'w1', mac: MAC })).statusCode).toBe(200);
    expect((await api('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).statusCode).toBe(200);
    expect((await api('PUT', '/workers/w1/default-os', { os: 'ubuntu' })).statusCode).toBe(200);
  });
  afterEach(async () => {
    await f.close();
    await agent.stop();
  });

  it('binds a generated account to the disk for the worker initiator, and hands it to the bound MAC only', async () => {
    const chap = sentChap();
    expect(chap?.user).toBe('il-w1');
    expect(chap?.password).toMatch(/^[A-Za-z0-9]{16}$/);
    const disk = agent.calls.find((c) => c.path === '/luns/disk')?.body as { initiator?: string };
    expect(disk.initiator).toBe('iqn.2026-07.com.controller:w1');

    const publicScript = `#!ipxe
# boot vars for w1
set base-iqn iqn.2026-07.com.controller
set iscsi-server 10.0.0.10
set iscsi-sep :::1:
set menu-default ubuntu
set menu-timeout 5000
`;
    const boundScript = `#!ipxe
# boot vars for w1
set base-iqn iqn.2026-07.com.controller
set iscsi-server 10.0.0.10
set iscsi-sep :::1:
set username il-w1
set password ${chap?.password}
set menu-default ubuntu
set menu-timeout 5000
`;
    // What boot.ipxe asks (MAC and hostname), and the MAC alone: the bound device gets the account, twice (cached) alike.
    for (let i = 0; i < 2; i++) {
      expect(await text(`mac=${MAC}&hostname=w1`)).toBe(boundScript);
      expect(await text(`mac=${MAC.replace(/:/g, '-')}`)).toBe(boundScript);
      // The hostname alone is a claim: the same variables, no account; before and after the bound answer was cached.
      expect(await text('hostname=w1')).toBe(publicScript);
    }
    // Another device claiming the hostname gets nothing; the JSON form never carries the account.
    expect(await text(`mac=${MAC2}&hostname=w1`)).toBe(NO_VARS);
    const json = await f.app.inject({ url: `/boot-vars?mac=${MAC}&hostname=w1&format=json` });
    expect(json.json()).toEqual({ base_iqn: 'iqn.2026-07.com.controller', iscsi_server: '10.0.0.10', iscsi_sep: ':::1:', menu_default: 'ubuntu', menu_timeout: 5000 });
  });

  it("gives a MAC bound to another worker nothing of the worker it names: no IQN, no account", async () => {
    const w1Secret = sentChap()!.password;
    expect((await api('POST', '/workers', { worker_id: 'w2', mac: MAC2 })).statusCode).toBe(200);
    expect((await api('POST', '/workers/w2/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).statusCode).toBe(200);
    expect((await api('PUT', '/workers/w2/default-os', { os: 'ubuntu' })).statusCode).toBe(200);
    // w2's own machine gets w2's answer, with w2's account.
    const own = await text(`mac=${MAC2}&hostname=w2`);
    expect(own).toContain('# boot vars for w2');
    expect(own).toContain('set username il-w2');
    // The same machine claiming w1's name: nothing, before and after w1's answers are cached.
    for (let i = 0; i < 2; i++) {
      const spoofed = await text(`mac=${MAC2}&hostname=w1`);
      expect(spoofed).toBe(NO_VARS);
      expect(spoofed).not.toContain('il-w1');
      expect(spoofed).not.toContain(w1Secret);
      expect(await text(`mac=${MAC}&hostname=w1`)).toContain(`set password ${w1Secret}`);
    }
    const json = await f.app.inject({ url: `/boot-vars?mac=${MAC2}&hostname=w1&format=json` });
    expect(json.json()).toEqual({});
  });

  it('keeps the secret sealed in the store and out of every other answer', async () => {
    const secret = sentChap()!.password;
    const row = await f.store.db.selectFrom('worker_chap').selectAll().where('worker_id', '=', 'w1').executeTakeFirstOrThrow();
    expect(row.chap_user).toBe('il-w1');
    expect(row.secret_sealed.startsWith('v1:')).toBe(true);
    expect(row.secret_sealed).not.toContain(secret);
    for (const url of ['/workers', '/workers/w1', '/workers/w1/status', '/agents', '/agents/a1/luns', '/operations', `/devices/${MAC}`, '/layout']) {
      const r = await api('GET', url);
      expect(r.body, url).not.toContain(secret);
    }
    expect((await api('GET', '/operations')).body).toContain('"chap_user":"il-w1"');
  });

  it("reuses the worker's account for its next targets, re-sends it in a scan, and forgets it with the worker", async () => {
    const first = sentChap()!;
    expect((await api('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'debian', size: '1G' })).statusCode).toBe(200);
    const disks = agent.calls.filter((c) => c.path === '/luns/disk').map((c) => (c.body as { chap?: unknown }).chap);
    expect(disks).toEqual([first, first]);

    expect((await api('POST', '/agents/a1/luns/scan')).statusCode).toBe(200);
    const scan = agent.calls.filter((c) => c.path === '/luns/scan').at(-1);
    expect(scan?.body).toEqual({ chap: [first] });
    expect((await api('GET', '/operations')).body).toContain('"chap_accounts":1');

    expect((await api('DELETE', '/workers/w1?delete_disk=true')).statusCode).toBe(200);
    expect(await f.store.db.selectFrom('worker_chap').selectAll().execute()).toEqual([]);
    // A new worker of the same name gets a new secret.
    expect((await api('POST', '/workers', { worker_id: 'w1', mac: MAC })).statusCode).toBe(200);
    expect((await api('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).statusCode).toBe(200);
    const again = agent.calls.filter((c) => c.path === '/luns/disk').at(-1)?.body as { chap: { user: string; password: string } };
    expect(again.chap.user).toBe('il-w1');
    expect(again.chap.password).not.toBe(first.password);
  });

  it("binds a new worker's install CD to its account, made before the worker row exists, and its disk to the same one", async () => {
    expect((await api('POST', '/workers', { worker_id: 'w2', windows_iso: 'Win11.iso' })).statusCode).toBe(200);
    const cd = agent.calls.find((c) => c.path === '/luns/cd')?.body as { initiator: string; chap: { user: string; password: string } };
    expect(cd.initiator).toBe('iqn.2026-07.com.controller:w2');
    expect(cd.chap).toEqual({ user: 'il-w2', password: expect.stringMatching(/^[A-Za-z0-9]{16}$/) });
    expect((await api('POST', '/workers/w2/luns/disk', { type: 'empty', os: 'windows', size: '1G' })).statusCode).toBe(200);
    expect(agent.calls.filter((c) => c.path === '/luns/disk').at(-1)?.body).toMatchObject({ initiator: 'iqn.2026-07.com.controller:w2', chap: cd.chap });
    expect(cd.chap.password).not.toBe(sentChap()?.password);
  });

  it('refuses and removes a disk from an agent that does not confirm the account (an agent without CHAP)', async () => {
    agent.handlers.set('POST /luns/disk', (call, res) => {
      const b = call.body as { iqn: string; filename: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ iqn: b.iqn, filename: b.filename, backing: `/images/${b.filename}`, clone: null }));
    });
    const r = await api('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'debian', size: '1G' });
    expect(r.statusCode).toBe(502);
    expect(r.json()).toEqual({ agent: 'a1', error: expect.stringContaining('did not bind the CHAP account il-w1') });
    expect(agent.calls.filter((c) => c.path === '/luns' && c.method === 'DELETE').map((c) => c.query.iqn)).toEqual(['iqn.2026-07.com.controller:w1.debian']);
    expect(((await api('GET', '/workers/w1')).json() as { disks: { os: string }[] }).disks.map((d) => d.os)).toEqual(['ubuntu']);
  });

  it('skips the bound answer of an account that cannot be opened, and says so', async () => {
    await f.store.db.updateTable('worker_chap').set({ secret_sealed: 'v1:garbage' }).where('worker_id', '=', 'w1').execute();
    f.services.bootVars.invalidate();
    expect(await text(`mac=${MAC}&hostname=w1`)).toBe(NO_VARS);
    expect(await text('hostname=w1')).toContain('set base-iqn');
    // The guard's operations entry is written after the answer went out.
    type Entry = { op: string; records?: { fields: string[] }[] };
    const refusals = async () => ((await api('GET', '/operations')).json() as { entries: Entry[] }).entries.filter((e) => e.op === 'render.refused');
    const [refused] = await waitFor('the render.refused entry', refusals, (r) => r.length > 0);
    expect(refused.records?.[0].fields).toEqual(['chap_user', 'chap_password']);
  });
});

describe('/boot-vars with CHAP off (the default)', () => {
  it('sends no account to the agent and renders none', async () => {
    const f = await newMetalFixture();
    const agent = await new FakeAgent().start();
    try {
      await f.app.inject({ method: 'POST', url: '/agents', payload: { id: 'a1', base_url: agent.url, iscsi_server: '10.0.0.10', role: { disk: true }, tags: ['stgt'] } });
      await f.services.devices.import([{ mac: MAC }], {});
      await f.app.inject({ method: 'POST', url: '/workers', payload: { worker_id: 'w1', mac: MAC } });
      expect((await f.app.inject({ method: 'POST', url: '/workers/w1/luns/disk', payload: { type: 'empty', os: 'ubuntu', size: '1G' } })).statusCode).toBe(200);
      const disk = agent.calls.find((c) => c.path === '/luns/disk');
      expect(disk?.body).toMatchObject({ initiator: 'iqn.2026-07.com.controller:w1' });
      expect(disk?.body).not.toHaveProperty('chap');
      expect((await f.app.inject({ url: `/boot-vars?mac=${MAC}&hostname=w1` })).body).not.toMatch(/username|password/);
      expect(await f.store.db.selectFrom('worker_chap').selectAll().execute()).toEqual([]);
    } finally {
      await f.close();
      await agent.stop();
    }
  });
});
