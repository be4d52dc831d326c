/**
 * The /boot-vars read-through cache, whose speed the boot-storm benchmark measures, must
 * never serve what the ledger no longer says. Real store, real services, the real app;
 * the storage agent is the metal package's FakeAgent stand-in (HTTP on loopback).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeviceRepository } from '../repositories/device.repository';
import { WorkerRepository } from '../repositories/worker.repository';
import { BootVarsService, DATA_PLANE_TTL_MS, type DataPlane, LIO_SEP, STGT_SEP } from './boot-vars.service';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const MAC = '02:00:00:00:00:01';
const MAC2 = '02:00:00:00:00:02';
const BASE_IQN = 'iqn.2026-07.com.controller';

let f: MetalFixture;
let agent: FakeAgent;
const api = (method: string, url: string, payload?: unknown) => f.app.inject({ method: method as 'GET', url, payload: payload as object });
const text = async (q = `mac=${MAC}&hostname=w1`) => (await f.app.inject({ url: `/boot-vars?${q}` })).body;
const json = async (q = `mac=${MAC}&hostname=w1`) => (await f.app.inject({ url: `/boot-vars?${q}&format=json` })).json();

async function fleet(tags: string[]) {
  expect((await api('POST', '/agents', { id: 'a1', base_url: agent.url, iscsi_server: '10.0.0.10', role: { disk: true }, tags })).statusCode).toBe(201);
  await f.services.devices.import([{ mac: MAC }, { mac: MAC2 }], {});
  expect((await api('POST', '/workers', { worker_id: 'w1', mac: MAC })).statusCode).toBe(200);
  expect((await api('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).statusCode).toBe(200);
  expect((await api('PUT', '/workers/w1/default-os', { os: 'ubuntu' })).statusCode).toBe(200);
}

beforeEach(async () => {
  f = await newMetalFixture();
  agent = await new FakeAgent().start();
});
afterEach(async () => {
  vi.useRealTimers();
  await f.close();
  await agent.stop();
});

describe('/boot-vars through the cache', () => {
  it('answers the rendered projection, the same text again from the cache, and the same vars as JSON', async () => {
    await fleet(['storage', 'stgt']);
    const expected = `#!ipxe
# boot vars for w1
set base-iqn iqn.2026-07.com.controller
set iscsi-server 10.0.0.10
set iscsi-sep :::1:
set menu-default ubuntu
set menu-timeout 5000
`;
    expect(await text()).toBe(expected);
    expect(await text()).toBe(expected);
    for (const spelling of [MAC.replace(/:/g, ''), MAC.replace(/:/g, '-').toUpperCase(), '0200.0000.0001']) {
      expect(await text(`mac=${spelling}&hostname=w1`)).toBe(expected);
      expect(await text(`mac=${spelling}&hostname=w1`)).toBe(expected);
    }
    expect(await text(`mac=${MAC}x&hostname=w1`)).toBe('#!ipxe\n# no per-worker boot vars found\n');
    // An unknown hostname falls back to the MAC's bound worker (seed §5); too long to be cached, same answer.
    expect(await text(`mac=${MAC}&hostname=${'w'.repeat(100)}`)).toBe(expected);
    expect(await text(`hostname=${'w'.repeat(100)}`)).toBe('#!ipxe\n# no per-worker boot vars found\n');
    expect(await json()).toEqual({ base_iqn: BASE_IQN, iscsi_server: '10.0.0.10', iscsi_sep: ':::1:', menu_default: 'ubuntu', menu_timeout: 5000 });
    const r = await f.app.inject({ url: `/boot-vars?mac=${MAC}&hostname=w1&format=xml` });
    expect(r.statusCode).toBe(422);
  });

  it('shows every ledger write at once: default OS, agent address, unbind, rebind, disk removal', async () => {
    await fleet(['storage', 'stgt']);
    expect(await json()).toMatchObject({ menu_timeout: 5000, iscsi_server: '10.0.0.10' });

    await api('PUT', '/workers/w1/default-os', { menu_timeout: 1234 });
    expect(await json()).toMatchObject({ menu_default: 'ubuntu', menu_timeout: 1234 });

    expect((await api('PUT', '/agents/a1', { base_url: agent.url, iscsi_server: '10.0.0.99', role: { disk: true }, tags: ['storage', 'lio'] })).statusCode).toBe(200);
    expect(await json()).toMatchObject({ iscsi_server: '10.0.0.99', iscsi_sep: LIO_SEP });
    expect(await text()).toBe('#!ipxe\n# boot vars for w1\nset base-iqn iqn.2026-07.com.controller\nset iscsi-server 10.0.0.99\nset iscsi-sep ::::\nset menu-default ubuntu\nset menu-timeout 1234\n');

    await api('DELETE', `/devices/${MAC}/bind`);
    expect(await json()).toEqual({});
    expect(await json(`mac=${MAC}`)).toEqual({ menu_default: 'reboot', menu_timeout: 1 });
    expect(await text(`mac=${MAC}`)).toBe(`#!ipxe\n# boot vars for ${MAC}\n# ${MAC} is in the device pool, bound to no worker yet: it reboots until it is bound\nset menu-default reboot\nset menu-timeout 1\n`);

    await api('POST', `/devices/${MAC2}/bind?worker_id=w1`);
    expect(await json()).toEqual({});
    expect(await json(`mac=${MAC2}&hostname=w1`)).toMatchObject({ base_iqn: BASE_IQN, menu_default: 'ubuntu' });

    expect((await api('DELETE', '/workers/w1/luns/disk/ubuntu')).statusCode).toBe(200);
    expect(await json(`mac=${MAC2}&hostname=w1`)).toEqual({ menu_default: 'reboot', menu_timeout: 1 });
  });

  it("follows an untagged agent's backend once the agent service fetches its capabilities again", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    await fleet(['storage']);
    expect(await json()).toMatchObject({ iscsi_sep: STGT_SEP });
    agent.handlers.set('GET /capabilities', (_c, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ backend: 'lio', base_iqn: BASE_IQN }));
    });
    expect(await json()).toMatchObject({ iscsi_sep: STGT_SEP }); // the agent service's own minute-long cache
    vi.setSystemTime(Date.now() + 61_000);
    expect(await json()).toMatchObject({ iscsi_sep: LIO_SEP });
  });
});

describe('BootVarsService lookups', () => {
  const dp: DataPlane = { iscsi_server: '10.0.0.10', iscsi_sep: STGT_SEP };
  let calls = 0;
  let answer: () => Promise<DataPlane | null>;
  let svc: BootVarsService;
  const lookup = {
    dataPlane: () => {
      calls++;
      return answer();
    },
  };

  beforeEach(async () => {
    calls = 0;
    answer = async () => ({ ...dp });
    svc = new BootVarsService(f.store, new WorkerRepository(), new DeviceRepository(), lookup, { bootMenuTimeout: 5000, autoBootTimeout: 1 });
    await fleet(['storage', 'stgt']);
    expect((await api('POST', '/workers', { worker_id: 'w2' })).statusCode).toBe(200);
    expect((await api('POST', '/workers/w2/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).statusCode).toBe(200);
  });

  it('asks the data plane once for many simultaneous cold requests on one agent', async () => {
    const out = await Promise.all(Array.from({ length: 50 }, (_, i) => svc.resolve({ hostname: i % 2 ? 'w1' : 'w2' })));
    expect(calls).toBe(1);
    expect(out.every((a) => a.vars.iscsi_server === '10.0.0.10')).toBe(true);
  });

  it('asks again after the TTL, and a changed answer changes the script', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const first = await svc.script({ hostname: 'w1' });
    expect(await svc.script({ hostname: 'w1' })).toBe(first);
    expect(calls).toBe(1);
    vi.setSystemTime(Date.now() + DATA_PLANE_TTL_MS + 1);
    expect(await svc.script({ hostname: 'w1' })).toBe(first);
    expect(calls).toBe(2);
    answer = async () => ({ ...dp, iscsi_server: '10.0.0.77' });
    vi.setSystemTime(Date.now() + DATA_PLANE_TTL_MS + 1);
    expect(await svc.script({ hostname: 'w1' })).toContain('set iscsi-server 10.0.0.77\n');
  });

  it('does not keep a data-plane answer that was in flight when the ledger changed', async () => {
    let release: (v: DataPlane) => void = () => {};
    answer = () => new Promise((r) => (release = r));
    const pending = svc.resolve({ hostname: 'w1' });
    await vi.waitFor(() => expect(calls).toBe(1));
    svc.invalidate();
    release({ ...dp, iscsi_server: '10.0.0.1' });
    expect((await pending).vars.iscsi_server).toBe('10.0.0.1');
    answer = async () => ({ ...dp, iscsi_server: '10.0.0.2' });
    expect((await svc.resolve({ hostname: 'w1' })).vars.iscsi_server).toBe('10.0.0.2');
    expect(calls).toBe(2);
  });

  it('does not keep a worker read that was in flight when the ledger changed', async () => {
    const pending = svc.resolve({ hostname: 'w1' });
    svc.invalidate();
    expect((await pending).vars.menu_default).toBe('ubuntu');
    // Changed behind the cache's back: only an uncached read can see it.
    await f.store.db.updateTable('workers').set({ menu_timeout: 42, default_os: null, menu_default: 'exit' }).where('worker_id', '=', 'w1').execute();
    expect((await svc.resolve({ hostname: 'w1' })).vars).toMatchObject({ menu_default: 'exit', menu_timeout: 42 });
    // And a read that did not race is kept: the same change is not seen until invalidate().
    await f.store.db.updateTable('workers').set({ menu_timeout: 43 }).where('worker_id', '=', 'w1').execute();
    expect((await svc.resolve({ hostname: 'w1' })).vars.menu_timeout).toBe(42);
    svc.invalidate();
    expect((await svc.resolve({ hostname: 'w1' })).vars.menu_timeout).toBe(43);
  });
  it('a new device entering the pool gets the reboot loop at once and leaves the workers cached', async () => {
    const fresh = '02:00:00:00:00:77';
    expect(await json(`mac=${fresh}`)).toEqual({});
    expect(await text()).toContain('set menu-default ubuntu');
    const reads = vi.spyOn(WorkerRepository.prototype, 'findByHostname');
    expect((await f.app.inject({ url: `/devices/report?mac=${fresh}` })).statusCode).toBe(200);
    expect(await json(`mac=${fresh}`)).toEqual({ menu_default: 'reboot', menu_timeout: 1 });
    expect(await text()).toContain('set menu-default ubuntu');
    expect(reads).not.toHaveBeenCalled();
  });
});
