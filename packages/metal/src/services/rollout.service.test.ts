import { Metrics } from '@ironlens/core';
import { waitFor } from '@ironlens/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { RolloutView } from '../api/schemas';
import { FakeAgent } from '../testing/fake-agent';
import { FakeClusterNodes } from '../testing/fake-cluster-nodes';
import { FakeFleet } from '../testing/fake-fleet';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { buildMetalApp } from '../app';
import { createMetalServices, type MetalServices } from '../wiring';
import type { FastifyInstance } from 'fastify';
import { batchSize } from './rollout.service';

/**
 * The rules of a rollout (issue 31) against a real store and the real services, with stand-ins
 * at the edges: stand-in machines behind stand-in BMCs that boot the way boot.ipxe does
 * (FakeFleet: device report, /boot-vars, the disk it names, a host report naming the image and
 * the disk), a stand-in storage agent (FakeAgent, its targets remember their master) and
 * stand-in cluster nodes (FakeClusterNodes). The end-to-end test does the same with qemu,
 * ipmi_sim, the real agent and master images, and a kube-harness cluster.
 */

const A = '_tpl_a.img';
const B = '_tpl_b.img';
const BROKEN = '_tpl_broken.img';
const BASE = 'iqn.2026-07.com.controller';

interface Env {
  f: MetalFixture;
  agent: FakeAgent;
  fleet: FakeFleet;
  nodes: FakeClusterNodes;
  macs: string[];
  ids: string[];
  extra: MetalServices[];
  apps: FastifyInstance[];
  metrics: Metrics;
}

let env: Env | undefined;

afterEach(async () => {
  if (!env) return;
  for (const s of [env.f.services, ...env.extra]) {
    await s.rollouts.jobRunner.stop();
    s.power.stop();
  }
  for (const a of env.apps) await a.close();
  await env.agent.stop();
  await env.f.close();
  env = undefined;
});

async function setup(n: number, opts: { nodes?: boolean } = {}): Promise<Env> {
  const agent = await new FakeAgent({ masters: [A, B, BROKEN] }).start();
  const nodes = new FakeClusterNodes();
  let fleet: FakeFleet | undefined;
  const metrics = new Metrics();
  const f = await newMetalFixture({}, { bmc: (c) => fleet!.connect(c), clusterNodes: nodes, rolloutPollMs: 50, metrics });
  fleet = new FakeFleet({ app: f.app, agent, broken: new Set([BROKEN]) });
  const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) => f.app.inject({ method, url, payload: payload as object });
  expect((await api('POST', '/agents', { id: 'ag1', base_url: agent.url, role: { disk: true, cd: false } })).statusCode).toBe(201);
  const macs: string[] = [];
  const ids: string[] = [];
  for (let i = 1; i <= n; i++) {
    const mac = `52:54:00:31:00:${i.toString(16).padStart(2, '0')}`;
    const id = `w${String(i).padStart(2, '0')}`;
    expect((await api('POST', '/devices', { mac })).statusCode).toBe(201);
    expect((await api('POST', '/workers', { worker_id: id, mac })).statusCode).toBe(200);
    expect((await api('POST', `/workers/${id}/luns/disk`, { type: 'master', os: 'debian', name: A })).statusCode).toBe(200);
    expect((await api('PUT', `/workers/${id}/default-os`, { os: 'debian' })).statusCode).toBe(200);
    expect((await api('PUT', `/devices/${mac}/bmc`, { driver: 'ipmi', host: `bmc-${id}.example`, username: 'admin', password: 'secret' })).statusCode).toBe(200);
    fleet.add(mac, id, `bmc-${id}.example`);
    await fleet.powerOn(mac);
    expect(fleet.machine(mac).events.at(-1)).toBe(`report ${A} ${BASE}:${id}.debian`);
    if (opts.nodes !== false) nodes.add(id, { pods: [`serving/model-${id}`] });
    macs.push(mac);
    ids.push(id);
  }
  env = { f, agent, fleet, nodes, macs, ids, extra: [], apps: [], metrics };
  return env;
}

