/**
 * `ironlens backup` / `restore` (issue 23): a consistent copy of a live SQLite store under a bind
 * storm, with its secret key sealed under a passphrase; restore refuses a store in use, a wrong
 * passphrase and an existing store without --replace.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackupError, backupStore, readBackup, restoreStore } from './backup';
import { main } from './main';
import { serve } from './serve';
import { sleep } from '@ironlens/core/testing';

let dir: string;
const PASS = 'correct horse battery staple';
const env = (sub: string) => ({
  IRONLENS_DATA_DIR: join(dir, sub),
  IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
  IRONLENS_CONSOLE_LISTEN: 'off',
  IPXE_CP_DNSMASQ_RELOAD: 'false',
  // 300 machines report from one address: no registration limit.
  IRONLENS_REPORT_REGISTER_PER_MINUTE: '0',
  IRONLENS_REPORT_MAX_POOLED: '0',
});
const mac = (i: number) => `02:00:00:00:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-backup-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('backup and restore of the SQLite store', () => {
  it('a backup taken during a 300-bind storm restores every bind acknowledged before it began, one-to-one', { timeout: 240_000 }, async () => {
    const live = await serve(env('live'), () => {});
    const url = live.urls.boot;
    const N = 300;
    const acked: Array<{ i: number; at: number }> = [];
    let backupStartedAt = 0;
    try {
      for (let i = 0; i < N; i++) expect((await fetch(`${url}/devices/report?mac=${mac(i)}`)).status).toBe(200);
      const bind = async (i: number) => {
        const r = await fetch(`${url}/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ worker_id: `w${i}`, mac: mac(i) }) });
        expect(r.status).toBe(200);
        acked.push({ i, at: performance.now() });
      };
      // 300 binds, 8 at a time; the backup starts once a third of them are acknowledged.
      let next = 0;
      let failed: unknown;
      const storm = Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < N) await bind(next++);
        }),
      ).catch((err) => {
        failed = err;
      });
      while (acked.length < N / 3 && failed === undefined) await sleep(5);
      if (failed) throw failed;
      backupStartedAt = performance.now();
      const out = await backupStore(env('live'), join(dir, 'backup.ironlens'), PASS);
      await storm;
      if (failed) throw failed;
      expect(out.bytes).toBeGreaterThan(0);
      expect(statSync(out.file).mode & 0o777).toBe(0o600);
    } finally {
      await live.close();
    }
    const before = acked.filter((a) => a.at < backupStartedAt).map((a) => a.i);
    expect(before.length).toBeGreaterThanOrEqual(N / 3);
    expect(before.length).toBeLessThan(N); // the storm went on during the backup

    await restoreStore(env('restored'), join(dir, 'backup.ironlens'), PASS);
    const restored = await serve(env('restored'), () => {});
    try {
      const devices = (await (await fetch(`${restored.urls.boot}/devices`)).json()) as Array<{ mac: string; state: string; bound_worker_id: string | null }>;
      const workers = (await (await fetch(`${restored.urls.boot}/workers`)).json()) as Array<{ worker_id: string; mac: string | null }>;
      const byMac = new Map(devices.map((d) => [d.mac, d]));
      for (const i of before) expect(byMac.get(mac(i))).toMatchObject({ state: 'bound', bound_worker_id: `w${i}` });
      // One-to-one: every bound device's worker names that device, and no worker holds two.
      const bound = devices.filter((d) => d.state === 'bound');
      const workerMac = new Map(workers.map((w) => [w.worker_id, w.mac]));
      for (const d of bound) expect(workerMac.get(d.bound_worker_id as string)).toBe(d.mac);
      expect(new Set(bound.map((d) => d.bound_worker_id)).size).toBe(bound.length);
      expect(workers.filter((w) => w.mac !== null)).toHaveLength(bound.length);
    } finally {
      await restored.close();
    }
  });

  it('the backup file holds no secret key in plain text; a wrong passphrase is refused', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    const keyHex = readFileSync(join(dir, 'live', 'secret.key'), 'utf8').trim();
    await backupStore(env('live'), join(dir, 'b'), PASS);
    const raw = readFileSync(join(dir, 'b'));
    expect(raw.includes(Buffer.from(keyHex))).toBe(false);
    expect(raw.includes(Buffer.from(keyHex, 'hex'))).toBe(false);
    expect(readBackup(join(dir, 'b'), PASS).key.toString('hex')).toBe(keyHex);
    expect(() => readBackup(join(dir, 'b'), 'not the passphrase')).toThrow('wrong passphrase');
    await expect(restoreStore(env('other'), join(dir, 'b'), 'not the passphrase')).rejects.toThrow(BackupError);
    expect(existsSync(join(dir, 'other', 'ironlens.db'))).toBe(false);
  });

  it('restore refuses a data dir a serve is using, and an existing store without --replace', async () => {
    const live = await serve(env('live'), () => {});
    await backupStore(env('live'), join(dir, 'b'), PASS);
    try {
      await expect(restoreStore(env('live'), join(dir, 'b'), PASS, { replace: true })).rejects.toThrow(`refusing to restore into a store in use: another ironlens serve (pid ${process.pid})`);
    } finally {
      await live.close();
    }
    await expect(restoreStore(env('live'), join(dir, 'b'), PASS)).rejects.toThrow('already holds a store (ironlens.db): give --replace');
    await restoreStore(env('live'), join(dir, 'b'), PASS, { replace: true });
  });

  it('the command: passphrase from --key-file, exit codes, and the PostgreSQL reminder', async () => {
    const live = await serve(env('live'), () => {});
    await live.close();
    const keyFile = join(dir, 'pass');
    writeFileSync(keyFile, `${PASS}\n`, { mode: 0o600 });
    const saved = { ...process.env };
    const out: string[] = [];
    const err: string[] = [];
    const [w1, w2] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
    try {
      Object.assign(process.env, env('live'));
      expect(await main(['backup', join(dir, 'c'), '--key-file', keyFile])).toBe(0);
      expect(out.join('')).toContain(`backup written to ${join(dir, 'c')}`);
      expect(await main(['backup', join(dir, 'c'), '--key-file', keyFile])).toBe(1); // exists
      expect(await main(['backup'])).toBe(2);
      Object.assign(process.env, env('fresh'));
      expect(await main(['restore', join(dir, 'c'), '--key-file', keyFile])).toBe(0);
      expect(out.join('')).toContain(`into ${join(dir, 'fresh')}`);
      process.env.IRONLENS_DATABASE_URL = 'postgres://u:p@127.0.0.1:1/db';
      expect(await main(['backup', join(dir, 'd'), '--key-file', keyFile])).toBe(1);
      expect(err.join('')).toContain('back it up with pg_dump');
      expect(err.join('')).toContain('keep the secret key with it');
    } finally {
      process.stdout.write = w1;
      process.stderr.write = w2;
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});
