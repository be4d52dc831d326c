import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError, exec } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiskImages } from '../adapters/disk-images.adapter';
import type { IscsiTargets } from '../adapters/iscsi-targets';
import { buildAgentApp } from '../app';
import { LUN_INDEX_FILE, LunIndex } from '../repositories/lun-index.repository';
import { LunService } from '../services/lun.service';
import { freeTcpPort, type RunningTgtd, startTgtd, unusedControlPort } from '../testing/tgtd';

const BASE = 'iqn.2026-07.com.controller';
const TOKEN = 's3cret-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const MiB = 1024 * 1024;

// The routes run against a real tgtd started for this file, on its own control port and
// an unusual iSCSI port, and a temporary DISK_DIR.
let tgtd: RunningTgtd;
let portal: string;
const dirs: string[] = [];
const apps: FastifyInstance[] = [];

function newDiskDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ironlens-agent-'));
  dirs.push(d);
  return d;
}

async function newApp(opts: { cd?: boolean; dir?: string; targets?: IscsiTargets; scanOpen?: boolean } = {}) {
  const dir = opts.dir ?? newDiskDir();
  const app = await buildAgentApp({ diskDir: dir, baseIqn: BASE, cd: opts.cd ?? true, token: TOKEN, targets: opts.targets ?? tgtd.targets, docs: false, scanOpen: opts.scanOpen });
  apps.push(app);
  return { app, dir };
}

beforeAll(async () => {
  portal = `127.0.0.1:${await freeTcpPort()}`;
  tgtd = await startTgtd({ controlPort: unusedControlPort(), portal });
});
afterAll(async () => {
  for (const a of apps) await a.close();
  await tgtd?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const post = (app: FastifyInstance, url: string, payload: unknown, headers: Record<string, string> = auth) =>
  app.inject({ method: 'POST', url, payload: payload as object, headers });

describe('auth and service endpoints', () => {
  it('keeps /healthz open and answers {"status":"ok"}', async () => {
    const { app } = await newApp();
    const r = await app.inject({ url: '/healthz' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ status: 'ok' });
  });

  it('answers 401 with a detail without a token or with a wrong one', async () => {
    const { app } = await newApp();
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: TOKEN }]) {
      for (const [method, url] of [
        ['GET', '/capabilities'],
        ['GET', '/luns'],
        ['POST', '/luns/scan'],
        ['DELETE', `/luns?iqn=${BASE}:x`],
        ['GET', '/masters'],
      ] as const) {
        const r = await app.inject({ method, url, headers });
        expect(r.statusCode, `${method} ${url}`).toBe(401);
        expect(typeof r.json().detail).toBe('string');
      }
    }
  });

  it('reports capabilities: backend, detected file system, cd role, base IQN, clone and blank-disk methods', async () => {
    const { app } = await newApp();
    const r = await app.inject({ url: '/capabilities', headers: auth });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({
      backend: 'stgt',
      fs_type: 'ext4',
      cd: true,
      persistent: 'auto-scan on startup',
      base_iqn: BASE,
      clone: 'reflink (FICLONE) -> copy fallback',
      empty_disk: 'truncate (sparse)',
    });
  });

  it('lists masters (files with _tpl_) with size and integer mtime', async () => {
    const { app, dir } = await newApp();
    writeFileSync(join(dir, '_tpl_ubuntu_2204.img'), Buffer.alloc(MiB));
    writeFileSync(join(dir, 'worker-01.ubuntu.img'), '');
    const r = await app.inject({ url: '/masters', headers: auth });
    expect(r.statusCode).toBe(200);
    const { masters } = r.json();
    expect(masters).toEqual([{ name: '_tpl_ubuntu_2204.img', size: MiB, mtime: Math.floor(statSync(join(dir, '_tpl_ubuntu_2204.img')).mtimeMs / 1000) }]);
    expect(Number.isInteger(masters[0].mtime)).toBe(true);
  });
});

