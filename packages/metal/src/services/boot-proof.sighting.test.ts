import { waitFor } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bmc } from '../adapters/bmc';
import type { PowerAction, PowerState } from '../domain/power';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

/**
 * The proof of boot sees a machine that boots again soon after its last device report (issue 31:
 * a rollout's rollback power-cycles a machine seconds after its failed boot). A report of a known
 * device that changes nothing within `IRONLENS_REPORT_LAST_SEEN_SECONDS` writes nothing to the
 * store, but it is still a sighting.
 */
const MAC = '52:54:00:31:5e:01';
let f: MetalFixture;
const bmc: Bmc = {
  powerState: async (): Promise<PowerState> => 'on',
  power: async (_a: PowerAction) => {},
  setOneTimeNetworkBoot: async () => {},
};

beforeAll(async () => {
  f = await newMetalFixture({}, { bmc: () => bmc });
});
afterAll(async () => {
  f.services.power.stop();
  await f.close();
});

describe('proof of boot', () => {
  it('is completed by a device report inside the last_seen interval (no store write) and /boot-vars', async () => {
    expect((await f.app.inject({ method: 'POST', url: '/devices', payload: { mac: MAC, bmc: { driver: 'ipmi', host: 'bmc.example', username: 'admin', password: 'pw' } } })).statusCode).toBe(201);
    expect((await f.app.inject({ url: `/devices/report?mac=${MAC}` })).statusCode).toBe(200);
    const seen = (await f.app.inject({ url: `/devices/${MAC}` })).json().last_seen;
    const cycle = await f.app.inject({ method: 'POST', url: `/devices/${MAC}/power`, payload: { action: 'cycle', boot: 'network' } });
    expect(cycle.json().last_power.result).toBe('pending');
    // The machine boots again at once: its report is one of a device seen moments ago.
    expect((await f.app.inject({ url: `/devices/report?mac=${MAC}` })).statusCode).toBe(200);
    expect((await f.app.inject({ url: `/devices/${MAC}` })).json().last_seen).toBe(seen);
    await f.app.inject({ url: `/boot-vars?mac=${MAC}` });
    const dev = await waitFor('the proof of boot', async () => (await f.app.inject({ url: `/devices/${MAC}` })).json(), (d) => d.last_power.result !== 'pending');
    expect(dev.last_power).toMatchObject({ result: 'booted' });
    expect(dev.last_power.network_boot_seen_at).not.toBeNull();
  });

  it('records the device report and /boot-vars seen at the same moment, both (they race on PostgreSQL)', async () => {
    for (let i = 0; i < 5; i++) {
      const cycle = await f.app.inject({ method: 'POST', url: `/devices/${MAC}/power`, payload: { action: 'cycle', boot: 'network' } });
      expect(cycle.json().last_power.result).toBe('pending');
      const at = new Date().toISOString();
      await Promise.all([f.services.power.proof.record(MAC, 'report', at), f.services.power.proof.record(MAC, 'boot_vars', at)]);
      expect((await f.app.inject({ url: `/devices/${MAC}` })).json().last_power).toMatchObject({ result: 'booted', network_boot_seen_at: at });
    }
  });
});
