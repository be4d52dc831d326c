/**
 * The power rules over the real store and routes, with the `FakeBmc` stand-in (its contract
 * with the Redfish and IPMI adapters is adapters/bmc.contract.test.ts): fast, and able to hold a
 * BMC call where a test wants it. The same rules against the real emulators:
 * test/power-redfish.test.ts, test/power-ipmi.e2e.test.ts.
 */
import { waitFor } from '@ironlens/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeBmcCall, FakeBmcs } from '../testing/fake-bmc';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const TOKEN = 'power-unit-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const HOST = 'bmc-rack1.example';
const macOf = (i: number) => `52:54:00:29:04:${i.toString(16).padStart(2, '0')}`;
const urlOf = (i: number) => `https://${HOST}/redfish/v1/Systems/node-${i}`;

/** Holds every call of the fleet until the test lets it go, one at a time. */
class HeldCalls {
  readonly held: Array<{ call: FakeBmcCall; release: () => void }> = [];
  private arrived: Array<() => void> = [];
  readonly gate = (call: FakeBmcCall) =>
    new Promise<void>((release) => {
      this.held.push({ call, release });
      for (const w of this.arrived.splice(0)) w();
    });
  /** Waits until `n` calls are held. */
  async count(n: number): Promise<void> {
    while (this.held.length < n) await new Promise<void>((r) => this.arrived.push(r));
  }
  /** Releases the oldest held call and waits for the next one to arrive (when `more`). */
  async releaseNext(more = true): Promise<FakeBmcCall> {
    const h = this.held.shift();
    if (!h) throw new Error('no call is held');
    const before = this.held.length;
    h.release();
    if (more) await this.count(before + 1);
    return h.call;
  }
}

let f: MetalFixture;
let fakes: FakeBmcs;
const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => f.app.inject({ method, url, headers: auth, payload: payload as object });

async function setup(env: Record<string, string> = {}, devices = 12): Promise<void> {
  fakes = new FakeBmcs();
  f = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN, ...env }, { bmc: fakes.connect });
  for (let i = 1; i <= devices; i++) {
    const r = await api('POST', '/devices', { mac: macOf(i), bmc: { driver: 'redfish', url: urlOf(i), username: 'admin', password: 'pw' } });
    expect(r.statusCode, r.body).toBe(201);
  }
}

afterEach(async () => {
  f?.services.power.stop();
  await f?.close();
});