describe('POST /luns/disk', () => {
  let app: FastifyInstance;
  let dir: string;
  beforeAll(async () => {
    ({ app, dir } = await newApp());
    await exec(['truncate', '-s', '8M', join(dir, '_tpl_ubuntu_2204.img')]);
  });

  it('makes a sparse blank disk named after the IQN and exports it to initiators', async () => {
    const iqn = `${BASE}:worker-00.ubuntu`;
    const r = await post(app, '/luns/disk', { iqn, size: '40G' });
    expect(r.statusCode).toBe(200);
    const backing = join(dir, 'worker-00.ubuntu.img');
    expect(r.json()).toEqual({ iqn, backing, filename: 'worker-00.ubuntu.img', clone: null, size: 40 * 1024 ** 3 });
    expect(statSync(backing).blocks).toBe(0);
    const luns = (await app.inject({ url: '/luns', headers: auth })).json();
    expect(luns).toContainEqual({ iqn, tid: expect.any(Number), luns: [{ backing }], acl: ['ALL'] });
    const cap = await exec(['iscsi-readcapacity16', `iscsi://${portal}/${iqn}/1`]);
    expect(cap.stdout).toMatch(new RegExp(`Total size:\\s*${40 * 1024 ** 3}`));
  });

  it('clones a master (copy on this ext4) under a chosen file name', async () => {
    const iqn = `${BASE}:worker-01.ubuntu`;
    const r = await post(app, '/luns/disk', { iqn, master: '_tpl_ubuntu_2204.img', filename: 'custom-01.img' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ iqn, backing: join(dir, 'custom-01.img'), filename: 'custom-01.img', clone: 'copy', size: 8 * MiB });
  });

  it('restricts a disk to the given initiator: listed in GET /luns, recorded in the index, readable by that initiator only', async () => {
    const iqn = `${BASE}:worker-03.ubuntu`;
    const initiator = `${BASE}:worker-03`;
    const r = await post(app, '/luns/disk', { iqn, size: '16M', initiator });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ iqn, backing: join(dir, 'worker-03.ubuntu.img'), filename: 'worker-03.ubuntu.img', clone: null, size: 16 * MiB, initiator });
    const luns = (await app.inject({ url: '/luns', headers: auth })).json();
    expect(luns).toContainEqual({ iqn, tid: expect.any(Number), luns: [{ backing: join(dir, 'worker-03.ubuntu.img') }], acl: [initiator] });
    expect((await new LunIndex(dir).read()).get(iqn)).toEqual({ filename: 'worker-03.ubuntu.img', cd: false, initiator });
    const cap = await exec(['iscsi-readcapacity16', '-i', initiator, `iscsi://${portal}/${iqn}/1`]);
    expect(cap.stdout).toMatch(new RegExp(`Total size:\\s*${16 * MiB}`));
    const other = await exec(['iscsi-readcapacity16', '-i', `${BASE}:worker-04`, `iscsi://${portal}/${iqn}/1`], { allowFailure: true });
    expect(other.code).not.toBe(0);
    expect((await exec(['iscsi-ls', '-i', `${BASE}:worker-04`, `iscsi://${portal}`])).stdout).not.toContain(iqn);
  });

  it('answers 400 for an initiator that is not a lowercase IQN, and makes nothing', async () => {
    for (const initiator of ['', 'worker-03', `${BASE}:Worker-03`, `${BASE}:w;reboot`, `${BASE}:w 3`, 'iqn.2026-07.com.controller:-w']) {
      const r = await post(app, '/luns/disk', { iqn: `${BASE}:bad-init.ubuntu`, size: '1M', initiator });
      expect(r.statusCode, JSON.stringify(initiator)).toBe(400);
      expect(typeof r.json().detail).toBe('string');
    }
    // A number is not taken for a string (JSON bodies are not coerced): a schema error.
    expect((await post(app, '/luns/disk', { iqn: `${BASE}:bad-init.ubuntu`, size: '1M', initiator: 42 })).statusCode).toBe(422);
    expect(existsSync(join(dir, 'bad-init.ubuntu.img'))).toBe(false);
    const luns = (await app.inject({ url: '/luns', headers: auth })).json() as { iqn: string }[];
    expect(luns.map((t) => t.iqn)).not.toContain(`${BASE}:bad-init.ubuntu`);
  });

  it('answers 409 for an IQN that exists and for a backing file that exists', async () => {
    const again = await post(app, '/luns/disk', { iqn: `${BASE}:worker-00.ubuntu`, size: '1G', filename: 'other.img' });
    expect(again.statusCode).toBe(409);
    const file = await post(app, '/luns/disk', { iqn: `${BASE}:worker-77.ubuntu`, size: '1G', filename: 'worker-00.ubuntu.img' });
    expect(file.statusCode).toBe(409);
    expect(typeof file.json().detail).toBe('string');
    expect(existsSync(join(dir, 'other.img'))).toBe(false);
  });

  it('answers 404 for a master that does not exist', async () => {
    const r = await post(app, '/luns/disk', { iqn: `${BASE}:worker-02.ubuntu`, master: '_tpl_nope.img' });
    expect(r.statusCode).toBe(404);
    expect(existsSync(join(dir, 'worker-02.ubuntu.img'))).toBe(false);
  });

  it('answers 400 for bad IQNs, a foreign base, master with size, neither, bad sizes and unsafe names', async () => {
    const cases: [string, unknown][] = [
      ['bad iqn', { iqn: 'not-an-iqn', size: '1G' }],
      ['uppercase iqn', { iqn: `${BASE}:Worker`, size: '1G' }],
      ['shell in iqn', { iqn: `${BASE}:x;reboot`, size: '1G' }],
      ['base mismatch', { iqn: 'iqn.2026-07.com.other:worker-01', size: '1G' }],
      ['both', { iqn: `${BASE}:w3`, size: '1G', master: '_tpl_ubuntu_2204.img' }],
      ['neither', { iqn: `${BASE}:w3` }],
      ['bad size', { iqn: `${BASE}:w3`, size: '40 gigs' }],
      ['huge size', { iqn: `${BASE}:w3`, size: '100T' }],
      ['filename traversal', { iqn: `${BASE}:w3`, size: '1G', filename: '../escape.img' }],
      ['absolute filename', { iqn: `${BASE}:w3`, size: '1G', filename: '/tmp/escape.img' }],
      ['filename not .img', { iqn: `${BASE}:w3`, size: '1G', filename: 'w3.qcow2' }],
      ['filename a master', { iqn: `${BASE}:w3`, size: '1G', filename: '_tpl_fake.img' }],
      ['master traversal', { iqn: `${BASE}:w3`, master: '../../etc/passwd' }],
      ['master absolute', { iqn: `${BASE}:w3`, master: '/etc/passwd' }],
    ];
    for (const [what, body] of cases) {
      const r = await post(app, '/luns/disk', body);
      expect(r.statusCode, what).toBe(400);
      expect(typeof r.json().detail, what).toBe('string');
    }
    expect(existsSync(join(dir, 'w3.img'))).toBe(false);
  });

  it('takes a size in plain bytes, as a number or a string', async () => {
    for (const [i, size] of [1048576, '2097152'].entries()) {
      const r = await post(app, '/luns/disk', { iqn: `${BASE}:bytes-${i}`, size });
      expect(r.statusCode).toBe(200);
      expect(r.json().size).toBe(Number(size));
    }
  });

  it('answers 400 for a body that is not JSON', async () => {
    const r = await app.inject({ method: 'POST', url: '/luns/disk', payload: '{"iqn":', headers: { ...auth, 'content-type': 'application/json' } });
    expect(r.statusCode).toBe(400);
    expect(typeof r.json().detail).toBe('string');
  });

  it('answers 422 when the body has no iqn (FastAPI validation shape)', async () => {
    const r = await post(app, '/luns/disk', { size: '1G' });
    expect(r.statusCode).toBe(422);
    expect(Array.isArray(r.json().detail)).toBe(true);
  });

  it('gives concurrent creates distinct targets and tids', async () => {
    const rs = await Promise.all(Array.from({ length: 5 }, (_, i) => post(app, '/luns/disk', { iqn: `${BASE}:par-${i}.ubuntu`, size: '1M' })));
    expect(rs.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    const luns = (await app.inject({ url: '/luns', headers: auth })).json() as { iqn: string; tid: number }[];
    const tids = luns.map((t) => t.tid);
    expect(new Set(tids).size).toBe(tids.length);
  });

  it('lets only one of two concurrent creates of the same IQN win', async () => {
    const iqn = `${BASE}:race.ubuntu`;
    const rs = await Promise.all([post(app, '/luns/disk', { iqn, size: '1M' }), post(app, '/luns/disk', { iqn, size: '1M', filename: 'race-b.img' })]);
    expect(rs.map((r) => r.statusCode).sort()).toEqual([200, 409]);
  });
});

