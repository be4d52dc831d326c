import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort, sleep } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileChassisScript, type RunningIpmiSim, startIpmiSim } from '../../test/bmc.harness';
import { killAllSync } from '../../test/netboot.harness';
import { IpmitoolBmc } from './ipmitool.adapter';

/**
 * The ipmitool adapter against OpenIPMI's real `ipmi_sim` over RMCP+ (lanplus) on loopback;
 * the chassis is a file-backed wiring script (the VM-driving one is in the e2e test).
 */
describe('IpmitoolBmc against ipmi_sim', () => {
  let work: string;
  let sim: RunningIpmiSim;
  const bmc = (o: Partial<ConstructorParameters<typeof IpmitoolBmc>[0]> = {}) =>
    new IpmitoolBmc({ host: '127.0.0.1', port: sim.port, username: sim.username, password: sim.password, cipherSuite: 3, timeoutMs: 10_000, ...o });

  beforeAll(async () => {
    process.on('exit', killAllSync);
    work = mkdtempSync(join(tmpdir(), `ironlens-ipmitool-${process.pid}-`));
    sim = await startIpmiSim(work, fileChassisScript(work, 400));
  });

  afterAll(async () => {
    await sim?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('reads and changes the chassis power', async () => {
    const b = bmc();
    expect(await b.powerState()).toBe('off');
    await b.power('on');
    expect(existsSync(join(work, 'on'))).toBe(true);
    expect(await b.powerState()).toBe('on');
    await b.power('off');
    expect(await b.powerState()).toBe('off');
    // cycle of an off machine powers it on; of an on machine: off, then on.
    await b.power('cycle');
    expect(await b.powerState()).toBe('on');
    await b.power('cycle');
    const log = readFileSync(join(work, 'chassis.log'), 'utf8');
    expect(log).toMatch(/set power 0\n(?:get power\n)+set power 1\n(?:get power\n)*$/);
  }, 60_000);

  it('sets a one-time network boot: the boot flags timeout disabled first, then bootdev pxe', async () => {
    await bmc().setOneTimeNetworkBoot();
    expect(readFileSync(join(work, 'bootdev'), 'utf8').trim()).toBe('pxe');
  });

  it('names a wrong password bmc_auth_failed and a port nobody answers bmc_unreachable', async () => {
    await expect(bmc({ password: 'wrong-password' }).powerState()).rejects.toMatchObject({ code: 'bmc_auth_failed', status: 502 });
    const t0 = Date.now();
    await expect(bmc({ port: await freeTcpPort() }).powerState()).rejects.toMatchObject({ code: 'bmc_unreachable', status: 502 });
    console.log(`[ipmitool] a port nobody answers: bmc_unreachable in ${Date.now() - t0} ms`);
    await expect(bmc({ port: await freeTcpPort(), timeoutMs: 300 }).powerState()).rejects.toMatchObject({ code: 'bmc_timeout', status: 504 });
  }, 60_000);

  it('never puts the password on a command line: /proc/*/cmdline while ipmitool runs', async () => {
    const seen: string[] = [];
    let running = true;
    const scan = (async () => {
      while (running) {
        for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
          try {
            const cmd = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
            if (cmd.startsWith('ipmitool')) seen.push(cmd.replace(/\0/g, ' '));
          } catch {
            // gone
          }
        }
        await sleep(20);
      }
    })();
    await bmc().powerState();
    running = false;
    await scan;
    expect(seen.length, 'ipmitool was seen running').toBeGreaterThan(0);
    for (const cmd of seen) {
      expect(cmd).not.toContain(sim.password);
      expect(cmd).not.toMatch(/ -P /);
      expect(cmd).toContain(' -E ');
    }
  }, 30_000);
});
