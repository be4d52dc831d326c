import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AnswerCheck, answerCheck } from '@ironlens/core/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAgentApp } from '../app';
import { freeTcpPort, type RunningTgtd, startTgtd, unusedControlPort } from '../testing/tgtd';

/**
 * Issue 19: every answer of the storage agent is what its service returned. fastify serializes
 * with the route's response schema (`@ironlens/agent/api`), which silently drops a field the
 * schema does not list; each JSON answer is compared with its handler's value (`answerCheck`)
 * while every route is called with a 2xx answer, against a real tgtd, with CHAP and an initiator
 * so that the answers are as full as they get.
 */
const BASE = 'iqn.2026-07.com.controller';
const TOKEN = 'answers-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const INITIATOR = 'iqn.2026-07.com.controller:initiator.w1';
const CHAP = { user: 'w1', password: 'Abcdefgh1234' };

let tgtd: RunningTgtd;
let dir: string;
let app: FastifyInstance;
let answers: AnswerCheck;

beforeAll(async () => {
  tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `127.0.0.1:${await freeTcpPort()}` });
  dir = mkdtempSync(join(tmpdir(), `ironlens-agent-answers-${process.pid}-`));
  writeFileSync(join(dir, '_tpl_debian_12.img'), Buffer.alloc(1024 * 1024));
  writeFileSync(join(dir, 'tools.iso'), Buffer.alloc(64 * 1024));
  answers = answerCheck();
  app = await buildAgentApp({ diskDir: dir, baseIqn: BASE, cd: true, token: TOKEN, targets: tgtd.targets, instrument: answers.install });
});
afterAll(async () => {
  await app?.close();
  await tgtd?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
  const r = await app.inject({ method, url, headers: auth, payload: payload as object });
  expect(r.statusCode, `${method} ${url}: ${r.body}`).toBe(200);
  return r.json();
};

describe('every answer of the storage agent is what the service returned (issue 19)', () => {
  it('calls each route and finds no field dropped or reshaped by its schema', async () => {
    await call('GET', '/healthz');
    await call('GET', '/capabilities');
    const clone = await call('POST', '/luns/disk', { iqn: `${BASE}:w1.debian`, master: '_tpl_debian_12.img', initiator: INITIATOR, chap: CHAP });
    expect(clone).toMatchObject({ initiator: INITIATOR, chap_user: 'w1', clone: expect.stringMatching(/^(reflink|copy)$/) });
    expect((await call('POST', '/luns/disk', { iqn: `${BASE}:w2.debian`, size: '8M' })).clone).toBeNull();
    await call('POST', '/luns/cd', { iso: 'tools.iso', initiator: INITIATOR, chap: CHAP });
    const listed = await call('GET', '/luns');
    expect(listed.find((t: { iqn: string }) => t.iqn === `${BASE}:w1.debian`)).toMatchObject({ acl: [INITIATOR], accounts: ['w1'] });
    await call('GET', '/masters');
    await call('DELETE', `/luns?iqn=${BASE}:w2.debian&delete_file=false`);
    expect(await call('DELETE', `/luns?iqn=${BASE}:gone&ignore_missing=true`)).toMatchObject({ ignored_missing: true });
    const scan = await call('POST', '/luns/scan', { chap: [CHAP] });
    expect(scan.created.length + scan.skipped.length).toBeGreaterThan(0);

    expect(answers.drifts, 'answers that differ from what their handler returned').toEqual([]);
    const routes = ['GET /healthz', 'GET /capabilities', 'GET /luns', 'POST /luns/disk', 'POST /luns/cd', 'DELETE /luns', 'POST /luns/scan', 'GET /masters'];
    expect(routes.filter((r) => !answers.checked.has(`${r} 200`)), 'routes never checked with a 2xx answer').toEqual([]);
  });
});
