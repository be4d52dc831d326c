/**
 * Two admins binding at once: over a real listener, many conflicting binds arrive together.
 * Exactly one wins where only one can; nothing is bound twice; the ledger and
 * dhcp-hosts.conf agree afterwards.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
    .map((e) => `${e.mac},${e.hostname}\n`)
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
