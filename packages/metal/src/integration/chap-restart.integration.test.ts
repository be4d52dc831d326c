/**
 * Per-worker iSCSI CHAP (issue 13) through the control plane with a real agent over a real
 * tgtd: the disk is bound to the worker's account, and after tgtd restarts (it keeps nothing)
 * the agent's own scan leaves the disk down rather than open to the initiator name alone,
 * until the control plane's scan re-sends the account. The initiator is libiscsi's
 * `iscsi-readcapacity16`, with and without the secret the bound MAC's `/boot-vars` carries.
 */
import { exec } from '@ironlens/core';
import { type AgentOnTgtd, startAgentOnTgtd, startTgtd } from '@ironlens/agent/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '@ironlens/core/testing';
import { ChapReconciler } from '../services/chap-reconcile.service';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const BASE = 'iqn.2026-07.com.controller';
const MAC = '02:00:00:c4:a9:01';
const IQN = `${BASE}:w1.ubuntu`;
const INITIATOR = `${BASE}:w1`;
let agent: AgentOnTgtd;
let f: MetalFixture;
let restarted: Awaited<ReturnType<typeof startTgtd>> | undefined;
let reconciler: ChapReconciler | undefined;
const inject = (method: string, url: string, payload?: unknown) => f.app.inject({ method: method as 'GET', url, payload: payload as object });
const read = (portal: string, cred: string) => exec(['iscsi-readcapacity16', '-i', INITIATOR, `iscsi://${cred}${portal}/${IQN}/1`], { allowFailure: true });

beforeAll(async () => {
  agent = await startAgentOnTgtd({ token: 'agent-tok', baseIqn: BASE, tmpPrefix: 'ironlens-chap-restart-' });
  f = await newMetalFixture({ IRONLENS_ISCSI_CHAP: 'true' });
  expect((await inject('POST', '/agents', { id: 'st1', base_url: agent.url, token: 'agent-tok', role: { disk: true }, tags: ['stgt'] })).statusCode).toBe(201);
  expect((await inject('POST', '/devices', { mac: MAC })).statusCode).toBe(201);
  expect((await inject('POST', '/workers', { worker_id: 'w1', mac: MAC })).statusCode).toBe(200);
});
afterAll(async () => {
  reconciler?.stop();
  await f?.close();
  await agent?.stop();
  await restarted?.stop();
});

describe('CHAP through a tgtd restart', () => {
  it('binds the disk to the account, loses it with tgtd, and gets it back only from the control plane', async () => {
    const disk = await inject('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1M' });
    expect(disk.statusCode, disk.body).toBe(200);
    const bound = (await inject('GET', `/boot-vars?mac=${MAC}&hostname=w1`)).body;
    const secret = bound.match(/^set password ([A-Za-z0-9]{16})$/m)?.[1];
    expect(secret).toBeDefined();
    const portal = agent.tgtd.portal;
    const withSecret = `il-w1%${secret}@`;
    expect((await read(portal, withSecret)).code).toBe(0);
    expect((await read(portal, '')).code, 'the initiator name alone').not.toBe(0);
    const luns = (await inject('GET', '/agents/st1/luns')).json() as { iqn: string; accounts?: string[] }[];
    expect(luns.find((t) => t.iqn === IQN)?.accounts).toEqual(['il-w1']);

    // tgtd restarts: the same control port and portal, nothing in it.
    const { controlPort } = agent.tgtd;
    await agent.tgtd.stop();
    restarted = await startTgtd({ controlPort, portal });
    expect((await read(portal, withSecret)).code).not.toBe(0);

    // The agent alone (its start-up scan, or a scan without credentials) does not bring the disk back unguarded.
    const bare = await fetch(`${agent.url}/luns/scan`, { method: 'POST', headers: { authorization: 'Bearer agent-tok' } });
    const bareScan = (await bare.json()) as { created: unknown[]; skipped: { iqn: string; reason: string }[] };
    expect(bareScan.created).toEqual([]);
    expect(bareScan.skipped).toContainEqual({ iqn: IQN, filename: 'w1.ubuntu.img', reason: expect.stringMatching(/^no CHAP credential for il-w1/) });
    expect((await read(portal, '')).code).not.toBe(0);

    // The control plane's scan re-sends the account: the disk is back, bound to it again.
    const scan = await inject('POST', '/agents/st1/luns/scan');
    expect(scan.statusCode, scan.body).toBe(200);
    expect(scan.json().created).toEqual([expect.objectContaining({ iqn: IQN })]);
    expect(scan.body).not.toContain(secret);
    expect((await read(portal, withSecret)).code).toBe(0);
    const refused = await read(portal, '');
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(/Authentication failure/);
  });

  it('gets the disk back bound after another tgtd restart without anyone asking (IRONLENS_ISCSI_CHAP_RECONCILE_MS)', async () => {
    const bound = (await inject('GET', `/boot-vars?mac=${MAC}&hostname=w1`)).body;
    const withSecret = `il-w1%${bound.match(/^set password ([A-Za-z0-9]{16})$/m)?.[1]}@`;
    const portal = agent.tgtd.portal;
    const { controlPort } = agent.tgtd;
    const logs: string[] = [];
    reconciler = new ChapReconciler(f.services.storage, f.services.dhcp, 200, (m) => logs.push(m));
    // Nothing missing: rounds scan nothing.
    expect(await reconciler.round()).toEqual([]);
    await restarted!.stop();
    restarted = await startTgtd({ controlPort, portal });
    // The disk is down after the restart; the periodic rounds start only after this read, or a
    // round 200 ms in could repair it before the read and make the check a race.
    expect((await read(portal, withSecret)).code).not.toBe(0);
    reconciler.start();
    await waitUntil('the reconciler re-sends the account', async () => (await read(portal, withSecret)).code === 0, 15_000, 300);
    // The round logs after it has re-sent the accounts, so the login can succeed a moment before the line is written.
    await waitUntil('the reconciler logs the repair', async () => logs.join('\n').includes('agent st1 had lost CHAP targets'), 5_000, 50);
    expect(logs.join('\n')).not.toContain(withSecret.slice(6, -1));
    expect((await read(portal, '')).code, 'still not for the name alone').not.toBe(0);
  });
});
