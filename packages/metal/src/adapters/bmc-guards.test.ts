/**
 * The BMC adapters' own guards, without a BMC: the address policy at the connection (issue 29,
 * finding 3: a name that resolves to a link-local or metadata address is never reached), and
 * the password kept out of what ipmitool printed (issue 32: fed through `IpmitoolOptions.exec`).
 * Against the real emulators: bmc.contract.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Exec, ExecError, type ExecResult } from '@ironlens/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IpmitoolBmc } from './ipmitool.adapter';
import { RedfishBmc } from './redfish.adapter';

const v4 = (address: string) => [{ address, family: 4 }];

describe('RedfishBmc: the address policy at each connection', () => {
  let server: Server;
  let port: number;
  let requests = 0;

  beforeEach(async () => {
    requests = 0;
    server = createServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ PowerState: 'On' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  const bmc = (resolve: (h: string) => Promise<Array<{ address: string; family: number }>>, allowLinkLocal = false) =>
    new RedfishBmc({ url: `http://localhost:${port}/redfish/v1/Systems/1`, username: 'u', password: 'p', verifyTls: true, timeoutMs: 2_000, resolve, allowLinkLocal });

  it('refuses a name that resolves to a link-local or metadata address (400 bmc_address_forbidden), before any request', async () => {
    for (const address of ['169.254.169.254', '169.254.7.7']) {
      await expect(bmc(async () => v4(address)).powerState()).rejects.toMatchObject({ code: 'bmc_address_forbidden', status: 400 });
    }
    await expect(bmc(async () => [{ address: 'fe80::1', family: 6 }]).powerState()).rejects.toMatchObject({ code: 'bmc_address_forbidden' });
    expect(requests).toBe(0);
  });

  it('refuses an address written in the URL itself (never looked up), such as a row stored before the policy', async () => {
    const literal = (host: string, allowLinkLocal = false) =>
      new RedfishBmc({ url: `http://${host}:${port}/redfish/v1/Systems/1`, username: 'u', password: 'p', verifyTls: true, timeoutMs: 2_000, allowLinkLocal });
    for (const host of ['169.254.169.254', '[fe80::1]', '[::ffff:169.254.169.254]', '100.100.100.200']) {
      await expect(literal(host).powerState(), host).rejects.toMatchObject({ code: 'bmc_address_forbidden', status: 400 });
    }
    expect(requests).toBe(0);
    expect(await literal('127.0.0.1').powerState()).toBe('on');
    expect(requests).toBe(1);
  });

  it('reaches the same name when it resolves to an ordinary address, or when IRONLENS_BMC_ALLOW_LINK_LOCAL allows it', async () => {
    expect(await bmc(async () => v4('127.0.0.1')).powerState()).toBe('on');
    // Allowed: the system resolver is used ("localhost" → loopback); the hostile one is never asked.
    expect(await bmc(async () => v4('169.254.169.254'), true).powerState()).toBe('on');
    expect(requests).toBe(2);
  });
});

/** An `exec` that records each argv and answers what `answer` says. */
function fakeExec(answer: (argv: string[]) => ExecResult | Error) {
  const runs: Array<{ argv: string[]; env: NodeJS.ProcessEnv | undefined }> = [];
  const exec: Exec = async (argv, opts) => {
    runs.push({ argv, env: opts?.env });
    const a = answer(argv);
    if (a instanceof Error) throw a;
    return a;
  };
  return { exec, runs };
}

const ok = (stdout: string): ExecResult => ({ code: 0, stdout, stderr: '' });
const failed = (argv: string[], stdout: string, stderr: string) => new ExecError(argv, { code: 1, stdout, stderr });

