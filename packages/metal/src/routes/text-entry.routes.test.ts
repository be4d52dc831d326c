/**
 * Terminal escapes and bidirectional overrides are refused where data enters (issue 29, finding
 * 8), with core's one definition (`core/src/schema/text.ts`): iPXE's device report (unauthenticated), a
 * device's declaration and import, a host report, an `ironlens import`, a storage agent's
 * answer; a BMC's error text is cleaned before it reaches the operations log.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bmcText } from '../adapters/bmc';
import { FakeAgent } from '../testing/fake-agent';
import { FakeBmcs } from '../testing/fake-bmc';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const TOKEN = 'text-entry-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const MAC = '52:54:00:29:08:01';
/** What the probe sent: a title change and a screen clear. */
const ESCAPES = '%1b]0;X%07%1b[2J';
/** The same kind, each on its own: C1 CSI, NEL, line separator, a right-to-left override, an isolate. */
const HOSTILE = ['\u001b]0;X\u0007\u001b[2J', '\u009b2J', 'a\u0085b', 'a\u2028b', 'txt\u202Eexe', '\u2066x\u2069'];

let f: MetalFixture;
let fakes: FakeBmcs;
const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) => f.app.inject({ method, url, headers: auth, payload: payload as object });

beforeEach(async () => {
  fakes = new FakeBmcs();
  f = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN }, { bmc: fakes.connect });
});
afterEach(async () => {
  f.services.power.stop();
  await f.close();
});

