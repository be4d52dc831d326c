/**
 * The boot timeline's first iSCSI login (issue 24): the control plane asks the worker's real
 * agent over a real tgtd which sessions it saw on the worker's disk, and takes the first one at
 * or after the boot's `/boot-vars` answer. The initiator is libiscsi's `iscsi-perf`, which logs
 * in and keeps reading until it is stopped.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type AgentOnTgtd, startAgentOnTgtd } from '@ironlens/agent/testing';
import { waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const BASE = 'iqn.2026-07.com.controller';
const MAC = '02:00:00:c4:b1:01';
const IQN = `${BASE}:w1.ubuntu`;
const INITIATOR = `${BASE}:w1`;
let agent: AgentOnTgtd;
let f: MetalFixture;
let perf: ChildProcess | undefined;
const inject = (method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) =>
  f.app.inject({ method: method as 'GET', url, payload: payload as object, headers });

const report = () =>
  inject(
    'POST',
    '/hosts/report',
    {
      mac: MAC,
      hostname: 'w1',
      addresses: [{ interface: 'eth0', mac: MAC, ipv4: ['192.0.2.5'], ipv6: [] }],
      ssh_host_keys: [{ algorithm: 'ssh-ed25519', fingerprint: `SHA256:${'A'.repeat(43)}` }],
      os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' },
      kernel: '6.1.0-28-amd64',
      hardware: { cpu_model: 'x', cpus: 1, memory_bytes: 1, disks: [], nics: [], accelerators: [] },
    },
    { 'x-ironlens-timestamp': String(Math.floor(Date.now() / 1000)) },
  );

beforeAll(async () => {
  agent = await startAgentOnTgtd({ token: 'agent-tok', baseIqn: BASE, tmpPrefix: 'ironlens-boot-login-' });
  f = await newMetalFixture({});
  expect((await inject('POST', '/agents', { id: 'st1', base_url: agent.url, token: 'agent-tok', role: { disk: true }, tags: ['stgt'] })).statusCode).toBe(201);
  expect((await inject('POST', '/devices', { mac: MAC })).statusCode).toBe(201);
  expect((await inject('POST', '/workers', { worker_id: 'w1', mac: MAC })).statusCode).toBe(200);
  const disk = await inject('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1M' });
  expect(disk.statusCode, disk.body).toBe(200);
}, 60_000);
afterAll(async () => {
  if (perf && perf.exitCode === null && perf.signalCode === null) {
    const p = perf;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  }
  await f?.close();
  await agent?.stop();
});

describe('the boot timeline: iscsi_login_at', () => {
  it('is the first login the agent saw after /boot-vars, between boot_vars_at and host_report_at', async () => {
    expect((await inject('GET', `/boot-vars?mac=${MAC}&hostname=w1`)).statusCode).toBe(200);
    perf = spawn('iscsi-perf', ['-i', INITIATOR, `iscsi://${agent.tgtd.portal}/${IQN}/1`], { stdio: 'ignore' });
    perf.on('error', (err) => {
      throw new Error(`iscsi-perf (apt: libiscsi-bin) did not start: ${err.message}`);
    });
    await waitUntil(
      'the agent sees the login',
      async () => ((await inject('GET', '/agents/st1/luns')).json() as Array<{ iqn: string; sessions?: unknown[] }>).some((t) => t.iqn === IQN && (t.sessions?.length ?? 0) > 0),
      20_000,
      200,
    );
    const res = await report();
    expect(res.statusCode, res.body).toBe(200);
    const w = (await inject('GET', '/workers/w1')).json() as { boot_timeline: { boot_vars_at: string; iscsi_login_at: string | null; host_report_at: string } };
    const t = w.boot_timeline;
    expect(t.iscsi_login_at).not.toBeNull();
    expect(Date.parse(t.iscsi_login_at!)).toBeGreaterThanOrEqual(Date.parse(t.boot_vars_at));
    expect(Date.parse(t.iscsi_login_at!)).toBeLessThanOrEqual(Date.parse(t.host_report_at));
  }, 90_000);
});