describe('status reads against a slow BMC (issue 29 finding 4)', () => {
  it('ten concurrent reads of one device make one BMC call, and an action on another device of that host goes right after it', async () => {
    await setup({ IRONLENS_BMC_STATE_CACHE_MS: '0' });
    const hold = new HeldCalls();
    for (let i = 1; i <= 12; i++) fakes.machine(urlOf(i)).gate = hold.gate;
    const reads = Array.from({ length: 10 }, () => api('GET', `/devices/${macOf(1)}/power`));
    await hold.count(1);
    const action = api('POST', `/devices/${macOf(2)}/power`, { action: 'on' });
    // The one read holds the host; the action waits for it, nothing else.
    expect((await hold.releaseNext()).op).toBe('powerState');
    expect(hold.held[0].call).toMatchObject({ machine: urlOf(2), op: 'power', action: 'on' });
    await hold.releaseNext(); // the action's power-on; its state read back is held now
    await hold.releaseNext(false);
    expect((await action).statusCode).toBe(200);
    for (const r of await Promise.all(reads)) expect(r.json()).toMatchObject({ state: 'off' });
    expect(fakes.machine(urlOf(1)).calls).toHaveLength(1);
  });

  it('an action goes before the status reads of other devices on its BMC host that waited longer', async () => {
    await setup({ IRONLENS_BMC_STATE_CACHE_MS: '0', IRONLENS_BMC_READ_QUEUE_PER_HOST: '16' });
    const hold = new HeldCalls();
    for (let i = 1; i <= 12; i++) fakes.machine(urlOf(i)).gate = hold.gate;
    const reads = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => api('GET', `/devices/${macOf(i)}/power`));
    await hold.count(1);
    // Every read is in the scheduler's queue before the action is asked.
    while (f.services.power.queuedCalls().reads < 9) await new Promise((r) => setImmediate(r));
    const action = api('POST', `/devices/${macOf(11)}/power`, { action: 'off' });
    while (f.services.power.queuedCalls().actions < 1) await new Promise((r) => setImmediate(r));
    await hold.releaseNext();
    expect(hold.held[0].call).toMatchObject({ machine: urlOf(11), op: 'power', action: 'off' });
    while (hold.held.length) await hold.releaseNext(fakes.calls.length < 12);
    expect((await action).statusCode).toBe(200);
    expect((await Promise.all(reads)).map((r) => r.statusCode)).toEqual(new Array(10).fill(200));
    // The call order at the BMC host: one read, the action (power, state read back), the other reads.
    const order = fakes.calls.map((c) => `${c.machine.replace(/^.*node-/, '')}:${c.op}`);
    expect(order.slice(0, 3)).toEqual(['1:powerState', '11:power', '11:powerState']);
  });

  it('refuses status reads past the per-host bound at once (503 bmc_busy) and still runs the action next', async () => {
    await setup({ IRONLENS_BMC_STATE_CACHE_MS: '0', IRONLENS_BMC_READ_QUEUE_PER_HOST: '2' });
    const hold = new HeldCalls();
    for (let i = 1; i <= 12; i++) fakes.machine(urlOf(i)).gate = hold.gate;
    const first = api('GET', `/devices/${macOf(1)}/power`);
    await hold.count(1);
    const waiting = [api('GET', `/devices/${macOf(2)}/power`), api('GET', `/devices/${macOf(3)}/power`)];
    while (f.services.power.queuedCalls().reads < 2) await new Promise((r) => setImmediate(r));
    const refused = await api('GET', `/devices/${macOf(4)}/power`);
    expect(refused.statusCode).toBe(503);
    expect(refused.json().code).toBe('bmc_busy');
    const action = api('POST', `/devices/${macOf(5)}/power`, { action: 'on' });
    while (f.services.power.queuedCalls().actions < 1) await new Promise((r) => setImmediate(r));
    await hold.releaseNext();
    expect(hold.held[0].call).toMatchObject({ machine: urlOf(5), op: 'power' });
    while (hold.held.length) await hold.releaseNext(fakes.calls.length < 5);
    expect((await action).statusCode).toBe(200);
    expect((await first).statusCode).toBe(200);
    for (const r of await Promise.all(waiting)) expect(r.statusCode).toBe(200);
  });

  it('a read asked while an action on the device is under way waits for it: the state after the action, never the one cached before', async () => {
    await setup({ IRONLENS_BMC_STATE_CACHE_MS: '600000' }, 1);
    const m = fakes.machine(urlOf(1));
    expect((await api('GET', `/devices/${macOf(1)}/power`)).json()).toMatchObject({ state: 'off' });
    const hold = new HeldCalls();
    m.gate = hold.gate;
    const action = api('POST', `/devices/${macOf(1)}/power`, { action: 'on' });
    await hold.count(1);
    // The power-on is held at the BMC; a viewer asks now. The read queues behind the action
    // (or, were the cached state still answered, it would come back at once).
    let stop = false;
    const read = api('GET', `/devices/${macOf(1)}/power`);
    const queued = (async () => {
      while (!stop && f.services.power.queuedCalls().reads < 1) await new Promise((r) => setImmediate(r));
      return 'queued';
    })();
    const first = await Promise.race([read.then((r) => r.json()), queued]);
    stop = true;
    expect(first).toBe('queued');
    await hold.releaseNext(); // the power-on; its state read back is held now
    await hold.releaseNext(false);
    expect((await action).statusCode).toBe(200);
    while (hold.held.length) await hold.releaseNext(false);
    expect((await read).json()).toMatchObject({ state: 'on' });
  });

  it('answers a failed read again for IRONLENS_BMC_FAILURE_CACHE_MS without calling the BMC; an action clears it', async () => {
    await setup({ IRONLENS_BMC_STATE_CACHE_MS: '0', IRONLENS_BMC_FAILURE_CACHE_MS: '600000' }, 1);
    const m = fakes.machine(urlOf(1));
    m.failWith = 'bmc_timeout';
    const first = await api('GET', `/devices/${macOf(1)}/power`);
    expect(first.statusCode).toBe(504);
    expect(first.json().code).toBe('bmc_timeout');
    m.failWith = null;
    for (let i = 0; i < 5; i++) expect((await api('GET', `/devices/${macOf(1)}/power`)).json().code).toBe('bmc_timeout');
    expect(m.calls).toHaveLength(1);
    expect((await api('POST', `/devices/${macOf(1)}/power`, { action: 'on' })).statusCode).toBe(200);
    expect(m.calls.map((c) => c.op)).toEqual(['powerState', 'power', 'powerState']);
    // The action's state read back is the cache now; with the cache off, the next read asks the BMC.
    expect((await api('GET', `/devices/${macOf(1)}/power`)).json()).toMatchObject({ state: 'on' });
    expect(m.calls).toHaveLength(4);
  });
});