describe('POST /luns/disk when the target cannot be made', () => {
  it('removes the image again (no orphan file) and answers 500', async () => {
    const dir = newDiskDir();
    const broken: IscsiTargets = {
      backend: 'stgt',
      persistent: 'auto-scan on startup',
      list: () => tgtd.targets.list(),
      createDisk: async () => {
        throw new AppError('backend_failed', 'tgtadm failed');
      },
      createCd: async () => {
        throw new AppError('backend_failed', 'tgtadm failed');
      },
      delete: (iqn) => tgtd.targets.delete(iqn),
    };
    const { app } = await newApp({ dir, targets: broken });
    writeFileSync(join(dir, '_tpl_x.img'), Buffer.alloc(MiB));
    for (const body of [{ iqn: `${BASE}:orphan-a`, size: '1G' }, { iqn: `${BASE}:orphan-b`, master: '_tpl_x.img' }]) {
      const r = await post(app, '/luns/disk', body);
      expect(r.statusCode).toBe(500);
      expect(typeof r.json().detail).toBe('string');
    }
    expect(existsSync(join(dir, 'orphan-a.img'))).toBe(false);
    expect(existsSync(join(dir, 'orphan-b.img'))).toBe(false);
  });
});

describe('POST /luns/cd', () => {
  it('exports an ISO read-only under base_iqn:<iso name lowercased>', async () => {
    const { app, dir } = await newApp();
    writeFileSync(join(dir, 'Win11_24H2.iso'), Buffer.alloc(2 * MiB));
    const r = await post(app, '/luns/cd', { iso: 'Win11_24H2.iso' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ iqn: `${BASE}:win11-24h2.iso`, backing: join(dir, 'Win11_24H2.iso'), filename: 'Win11_24H2.iso' });
    const ls = await exec(['iscsi-ls', '-s', `iscsi://${portal}`]);
    expect(ls.stdout).toContain(`Target:${BASE}:win11-24h2.iso`);
    const named = await post(app, '/luns/cd', { iso: 'Win11_24H2.iso', iqn: `${BASE}:worker-win.windows.iso` });
    expect(named.statusCode).toBe(200);
    expect((await post(app, '/luns/cd', { iso: 'Win11_24H2.iso' })).statusCode).toBe(409);
  });

  it('restricts a CD to the given initiator and refuses a malformed one', async () => {
    const { app, dir } = await newApp();
    writeFileSync(join(dir, 'Setup.iso'), Buffer.alloc(2 * MiB));
    const iqn = `${BASE}:worker-05.windows.iso`;
    const initiator = `${BASE}:worker-05`;
    const r = await post(app, '/luns/cd', { iso: 'Setup.iso', iqn, initiator });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ iqn, backing: join(dir, 'Setup.iso'), filename: 'Setup.iso', initiator });
    const luns = (await app.inject({ url: '/luns', headers: auth })).json() as { iqn: string; acl: string[] }[];
    expect(luns.find((t) => t.iqn === iqn)?.acl).toEqual([initiator]);
    expect((await new LunIndex(dir).read()).get(iqn)).toEqual({ filename: 'Setup.iso', cd: true, initiator });
    expect((await exec(['iscsi-ls', '-s', '-i', initiator, `iscsi://${portal}`])).stdout).toMatch(/worker-05\.windows\.iso[\s\S]*?Type:MMC/);
    expect((await exec(['iscsi-ls', '-i', `${BASE}:worker-06`, `iscsi://${portal}`])).stdout).not.toContain(iqn);
    const bad = await post(app, '/luns/cd', { iso: 'Setup.iso', iqn: `${BASE}:worker-06.windows.iso`, initiator: 'IQN.2026-07.COM.X:Y' });
    expect(bad.statusCode).toBe(400);
  });

  it('answers 404 for a missing ISO and 400 for unsafe names or a foreign IQN', async () => {
    const { app } = await newApp();
    expect((await post(app, '/luns/cd', { iso: 'missing.iso' })).statusCode).toBe(404);
    expect((await post(app, '/luns/cd', { iso: '../../etc/passwd' })).statusCode).toBe(400);
    expect((await post(app, '/luns/cd', { iso: 'notes.txt' })).statusCode).toBe(400);
    expect((await post(app, '/luns/cd', { iso: 'x.iso', iqn: 'iqn.2026-07.com.other:x' })).statusCode).toBe(400);
  });

  it('answers 400 when the agent has no cd role', async () => {
    const { app, dir } = await newApp({ cd: false });
    writeFileSync(join(dir, 'a.iso'), '');
    const r = await post(app, '/luns/cd', { iso: 'a.iso' });
    expect(r.statusCode).toBe(400);
    expect(typeof r.json().detail).toBe('string');
    expect((await app.inject({ url: '/capabilities', headers: auth })).json().cd).toBe(false);
  });
});

