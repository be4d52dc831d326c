import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentTarget } from '../api/schemas';
import { type AgentOnTgtd, startAgentOnTgtd } from '../testing/agent-on-tgtd';

// The agent tells who is logged in to a target and since when (issue 24: the boot timeline's
// first iSCSI login): a real agent over a real tgtd, and a real initiator (libiscsi's
// iscsi-perf, which logs in and keeps reading until it is stopped) on loopback.

const TOKEN = 'sessions-test-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const INITIATOR = 'iqn.2026-07.com.controller:worker-sessions';

describe('GET /luns: the sessions of a target (real tgtd, real iSCSI login)', () => {
  let a: AgentOnTgtd;
  let iqn: string;
  const children: ChildProcess[] = [];

  const luns = async (): Promise<AgentTarget[]> => {
    const res = await fetch(`${a.url}/luns`, { headers: auth });
    expect(res.status).toBe(200);
    return (await res.json()) as AgentTarget[];
  };
  const target = async () => (await luns()).find((t) => t.iqn === iqn)!;
  const until = async <T>(what: string, f: () => Promise<T | undefined>, ms = 20_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const login = () => {
    const child = spawn('iscsi-perf', ['-i', INITIATOR, `iscsi://${a.tgtd.portal}/${iqn}/1`], { stdio: 'ignore' });
    child.on('error', (err) => {
      throw new Error(`iscsi-perf (apt: libiscsi-bin, scripts/install-test-deps.sh) did not start: ${err.message}`);
    });
    children.push(child);
    return child;
  };
  const stop = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });

  beforeAll(async () => {
    a = await startAgentOnTgtd({ token: TOKEN, tmpPrefix: 'ironlens-agent-sessions-' });
    iqn = `${a.baseIqn}:worker-sessions.debian`;
    const res = await fetch(`${a.url}/luns/disk`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ iqn, size: '16M', initiator: INITIATOR }),
    });
    expect(res.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    for (const c of children) await stop(c);
    await a?.stop();
  });

  it('shows no sessions before a login, then the login with its first_seen_at, then its end', async () => {
    expect((await target()).sessions).toBeUndefined();

    const before = Date.now();
    const child = login();
    const seen = await until('the login', async () => (await target()).sessions?.[0]);
    expect(seen).toMatchObject({ initiator: INITIATOR, address: '127.0.0.1', ended_at: null });
    const first = Date.parse(seen.first_seen_at);
    expect(first).toBeGreaterThanOrEqual(before - 1000);
    expect(first).toBeLessThanOrEqual(Date.now());

    // A later read keeps the time it was first seen.
    await new Promise((r) => setTimeout(r, 1200));
    expect((await target()).sessions).toEqual([seen]);

    // The initiator goes: the session is still told, with when it was seen gone.
    await stop(child);
    const ended = await until('the logout', async () => {
      const s = (await target()).sessions?.[0];
      return s?.ended_at ? s : undefined;
    });
    expect(ended.first_seen_at).toBe(seen.first_seen_at);
    expect(Date.parse(ended.ended_at!)).toBeGreaterThanOrEqual(first);

    // A new login is a new session, seen anew, after the first one.
    login();
    const both = await until('the second login', async () => {
      const s = (await target()).sessions;
      return s && s.length === 2 ? s : undefined;
    });
    expect(both[0]).toEqual(ended);
    expect(both[1]).toMatchObject({ initiator: INITIATOR, ended_at: null });
    expect(Date.parse(both[1].first_seen_at)).toBeGreaterThanOrEqual(Date.parse(ended.ended_at!));
  }, 90_000);
});