describe('power actions with FakeBmc', () => {
  it('boot: "network" sets the one-time network boot before the power-on; the report and /boot-vars prove the boot', async () => {
    await setup({}, 1);
    const m = fakes.machine(urlOf(1));
    const r = await api('POST', `/devices/${macOf(1)}/power`, { action: 'cycle', boot: 'network' });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({ state: 'on', last_power: { action: 'cycle', boot: 'network', bmc_ok: true, result: 'pending' } });
    expect(m.calls.map((c) => c.op)).toEqual(['setOneTimeNetworkBoot', 'power', 'powerState']);
    expect(m.networkBoots).toBe(1);
    expect((await f.app.inject({ url: `/devices/report?mac=${macOf(1)}` })).statusCode).toBe(200);
    expect((await f.app.inject({ url: `/boot-vars?mac=${macOf(1)}` })).statusCode).toBe(200);
    while ((await api('GET', `/devices/${macOf(1)}`)).json().last_power?.result !== 'booted') await new Promise((res) => setImmediate(res));
  });

  it('a device report that says nothing new still counts as the boot’s sighting', async () => {
    await setup({}, 1);
    // The machine reported a moment ago (its report is now unchanged, answered from memory).
    expect((await f.app.inject({ url: `/devices/report?mac=${macOf(1)}` })).statusCode).toBe(200);
    await f.services.devices.settled();
    expect((await api('POST', `/devices/${macOf(1)}/power`, { action: 'cycle', boot: 'network' })).json().last_power.result).toBe('pending');
    expect((await f.app.inject({ url: `/devices/report?mac=${macOf(1)}` })).statusCode).toBe(200);
    expect((await f.app.inject({ url: `/boot-vars?mac=${macOf(1)}` })).statusCode).toBe(200);
    const dev = await waitFor('booted', async () => (await api('GET', `/devices/${macOf(1)}`)).json(), (d) => d.last_power?.result !== 'pending', 5_000, 20);
    expect(dev.last_power).toMatchObject({ result: 'booted' });
  });

  it('a BMC that refuses records bmc_ok: false with its code, and the proof of boot ends at once', async () => {
    await setup({}, 1);
    fakes.machine(urlOf(1)).failWith = 'bmc_action_failed';
    const r = await api('POST', `/devices/${macOf(1)}/power`, { action: 'on', boot: 'network' });
    expect(r.statusCode).toBe(502);
    expect(r.json().code).toBe('bmc_action_failed');
    expect((await api('GET', `/devices/${macOf(1)}`)).json().last_power).toMatchObject({ bmc_ok: false, result: 'no_network_boot' });
  });

  it('a wrong password is bmc_auth_failed, never shown in the operations log', async () => {
    await setup({}, 1);
    fakes.machine(urlOf(1)).password = 'the-right-one';
    const r = await api('POST', `/devices/${macOf(1)}/power`, { action: 'off' });
    expect(r.json().code).toBe('bmc_auth_failed');
    const ops = await api('GET', `/operations?mac=${macOf(1)}`);
    expect(ops.body).toContain('bmc_auth_failed');
    expect(ops.body).not.toContain('"pw"');
  });
});
