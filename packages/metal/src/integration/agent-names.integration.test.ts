/**
 * Issue 13, finding 1, through the control plane with a real agent (`startAgent`) over a
 * real tgtd: a master, ISO or file name with a missing directory is a 400 naming it, in
 * seed 004's pass-through shape `{"agent": …, "error": …}`, never a 500.
 */
import { type AgentOnTgtd, startAgentOnTgtd } from '@ironlens/agent/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const BASE = 'iqn.2026-07.com.controller';
let agent: AgentOnTgtd;
let f: MetalFixture;
const inject = (method: string, url: string, payload?: unknown) => f.app.inject({ method: method as 'GET', url, payload: payload as object });

beforeAll(async () => {
  agent = await startAgentOnTgtd({ token: 'agent-tok', baseIqn: BASE, files: { '_tpl_debian.img': Buffer.alloc(1024 * 1024) }, tmpPrefix: 'ironlens-agent-names-' });
  f = await newMetalFixture();
  expect((await inject('POST', '/agents', { id: 'st1', base_url: agent.url, token: 'agent-tok', role: { disk: true, cd: true }, tags: ['stgt'] })).statusCode).toBe(201);
  expect((await inject('POST', '/workers', { worker_id: 'w1' })).statusCode).toBe(200);
});
afterAll(async () => {
  await f?.close();
  await agent?.stop();
});

describe('names with a missing directory, through the control plane', () => {
  it('answers 400 {"agent","error"} naming the master, never 500', async () => {
    const r = await inject('POST', '/workers/w1/luns/disk', { type: 'master', os: 'debian', name: 'nodir/x' });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({ agent: 'st1', error: expect.stringContaining('nodir/x') });
  });

  it('answers 400 naming the ISO of a new worker, and creates no worker', async () => {
    const r = await inject('POST', '/workers', { worker_id: 'w2', windows_iso: 'nodir/x.iso' });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({ agent: 'st1', error: expect.stringContaining('nodir/x.iso') });
    expect((await inject('GET', '/workers/w2')).statusCode).toBe(404);
  });

  it('answers 400 naming the file on the agent passthrough routes', async () => {
    for (const [url, body, name] of [
      ['/agents/st1/luns/disk', { iqn: `${BASE}:m1`, master: 'nodir/x' }, 'nodir/x'],
      ['/agents/st1/luns/disk', { iqn: `${BASE}:m1`, size: '1M', filename: 'nodir/x.img' }, 'nodir/x.img'],
      ['/agents/st1/luns/cd', { iso: 'nodir/x.iso' }, 'nodir/x.iso'],
    ] as const) {
      const r = await inject('POST', url, body);
      expect(r.statusCode, `${url} ${JSON.stringify(body)}`).toBe(400);
      expect(r.json()).toEqual({ agent: 'st1', error: expect.stringContaining(name) });
    }
  });

  it('still makes a disk from a plain master name', async () => {
    const r = await inject('POST', '/workers/w1/luns/disk', { type: 'master', os: 'debian', name: '_tpl_debian.img' });
    expect(r.statusCode).toBe(200);
  });
});
