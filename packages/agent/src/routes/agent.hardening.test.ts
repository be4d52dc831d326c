/**
 * Issue 13 against the agent's routes, with a real tgtd: names with a directory part are
 * a 400 naming the file (never a 500), and a scan exports nothing that leads outside
 * DISK_DIR and nothing open to every initiator unless told to.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAgentApp } from '../app';
import { LunIndex } from '../repositories/lun-index.repository';
import { freeTcpPort, type RunningTgtd, startTgtd, unusedControlPort } from '../testing/tgtd';

const BASE = 'iqn.2026-07.com.controller';
const auth = { authorization: 'Bearer tok' };
const MiB = 1024 * 1024;

let tgtd: RunningTgtd;
const dirs: string[] = [];
const apps: FastifyInstance[] = [];

async function newApp(opts: { scanOpen?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-agent-hard-'));
  dirs.push(dir);
  const app = await buildAgentApp({ diskDir: dir, baseIqn: BASE, cd: true, token: 'tok', targets: tgtd.targets, docs: false, scanOpen: opts.scanOpen });
  apps.push(app);
  return { app, dir };
}
const post = (app: FastifyInstance, url: string, payload?: unknown) => app.inject({ method: 'POST', url, payload: payload as object, headers: auth });
const tgtShow = async () => (await exec(['tgtadm', '-C', String(tgtd.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show'])).stdout;

beforeAll(async () => {
  tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `127.0.0.1:${await freeTcpPort()}` });
});
afterAll(async () => {
  for (const a of apps) await a.close();
  await tgtd?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('names with a directory part (issue 13, finding 1)', () => {
  it('answers 400 filename_invalid naming the file, never 500, for master, filename and iso', async () => {
    const { app, dir } = await newApp();
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', '_tpl_x.img'), Buffer.alloc(MiB));
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['/luns/disk', { iqn: `${BASE}:m1`, master: 'nodir/x' }, 'nodir/x'],
      ['/luns/disk', { iqn: `${BASE}:m2`, master: 'sub/_tpl_x.img' }, 'sub/_tpl_x.img'],
      ['/luns/disk', { iqn: `${BASE}:m3`, size: '1M', filename: 'nodir/x.img' }, 'nodir/x.img'],
      ['/luns/disk', { iqn: `${BASE}:m4`, size: '1M', filename: 'a/b/c/d.img' }, 'a/b/c/d.img'],
      ['/luns/cd', { iso: 'nodir/x.iso' }, 'nodir/x.iso'],
    ];
    for (const [url, body, name] of cases) {
      const r = await post(app, url, body);
      expect(r.statusCode, `${url} ${JSON.stringify(body)}`).toBe(400);
      expect(r.json().detail).toContain(name);
    }
    expect(await tgtShow()).not.toContain(`${BASE}:m`);
  });

  it('cuts a 1 MB file name in the error it echoes', async () => {
    const { app } = await newApp();
    const r = await post(app, '/luns/disk', { iqn: `${BASE}:big`, size: '1M', filename: `${'x'.repeat(MiB)}.img` });
    expect(r.statusCode).toBe(400);
    expect(r.body.length).toBeLessThan(1_000);
  });
});

describe('POST /luns/scan (issue 13, finding 6)', () => {
  it('does not export a link that leads outside DISK_DIR, nor list it as a master', async () => {
    const { app, dir } = await newApp({ scanOpen: true });
    symlinkSync('/etc/passwd', join(dir, 'evil-link.img'));
    symlinkSync('/etc/passwd', join(dir, '_tpl_evil.img'));
    symlinkSync('/etc/hostname', join(dir, 'evil.iso'));
    const r = (await post(app, '/luns/scan')).json();
    expect(r.created).toEqual([]);
    expect(r.skipped).toEqual(
      expect.arrayContaining([
        { iqn: null, filename: 'evil-link.img', reason: 'leads outside the image directory' },
        { iqn: null, filename: 'evil.iso', reason: 'leads outside the image directory' },
      ]),
    );
    expect(await tgtShow()).not.toContain('evil');
    expect((await app.inject({ url: '/masters', headers: auth })).json()).toEqual({ masters: [] });
    // Nor may a request use it as a master.
    const clone = await post(app, '/luns/disk', { iqn: `${BASE}:from-evil`, master: '_tpl_evil.img' });
    expect(clone.statusCode).toBe(400);
  });

  it('does not export a second name of a master (it would be written to)', async () => {
    const { app, dir } = await newApp({ scanOpen: true });
    writeFileSync(join(dir, '_tpl_ubuntu.img'), Buffer.alloc(MiB));
    symlinkSync('_tpl_ubuntu.img', join(dir, 'alias.img'));
    const r = (await post(app, '/luns/scan')).json();
    expect(r.created).toEqual([]);
    expect(r.skipped).toEqual([{ iqn: null, filename: 'alias.img', reason: 'is a link to a master' }]);
  });

  it('by default exports no file without a recorded initiator, and still rebuilds restricted targets', async () => {
    const { app, dir } = await newApp();
    const iqn = `${BASE}:w1.ubuntu`;
    const initiator = `${BASE}:w1`;
    expect((await post(app, '/luns/disk', { iqn, size: '1M', initiator })).statusCode).toBe(200);
    const openIqn = `${BASE}:w2.ubuntu`;
    expect((await post(app, '/luns/disk', { iqn: openIqn, size: '1M' })).statusCode).toBe(200);
    await tgtd.targets.delete(iqn);
    await tgtd.targets.delete(openIqn);
    writeFileSync(join(dir, 'dropped-in.img'), Buffer.alloc(MiB));
    writeFileSync(join(dir, 'installer.iso'), Buffer.alloc(MiB));

    const r = (await post(app, '/luns/scan')).json();
    expect(r.created).toEqual([{ iqn, cd: false, filename: 'w1.ubuntu.img' }]);
    const reasons = Object.fromEntries(r.skipped.map((s: { filename: string; reason: string }) => [s.filename, s.reason]));
    for (const f of ['dropped-in.img', 'installer.iso', 'w2.ubuntu.img']) expect(reasons[f], f).toMatch(/no recorded initiator/);
    const luns = (await app.inject({ url: '/luns', headers: auth })).json() as { iqn: string; acl: string[] }[];
    expect(luns).toEqual([{ iqn, tid: expect.any(Number), luns: [{ backing: join(dir, 'w1.ubuntu.img') }], acl: [initiator] }]);
    expect(await tgtShow()).not.toContain('ALL');
    // The open target's entry stays in the index: turning IRONLENS_AGENT_SCAN_OPEN on brings it back.
    expect((await new LunIndex(dir).read()).get(openIqn)).toEqual({ filename: 'w2.ubuntu.img', cd: false });
  });
});
