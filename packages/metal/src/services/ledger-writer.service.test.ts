/**
 * The one ledger write path: after every write, failed or not, the `/boot-vars` cache is
 * cleared and `dhcp-hosts.conf` and dnsmasq follow the ledger; dnsmasq is reloaded only when
 * the file changed or the last reload failed; a batch reloads once.
 */
import { readFileSync } from 'node:fs';
import { AppError } from '@ironlens/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { LedgerWriter } from './ledger-writer.service';

let f: MetalFixture;
let agent: FakeAgent;
const ctx = { client: 'test' };
const MAC = '52:54:00:aa:00:01';
const hosts = () => readFileSync(f.config.dnsmasqHostsFile, 'utf8');
const inject = (method: 'POST' | 'DELETE' | 'GET', url: string, payload?: object) => f.app.inject({ method, url, payload });

beforeEach(async () => {
  f = await newMetalFixture();
  agent = await new FakeAgent().start();
  expect((await inject('POST', '/agents', { id: 'fake', base_url: agent.url, role: { disk: true, cd: true } })).statusCode).toBe(201);
  await f.services.devices.register({ mac: MAC }, ctx);
  await f.services.workers.create({ worker_id: 'w1', mac: MAC }, ctx);
  expect(hosts()).toMatch(new RegExp(`^${MAC},w1(,infinite)?\n$`));
});
afterEach(async () => {
  await f.close();
  await agent.stop();
});

describe('LedgerWriter', () => {
  it('re-renders the hosts file and reloads dnsmasq when a worker delete fails at the agent after the unbind', async () => {
    expect((await inject('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).statusCode).toBe(200);
    agent.handlers.set('DELETE /luns', (_c, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"boom"}');
    });
    const reloads = f.reloader.count;
    const r = await inject('DELETE', '/workers/w1');
    expect(r.statusCode).toBeGreaterThanOrEqual(500);
    expect((await f.services.devices.get(MAC)).state).toBe('pooled');
    expect(hosts()).toBe('');
    expect(f.reloader.count).toBe(reloads + 1);
  });

  it('does not reload dnsmasq for a write that leaves the hosts file as it is', async () => {
    const reloads = f.reloader.count;
    await f.services.devices.register({ mac: '52:54:00:aa:00:02' }, ctx);
    await f.services.workers.create({ worker_id: 'w2' }, ctx);
    expect(f.reloader.count).toBe(reloads);
  });

  it('tries a failed reload again at the next write, even one that changes no binding', async () => {
    f.reloader.failWith = 'no dnsmasq';
    const bind = await inject('DELETE', `/devices/${MAC}/bind`);
    expect(bind.statusCode).toBe(500);
    expect(hosts()).toBe('');
    f.reloader.failWith = null;
    const reloads = f.reloader.count;
    await f.services.workers.create({ worker_id: 'w2' }, ctx);
    expect(f.reloader.count).toBe(reloads + 1);
  });

  it('reloads once for a batch', async () => {
    for (const n of [2, 3, 4]) await f.services.devices.register({ mac: `52:54:00:aa:00:0${n}` }, ctx);
    const reloads = f.reloader.count;
    const out = await f.services.workers.createBatch({ name_prefix: 'b-', count: 3, macs: ['52:54:00:aa:00:02', '52:54:00:aa:00:03', '52:54:00:aa:00:04'] }, ctx);
    expect(out.succeeded).toHaveLength(3);
    expect(f.reloader.count).toBe(reloads + 1);
    expect(hosts().trim().split('\n')).toHaveLength(4);
  });

  it('throws the write’s own error, not the failed sync’s, and still clears the cache', async () => {
    let cleared = 0;
    const writer = new LedgerWriter(f.store, {
      invalidate: () => cleared++,
      sync: () => Promise.reject(new AppError('dnsmasq_reload_failed', 'reload failed')),
    });
    await expect(
      writer.write(async () => {
        throw new AppError('worker_not_found', 'nope');
      }),
    ).rejects.toMatchObject({ code: 'worker_not_found' });
    expect(cleared).toBe(1);
    await expect(writer.write(async () => 1)).rejects.toMatchObject({ code: 'dnsmasq_reload_failed' });
    expect(cleared).toBe(2);
  });
});
