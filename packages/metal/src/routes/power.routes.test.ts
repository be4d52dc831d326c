import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '@ironlens/core';
import { metalPlugin } from '../app';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

/**
 * The power routes (issue 21) over a real store, without a BMC call: what they declare (one
 * permission each, a response schema for every status), the BMC record's shape, and the
 * refusals that come before any BMC is reached. BMC calls are tested against the real
 * emulators in packages/metal/test (power-redfish, power-ipmi.e2e) and adapters/ipmitool.
 */
let f: MetalFixture;
const auth = { authorization: 'Bearer t0ken' };
const MAC = '52:54:00:21:00:01';
const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => f.app.inject({ method, url, headers: auth, payload: payload as object });

beforeAll(async () => {
  f = await newMetalFixture({ IPXE_CP_TOKEN: 't0ken' });
});
afterAll(async () => {
  f.services.power.stop();
  await f.close();
});

describe('power routes', () => {
  it('declare one permission and a response schema for each status', async () => {
    // Every route as registered (its options), read by an onRoute hook in front of the plugin.
    const routes: Array<{ method: string; url: string; permission?: string }> = [];
    const probe = await createHttpApp({ title: 'probe', docs: false });
    probe.addHook('onRoute', (r) => {
      for (const m of [r.method].flat()) routes.push({ method: m, url: r.url, permission: (r.config as { permission?: string } | undefined)?.permission });
    });
    await probe.register(metalPlugin, { services: f.services });
    await probe.ready();
    await probe.close();
    const doc = (await f.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const want: Array<[string, string, string]> = [
      ['GET', '/devices/{mac}/bmc', 'metal:bmc:read'],
      ['PUT', '/devices/{mac}/bmc', 'metal:bmc:write'],
      ['DELETE', '/devices/{mac}/bmc', 'metal:bmc:write'],
      ['GET', '/devices/{mac}/power', 'metal:power:read'],
      ['POST', '/devices/{mac}/power', 'metal:power:operate'],
      ['POST', '/devices/power', 'metal:power:operate'],
    ];
    for (const [method, path, permission] of want) {
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op, `${method} ${path} in the OpenAPI document`).toBeDefined();
      expect(Object.keys(op.responses)).toContain('200');
      const route = routes.find((r) => r.method === method && r.url === path.replace('{mac}', ':mac'));
      expect(route?.permission, `${method} ${path}`).toBe(permission);
    }
    expect(Object.keys(doc.paths['/devices/{mac}/power'].post.responses)).toEqual(expect.arrayContaining(['200', '409', '502', '504']));
  });

  it('sets, shows (never the password) and removes a BMC; the password is required the first time', async () => {
    expect((await api('POST', '/devices', { mac: MAC })).statusCode).toBe(201);
    const none = await api('GET', `/devices/${MAC}/bmc`);
    expect(none.statusCode).toBe(409);
    expect(none.json().code).toBe('bmc_not_configured');
    const noPassword = await api('PUT', `/devices/${MAC}/bmc`, { driver: 'ipmi', host: 'bmc-01.example', username: 'admin' });
    expect(noPassword.statusCode).toBe(400);
    expect(noPassword.json().code).toBe('bmc_invalid');
    const put = await api('PUT', `/devices/${MAC}/bmc`, { driver: 'ipmi', host: 'bmc-01.example', username: 'admin', password: 'hunter2-21' });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual({ driver: 'ipmi', host: 'bmc-01.example', port: 623, cipher_suite: 3, username: 'admin', password_set: true, updated_at: expect.any(String) });
    const got = await api('GET', `/devices/${MAC}/bmc`);
    expect(got.json()).toEqual(put.json());
    // The device view is the seed's until a power action was recorded.
    expect(Object.keys((await api('GET', `/devices/${MAC}`)).json())).not.toContain('last_power');
    const ops = (await api('GET', `/operations?mac=${MAC}`)).json().entries as Array<Record<string, unknown>>;
    expect(ops.find((o) => o.op === 'device.bmc.set')).toMatchObject({ driver: 'ipmi' });
    // A viewer reads the operations log: never the password, nor the BMC's address or user.
    for (const secretish of ['hunter2-21', 'bmc-01.example', '"admin"']) expect(JSON.stringify(ops)).not.toContain(secretish);
    expect((await api('DELETE', `/devices/${MAC}/bmc`)).json()).toEqual({ mac: MAC, deleted: true });
    expect((await api('GET', `/devices/${MAC}/bmc`)).statusCode).toBe(409);
  });

  it('refuses BMC settings outside their grammar (they reach a command line or a URL)', async () => {
    const bad: Array<Record<string, unknown>> = [
      { driver: 'ipmi', host: '-oProxyCommand=evil', username: 'admin', password: 'x' },
      { driver: 'ipmi', host: 'bmc', username: 'admin', password: 'x', port: 70000 },
      { driver: 'ipmi', host: 'bmc', username: 'a-very-long-user-name', password: 'x' },
      { driver: 'ipmi', host: 'bmc', username: 'admin', password: 'a\nb' },
      { driver: 'redfish', url: 'https://u:p@bmc/redfish/v1/Systems/1', username: 'a', password: 'x' },
      { driver: 'redfish', url: 'https://bmc/not-redfish', username: 'a', password: 'x' },
      { driver: 'redfish', url: 'https://bmc/redfish/v1/Systems/1', host: 'bmc', username: 'a', password: 'x' },
    ];
    for (const b of bad) {
      const r = await api('PUT', `/devices/${MAC}/bmc`, b);
      expect([400, 422], JSON.stringify(b)).toContain(r.statusCode);
      expect(r.body).not.toContain('"password":');
    }
    const unknown = await api('PUT', `/devices/${MAC}/bmc`, { driver: 'snmp', host: 'x', username: 'a', password: 'b' });
    expect([400, 422]).toContain(unknown.statusCode);
  });

  it('refuses power to an unknown device (404), one without a BMC (409) and a revoked one (409)', async () => {
    expect((await api('POST', '/devices/52:54:00:21:00:99/power', { action: 'on' })).statusCode).toBe(404);
    const none = await api('POST', `/devices/${MAC}/power`, { action: 'on' });
    expect(none.statusCode).toBe(409);
    expect(none.json().code).toBe('bmc_not_configured');
    expect((await api('GET', `/devices/${MAC}/power`)).json().code).toBe('bmc_not_configured');
    expect((await api('POST', `/devices/${MAC}/power`, { action: 'reboot' })).statusCode).toBe(422);
    // boot: null is "no network boot" (the console sends it), not a validation error.
    expect((await api('POST', `/devices/${MAC}/power`, { action: 'on', boot: null })).json().code).toBe('bmc_not_configured');
    expect((await api('POST', '/devices/power', { macs: [MAC], action: 'on', boot: null })).statusCode).toBe(200);
    const rev = '52:54:00:21:00:02';
    expect((await api('POST', '/devices', { mac: rev, bmc: { driver: 'ipmi', host: 'bmc-02.example', username: 'admin', password: 'pw-21' } })).statusCode).toBe(201);
    expect((await api('DELETE', `/devices/${rev}`)).statusCode).toBe(200);
    const r = await api('POST', `/devices/${rev}/power`, { action: 'cycle', boot: 'network' });
    expect(r.statusCode).toBe(409);
    expect(r.json().code).toBe('power_device_revoked');
  });

  it('answers one result per MAC in a batch, each refusal with its code', async () => {
    const r = await api('POST', '/devices/power', { macs: [MAC, 'nope', MAC, '52:54:00:21:00:99'], action: 'off' });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toEqual({
      succeeded: [],
      failed: expect.arrayContaining([
        { mac: 'nope', status: 400, code: 'mac_invalid', detail: expect.any(String) },
        { mac: MAC, status: 409, code: 'bmc_not_configured', detail: expect.any(String) },
        { mac: '52:54:00:21:00:99', status: 404, code: 'device_not_found', detail: expect.any(String) },
      ]),
    });
    expect(r.json().failed).toHaveLength(3);
  });

  it('imports devices with their BMC, each entry on its own', async () => {
    const r = await api('POST', '/devices/import', {
      entries: [
        { mac: '52:54:00:21:00:10', bmc: { driver: 'redfish', url: 'https://bmc-10.example/redfish/v1/Systems/1', username: 'root', password: 'pw-10' } },
        { mac: '52:54:00:21:00:11', bmc: { driver: 'redfish', url: 'gopher://x', username: 'root', password: 'pw-11' } },
      ],
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().created).toEqual(['52:54:00:21:00:10']);
    expect(r.json().failed).toEqual([{ mac: '52:54:00:21:00:11', error: expect.stringContaining('url') }]);
    expect((await api('GET', '/devices/52:54:00:21:00:10/bmc')).json()).toMatchObject({ driver: 'redfish', verify_tls: true, password_set: true });
    expect(r.body).not.toContain('pw-1');
  });
});
