import { AppError, type Exec, ExecError } from '@ironlens/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { Bmc } from '../adapters/bmc';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

/**
 * Review 1, S5: what a BMC prints about itself (its address, its port, the user ironlens logs in
 * as) never reaches a viewer's read: `last_power.detail` of the device views, the answer of `GET
 * …/power`, the operations log. Through the real wiring: the real ipmitool adapter with an exec
 * whose output ends with the line ipmitool prints for a name it cannot resolve (`Address lookup
 * for <host> failed`; the ipmitool installed here prints two lines more after it, which name no
 * host, so the adapter's last line would not: this is the form the review names), and a stand-in
 * Redfish BMC that fails as the Redfish adapter does for a socket error outside its list (`connect
 * EHOSTDOWN <address>:<port>`), each behind the one cleaning of BMC texts (`domain/bmc-text.ts`).
 */
const MAC = '52:54:00:29:05:01';
const HOST = 'bmc-29.example.net';
const ADDRESS = '10.0.0.5';
const USER = 'opsadmin29';
const PASSWORD = 'pw-29-s5-secret';

let f: MetalFixture | undefined;
afterEach(async () => {
  f?.services.power.stop();
  await f?.close();
  f = undefined;
});

/** Every read a viewer has of the device: the answers' bodies, as sent. */
async function viewerReads(fx: MetalFixture): Promise<string[]> {
  const reads: string[] = [];
  for (const url of [`/devices/${MAC}`, '/devices', `/devices/${MAC}/power`, `/operations?mac=${MAC}`, '/operations']) reads.push((await fx.app.inject({ method: 'GET', url })).body);
  return reads;
}

const leaksIn = (reads: string[], secrets: string[]) => reads.flatMap((r, i) => secrets.filter((s) => r.toLowerCase().includes(s.toLowerCase())).map((s) => `${s} in read ${i}`));

describe("BMC error texts name neither the BMC's address nor its user", () => {
  it('ipmitool: "Address lookup for <host> failed", with the host cleaned where it is stored and shown', async () => {
    const argvs: string[][] = [];
    // ipmitool's line for a name it cannot resolve, last; its exit status 1.
    const exec: Exec = async (argv) => {
      argvs.push(argv);
      throw new ExecError(argv, { code: 1, stdout: '', stderr: `Loading IANA PEN Registry...\nAddress lookup for ${HOST} failed\n` });
    };
    f = await newMetalFixture({}, { exec });
    const fx = f;
    expect((await fx.app.inject({ method: 'POST', url: '/devices', payload: { mac: MAC } })).statusCode).toBe(201);
    expect((await fx.app.inject({ method: 'PUT', url: `/devices/${MAC}/bmc`, payload: { driver: 'ipmi', host: HOST, port: 6230, username: USER, password: PASSWORD } })).statusCode).toBe(200);
    const act = await fx.app.inject({ method: 'POST', url: `/devices/${MAC}/power`, payload: { action: 'on' } });
    expect(act.statusCode).toBe(502);
    expect(act.json()).toMatchObject({ code: 'bmc_unreachable', detail: 'ipmitool chassis power on: Address lookup for [bmc] failed' });
    expect(argvs[0]).toContain(HOST);
    const reads = await viewerReads(fx);
    expect(JSON.parse(reads[0]).last_power).toMatchObject({ bmc_ok: false, detail: 'the BMC did not act: ipmitool chassis power on: Address lookup for [bmc] failed' });
    expect(leaksIn(reads, [HOST, USER, PASSWORD, '6230'])).toEqual([]);
  });

  it('Redfish: a socket error that names the address and port (EHOSTDOWN, not one of the codes answered alone)', async () => {
    // The error RedfishBmc answers for a socket error outside its list: the request, then Node's message.
    const failing: Bmc = {
      powerState: async () => {
        throw new Error(`GET /redfish/v1/Systems/1: connect EHOSTDOWN ${ADDRESS}:8443`);
      },
      power: async () => {
        throw new AppError('bmc_unreachable', `POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset: connect EHOSTDOWN ${ADDRESS}:8443 (user ${USER})`, { code: 'bmc_unreachable' });
      },
      setOneTimeNetworkBoot: async () => {},
    };
    f = await newMetalFixture({}, { bmc: () => failing });
    const fx = f;
    expect((await fx.app.inject({ method: 'POST', url: '/devices', payload: { mac: MAC } })).statusCode).toBe(201);
    expect((await fx.app.inject({ method: 'PUT', url: `/devices/${MAC}/bmc`, payload: { driver: 'redfish', url: `https://${ADDRESS}:8443/redfish/v1/Systems/1`, username: USER, password: PASSWORD } })).statusCode).toBe(200);
    const act = await fx.app.inject({ method: 'POST', url: `/devices/${MAC}/power`, payload: { action: 'on' } });
    expect(act.json()).toMatchObject({ code: 'bmc_unreachable', detail: 'POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset: connect EHOSTDOWN [bmc] (user [bmc])' });
    const state = await fx.app.inject({ method: 'GET', url: `/devices/${MAC}/power` });
    expect(state.json()).toMatchObject({ code: 'bmc_action_failed', detail: 'the BMC call failed: GET /redfish/v1/Systems/1: connect EHOSTDOWN [bmc]' });
    expect(leaksIn(await viewerReads(fx), [ADDRESS, USER, PASSWORD, '8443'])).toEqual([]);
  });
});
