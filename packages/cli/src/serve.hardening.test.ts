/**
 * Issue 29, findings 1 and 11, against `ironlens serve` in its own process (its request log on,
 * `IRONLENS_LOG=1`), as a holder of one operator or viewer token would try them:
 * - a probe whose token is `${IPXE_AGENT_TOKEN}` must not send the agents' token to a listener of
 *   the caller's choice (directly, and through the console's `/api/metal`);
 * - token expiry is range-checked (it was a 500), the actor names of ironlens' own are reserved;
 * - a BMC's URL and username are not a viewer's to read;
 * - the request log shows no value of a query parameter named like a secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort, testDatabaseEnv, waitFor } from '@ironlens/core/testing';
import { FakeAgent } from '@ironlens/metal/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ServeProcess, startServeProcess } from './testing/serve-process';
import { tokenCommand } from './token';

const AGENT_SECRET = 'agents-env-secret-29f1';
const BMC_USER = 'bmc-user-29f11';
const BMC_PASSWORD = 'bmc-pass-29f11';
const MAC = '02:00:00:29:0b:01';
/** `${NAME}`, as an agent token names an environment variable. */
const envRef = (name: string) => `$\{${name}}`;

let dir: string;
let served: ServeProcess;
let boot = '';
let consoleUrl = '';
let dbEnv: Record<string, string>;
/** A listener of the attacker's choice: it records every request's headers. */
let attacker: FakeAgent;
/** The storage agent that is registered, with `${IPXE_AGENT_TOKEN}` as its token. */
let agent: FakeAgent;
const tokens = { viewer: '', operator: '', admin: '' };

async function call(base: string, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, json, text };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-serve-hardening-'));
  attacker = await new FakeAgent().start();
  agent = await new FakeAgent({ token: AGENT_SECRET }).start();
  dbEnv = await testDatabaseEnv();
  const env = { IRONLENS_DATA_DIR: join(dir, 'data'), IPXE_CP_DNSMASQ_RELOAD: 'false', ...dbEnv };
  for (const role of ['viewer', 'operator', 'admin'] as const) {
    let out = '';
    expect(await tokenCommand(['create', '--name', `h-${role}`, '--role', role], env, { out: (s) => (out += s), err: () => {} })).toBe(0);
    tokens[role] = out.trim();
  }
  served = await startServeProcess({
    PATH: process.env.PATH,
    ...env,
    IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IPXE_AGENT_TOKEN: AGENT_SECRET,
    IRONLENS_LOG: '1',
    IRONLENS_AUTH_FAIL_SLOW_AFTER: '100000',
    IRONLENS_AUTH_FAIL_BLOCK_AFTER: '100000',
  });
  boot = served.boot;
  consoleUrl = served.console;
}, 60_000);

