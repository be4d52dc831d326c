import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLinkLocalAddress } from '@ironlens/core';
import { describe, expect, it } from 'vitest';
import { FakeAgent } from '../testing/fake-agent';
import { checkAgentAddress } from './agent-address';
import { HttpStorageAgents } from './storage-agent.http';

describe('agent addresses', () => {
  it('tells link-local and metadata addresses from others', () => {
    for (const a of ['169.254.169.254', '169.254.0.1', 'fe80::1', 'FEBF::1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', 'fd00:ec2::254', '100.100.100.200']) expect(isLinkLocalAddress(a), a).toBe(true);
    for (const a of ['127.0.0.1', '10.0.0.5', '169.255.0.1', '::1', 'fec0::1', '::ffff:7f00:1', '192.168.80.3']) expect(isLinkLocalAddress(a), a).toBe(false);
  });

  it('refuses a name that resolves to a link-local address, and metadata names', async () => {
    const resolve = async () => ['169.254.7.7'];
    await expect(checkAgentAddress('http://agent.example:4840', resolve)).rejects.toMatchObject({ code: 'agent_address_forbidden', status: 400 });
    await expect(checkAgentAddress('http://metadata.google.internal./x', async () => [])).rejects.toMatchObject({ code: 'agent_address_forbidden' });
    await expect(checkAgentAddress('http://agent.example:4840', async () => ['10.0.0.5'])).resolves.toBeUndefined();
  });

  it('lets calls through to such an address when IPXE_CP_AGENT_ALLOW_LINK_LOCAL allows it', async () => {
    const fake = await new FakeAgent().start();
    try {
      // "localhost" is made to look link-local; it still reaches the stand-in on 127.0.0.1.
      const base_url = fake.url.replace('127.0.0.1', 'localhost');
      const resolve = async () => ['169.254.7.7'];
      const refused = new HttpStorageAgents({ timeoutMs: 2_000, resolve }).connect({ id: 'a', base_url, token: null });
      await expect(refused.health()).rejects.toMatchObject({ code: 'agent_address_forbidden' });
      expect(fake.calls).toHaveLength(0);
      const allowed = new HttpStorageAgents({ timeoutMs: 2_000, resolve, allowLinkLocal: true }).connect({ id: 'a', base_url, token: null });
      await allowed.health();
      expect(fake.calls.map((c) => c.path)).toEqual(['/healthz']);
    } finally {
      await fake.stop();
    }
  });

  it('refuses the connection when the name resolves elsewhere than at the check (DNS rebinding), before any request reaches it', async () => {
    const fake = await new FakeAgent().start();
    try {
      const base_url = fake.url.replace('127.0.0.1', 'localhost');
      // The check sees loopback; the connection's own resolution a moment later sees 169.254.169.254.
      let calls = 0;
      const resolve = async () => (calls++ === 0 ? ['127.0.0.1'] : ['169.254.169.254']);
      const agent = new HttpStorageAgents({ timeoutMs: 2_000, resolve }).connect({ id: 'a', base_url, token: null });
      await expect(agent.health()).rejects.toMatchObject({ code: 'agent_address_forbidden', status: 400 });
      expect(calls).toBe(2);
      expect(fake.calls).toHaveLength(0);
      // The same name resolving to loopback both times reaches the agent, through the same hook.
      const steady = new HttpStorageAgents({ timeoutMs: 2_000, resolve: async () => ['127.0.0.1'] }).connect({ id: 'a', base_url, token: null });
      await steady.health();
      expect(fake.calls.map((c) => c.path)).toEqual(['/healthz']);
    } finally {
      await fake.stop();
    }
  });

  it('refuses an answer larger than 32 MiB while it streams, and keeps answering afterwards', async () => {
    let served = 0;
    const server = createServer((req, res) => {
      if (req.url === '/healthz') return res.end('{"ok":true}');
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const write = () => {
        while (served < 64) {
          served++;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end('[]');
      };
      write();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const base_url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const agent = new HttpStorageAgents({ timeoutMs: 20_000 }).connect({ id: 'big', base_url, token: null });
      await expect(agent.masters()).rejects.toMatchObject({ code: 'agent_unreachable', message: expect.stringMatching(/larger than 33554432 bytes/) });
      expect(served, 'the rest was never read').toBeLessThan(64);
      await agent.health();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