describe('control and bidirectional characters where data enters', () => {
  it('refuses a device report carrying them (400 device_text_invalid) and stores nothing, whichever field', async () => {
    const r = await f.app.inject({ url: `/devices/report?mac=${MAC}&uuid=${ESCAPES}` });
    expect(r.statusCode).toBe(400);
    expect(r.json().field).toBe('uuid');
    expect(r.json().detail).toContain('U+001B');
    for (const field of ['manufacturer', 'product', 'serial', 'cpumodel', 'mem-type', 'chip', 'busid']) {
      for (const text of HOSTILE) {
        const res = await f.app.inject({ url: `/devices/report?mac=${MAC}&${field}=${encodeURIComponent(text)}` });
        expect(res.statusCode, `${field} ${JSON.stringify(text)}`).toBe(400);
      }
    }
    expect((await api('GET', `/devices/${MAC}`)).statusCode).toBe(404);
    // A clean report of the same machine registers it; a hostile one later changes nothing.
    expect((await f.app.inject({ url: `/devices/report?mac=${MAC}&serial=S-1%20%C3%84` })).statusCode).toBe(200);
    expect((await f.app.inject({ url: `/devices/report?mac=${MAC}&serial=${encodeURIComponent('S\u202E2')}` })).statusCode).toBe(400);
    expect((await api('GET', `/devices/${MAC}`)).json().fingerprint.serial).toBe('S-1 Ä');
  });

  it('refuses them in a declaration (POST /devices) and fails that entry of an import', async () => {
    for (const text of HOSTILE) {
      const r = await api('POST', '/devices', { mac: MAC, serial: text });
      expect(r.statusCode, JSON.stringify(text)).toBe(400);
      expect(r.json().field).toBe('serial');
    }
    const imported = (await api('POST', '/devices/import', { entries: [{ mac: MAC, product: 'x\u009by' }, { mac: '52:54:00:29:08:02', uuid: 'ok-uuid' }] })).json();
    expect(imported.created).toEqual(['52:54:00:29:08:02']);
    expect(imported.failed).toEqual([{ mac: MAC, error: expect.stringContaining('U+009B') }]);
  });

  it('refuses them in a host report (422) and stores nothing', async () => {
    await f.services.devices.register({ mac: MAC }, {});
    await f.services.workers.create({ worker_id: 'w1', mac: MAC }, {});
    const body = (pretty_name: string) => ({
      mac: MAC,
      hostname: 'w1',
      addresses: [],
      ssh_host_keys: [],
      os: { id: 'debian', version_id: '12', pretty_name },
      kernel: '6.1.0-28-amd64',
      hardware: { cpu_model: 'x', cpus: 1, memory_bytes: 1, disks: [], nics: [], accelerators: [] },
    });
    const post = (b: unknown) =>
      f.app.inject({ method: 'POST', url: '/hosts/report', headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(Math.floor(Date.now() / 1000)) }, payload: JSON.stringify(b) });
    for (const text of HOSTILE) expect((await post(body(`Debian ${text}`))).statusCode, JSON.stringify(text)).toBe(422);
    expect((await api('GET', '/workers/w1')).json().host).toBeNull();
    expect((await post(body('Debian GNU/Linux 12 (bookworm) — ü'))).statusCode).toBe(200);
  });

  it('refuses them in a fingerprint of ironlens import (import_invalid), before anything is written', async () => {
    const d = mkdtempSync(join(tmpdir(), 'ironlens-text-entry-'));
    try {
      mkdirSync(join(d, 'state'));
      writeFileSync(join(d, 'state', 'devices.yml'), `devices:\n  "${MAC}":\n    state: pooled\n    fingerprint:\n      serial: "S\\u202E1"\n`);
      await expect(f.services.layout.import(d)).rejects.toMatchObject({ code: 'import_invalid' });
      expect(await f.services.devices.list()).toEqual([]);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('refuses a storage agent answer carrying them (502 agent_bad_gateway)', async () => {
    const agent = await new FakeAgent().start();
    try {
      agent.handlers.set('GET /capabilities', (_c, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ backend: 'stgt', fs_type: 'xfs\u202E' }));
      });
      const r = await api('POST', '/agents/probe', { base_url: agent.url });
      expect(r.statusCode).toBe(502);
      expect(r.json().detail).toContain('invalid fs_type');
      expect(JSON.stringify(r.json())).not.toContain('\u202E');
    } finally {
      await agent.stop();
    }
  });

  it('keeps them out of a BMC error text: the answer and the operations log', async () => {
    expect(bmcText('refused\u001b[2J\u009b2J\u0085\u2028\u202Eend')).toBe('refused [2J 2J end');
    // A Redfish BMC whose error message carries them, through the real adapter.
    const bmc = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'boom\u001b]0;pwned\u0007\u001b[2J\u009b\u2028\u202Edone' } }));
    });
    await new Promise<void>((r) => bmc.listen(0, '127.0.0.1', r));
    const real = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN });
    try {
      const url = `http://127.0.0.1:${(bmc.address() as AddressInfo).port}/redfish/v1/Systems/1`;
      const mac = '52:54:00:29:08:03';
      const call = (method: 'GET' | 'POST', path: string, payload?: unknown) => real.app.inject({ method, url: path, headers: auth, payload: payload as object });
      expect((await call('POST', '/devices', { mac, bmc: { driver: 'redfish', url, username: 'u-29-8', password: 'pw-29-8' } })).statusCode).toBe(201);
      const r = await call('POST', `/devices/${mac}/power`, { action: 'on' });
      expect(r.statusCode).toBe(502);
      expect(r.json().detail).toContain('boom');
      const ops = await call('GET', `/operations?mac=${mac}`);
      expect(ops.body).toContain('boom');
      const controls = ['\u001b', '\u009b', '\u2028', '\u202e'];
      // Neither the characters nor their JSON escapes.
      const marks = [...controls, '\\u001b', '\\u009b', '\\u2028', '\\u202e'];
      for (const text of [r.body, ops.body, JSON.stringify(ops.json())]) for (const m of marks) expect(text.toLowerCase()).not.toContain(m);
    } finally {
      real.services.power.stop();
      await real.close();
      await new Promise<void>((r) => bmc.close(() => r()));
    }
  });
});
