/**
 * One contract for the `Bmc` interface (what PowerService relies on), run against the Redfish
 * adapter (the real OpenStack Redfish emulator, `sushy-emulator --fake`), the IPMI adapter
 * (OpenIPMI's real `ipmi_sim` over RMCP+, driven by the real `ipmitool`), and the `FakeBmc`
 * stand-in that the fast power tests use, so the stand-in cannot drift from the adapters.
 * A power change is polled for: the emulator applies it 1–11 s later, as hardware does.
 * Starts ipmi_sim and sushy-tools: run under the shared lock (HELPERS.md).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAppError } from '@ironlens/core';
import { freeTcpPort, waitFor } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeSystems, fileChassisScript, startIpmiSim, startSushy } from '../../test/bmc.harness';
import { killAllSync } from '../../test/netboot.harness';
import { FakeBmcs } from '../testing/fake-bmc';
import type { Bmc } from './bmc';
import { IpmitoolBmc } from './ipmitool.adapter';
import { RedfishBmc } from './redfish.adapter';

interface Subject {
  /** The BMC with the right credentials. */
  bmc: Bmc;
  /** The same BMC opened with a wrong password. */
  wrongPassword: Bmc;
  /** A BMC where nobody answers. */
  unreachable: Bmc;
  /** What the machine's BMC holds: a one-time network boot is set. */
  networkBootSet(): Promise<boolean>;
  stop(): Promise<void>;
}

async function redfishSubject(): Promise<Subject> {
  const work = mkdtempSync(join(tmpdir(), `ironlens-bmc-contract-rf-${process.pid}-`));
  const [sys] = fakeSystems(1);
  const emu = await startSushy(join(work, 'emulator'), [sys]);
  const url = `${emu.base}/redfish/v1/Systems/${sys.uuid}`;
  const open = (password: string, u = url) => new RedfishBmc({ url: u, username: emu.username, password, verifyTls: true, timeoutMs: 10_000 });
  const closed = await freeTcpPort();
  return {
    bmc: open(emu.password),
    wrongPassword: open('not-the-password'),
    unreachable: open(emu.password, `http://127.0.0.1:${closed}/redfish/v1/Systems/${sys.uuid}`),
    async networkBootSet() {
      // The emulator keeps the target only (it ignores BootSourceOverrideEnabled); that the
      // adapter sends `Once` is checked on the wire in test/power-redfish.test.ts.
      return ((await emu.system(sys.uuid)).Boot as Record<string, unknown>).BootSourceOverrideTarget === 'Pxe';
    },
    async stop() {
      await emu.stop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

async function ipmiSubject(): Promise<Subject> {
  const work = mkdtempSync(join(tmpdir(), `ironlens-bmc-contract-ipmi-${process.pid}-`));
  const sim = await startIpmiSim(work, fileChassisScript(work));
  const open = (password: string, port = sim.port) => new IpmitoolBmc({ host: '127.0.0.1', port, username: sim.username, password, cipherSuite: 3, timeoutMs: 10_000 });
  return {
    bmc: open(sim.password),
    wrongPassword: open('not-the-password'),
    unreachable: open(sim.password, await freeTcpPort()),
    async networkBootSet() {
      try {
        return readFileSync(join(work, 'bootdev'), 'utf8').trim() === 'pxe';
      } catch {
        return false;
      }
    },
    async stop() {
      await sim.stop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

async function fakeSubject(): Promise<Subject> {
  const fakes = new FakeBmcs();
  const creds = { driver: 'ipmi' as const, host: 'bmc-1.example', port: 623, username: 'admin', cipherSuite: 3 };
  const machine = fakes.machine('bmc-1.example:623', { password: 'right-password' });
  const gone = fakes.machine('bmc-2.example:623');
  gone.failWith = 'bmc_unreachable';
  return {
    bmc: fakes.connect({ ...creds, password: 'right-password' }),
    wrongPassword: fakes.connect({ ...creds, password: 'not-the-password' }),
    unreachable: fakes.connect({ ...creds, host: 'bmc-2.example', password: 'x' }),
    networkBootSet: async () => machine.networkBootOnce,
    stop: async () => {},
  };
}

const stateOf = (b: Bmc) => b.powerState();
const POWER_CHANGE_MS = 30_000;

describe.each([
  ['RedfishBmc (sushy-emulator --fake)', redfishSubject],
  ['IpmitoolBmc (ipmi_sim, ipmitool lanplus)', ipmiSubject],
  ['FakeBmc', fakeSubject],
])('Bmc contract: %s', (_name, start) => {
  let s: Subject;

  beforeAll(async () => {
    process.on('exit', killAllSync);
    s = await start();
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('reads a machine that is off as off', async () => {
    expect(await s.bmc.powerState()).toBe('off');
  });

  it('powers a machine on, then off: the state it reads follows', async () => {
    await s.bmc.power('on');
    await waitFor('the machine on', () => stateOf(s.bmc), (x) => x === 'on', POWER_CHANGE_MS, 200);
    await s.bmc.power('off');
    await waitFor('the machine off', () => stateOf(s.bmc), (x) => x === 'off', POWER_CHANGE_MS, 200);
  }, 90_000);

  it('cycle powers a machine that is off on', async () => {
    expect(await s.bmc.powerState()).toBe('off');
    await s.bmc.power('cycle');
    await waitFor('the machine on after the cycle', () => stateOf(s.bmc), (x) => x === 'on', POWER_CHANGE_MS, 200);
  }, 60_000);

  it('sets a one-time network boot', async () => {
    expect(await s.networkBootSet()).toBe(false);
    await s.bmc.setOneTimeNetworkBoot();
    expect(await s.networkBootSet()).toBe(true);
  });

  it('names a wrong password bmc_auth_failed (502) and a BMC nobody answers bmc_unreachable (502), as catalog errors', async () => {
    const auth = await s.wrongPassword.powerState().catch((e: unknown) => e);
    expect(isAppError(auth)).toBe(true);
    expect(auth).toMatchObject({ code: 'bmc_auth_failed', status: 502 });
    const gone = await s.unreachable.power('on').catch((e: unknown) => e);
    expect(isAppError(gone)).toBe(true);
    expect(gone).toMatchObject({ code: 'bmc_unreachable', status: 502 });
  }, 60_000);
});
