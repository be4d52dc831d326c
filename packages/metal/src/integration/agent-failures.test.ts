/**
 * Storage failure paths that a real agent will not produce on demand, against a stand-in
 * that speaks the agent's HTTP protocol: garbage answers (502), an agent slower than
 * IPXE_CP_AGENT_TIMEOUT (503, not a hang), and a disk the agent made whose ledger write
 * then fails (the disk is removed again).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { sleep } from '@ironlens/core/testing';

let f: MetalFixture;
let agent: FakeAgent;
const inject = (method: string, url: string, payload?: unknown) => f.app.inject({ method: method as 'GET', url, payload: payload as object });

beforeEach(async () => {
  f = await newMetalFixture({ IPXE_CP_AGENT_TIMEOUT: '0.5' });
  agent = await new FakeAgent().start();
  expect((await inject('POST', '/agents', { id: 'fake', base_url: agent.url, token: 'tok', role: { disk: true, cd: true }, tags: ['stgt'] })).statusCode).toBe(201);
});
afterEach(async () => {
  await f.close();
  await agent.stop();
});

/** The worker is deleted while the agent is making its disk: the ledger write must fail. */
function workerVanishesWhileAgentMakesItsDisk() {
  agent.handlers.set('POST /luns/disk', async (call, res) => {
    await f.services.workers.delete('w1', { deleteDisk: false, ignoreMissingTarget: true }, {});
    const b = call.body as { iqn: string; filename: string };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ iqn: b.iqn, backing: `/images/${b.filename}`, filename: b.filename }));
  });
}

describe('agent failures', () => {
  it('answers 502 when the agent answers something that is not JSON', async () => {
    agent.handlers.set('GET /luns', (_c, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>proxy error</html>');
    });
    const r = await inject('GET', '/agents/fake/luns');
    expect(r.statusCode).toBe(502);
    expect(r.json()).toMatchObject({ agent: 'fake' });
  });

  it('answers 503 within the timeout when the agent hangs', async () => {
    agent.handlers.set('GET /luns', () => {
      /* never answers */
    });
    const t0 = Date.now();
    const r = await inject('GET', '/agents/fake/luns');
    expect(r.statusCode).toBe(503);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('gives disk creation its own, longer deadline (a copy of a master is slow)', async () => {
    await inject('POST', '/workers', { worker_id: 'w1' });
    agent.handlers.set('POST /luns/disk', async (call, res) => {
      await sleep(1_000); // twice IPXE_CP_AGENT_TIMEOUT
      const b = call.body as { iqn: string; filename: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ iqn: b.iqn, backing: `/images/${b.filename}`, filename: b.filename, clone: 'copy' }));
    });
    const r = await inject('POST', '/workers/w1/luns/disk', { type: 'master', os: 'ubuntu', name: '_tpl_u.img' });
    expect(r.statusCode).toBe(200);
    expect(r.json().state).toBe('ready');
  });

  it('sends the stored token, expanded, as a bearer token', async () => {
    await inject('GET', '/agents/fake/luns');
    expect(agent.calls.find((c) => c.path === '/luns')?.authorization).toBe('Bearer tok');
  });

  it('removes the disk again when the ledger write fails after the agent made it', async () => {
    await inject('POST', '/workers', { worker_id: 'w1' });
    workerVanishesWhileAgentMakesItsDisk();
    const r = await inject('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' });
    expect(r.statusCode).toBe(404);
    const undo = agent.calls.find((c) => c.method === 'DELETE' && c.path === '/luns');
    expect(undo?.query).toEqual({ iqn: 'iqn.2026-07.com.controller:w1.ubuntu', delete_file: 'true' });
  });

  it('says exactly what was left behind when the rollback fails too', async () => {
    await inject('POST', '/workers', { worker_id: 'w1' });
    workerVanishesWhileAgentMakesItsDisk();
    agent.handlers.set('DELETE /luns', (_c, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: 'tgtadm failed' }));
    });
    const r = await inject('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' });
    expect(r.statusCode).toBe(404);
    expect(r.json().detail).toContain('left behind: target iqn.2026-07.com.controller:w1.ubuntu and file /images/w1.ubuntu.img on agent fake');
    const ops = (await inject('GET', '/operations')).json().entries;
    expect(ops.some((e: { op: string; status: string }) => e.op === 'agent.create_disk' && e.status === 'orphaned')).toBe(true);
  });
});
