import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningAgent, startAgent } from './main';
import { freeTcpPort, type RunningTgtd, startTgtd, unusedControlPort } from './testing/tgtd';

const BASE = 'iqn.2026-07.com.controller';
const MiB = 1024 * 1024;

describe('startAgent', () => {
  let dir: string;
  let tgtd: RunningTgtd;
  let agent: RunningAgent | undefined;
  let portal: string;
  const env = () => ({
    DISK_DIR: dir,
    IPXE_AGENT_TOKEN: 'tok',
    IPXE_AGENT_TGT_CONTROL_PORT: String(tgtd.controlPort),
    IRONLENS_AGENT_LISTEN: '127.0.0.1:0',
    IRONLENS_LOG_LEVEL: 'silent',
    // These tests rebuild the seed's open targets; the safe default (off) is tested in routes/agent.hardening.test.ts.
    IRONLENS_AGENT_SCAN_OPEN: 'true',
  });
  const get = (path: string) => fetch(`${agent!.url}${path}`, { headers: { authorization: 'Bearer tok' } });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ironlens-agent-main-'));
    portal = `127.0.0.1:${await freeTcpPort()}`;
    tgtd = await startTgtd({ controlPort: unusedControlPort(), portal });
  });
  afterAll(async () => {
    await agent?.close();
    await tgtd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rebuilds targets from DISK_DIR at start, as after a tgtd restart, and serves over HTTP', async () => {
    writeFileSync(join(dir, 'worker-01.ubuntu.img'), Buffer.alloc(MiB));
    writeFileSync(join(dir, 'install.iso'), Buffer.alloc(MiB));
    writeFileSync(join(dir, '_tpl_ubuntu_2204.img'), Buffer.alloc(2 * MiB));
    agent = await startAgent(env());
    expect(agent.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${agent.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${agent.url}/luns`)).status).toBe(401);
    const luns = (await (await get('/luns')).json()) as { iqn: string; luns: { backing: string }[] }[];
    expect(luns.map((t) => t.iqn).sort()).toEqual([`${BASE}:install.iso`, `${BASE}:worker-01.ubuntu`]);
    const spec = (await (await fetch(`${agent.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(['/healthz', '/capabilities', '/luns', '/luns/disk', '/luns/cd', '/luns/scan', '/masters']));
    const masters = await (await get('/masters')).json();
    expect(masters).toEqual({ masters: [{ name: '_tpl_ubuntu_2204.img', size: 2 * MiB, mtime: expect.any(Number) }] });
  });

  it('brings targets back after tgtd itself restarts, through POST /luns/scan', async () => {
    const created = await fetch(`${agent!.url}/luns/disk`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
      body: JSON.stringify({ iqn: `${BASE}:worker-02.debian`, size: '64M', filename: 'w2.img' }),
    });
    expect(created.status).toBe(200);
    const restricted = await fetch(`${agent!.url}/luns/disk`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
      body: JSON.stringify({ iqn: `${BASE}:worker-03.debian`, size: '1M', initiator: `${BASE}:worker-03` }),
    });
    expect(restricted.status).toBe(200);
    const port = tgtd.controlPort;
    await tgtd.stop();
    tgtd = await startTgtd({ controlPort: port, portal });
    expect(await (await get('/luns')).json()).toEqual([]);
    const scan = await fetch(`${agent!.url}/luns/scan`, { method: 'POST', headers: { authorization: 'Bearer tok' } });
    const body = (await scan.json()) as { created: { iqn: string }[] };
    expect(body.created.map((c) => c.iqn).sort()).toEqual([`${BASE}:install.iso`, `${BASE}:worker-01.ubuntu`, `${BASE}:worker-02.debian`, `${BASE}:worker-03.debian`]);
    expect(existsSync(join(dir, 'w2.img'))).toBe(true);
    const acls = Object.fromEntries(((await (await get('/luns')).json()) as { iqn: string; acl: string[] }[]).map((t) => [t.iqn, t.acl]));
    expect(acls[`${BASE}:worker-03.debian`]).toEqual([`${BASE}:worker-03`]);
    expect(acls[`${BASE}:worker-02.debian`]).toEqual(['ALL']);
  });

  it('rebuilds a restricted target with its ACL at start', async () => {
    await agent?.close();
    agent = undefined;
    const port = tgtd.controlPort;
    await tgtd.stop();
    tgtd = await startTgtd({ controlPort: port, portal });
    agent = await startAgent(env());
    const acls = Object.fromEntries(((await (await get('/luns')).json()) as { iqn: string; acl: string[] }[]).map((t) => [t.iqn, t.acl]));
    expect(acls[`${BASE}:worker-03.debian`]).toEqual([`${BASE}:worker-03`]);
    expect(acls[`${BASE}:worker-01.ubuntu`]).toEqual(['ALL']);
  });

  it('refuses to start on an invalid configuration', async () => {
    await expect(startAgent({ ...env(), IPXE_AGENT_BACKEND: 'iet' })).rejects.toThrow(/IPXE_AGENT_BACKEND/);
  });
});
