/**
 * Two admins binding at once: over a real listener, many conflicting binds arrive together.
 * Exactly one wins where only one can; nothing is bound twice; the ledger and
 * dhcp-hosts.conf agree afterwards. The suite runs on SQLite and on PostgreSQL (vitest project
 * `postgres`), where the transactions really run at the same time: every loser must get the
 * seed's 409, never a 500 or a duplicate.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

let f: MetalFixture;
let base: string;
const mac = (i: number) => `02:00:00:00:01:${i.toString(16).padStart(2, '0')}`;

beforeEach(async () => {
  f = await newMetalFixture();
  base = await f.app.listen({ host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await f.close();
});

async function seed(workers: number, devices: number) {
  await f.services.devices.import(Array.from({ length: devices }, (_, i) => ({ mac: mac(i) })), {});
  await f.services.workers.createBatch({ count: workers, name_prefix: 'w-' }, {});
}

async function checkInvariants() {
  const devices = await f.services.devices.list('bound');
  const byWorker = new Map<string, string[]>();
  for (const d of devices) byWorker.set(d.bound_worker_id!, [...(byWorker.get(d.bound_worker_id!) ?? []), d.mac]);
  for (const [w, macs] of byWorker) expect(macs, `worker ${w} bound to several devices`).toHaveLength(1);
  const expected = devices
    .map((d) => ({ mac: d.mac, hostname: d.bound_worker_id! }))
    .sort((a, b) => a.hostname.localeCompare(b.hostname))
    .map((e) => `${e.mac},${e.hostname},infinite\n`)
    .join('');
  expect(readFileSync(f.config.dnsmasqHostsFile, 'utf8')).toBe(expected);
  const workers = await f.services.workers.list();
  for (const w of workers) expect(w.mac).toBe(byWorker.get(w.worker_id)?.[0] ?? null);
  return devices.length;
}

describe('concurrent binds', () => {
  it('lets exactly one of 200 simultaneous binds to the same worker win', async () => {
    await seed(1, 200);
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => fetch(`${base}/devices/${mac(i)}/bind?worker_id=w-01`, { method: 'POST' }).then((r) => r.status)));
    expect(results.filter((s) => s === 200)).toHaveLength(1);
    expect(results.filter((s) => s === 409)).toHaveLength(199);
    expect(await checkInvariants()).toBe(1);
  });

  it('keeps the ledger one-to-one under 200 mixed binds, forced re-binds and unbinds', async () => {
    await seed(10, 20);
    let seedRand = 42;
    const rand = (n: number) => {
      seedRand = (seedRand * 1103515245 + 12345) % 2 ** 31;
      return seedRand % n;
    };
    const requests = Array.from({ length: 200 }, () => {
      const d = mac(rand(20));
      const w = `w-${String(rand(10) + 1).padStart(2, '0')}`;
      const kind = rand(10);
      if (kind < 2) return fetch(`${base}/devices/${d}/bind`, { method: 'DELETE' });
      return fetch(`${base}/devices/${d}/bind?worker_id=${w}&force=${kind < 6}`, { method: 'POST' });
    });
    const statuses = (await Promise.all(requests)).map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 409), `unexpected statuses ${[...new Set(statuses)]}`).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    await checkInvariants();
  });
});

/** Fires `n` copies of the same request at once; returns the statuses and the distinct 409 messages. */
async function race(n: number, path: string, body: (i: number) => unknown, method = 'POST') {
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(i)) }).then(async (r) => ({ status: r.status, body: await r.json() })),
    ),
  );
  return {
    statuses: answers.map((a) => a.status),
    conflicts: [...new Set(answers.filter((a) => a.status === 409).map((a) => a.body.detail ?? a.body.error))],
  };
}