describe('DELETE /luns', () => {
  let app: FastifyInstance;
  let dir: string;
  beforeAll(async () => {
    ({ app, dir } = await newApp());
  });
  const del = (q: string) => app.inject({ method: 'DELETE', url: `/luns?${q}`, headers: auth });

  it('answers 404 {"detail":"iqn not found"} for an unknown IQN', async () => {
    const r = await del(`iqn=${BASE}:nobody`);
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ detail: 'iqn not found' });
  });

  it('answers 400 for a malformed IQN and 422 without one', async () => {
    expect((await del('iqn=bogus')).statusCode).toBe(400);
    expect((await del('')).statusCode).toBe(422);
  });

  it('removes the target and keeps the file by default', async () => {
    const iqn = `${BASE}:keep.ubuntu`;
    expect((await post(app, '/luns/disk', { iqn, size: '1M' })).statusCode).toBe(200);
    const r = await del(`iqn=${iqn}`);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ deleted: iqn, delete_file: false, file_deleted: false });
    expect(existsSync(join(dir, 'keep.ubuntu.img'))).toBe(true);
    expect((await app.inject({ url: '/luns', headers: auth })).json().map((t: { iqn: string }) => t.iqn)).not.toContain(iqn);
  });

  it('removes the file too with delete_file=true', async () => {
    const iqn = `${BASE}:drop.ubuntu`;
    await post(app, '/luns/disk', { iqn, size: '1M' });
    const r = await del(`iqn=${iqn}&delete_file=true`);
    expect(r.json()).toEqual({ deleted: iqn, delete_file: true, file_deleted: true });
    expect(existsSync(join(dir, 'drop.ubuntu.img'))).toBe(false);
  });

  it('never deletes a master, even when a target exports it', async () => {
    const master = join(dir, '_tpl_golden.img');
    writeFileSync(master, Buffer.alloc(MiB));
    await tgtd.targets.createDisk(`${BASE}:golden`, master);
    const r = await del(`iqn=${BASE}:golden&delete_file=true`);
    expect(r.statusCode).toBe(200);
    expect(r.json().file_deleted).toBe(false);
    expect(existsSync(master)).toBe(true);
  });

  it('with ignore_missing answers 200 and still removes the file of a missing target', async () => {
    writeFileSync(join(dir, 'ghost.ubuntu.img'), '');
    const r = await del(`iqn=${BASE}:ghost.ubuntu&delete_file=true&ignore_missing=true`);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ deleted: `${BASE}:ghost.ubuntu`, delete_file: true, file_deleted: true, ignored_missing: true });
    expect(existsSync(join(dir, 'ghost.ubuntu.img'))).toBe(false);
  });
});