const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => env!.f.app.inject({ method, url, payload: payload as object });
const rollout = async (id: string) => (await api('GET', `/rollouts/${id}`)).json() as RolloutView;
const create = async (body: object) => {
  const r = await api('POST', '/rollouts', body);
  expect(r.statusCode, r.body).toBe(201);
  return r.json() as RolloutView;
};
const phases = (r: RolloutView) => Object.fromEntries(r.workers.map((w) => [w.worker_id, w.phase]));
const defaultIqn = async (id: string) => ((await api('GET', `/workers/${id}`)).json() as { disks: Array<{ iqn: string; source: { name?: string } }> }).disks[0];
const settled = (id: string) => env!.f.services.rollouts.settled(id);

describe('batch size from max_unavailable', () => {
  it('takes a count as it is (at most the workers), and a percent rounded down, at least 1', () => {
    expect(batchSize(1, 2)).toBe(1);
    expect(batchSize(3, 2)).toBe(2);
    expect(batchSize('3', 10)).toBe(3);
    expect(batchSize('10%', 1000)).toBe(100);
    expect(batchSize('10%', 25)).toBe(2);
    expect(batchSize('10%', 5)).toBe(1);
    expect(batchSize('40%', 5)).toBe(2);
    expect(batchSize('100%', 7)).toBe(7);
    expect(() => batchSize('0%', 7)).toThrow(/max_unavailable/);
    expect(() => batchSize('101%', 7)).toThrow(/max_unavailable/);
  });
});

