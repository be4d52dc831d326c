/**
 * BootProofService's rules on their own (issue 32: the race guard survived every test when
 * removed), over the real store and repository, with a clock the test moves: a sighting counts
 * only when it is not older than the power request and the row is still pending; both sightings
 * make the row `booted`; the deadline makes it `no_network_boot`, naming what was missing.
 */
import { OperationsLog, partOf } from '@ironlens/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type PowerRecord, PowerRepository } from '../repositories/bmc.repository';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { BootProofService } from './boot-proof.service';

const MAC = '52:54:00:32:0b:01';
const T0 = Date.parse('2026-07-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

let f: MetalFixture;
let nowMs: number;
let proof: BootProofService;
const repo = new PowerRepository();
const seen = { confirmed: 0, missed: 0 };
const warnings: string[] = [];

/** A `pending` row as PowerService writes it before calling the BMC, asked at `at`. */
async function pending(at: number, deadlineMs = 60_000): Promise<void> {
  const r: PowerRecord = {
    mac: MAC,
    action: 'cycle',
    boot: 'network',
    requested_at: iso(at),
    bmc_ok: true,
    report_seen_at: null,
    boot_vars_seen_at: null,
    network_boot_seen_at: null,
    result: 'pending',
    detail: 'sent to the BMC',
    deadline_ms: at + deadlineMs,
  };
  await repo.put(f.store.db, r);
  proof.watch(MAC);
}

const row = () => repo.get(f.store.db, MAC);
const ops = async () => (await f.services.operations({ limit: 1000 })).entries.map((e) => e.op).filter((op) => op.startsWith('power.'));

beforeEach(async () => {
  nowMs = T0;
  seen.confirmed = 0;
  seen.missed = 0;
  warnings.length = 0;
  f = await newMetalFixture();
  await f.services.devices.register({ mac: MAC }, {});
  proof = new BootProofService(f.store, repo, new OperationsLog(partOf(f.store)), 60_000, { confirmed: () => seen.confirmed++, missed: () => seen.missed++ }, (m) => warnings.push(m), () => nowMs);
});
afterEach(async () => {
  proof.stop();
  await f.close();
});

describe('BootProofService', () => {
  it('does not count a sighting older than the power request (one that raced the request)', async () => {
    await pending(T0);
    expect(await proof.record(MAC, 'report', iso(T0 - 1))).toBeNull();
    expect(await proof.record(MAC, 'boot_vars', iso(T0 - 1))).toBeNull();
    expect(await row()).toMatchObject({ result: 'pending', report_seen_at: null, boot_vars_seen_at: null, network_boot_seen_at: null });
    expect(seen.confirmed).toBe(0);
    // At the request's own instant it counts.
    expect(await proof.record(MAC, 'report', iso(T0))).toMatchObject({ result: 'pending', report_seen_at: iso(T0), network_boot_seen_at: iso(T0) });
  });

  it('is booted once the device report and /boot-vars both came, in either order; the operations log says so once', async () => {
    await pending(T0);
    expect(await proof.record(MAC, 'boot_vars', iso(T0 + 4_000))).toMatchObject({ result: 'pending', detail: expect.stringContaining('waiting for the device report') });
    const done = await proof.record(MAC, 'report', iso(T0 + 5_000));
    expect(done).toMatchObject({ result: 'booted', report_seen_at: iso(T0 + 5_000), boot_vars_seen_at: iso(T0 + 4_000), network_boot_seen_at: iso(T0 + 4_000), deadline_ms: null });
    expect(seen.confirmed).toBe(1);
    // A later sighting changes nothing: the row is no longer pending.
    expect(await proof.record(MAC, 'report', iso(T0 + 9_000))).toBeNull();
    expect(await ops()).toEqual(['power.boot.confirmed']);
  });

  it('seen() writes nothing for a MAC that is not pending', async () => {
    proof.seen(MAC, 'report');
    proof.seen(null, 'report');
    expect(await row()).toBeNull();
  });

  it('ends a pending row at its deadline as no_network_boot, naming what was missing; a sighting after that does not revive it', async () => {
    await pending(T0, 60_000);
    await proof.record(MAC, 'report', iso(T0 + 1_000));
    nowMs = T0 + 59_999;
    await proof.sweep();
    expect((await row())?.result).toBe('pending');
    nowMs = T0 + 60_000;
    await proof.sweep();
    expect(await row()).toMatchObject({ result: 'no_network_boot', deadline_ms: null, detail: expect.stringContaining('no /boot-vars request followed') });
    expect(seen.missed).toBe(1);
    expect(await proof.record(MAC, 'boot_vars', iso(T0 + 61_000))).toBeNull();
    expect((await row())?.result).toBe('no_network_boot');
    expect(await ops()).toEqual(['power.boot.missed']);
  });

  it('resume() picks up a pending row another process wrote, and the sweep ends it', async () => {
    await pending(T0, 1_000);
    proof.forget(MAC);
    nowMs = T0 + 2_000;
    await proof.resume();
    expect(await row()).toMatchObject({ result: 'no_network_boot', detail: expect.stringContaining('no DHCP/iPXE request from this MAC came') });
    expect(warnings).toEqual([]);
  });
});