describe('concurrent creates of the same thing', () => {
  it('registers a worker once out of 50 simultaneous creates; the others get 409 worker already exists', async () => {
    const r = await race(50, '/workers', () => ({ worker_id: 'gpu-01' }));
    expect(r.statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(r.statuses.filter((s) => s === 409)).toHaveLength(49);
    expect(r.conflicts).toEqual(['worker already exists: gpu-01']);
    expect((await f.services.workers.list()).map((w) => w.worker_id)).toEqual(['gpu-01']);
  });

  it('gives a hostname to one of 50 workers created at once with it; the others get 409 hostname already exists', async () => {
    const r = await race(50, '/workers', (i) => ({ worker_id: `w-${i}`, hostname: 'shared-host' }));
    expect(r.statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(r.statuses.filter((s) => s === 409)).toHaveLength(49);
    expect(r.conflicts).toEqual(['hostname already exists: shared-host']);
    expect((await f.services.workers.list()).filter((w) => w.hostname === 'shared-host')).toHaveLength(1);
  });

  it('registers a MAC once out of 50 simultaneous registrations; the others get 409 device already exists', async () => {
    const r = await race(50, '/devices', () => ({ mac: '02:00:00:00:02:01' }));
    expect(r.statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(r.statuses.filter((s) => s === 409)).toHaveLength(49);
    expect(r.conflicts).toEqual(['device already exists: 02:00:00:00:02:01']);
    expect(await f.services.devices.list()).toHaveLength(1);
  });

  it('binds a MAC to one of 50 workers created at once with it; the others get 409 and are not created', async () => {
    await f.services.devices.import([{ mac: '02:00:00:00:02:02' }], {});
    const r = await race(50, '/workers', (i) => ({ worker_id: `n-${i}`, mac: '02:00:00:00:02:02' }));
    expect(r.statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(r.statuses.filter((s) => s === 409)).toHaveLength(49);
    expect(r.conflicts).toHaveLength(1);
    expect(r.conflicts[0]).toMatch(/^device already bound to n-\d+: 02:00:00:00:02:02$/);
    expect(await f.services.workers.list()).toHaveLength(1);
    expect(await checkInvariants()).toBe(1);
  });

  it('binds a MAC once out of 50 simultaneous binds to different workers; the others get 409 device already bound', async () => {
    await seed(50, 1);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => fetch(`${base}/devices/${mac(0)}/bind?worker_id=w-${String(i + 1).padStart(2, '0')}`, { method: 'POST' }).then(async (r) => ({ status: r.status, body: await r.json() }))),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const winner = answers.find((a) => a.status === 200)?.body.bound_worker_id;
    expect(answers.filter((a) => a.status === 409).map((a) => a.body.detail)).toEqual(Array(49).fill(`device already bound to ${winner}: ${mac(0)}`));
    expect(await checkInvariants()).toBe(1);
  });

  it('makes one system disk out of 20 simultaneous creates of it; the others get 409 and leave the one target alone', async () => {
    const agent = await new FakeAgent().start();
    try {
      expect((await fetch(`${base}/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'fake', base_url: agent.url, role: { disk: true } }) })).status).toBe(201);
      await seed(1, 0);
      const r = await race(20, '/workers/w-01/luns/disk', () => ({ type: 'empty', os: 'ubuntu', size: '1G' }));
      expect(r.statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(r.statuses.filter((s) => s === 409)).toHaveLength(19);
      // Most losers are refused by the agent (its 409 for an IQN it has, passed on with the agent's
      // name); one that got past it is refused by the ledger.
      for (const detail of r.conflicts) expect(detail).toMatch(/^(worker w-01 already has a ubuntu system disk|iqn already exists: \S+:w-01\.ubuntu)/);
      const w = await f.services.workers.get('w-01');
      expect(w.disks.map((d) => d.os)).toEqual(['ubuntu']);
      // The winner's target is still there: no loser's rollback removed it.
      expect([...agent.targets.keys()]).toEqual([w.disks[0].iqn]);
    } finally {
      await agent.stop();
    }
  });
});