describe('rollouts', () => {
  it('rolls 5 workers in batches of max_unavailable 40%: each drained, re-cloned, power-cycled into a network boot, proven on the new image, re-admitted; the next batch only after', async () => {
    const { fleet, nodes, agent, macs, ids } = await setup(5);
    // The first batch's machines hold their boot of B until the test lets them go.
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    for (const mac of macs.slice(0, 2)) fleet.machine(mac).hold = (m) => (m === B ? gate : Promise.resolve());
    const created = await create({ workers: ids, master: B, max_unavailable: '40%' });
    expect(created.batch_size).toBe(2);
    expect(created.batches.map((b) => b.workers)).toEqual([['w01', 'w02'], ['w03', 'w04'], ['w05']]);
    const held = await waitFor('the first batch to wait for its host reports', () => rollout(created.id), (r) => r.workers.slice(0, 2).every((w) => w.phase === 'proving' && w.steps.at(-1)?.detail?.includes('host report')));
    expect(phases(held)).toEqual({ w01: 'proving', w02: 'proving', w03: 'queued', w04: 'queued', w05: 'queued' });
    // Batch 2 untouched while batch 1 is not proven: not drained, no disk, no BMC call.
    expect(nodes.calls.filter((c) => c.endsWith('w03'))).toEqual([]);
    expect(fleet.machine(macs[2]).bmcCalls).toEqual([]);
    // The old disks are kept until the worker is proven on the new image.
    expect(agent.targets.has(`${BASE}:w01.debian`)).toBe(true);
    expect(agent.targets.get(`${BASE}:r${1}:w01.debian`)?.master).toBe(B);
    release();
    const done = await settled(created.id);
    expect(done.state, JSON.stringify(done.workers.map((w) => [w.worker_id, w.reason]))).toBe('succeeded');
    expect(Object.values(phases(done))).toEqual(['done', 'done', 'done', 'done', 'done']);
    for (const [i, id] of ids.entries()) {
      const m = fleet.machine(macs[i]);
      // One power-cycle with a one-time network boot, then the new image reported from the new disk.
      expect(m.bmcCalls).toEqual(['boot:network', 'cycle']);
      expect(m.events.at(-1)).toBe(`report ${B} ${BASE}:r1:${id}.debian`);
      expect(nodes.calls.filter((c) => c.endsWith(` ${id}`))).toEqual([`cordon ${id}`, `drain ${id}`, `uncordon ${id}`]);
      expect(nodes.nodes.get(id)?.unschedulable).toBe(false);
      const disk = await defaultIqn(id);
      expect(disk.iqn).toBe(`${BASE}:r1:${id}.debian`);
      expect(disk.source.name).toBe(B);
      // Proven: the old disk is gone (file too), the new one stays.
      expect(agent.targets.has(`${BASE}:${id}.debian`)).toBe(false);
      expect(agent.calls.some((c) => c.method === 'DELETE' && c.query.iqn === `${BASE}:${id}.debian` && c.query.delete_file === 'true')).toBe(true);
    }
    // The batches in order: no power action of batch 2 before both reports of batch 1.
    const log = fleet.log;
    const firstOf = (re: RegExp) => log.findIndex((l) => re.test(l));
    const lastOf = (re: RegExp) => log.length - 1 - [...log].reverse().findIndex((l) => re.test(l));
    expect(firstOf(/^w0[34] bmc cycle/)).toBeGreaterThan(lastOf(/^w0[12] report _tpl_b/));
    expect(firstOf(/^w05 bmc cycle/)).toBeGreaterThan(lastOf(/^w0[34] report _tpl_b/));

    // The worker's image history, newest first; the operations log has each step with its actor.
    const w1 = (await api('GET', '/workers/w01')).json() as { image_history: Array<{ master: string; outcome: string; rollout_id: string | null; actor: string }> };
    expect(w1.image_history.map((h) => [h.master, h.outcome, h.rollout_id])).toEqual([
      [B, 'rolled_out', created.id],
      [A, 'created', null],
    ]);
    const ops = (await api('GET', '/operations')).json() as { entries: Array<{ op: string; status: string; worker_id?: string; step?: string; actor?: string }> };
    expect(ops.entries.filter((e) => e.op === 'rollout.step' && e.worker_id === 'w01' && e.status !== 'waiting').map((e) => e.step)).toEqual(['start', 'drain', 'clone', 'reboot', 'prove', 'readmit']);
    expect(ops.entries.filter((e) => e.op.startsWith('rollout.')).every((e) => e.actor === 'anonymous')).toBe(true);
    const metrics = await env!.metrics.text();
    expect(metrics).toMatch(/^ironlens_workers_by_image\{master="_tpl_b.img"\} 5$/m);
    expect(metrics).toMatch(/^ironlens_rollout_workers_total\{outcome="done"\} 5$/m);
    expect(metrics).toMatch(/^ironlens_rollout_duration_seconds_count\{outcome="succeeded"\} 1$/m);
  });

  it('rolls back a worker whose new image does not boot (broken boot loader) and pauses with the reason; resume retries it', async () => {
    const { fleet, nodes, agent, macs, ids } = await setup(2);
    const created = await create({ workers: ids, master: BROKEN, max_unavailable: 1 });
    const paused = await settled(created.id);
    expect(paused.state).toBe('paused');
    expect(paused.reason).toMatch(/^batch 1: w01 was rolled back: the machine came back to the network boot at \S+ without a host report: _tpl_broken\.img on iqn\.2026-07\.com\.controller:r\d+:w01\.debian did not boot$/);
    expect(phases(paused)).toEqual({ w01: 'rolled_back', w02: 'queued' });
    const m = fleet.machine(macs[0]);
    // Into the new image (it netboots again after its failed sanboot), then the rollback's cycle, back on A.
    expect(m.bmcCalls).toEqual(['boot:network', 'cycle', 'boot:network', 'cycle']);
    expect(m.events.filter((e) => e.startsWith('sanboot failed')).length).toBeGreaterThanOrEqual(1);
    expect(m.events.at(-1)).toBe(`report ${A} ${BASE}:w01.debian`);
    expect((await defaultIqn('w01')).iqn).toBe(`${BASE}:w01.debian`);
    // The new disk is removed, the old one kept; the node uncordoned; w02 untouched.
    expect([...agent.targets.keys()].some((k) => k.includes(':r'))).toBe(false);
    expect(agent.targets.has(`${BASE}:w01.debian`)).toBe(true);
    expect(nodes.calls).toEqual(['cordon w01', 'drain w01', 'uncordon w01']);
    expect(fleet.machine(macs[1]).bmcCalls).toEqual([]);
    const steps = paused.workers[0].steps.map((s) => `${s.step} ${s.status}`);
    expect(steps).toEqual(expect.arrayContaining(['prove failed', 'rollback started', 'rollback.reboot ok', 'rollback ok']));
    const w1 = (await api('GET', '/workers/w01')).json() as { image_history: Array<{ master: string; outcome: string }> };
    expect(w1.image_history[0]).toMatchObject({ master: A, outcome: 'rolled_back' });

    // Resume retries the rolled-back worker: it fails the same way and the rollout pauses again.
    const resumed = await api('POST', `/rollouts/${created.id}/resume`, {});
    expect(resumed.statusCode, resumed.body).toBe(200);
    const again = await settled(created.id);
    expect(again.state).toBe('paused');
    expect(phases(again)).toEqual({ w01: 'rolled_back', w02: 'queued' });
    expect(m.bmcCalls).toHaveLength(8);
    // Abort ends it; w02 never touched.
    const aborted = await api('POST', `/rollouts/${created.id}/abort`);
    expect(aborted.statusCode, aborted.body).toBe(200);
    expect((await settled(created.id)).state).toBe('aborted');
    expect(fleet.machine(macs[1]).bmcCalls).toEqual([]);
  });

  it('rolls back a worker that came up on another disk than the new one (its firmware booted a stale entry)', async () => {
    const { fleet, macs, ids } = await setup(1);
    fleet.machine(macs[0]).pinned = `${BASE}:w01.debian`;
    const created = await create({ workers: ids, master: B, max_unavailable: 1 });
    const paused = await settled(created.id);
    expect(paused.state).toBe('paused');
    expect(paused.reason).toBe(`batch 1: w01 was rolled back: the worker booted from ${BASE}:w01.debian, not ${BASE}:r1:w01.debian`);
    expect(paused.workers[0].phase).toBe('rolled_back');
    expect((await defaultIqn('w01')).iqn).toBe(`${BASE}:w01.debian`);
  });

  it('rolls back a worker that came up on the new disk with another image than the new master', async () => {
    const { fleet, macs, ids, agent } = await setup(1);
    // The agent cloned something else than it was asked (a stale file under the master's name).
    agent.handlers.set('POST /luns/disk', async (call, res) => {
      const b = call.body as { iqn: string; filename: string };
      agent.targets.set(b.iqn, { backing: `/images/${b.filename}`, filename: b.filename, master: A });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ iqn: b.iqn, backing: `/images/${b.filename}`, filename: b.filename, clone: null }));
    });
    const created = await create({ workers: ids, master: B, max_unavailable: 1 });
    const paused = await settled(created.id);
    expect(paused.reason).toMatch(new RegExp(`^batch 1: w01 was rolled back: the worker runs ${A.replace('.', '\\.')} \\(build [0-9a-f]{16}\\), not ${B.replace('.', '\\.')}$`));
    expect(fleet.machine(macs[0]).events.at(-1)).toBe(`report ${A} ${BASE}:w01.debian`);
  });

  it('aborts: the batch in flight is rolled back (old disk, power-cycle, proof, uncordon), later batches are never touched', async () => {
    const { fleet, agent, nodes, macs, ids } = await setup(3);
    for (const mac of macs) fleet.machine(mac).hold = (m) => (m === B ? new Promise(() => {}) : Promise.resolve());
    const created = await create({ workers: ids, master: B, max_unavailable: 2 });
    await waitFor('the first batch to wait for its host reports', () => rollout(created.id), (r) => r.workers.slice(0, 2).every((w) => w.phase === 'proving' && w.steps.at(-1)?.status === 'waiting' && !!w.steps.at(-1)?.detail?.includes('host report')));
    const r = await api('POST', `/rollouts/${created.id}/abort`);
    expect(r.statusCode, r.body).toBe(200);
    expect(['aborting', 'aborted']).toContain((r.json() as RolloutView).state);
    const done = await settled(created.id);
    expect(done.state).toBe('aborted');
    expect(done.reason).toBe('aborted by anonymous');
    expect(phases(done)).toEqual({ w01: 'rolled_back', w02: 'rolled_back', w03: 'queued' });
    for (const [i, id] of ids.slice(0, 2).entries()) {
      expect(fleet.machine(macs[i]).bmcCalls).toEqual(['boot:network', 'cycle', 'boot:network', 'cycle']);
      expect(fleet.machine(macs[i]).events.at(-1)).toBe(`report ${A} ${BASE}:${id}.debian`);
      expect((await defaultIqn(id)).iqn).toBe(`${BASE}:${id}.debian`);
      expect(done.workers[i].reason).toBe('aborted by anonymous');
    }
    expect([...agent.targets.keys()].some((k) => k.includes(':r'))).toBe(false);
    expect(fleet.machine(macs[2]).bmcCalls).toEqual([]);
    expect(nodes.calls.filter((c) => c.endsWith('w03'))).toEqual([]);
    expect(nodes.nodes.get('w01')?.unschedulable).toBe(false);
  });

  it('survives a restart: the run is marked interrupted, and resume goes on from the step each worker reached (no second clone, no second reboot)', async () => {
    const { f, fleet, agent, macs, ids } = await setup(2);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    fleet.machine(macs[0]).hold = (m) => (m === B ? gate : Promise.resolve());
    const created = await create({ workers: ids, master: B, max_unavailable: 1 });
    await waitFor('w01 to wait for its host report', () => rollout(created.id), (r) => r.workers[0].phase === 'proving' && !!r.workers[0].steps.at(-1)?.detail?.includes('host report'));
    // The process stops: its runner aborts the run (what `ironlens serve` does at exit).
    await f.services.rollouts.jobRunner.stop();
    // A new process on the same store: its start marks the rollout interrupted.
    const next = createMetalServices({ store: f.store, config: f.config, reloader: f.reloader, bmc: fleet.connect, clusterNodes: env!.nodes, rolloutPollMs: 50 });
    env!.extra.push(next);
    const nextApp = await buildMetalApp({ services: next });
    env!.apps.push(nextApp);
    fleet.app = nextApp;
    expect(await next.rollouts.recover()).toBe(1);
    const interrupted = await next.rollouts.get(created.id);
    expect(interrupted.state).toBe('paused');
    expect(interrupted.reason).toMatch(/^interrupted: the process stopped while the rollout ran/);
    expect(phases(interrupted)).toEqual({ w01: 'proving', w02: 'queued' });
    // Nothing lost halfway: the old disk is still there, the worker's disk is the new one.
    expect(agent.targets.has(`${BASE}:w01.debian`)).toBe(true);
    expect((await defaultIqn('w01')).iqn).toBe(`${BASE}:r1:w01.debian`);
    // The machine finishes its boot meanwhile; the resumed run sees the proof and goes on.
    release();
    await waitFor('w01 to report B', () => fleet.machine(macs[0]).events.at(-1), (e) => e === `report ${B} ${BASE}:r1:w01.debian`);
    await next.rollouts.resume(created.id);
    const done = await waitFor('the resumed rollout to end', () => next.rollouts.get(created.id), (r) => r.state !== 'running', 20_000);
    expect(done.state, JSON.stringify(done.workers.map((w) => w.reason))).toBe('succeeded');
    expect(phases(done)).toEqual({ w01: 'done', w02: 'done' });
    expect(fleet.machine(macs[0]).bmcCalls).toEqual(['boot:network', 'cycle']);
    expect(agent.calls.filter((c) => c.method === 'POST' && c.path === '/luns/disk' && String((c.body as { iqn: string }).iqn).endsWith(':w01.debian') && String((c.body as { iqn: string }).iqn).includes(':r'))).toHaveLength(1);
    expect(agent.targets.has(`${BASE}:w01.debian`)).toBe(false);
  });

  it('reports a drain a PodDisruptionBudget blocks, rolls the worker back (uncordoned, no disk made, no reboot) and pauses', async () => {
    const { fleet, nodes, agent, macs, ids } = await setup(2);
    nodes.nodes.get('w01')!.blockedBy = 'serving/model-pdb';
    const created = await create({ workers: ids, master: B, max_unavailable: 1 });
    const paused = await settled(created.id);
    expect(paused.state).toBe('paused');
    expect(paused.reason).toBe('batch 1: w01 was rolled back: blocked by PDB serving/model-pdb: an eviction from w01 was refused for 600 s');
    expect(phases(paused)).toEqual({ w01: 'rolled_back', w02: 'queued' });
    expect(nodes.calls).toEqual(['cordon w01', 'drain w01', 'uncordon w01']);
    expect(fleet.machine(macs[0]).bmcCalls).toEqual([]);
    expect(agent.calls.filter((c) => c.path === '/luns/disk')).toHaveLength(2); // the two disks of the setup
    expect(paused.workers[0].steps.map((s) => `${s.step} ${s.status}`)).toEqual(['start ok', 'drain started', 'drain failed', 'rollback started', 'rollback ok']);
  });

  it('waits for a manual reboot of a worker without a BMC, and says so', async () => {
    const { fleet, macs } = await setup(1, { nodes: false });
    expect((await api('DELETE', `/devices/${macs[0]}/bmc`)).statusCode).toBe(200);
    const created = await create({ workers: ['w01'], master: B, max_unavailable: 1 });
    const waiting = await waitFor('the manual reboot step', () => rollout(created.id), (r) => r.workers[0].steps.some((s) => s.step === 'reboot'));
    const step = waiting.workers[0].steps.find((s) => s.step === 'reboot')!;
    expect(step).toMatchObject({ status: 'waiting', detail: `no BMC: waiting for ${macs[0]} to be rebooted by hand (from the network)` });
    expect(waiting.workers[0].power).toBe('manual');
    await fleet.powerOn(macs[0]);
    const done = await settled(created.id);
    expect(done.state).toBe('succeeded');
    expect(done.workers[0].steps.find((s) => s.step === 'drain')?.detail).toBe('not a node of a registered cluster: nothing to drain');
  });

  it('refuses what it cannot do, with the catalog codes', async () => {
    await setup(2);
    const code = async (body: object) => {
      const r = await api('POST', '/rollouts', body);
      return [r.statusCode, (r.json() as { code?: string }).code];
    };
    expect(await code({ workers: ['w01'], selector: { prefix: 'w' }, master: B, max_unavailable: 1 })).toEqual([400, 'rollout_invalid']);
    expect(await code({ master: B, max_unavailable: 1 })).toEqual([400, 'rollout_invalid']);
    expect((await api('POST', '/rollouts', { workers: ['w01'], master: B, max_unavailable: '0%' })).statusCode).toBe(422);
    expect(await code({ workers: ['w01'], master: '_tpl_missing.img', max_unavailable: 1 })).toEqual([400, 'rollout_master_missing']);
    expect(await code({ workers: ['w01'], master: '../etc/passwd', max_unavailable: 1 })).toEqual([400, 'rollout_invalid']);
    expect(await code({ workers: ['nobody'], master: B, max_unavailable: 1 })).toEqual([404, 'worker_not_found']);
    expect(await code({ workers: ['w01'], master: A, max_unavailable: 1 })).toEqual([409, 'rollout_nothing_to_do']);
    expect(await code({ selector: { prefix: 'zz' }, master: B, max_unavailable: 1 })).toEqual([409, 'rollout_nothing_to_do']);
    expect((await api('GET', '/rollouts/ro-000000000000')).statusCode).toBe(404);
    // A worker in an active rollout is not taken by a second one; a paused one cannot be paused again.
    const { fleet, macs } = env!;
    fleet.machine(macs[0]).hold = (m) => (m === B ? new Promise(() => {}) : Promise.resolve());
    const first = await create({ workers: ['w01'], master: B, max_unavailable: 1 });
    expect(await code({ workers: ['w02', 'w01'], master: B, max_unavailable: 1 })).toEqual([409, 'rollout_worker_busy']);
    expect((await api('POST', `/rollouts/${first.id}/resume`, {})).statusCode).toBe(409);
    expect((await api('POST', `/rollouts/${first.id}/pause`)).statusCode).toBe(200);
    expect(((await api('POST', `/rollouts/${first.id}/pause`)).json() as { code: string }).code).toBe('rollout_state_invalid');
    // The selector picks by prefix (the busy one refused with the rest).
    expect(await code({ selector: { prefix: 'w0' }, master: BROKEN, max_unavailable: 1 })).toEqual([409, 'rollout_worker_busy']);
    await api('POST', `/rollouts/${first.id}/abort`);
    expect((await settled(first.id)).state).toBe('aborted');
    const bySelector = await create({ selector: { prefix: 'w0', master: A }, master: B, max_unavailable: '100%' });
    expect(bySelector.batches.map((b) => b.workers)).toEqual([['w01', 'w02']]);
  });
});