describe('POST /luns/scan', () => {
  it('with IRONLENS_AGENT_SCAN_OPEN, rebuilds a target for every image without one, keeps recorded IQNs, skips masters and the rest', async () => {
    const { app, dir } = await newApp({ scanOpen: true });
    // A disk made with a custom file name, whose target then disappears (as at a tgtd restart).
    const customIqn = `${BASE}:worker-05.ubuntu`;
    expect((await post(app, '/luns/disk', { iqn: customIqn, size: '1M', filename: 'w5-system.img' })).statusCode).toBe(200);
    await tgtd.targets.delete(customIqn);
    writeFileSync(join(dir, 'worker-09.debian.img'), Buffer.alloc(MiB));
    writeFileSync(join(dir, 'Tools.ISO'), Buffer.alloc(MiB));
    writeFileSync(join(dir, '_tpl_master.img'), Buffer.alloc(MiB));
    writeFileSync(join(dir, 'notes.txt'), 'x');

    const r = await post(app, '/luns/scan', undefined);
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body.created).toEqual(
      expect.arrayContaining([
        { iqn: customIqn, cd: false, filename: 'w5-system.img' },
        { iqn: `${BASE}:worker-09.debian`, cd: false, filename: 'worker-09.debian.img' },
        { iqn: `${BASE}:tools.iso`, cd: true, filename: 'Tools.ISO' },
      ]),
    );
    expect(body.created).toHaveLength(3);
    expect(JSON.stringify(body)).not.toContain('_tpl_');
    expect(JSON.stringify(body)).not.toContain('notes.txt');

    const again = (await post(app, '/luns/scan', undefined)).json();
    expect(again.created).toEqual([]);
    expect(again.skipped.map((s: { iqn: string }) => s.iqn).sort()).toEqual([customIqn, `${BASE}:tools.iso`, `${BASE}:worker-09.debian`].sort());
    expect(existsSync(join(dir, LUN_INDEX_FILE))).toBe(true);
    expect((await new LunIndex(dir).read()).get(customIqn)).toEqual({ filename: 'w5-system.img', cd: false });
  });

  it('recreates a restricted target with its initiator, and skips one whose recorded initiator is malformed', async () => {
    const { app, dir } = await newApp();
    const iqn = `${BASE}:worker-06.ubuntu`;
    const initiator = `${BASE}:worker-06`;
    expect((await post(app, '/luns/disk', { iqn, size: '1M', filename: 'w6.img', initiator })).statusCode).toBe(200);
    await tgtd.targets.delete(iqn);
    const index = new LunIndex(dir);
    writeFileSync(join(dir, 'w7.img'), Buffer.alloc(MiB));
    await index.put(`${BASE}:worker-07.ubuntu`, { filename: 'w7.img', cd: false, initiator: 'Not An IQN' });

    const r = (await post(app, '/luns/scan', undefined)).json();
    expect(r.created).toEqual([{ iqn, cd: false, filename: 'w6.img' }]);
    expect(r.skipped).toEqual([{ iqn: `${BASE}:worker-07.ubuntu`, filename: 'w7.img', reason: expect.any(String) }]);
    const luns = (await app.inject({ url: '/luns', headers: auth })).json() as { iqn: string; acl: string[] }[];
    expect(luns.find((t) => t.iqn === iqn)?.acl).toEqual([initiator]);
    expect(luns.map((t) => t.iqn)).not.toContain(`${BASE}:worker-07.ubuntu`);
    expect((await exec(['iscsi-ls', '-i', `${BASE}:worker-07`, `iscsi://${portal}`])).stdout).not.toContain(iqn);
    expect((await index.read()).get(iqn)).toEqual({ filename: 'w6.img', cd: false, initiator });
  });

  it('binds a CHAP account on create, never answers or records its secret, and rebuilds the target after a tgtd restart only when the credential is re-sent', async () => {
    const { app, dir } = await newApp();
    const iqn = `${BASE}:worker-11.ubuntu`;
    const initiator = `${BASE}:worker-11`;
    const chap = { user: 'il-worker-11', password: 'Pw11Pw11Pw11Pw11' };
    const made = await post(app, '/luns/disk', { iqn, size: '1M', filename: 'w11.img', initiator, chap });
    expect(made.statusCode, made.body).toBe(200);
    expect(made.json()).toMatchObject({ iqn, initiator, chap_user: chap.user });
    expect(made.body).not.toContain(chap.password);
    const listed = await app.inject({ url: '/luns', headers: auth });
    expect((listed.json() as { iqn: string; accounts?: string[] }[]).find((t) => t.iqn === iqn)?.accounts).toEqual([chap.user]);
    expect(listed.body).not.toContain(chap.password);
    // The index names the user; no file the agent writes holds the secret.
    const index = new LunIndex(dir);
    expect((await index.read()).get(iqn)).toEqual({ filename: 'w11.img', cd: false, initiator, chap_user: chap.user });
    expect(readFileSync(join(dir, LUN_INDEX_FILE), 'utf8')).not.toContain(chap.password);
    const read = (cred: string) => exec(['iscsi-readcapacity16', '-i', initiator, `iscsi://${cred}${portal}/${iqn}/1`], { allowFailure: true });
    expect((await read(`${chap.user}%${chap.password}@`)).code).toBe(0);

    // What a tgtd restart leaves: the target and the account gone, the file and index kept.
    await tgtd.targets.delete(iqn);
    const bare = (await post(app, '/luns/scan', undefined)).json();
    expect(bare.created).toEqual([]);
    expect(bare.skipped).toEqual([{ iqn, filename: 'w11.img', reason: expect.stringMatching(/^no CHAP credential for il-worker-11/) }]);
    expect((await read('')).code, 'not exported guarded by the name alone').not.toBe(0);
    // A wrong-shaped credential is refused whole, naming no secret.
    const bad = await post(app, '/luns/scan', { chap: [{ user: chap.user, password: 'short9secret' }, { user: 'x y', password: chap.password }] });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).not.toContain('short9secret');
    expect(bad.body).not.toContain(chap.password);

    const again = await post(app, '/luns/scan', { chap: [chap, { user: 'il-other', password: 'OtherOtherOther1' }] });
    expect(again.json().created).toEqual([{ iqn, cd: false, filename: 'w11.img' }]);
    expect(again.body).not.toContain(chap.password);
    expect((await read(`${chap.user}%${chap.password}@`)).code).toBe(0);
    expect((await read('')).code).not.toBe(0);
    expect((await read(`${chap.user}%OtherOtherOther1@`)).code).not.toBe(0);
  });

  it('answers 400 chap_invalid for a CHAP credential without an initiator or with a bad secret, and makes nothing', async () => {
    const { app, dir } = await newApp();
    for (const body of [
      { iqn: `${BASE}:w12.ubuntu`, size: '1M', chap: { user: 'il-w12', password: 'Pw12Pw12Pw12Pw12' } },
      { iqn: `${BASE}:w12.ubuntu`, size: '1M', initiator: `${BASE}:w12`, chap: { user: 'il-w12', password: 'Pw12 Pw12;Pw12' } },
      { iqn: `${BASE}:w12.ubuntu`, size: '1M', initiator: `${BASE}:w12`, chap: { user: 'IL W12', password: 'Pw12Pw12Pw12Pw12' } },
    ]) {
      const r = await post(app, '/luns/disk', body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.body).not.toContain('Pw12');
    }
    expect(existsSync(join(dir, 'w12.ubuntu.img'))).toBe(false);
  });

  it('takes a bodyless POST sent with a JSON content type', async () => {
    const { app } = await newApp();
    const r = await app.inject({ method: 'POST', url: '/luns/scan', headers: { ...auth, 'content-type': 'application/json' } });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ created: [], skipped: [] });
  });

  it('skips ISOs when the agent has no cd role', async () => {
    const { app, dir } = await newApp({ cd: false, scanOpen: true });
    writeFileSync(join(dir, 'only.iso'), Buffer.alloc(MiB));
    const r = (await post(app, '/luns/scan', undefined)).json();
    expect(r.created).toEqual([]);
    expect(r.skipped).toEqual([{ iqn: `${BASE}:only.iso`, filename: 'only.iso', reason: expect.any(String) }]);
  });
});

describe('LunService without HTTP', () => {
  it('never writes through a dangling symlink that points outside DISK_DIR', async () => {
    const dir = newDiskDir();
    const outside = newDiskDir();
    const { symlinkSync } = await import('node:fs');
    symlinkSync(join(outside, 'x.img'), join(dir, 'link.img'));
    const images = new DiskImages(dir);
    const luns = new LunService({ baseIqn: BASE, cdRole: true, targets: tgtd.targets, images, index: new LunIndex(images.dir) });
    await expect(luns.createDisk({ iqn: `${BASE}:link`, size: '1M', filename: 'link.img' })).rejects.toMatchObject({ code: 'file_exists' });
    expect(existsSync(join(outside, 'x.img'))).toBe(false);
  });
});