afterAll(async () => {
  await served?.stop();
  await attacker?.stop();
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('agent token placeholders in requests (issue 29, finding 1)', () => {
  // Each test reads only what it caused.
  beforeEach(() => {
    attacker.calls.length = 0;
    agent.calls.length = 0;
  });

  it('an operator whose probe names $IPXE_AGENT_TOKEN (as a placeholder) is refused, directly or through /api/metal, and nothing reaches the listener it names', async () => {
    const body = { base_url: attacker.url, token: envRef('IPXE_AGENT_TOKEN') };
    const tries = [
      await call(boot, 'POST', '/agents/probe', tokens.operator, body),
      await call(consoleUrl, 'POST', '/api/metal/agents/probe', tokens.operator, body),
      await call(boot, 'POST', '/agents/probe', tokens.operator, { ...body, token: `x${envRef('IPXE_AGENT_TOKEN')}` }),
      await call(consoleUrl, 'POST', '/api/metal/agents/probe', tokens.operator, { ...body, agent_id: 'nobody' }),
    ];
    for (const r of tries) {
      expect(r.status, r.text).toBe(403);
      expect(r.json.permission).toBe('metal:agent:write');
    }
    expect(attacker.calls).toEqual([]);
  });

  it("an admin's placeholder is expanded (seed §6.2): its probe, and the registered agent's token towards that agent's own base_url only", async () => {
    expect((await call(boot, 'POST', '/agents/probe', tokens.admin, { base_url: agent.url, token: envRef('IPXE_AGENT_TOKEN') })).status).toBe(200);
    expect((await call(boot, 'POST', '/agents', tokens.admin, { id: 'ag1', base_url: agent.url, token: envRef('IPXE_AGENT_TOKEN'), role: { disk: true } })).status).toBe(201);
    // Any prober may use a registered agent's token, towards that agent.
    expect((await call(boot, 'POST', '/agents/probe', tokens.operator, { base_url: agent.url, agent_id: 'ag1' })).status).toBe(200);
    expect(agent.calls.filter((c) => c.path === '/capabilities').map((c) => c.authorization)).toEqual([`Bearer ${AGENT_SECRET}`, `Bearer ${AGENT_SECRET}`]);
    const elsewhere = await call(consoleUrl, 'POST', '/api/metal/agents/probe', tokens.operator, { base_url: attacker.url, agent_id: 'ag1' });
    expect(elsewhere.json.code).toBe('agent_token_misdirected');
    // An operator may not register one of its own.
    expect((await call(boot, 'POST', '/agents', tokens.operator, { id: 'ag2', base_url: attacker.url, token: envRef('IPXE_AGENT_TOKEN'), role: { disk: true } })).status).toBe(403);
    expect(attacker.calls).toEqual([]);
  });

  it("an admin's probe that expanded a placeholder is in the operations log (who, where, which variable, never its value); one naming any of ironlens' settings is refused", async () => {
    const before = (await call(boot, 'GET', '/operations', tokens.admin)).json.next_cursor as number;
    expect((await call(consoleUrl, 'POST', '/api/metal/agents/probe', tokens.admin, { base_url: attacker.url, token: `Bearer ${envRef('IPXE_AGENT_TOKEN')}` })).status).toBe(200);
    const log = await call(boot, 'GET', `/operations?since=${before}`, tokens.viewer);
    const probes = (log.json.entries as Array<Record<string, unknown>>).filter((e) => e.op === 'agent.probe');
    expect(probes.map(({ id: _i, ts: _t, client: _c, ...e }) => e)).toEqual([{ op: 'agent.probe', status: 'ok', actor: 'h-admin', base_url: attacker.url, env: ['IPXE_AGENT_TOKEN'] }]);
    expect(log.text).not.toContain(AGENT_SECRET);
    // IPXE_AGENT_* is allowed by default, but IPXE_AGENT_BACKEND is one of ironlens' settings (the table serve passes on); the others by their prefix.
    attacker.calls.length = 0;
    for (const name of ['IPXE_AGENT_BACKEND', 'IPXE_CP_TOKEN', 'IRONLENS_SECRET_KEY', 'IRONLENS_DATABASE_URL', 'KIND_K8S_TOKEN']) {
      const r = await call(boot, 'POST', '/agents/probe', tokens.admin, { base_url: attacker.url, token: envRef(name) });
      expect(r.status, name).toBe(400);
      expect(r.json, name).toMatchObject({ code: 'agent_token_env_reserved', variable: name });
      const reg = await call(boot, 'POST', '/agents', tokens.admin, { id: 'reserved', base_url: attacker.url, token: envRef(name), role: { disk: true } });
      expect(reg.json.code, name).toBe('agent_token_env_reserved');
    }
    expect(attacker.calls).toEqual([]);
  });
});

describe('access details (issue 29, finding 11)', () => {
  it('an expiry past ten years is a 400 with its code, over HTTP and in the token command (it was a 500)', async () => {
    for (const base of [boot, consoleUrl]) {
      const r = await call(base, 'POST', '/api/auth/tokens', tokens.admin, { name: 'far-future', role: 'viewer', expires: '99999999999d' });
      expect(r.status, r.text).toBe(400);
      expect(r.json.code).toBe('token_expiry_out_of_range');
    }
    const env = { IRONLENS_DATA_DIR: join(dir, 'data'), ...dbEnv };
    await expect(tokenCommand(['create', '--name', 'far-future', '--role', 'viewer', '--expires', '99999999999d'], env, { out: () => {}, err: () => {} })).rejects.toMatchObject({ code: 'token_expiry_out_of_range' });
    expect((await call(boot, 'POST', '/api/auth/tokens', tokens.admin, { name: 'far-future', role: 'viewer', expires: '3650d' })).status).toBe(201);
  });

  it("ironlens, anonymous and env:… are refused as token names: they are ironlens' own actors", async () => {
    for (const name of ['ironlens', 'anonymous', 'Anonymous', 'env:IPXE_CP_TOKEN']) {
      const r = await call(boot, 'POST', '/api/auth/tokens', tokens.admin, { name, role: 'admin' });
      expect(r.status, name).toBe(400);
      expect(r.json.code, name).toBe('token_name_reserved');
    }
    const env = { IRONLENS_DATA_DIR: join(dir, 'data'), ...dbEnv };
    await expect(tokenCommand(['create', '--name', 'ironlens', '--role', 'admin'], env, { out: () => {}, err: () => {} })).rejects.toMatchObject({ code: 'token_name_reserved' });
  });

  it("a viewer reads neither a BMC's URL nor its username: not its record, nor a device view, a power error or the operations log", async () => {
    const closed = await freeTcpPort();
    const bmcUrl = `http://127.0.0.1:${closed}/redfish/v1/Systems/1`;
    expect((await call(boot, 'POST', '/devices', tokens.operator, { mac: MAC })).status).toBe(201);
    expect((await call(boot, 'PUT', `/devices/${MAC}/bmc`, tokens.admin, { driver: 'redfish', url: bmcUrl, username: BMC_USER, password: BMC_PASSWORD })).status).toBe(200);
    // An operator reads the record (to fix it); the action fails (nothing listens there).
    const asOperator = await call(boot, 'GET', `/devices/${MAC}/bmc`, tokens.operator);
    expect(asOperator.json).toMatchObject({ url: bmcUrl, username: BMC_USER, password_set: true });
    expect((await call(boot, 'POST', `/devices/${MAC}/power`, tokens.operator, { action: 'on' })).status).toBe(502);
    // A viewer: 403 on the record, on both listeners.
    for (const [base, path] of [
      [boot, `/devices/${MAC}/bmc`],
      [consoleUrl, `/api/metal/devices/${MAC}/bmc`],
    ]) {
      const r = await call(base, 'GET', path, tokens.viewer);
      expect(r.status, path).toBe(403);
      expect(r.json.permission).toBe('metal:bmc:read');
    }
    // And what a viewer does read says nothing of the BMC's address or user.
    const viewerReads = [
      await call(boot, 'GET', `/devices/${MAC}`, tokens.viewer),
      await call(boot, 'GET', '/devices', tokens.viewer),
      await call(boot, 'GET', `/devices/${MAC}/power`, tokens.viewer),
      await call(boot, 'GET', `/operations?mac=${MAC}`, tokens.viewer),
      await call(consoleUrl, 'GET', `/api/metal/operations?mac=${MAC}`, tokens.viewer),
    ];
    expect(viewerReads[0].json.last_power).toMatchObject({ action: 'on', bmc_ok: false });
    expect(viewerReads[3].text).toContain('"op":"power.action"');
    const leaks = viewerReads.flatMap((r, i) => [BMC_USER, BMC_PASSWORD, `127.0.0.1:${closed}`].filter((s) => r.text.includes(s)).map((s) => `${s} in read ${i}`));
    expect(leaks).toEqual([]);
  });

  it('the request log shows the value of no query parameter named like a secret', async () => {
    const secrets = ['qs-token-29f11', 'qs-password-29f11', 'qs-apikey-29f11', 'qs-access-29f11', 'qs-key-29f11'];
    await fetch(`${boot}/boot-vars?mac=${MAC}&token=${secrets[0]}&Password=${secrets[1]}&api_key=${secrets[2]}`);
    await call(boot, 'GET', `/workers?access_token=${secrets[3]}&key=${secrets[4]}&state=ready`, tokens.viewer);
    const output = await waitFor('both requests in the log', () => served.output(), (o) => o.includes('/boot-vars?mac=') && o.includes('/workers?access_token='), 10_000);
    expect(output).toContain('token=[redacted]&Password=[redacted]&api_key=[redacted]');
    expect(output).toContain('/workers?access_token=[redacted]&key=[redacted]&state=ready');
    expect(secrets.filter((s) => output.includes(s))).toEqual([]);
  });
});