describe('IpmitoolBmc without a BMC (exec stand-in)', () => {
  const PASSWORD = 'S3cret-ipmi-pw';
  const bmc = (exec: Exec, o: Partial<ConstructorParameters<typeof IpmitoolBmc>[0]> = {}) =>
    new IpmitoolBmc({ host: '10.20.0.5', port: 623, username: 'admin', password: PASSWORD, cipherSuite: 3, timeoutMs: 5_000, exec, ...o });

  it('keeps the password out of the error when ipmitool prints it, whichever way it fails', async () => {
    const outputs = [
      `Error: Unable to establish IPMI v2 / RMCP+ session (password ${PASSWORD})`,
      `RAKP 2 HMAC is invalid; tried ${PASSWORD}`,
      `Set Chassis Power Control to Up/On failed: Node busy ${PASSWORD}`,
    ];
    for (const text of outputs) {
      const { exec } = fakeExec((argv) => failed(argv, '', text));
      const err = (await bmc(exec).power('on').catch((e: unknown) => e)) as Error & { code: string };
      expect(['bmc_unreachable', 'bmc_auth_failed', 'bmc_action_failed']).toContain(err.code);
      expect(err.message, text).not.toContain(PASSWORD);
      expect(JSON.stringify(err), text).not.toContain(PASSWORD);
    }
    // The stdout of a failed run too.
    const { exec } = fakeExec((argv) => failed(argv, `debug: password=${PASSWORD}\nError: Unable to establish IPMI v2 / RMCP+ session`, ''));
    const err = (await bmc(exec).powerState().catch((e: unknown) => e)) as Error;
    expect(err.message).not.toContain(PASSWORD);
  });

  it('keeps the password out of the error when ipmitool exits 0 but prints it without the confirmation', async () => {
    // An answer read on the success path (no "Chassis Power Control:", no "Set Boot Device to pxe") feeds the error text.
    const { exec } = fakeExec(() => ok(`debug: session password ${PASSWORD}\n`));
    for (const call of [(b: IpmitoolBmc) => b.power('on'), (b: IpmitoolBmc) => b.setOneTimeNetworkBoot()]) {
      const err = (await call(bmc(exec)).catch((e: unknown) => e)) as Error & { code: string };
      expect(err.code).toBe('bmc_action_failed');
      expect(err.message).toContain('***');
      expect(err.message).not.toContain(PASSWORD);
    }
  });

  it('hands the password to ipmitool in IPMI_PASSWORD (-E), never in its argv', async () => {
    const { exec, runs } = fakeExec(() => ok('Chassis Power is on\n'));
    expect(await bmc(exec).powerState()).toBe('on');
    expect(runs[0].argv).toContain('-E');
    expect(runs[0].argv.join(' ')).not.toContain(PASSWORD);
    expect(runs[0].env?.IPMI_PASSWORD).toBe(PASSWORD);
  });

  it('resolves a host name itself and refuses a link-local or metadata answer before ipmitool runs; ipmitool gets the address', async () => {
    const { exec, runs } = fakeExec(() => ok('Chassis Power is off\n'));
    await expect(bmc(exec, { host: 'bmc-7.example', resolve: async () => v4('169.254.169.254') }).powerState()).rejects.toMatchObject({ code: 'bmc_address_forbidden', status: 400 });
    await expect(bmc(exec, { host: '169.254.169.254' }).powerState()).rejects.toMatchObject({ code: 'bmc_address_forbidden' });
    await expect(bmc(exec, { host: 'metadata.google.internal' }).powerState()).rejects.toMatchObject({ code: 'bmc_address_forbidden' });
    expect(runs).toHaveLength(0);
    expect(await bmc(exec, { host: 'bmc-7.example', resolve: async () => v4('10.20.0.7') }).powerState()).toBe('off');
    expect(runs[0].argv.slice(runs[0].argv.indexOf('-H'), runs[0].argv.indexOf('-H') + 2)).toEqual(['-H', '10.20.0.7']);
    expect(await bmc(exec, { host: '169.254.3.3', allowLinkLocal: true }).powerState()).toBe('off');
    expect(runs[1].argv).toContain('169.254.3.3');
  });
});
