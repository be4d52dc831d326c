import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetDrift, ReconcileResult, WorkerStatus } from '../api/schemas';
import { FakeAgent } from '../testing/fake-agent';
import { FakeFleet } from '../testing/fake-fleet';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

/**
 * Drift (issue 31) over a real store and the real hosts file, with the storage agent's stand-in
 * (FakeAgent: a target lost with its file kept comes back with a scan, as the real agent's index
 * makes it): a binding removed from the hosts file by hand and a target deleted on the agent are
 * reported and reconciled; a worker that booted another disk and runs another image is reported,
 * and left for a reboot. The end-to-end test does the same with the real dnsmasq file and tgtd.
 */
const BASE = 'iqn.2026-07.com.controller';
const A = '_tpl_a.img';
const MAC1 = '52:54:00:31:d0:01';
const MAC2 = '52:54:00:31:d0:02';
let f: MetalFixture;
let agent: FakeAgent;
let fleet: FakeFleet;
const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) => f.app.inject({ method, url, payload: payload as object });

beforeAll(async () => {
  agent = await new FakeAgent({ masters: [A] }).start();
  f = await newMetalFixture();
  fleet = new FakeFleet({ app: f.app, agent });
  expect((await api('POST', '/agents', { id: 'ag1', base_url: agent.url, role: { disk: true, cd: false } })).statusCode).toBe(201);
  for (const [mac, id] of [
    [MAC1, 'w01'],
    [MAC2, 'w02'],
  ]) {
    expect((await api('POST', '/devices', { mac })).statusCode).toBe(201);
    expect((await api('POST', '/workers', { worker_id: id, mac })).statusCode).toBe(200);
    expect((await api('POST', `/workers/${id}/luns/disk`, { type: 'master', os: 'debian', name: A })).statusCode).toBe(200);
    expect((await api('PUT', `/workers/${id}/default-os`, { os: 'debian' })).statusCode).toBe(200);
    fleet.add(mac, id);
    await fleet.powerOn(mac);
  }
});
afterAll(async () => {
  await f?.close();
  await agent?.stop();
});

const status = async (id: string) => (await api('GET', `/workers/${id}/status`)).json() as WorkerStatus;
const kinds = (s: WorkerStatus) => (s.drift ?? []).map((d) => [d.kind, d.fixable]);

describe('drift', () => {
  it('reports nothing when the ledger and reality agree, and says which disk and image the worker booted', async () => {
    const s = await status('w01');
    expect(s.drift).toEqual([]);
    expect(s.actual.booted_from).toBe(`${BASE}:w01.debian`);
    expect(s.actual.image).toMatchObject({ master: A });
    expect(((await api('GET', '/drift')).json() as FleetDrift).workers).toEqual([]);
  });

  it('reports a binding removed from the hosts file by hand and a target deleted on the agent, and reconcile fixes both', async () => {
    const file = f.config.dnsmasqHostsFile;
    const before = readFileSync(file, 'utf8');
    expect(before).toContain(`${MAC1},w01`);
    writeFileSync(file, before.split('\n').filter((l) => !l.startsWith(MAC1)).join('\n'));
    agent.dropTarget(`${BASE}:w01.debian`);

    const s = await status('w01');
    expect(kinds(s)).toEqual([
      ['hosts_file_missing', true],
      ['target_missing', true],
    ]);
    expect(s.drift?.[0]).toMatchObject({ expected: `${MAC1},w01`, actual: null });
    expect(s.actual.disks[0].exists).toBe(false);
    const fleetView = (await api('GET', '/drift')).json() as FleetDrift;
    expect(fleetView.workers_checked).toBe(2);
    expect(fleetView.workers.map((w) => [w.worker_id, w.drift.map((d) => d.kind)])).toEqual([['w01', ['hosts_file_missing', 'target_missing']]]);

    const reloads = f.reloader.count;
    const r = (await api('POST', '/workers/w01/reconcile')).json() as ReconcileResult;
    expect(r.actions.map((a) => [a.action, a.target, a.ok])).toEqual([
      ['hosts_file_rendered', file, true],
      ['agent_scanned', 'ag1', true],
    ]);
    expect(r.remaining).toEqual([]);
    expect(readFileSync(file, 'utf8')).toContain(`${MAC1},w01`);
    expect(f.reloader.count).toBe(reloads + 1);
    expect(agent.targets.has(`${BASE}:w01.debian`)).toBe(true);
    expect((await status('w01')).drift).toEqual([]);
    const ops = (await api('GET', '/operations')).json() as { entries: Array<{ op: string; worker_id?: string }> };
    expect(ops.entries.filter((e) => e.op === 'drift.reconcile').map((e) => e.worker_id)).toEqual(['w01']);
  });

  it('reports a worker that booted another disk and runs another image; reconcile leaves that for a reboot', async () => {
    await fleet.report(fleet.machine(MAC2), '_tpl_other.img', `${BASE}:r9:w02.debian`);
    const s = await status('w02');
    expect(kinds(s)).toEqual([['booted_other_disk', false]]);
    expect(s.drift?.[0]).toMatchObject({ expected: `${BASE}:w02.debian`, actual: `${BASE}:r9:w02.debian` });
    await fleet.report(fleet.machine(MAC2), '_tpl_other.img', `${BASE}:w02.debian`);
    expect(kinds(await status('w02'))).toEqual([['image_mismatch', false]]);
    const r = (await api('POST', '/drift/reconcile')).json() as ReconcileResult;
    expect(r.actions).toEqual([]);
    expect(r.remaining.map((w) => [w.worker_id, w.drift.map((d) => d.kind)])).toEqual([['w02', ['image_mismatch']]]);
  });
});
