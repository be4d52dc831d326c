/**
 * One contract for the storage agent as the control plane sees it (`StorageAgent` over
 * HTTP), run against the real agent (packages/agent driving a real tgtd) and against the
 * `FakeAgent` stand-in the failure-path tests use, so the stand-in cannot drift from the
 * real protocol.
 */
import { startAgentOnTgtd } from '@ironlens/agent/testing';
import { freeTcpPort } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAgent } from '../testing/fake-agent';
import { AgentFailedError, AgentTimeoutError, AgentTokenRejectedError, AgentUnreachableError, type StorageAgent } from './storage-agent';
import { HttpStorageAgents } from './storage-agent.http';

const BASE_IQN = 'iqn.2026-07.com.controller';
const TOKEN = 'contract-token';
const MASTER = '_tpl_contract.img';
const agents = new HttpStorageAgents({ timeoutMs: 5_000 });

interface Subject {
  url: string;
  stop(): Promise<void>;
}

async function realAgent(): Promise<Subject> {
  return startAgentOnTgtd({ token: TOKEN, baseIqn: BASE_IQN, files: { [MASTER]: Buffer.alloc(1024 * 1024) }, tmpPrefix: 'ironlens-contract-' });
}

async function fakeAgent(): Promise<Subject> {
  const fake = await new FakeAgent({ token: TOKEN, masters: [MASTER], baseIqn: BASE_IQN }).start();
  return { url: fake.url, stop: () => fake.stop() };
}

describe.each([
  ['the real agent (tgtd)', realAgent],
  ['FakeAgent', fakeAgent],
])('StorageAgent contract: %s', (_name, start) => {
  let subject: Subject;
  let agent: StorageAgent;
  const iqn = `${BASE_IQN}:contract-w1.ubuntu`;

  beforeAll(async () => {
    subject = await start();
    agent = agents.connect({ id: 'a1', base_url: subject.url, token: TOKEN });
  }, 60_000);
  afterAll(async () => {
    await subject?.stop();
  });

  it('is healthy and reports its backend and base IQN', async () => {
    await agent.health();
    expect(await agent.capabilities()).toMatchObject({ backend: 'stgt', base_iqn: BASE_IQN });
  });

  it('creates a disk under the IQN asked for, lists it, refuses it twice', async () => {
    const created = await agent.createDisk({ iqn, filename: 'contract-w1.ubuntu.img', size: '1M', initiator: `${BASE_IQN}:contract-w1` });
    expect(created).toMatchObject({ iqn, filename: 'contract-w1.ubuntu.img' });
    expect(created.backing).toMatch(/\/contract-w1\.ubuntu\.img$/);
    const listed = (await agent.listLuns()).find((t) => t.iqn === iqn);
    expect(listed?.luns.map((l) => l.backing)).toContain(created.backing);
    const again = await agent.createDisk({ iqn, filename: 'contract-w1.ubuntu.img', size: '1M' }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(AgentFailedError);
    expect((again as AgentFailedError).agentStatus).toBe(409);
  });

  it('deletes a target; a missing one is "missing" when asked to ignore it, else a 404', async () => {
    expect(await agent.deleteTarget({ iqn, deleteFile: true, ignoreMissing: false })).toBe('deleted');
    expect((await agent.listLuns()).some((t) => t.iqn === iqn)).toBe(false);
    expect(await agent.deleteTarget({ iqn, deleteFile: true, ignoreMissing: true })).toBe('missing');
    const err = await agent.deleteTarget({ iqn, deleteFile: true, ignoreMissing: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentFailedError);
    expect((err as AgentFailedError).agentStatus).toBe(404);
  });

  it('binds a CHAP account to a disk for its initiator: answers and lists the user, never the secret', async () => {
    const chapIqn = `${BASE_IQN}:contract-w2.ubuntu`;
    const initiator = `${BASE_IQN}:contract-w2`;
    const chap = { user: 'il-contract-w2', password: 'Contract2Secret2' };
    const created = await agent.createDisk({ iqn: chapIqn, filename: 'contract-w2.ubuntu.img', size: '1M', initiator, chap });
    expect(created).toMatchObject({ iqn: chapIqn, initiator, chap_user: chap.user });
    expect(JSON.stringify(created)).not.toContain(chap.password);
    const listed = (await agent.listLuns()).find((t) => t.iqn === chapIqn);
    expect(listed).toMatchObject({ acl: [initiator], accounts: [chap.user] });
    // A scan with the credential re-sent is accepted (nothing is missing here, so nothing is made).
    expect((await agent.scan({ chap: [chap] })).created).toEqual([]);
    expect(await agent.deleteTarget({ iqn: chapIqn, deleteFile: true, ignoreMissing: false })).toBe('deleted');
  });

  it('lists its masters', async () => {
    expect((await agent.masters()).map((m) => m.name)).toEqual([MASTER]);
  });

  it('rejects a wrong token as ironlens\' token, not the caller\'s; health needs none', async () => {
    const wrong = agents.connect({ id: 'a1', base_url: subject.url, token: 'wrong' });
    await wrong.health();
    const err = await wrong.capabilities().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentTokenRejectedError);
    expect(err).toMatchObject({ status: 502, code: 'agent_token_rejected' });
  });
});

describe('StorageAgent over HTTP, transport failures', () => {
  it('is unreachable on a closed port, and times out on one that never answers', async () => {
    const port = await freeTcpPort();
    const closed = agents.connect({ id: 'gone', base_url: `http://127.0.0.1:${port}`, token: null });
    expect(await closed.health().catch((e: unknown) => e)).toBeInstanceOf(AgentUnreachableError);

    const fake = await new FakeAgent().start();
    try {
      fake.handlers.set('GET /luns', () => {});
      const slow = new HttpStorageAgents({ timeoutMs: 200 }).connect({ id: 'slow', base_url: fake.url, token: null });
      const err = await slow.listLuns().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentTimeoutError);
      expect(err).toMatchObject({ status: 503, code: 'agent_unreachable' });
    } finally {
      await fake.stop();
    }
  });
});
