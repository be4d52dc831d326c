/**
 * Where `ironlens serve` keeps its state when nobody says (issue 23): an absolute path, never the
 * working directory of whoever started it; and one serve per SQLite data dir.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ironlens/core/testing';
import { writeStandIns } from '@ironlens/kind/testing';
import { listenersIn, SERVE_ARGS } from './testing/serve-process';
import { checkoutRoot, dataDirFrom, defaultDataDir, lockDataDir, SERVE_LOCK, SERVE_PID } from './data-dir';
import { serve } from './serve';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-data-dir-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the default data dir', () => {
  it('is .ironlens in the repository when run from a checkout, wherever the process started', () => {
    const root = checkoutRoot();
    expect(root).not.toBeNull();
    expect(existsSync(join(root as string, 'packages', 'cli', 'src', 'data-dir.ts'))).toBe(true);
    expect(defaultDataDir({})).toBe(join(root as string, '.ironlens'));
    expect(dataDirFrom({})).toBe(join(root as string, '.ironlens'));
  });

  it('outside a checkout: /var/lib/ironlens for root, $XDG_STATE_HOME/ironlens or ~/.local/state/ironlens for a user', () => {
    expect(defaultDataDir({}, { checkout: null, uid: 0 })).toBe('/var/lib/ironlens');
    expect(defaultDataDir({ XDG_STATE_HOME: '/srv/state' }, { checkout: null, uid: 1000 })).toBe('/srv/state/ironlens');
    expect(defaultDataDir({}, { checkout: null, uid: 1000, home: '/home/op' })).toBe('/home/op/.local/state/ironlens');
    // A relative XDG_STATE_HOME is invalid by the XDG spec: ignored.
    expect(defaultDataDir({ XDG_STATE_HOME: 'state' }, { checkout: null, uid: 1000, home: '/home/op' })).toBe('/home/op/.local/state/ironlens');
  });

  it('IRONLENS_DATA_DIR wins, made absolute', () => {
    expect(dataDirFrom({ IRONLENS_DATA_DIR: '/x/y' })).toBe('/x/y');
    expect(dataDirFrom({ IRONLENS_DATA_DIR: 'rel' })).toBe(join(process.cwd(), 'rel'));
  });
});

describe('one serve per SQLite data dir', () => {
  const env = () => ({ IRONLENS_DATA_DIR: join(dir, 'data'), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: 'off', IPXE_CP_DNSMASQ_RELOAD: 'false' });

  it('a second serve on the same data dir refuses (after the lock’s short wait), naming the first one’s pid; after the first stops it starts', async () => {
    const lines: string[] = [];
    const first = await serve(env(), (m) => lines.push(m));
    try {
      expect(lines).toContain(`data dir ${join(dir, 'data')} (SQLite store ironlens.db, secret key, rendered files)`);
      await expect(serve(env(), () => {})).rejects.toThrow(`another ironlens serve (pid ${process.pid}) already uses the data dir ${join(dir, 'data')}`);
      // The first one is untouched by the refusal.
      expect((await fetch(`${first.urls.boot}/healthz`)).status).toBe(200);
    } finally {
      await first.close();
    }
    expect(existsSync(join(dir, 'data', SERVE_PID))).toBe(false);
    const again = await serve(env(), () => {});
    await again.close();
  });

  it("ignores what an older version left under the lock's name, and a pid file naming a process that is gone", async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    const pid = child.pid as number;
    await new Promise((r) => child.on('exit', r));
    const data = join(dir, 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, SERVE_LOCK), `${pid}\n`);
    writeFileSync(join(data, SERVE_PID), `${pid}\n`);
    const release = lockDataDir(data);
    expect(readFileSync(join(data, SERVE_PID), 'utf8')).toBe(`${process.pid}\n`);
    release();
    expect(existsSync(join(data, SERVE_PID))).toBe(false);
  });
});

/** Where `ironlens serve` prints its console address. */
const consoleOf = (out: string) => listenersIn(out).console || undefined;

describe('a restart right after kill -9 (issue 29, finding 15)', () => {
  it('starts at once although the killed serve is not reaped yet, and its running job reads failed, interrupted', async () => {
    const data = join(dir, 'data');
    const stand = writeStandIns();
    const gates = join(dir, 'gates');
    mkdirSync(gates);
    const env = {
      ...process.env,
      ...stand.env({ STANDIN_KIND_GATE_DIR: gates }),
      PATH: `${stand.binDir}:${process.env.PATH}`,
      IRONLENS_DATA_DIR: data,
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IPXE_CP_DNSMASQ_RELOAD: 'false',
      KIND_K8S_SKIP_VERSION_LIST: '1',
      IRONLENS_DATABASE_URL: '',
    };
    const repo = new URL('../../../', import.meta.url).pathname;
    // The first serve's parent never reaps it (as a supervisor that has not yet waited): once
    // killed it stays a zombie, whose pid a pid check still finds alive.
    const first = spawn('sh', ['-c', `"$@" & exec sleep 600`, 'sh', process.execPath, ...SERVE_ARGS], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out1 = '';
    first.stdout?.on('data', (b) => (out1 += b));
    first.stderr?.on('data', (b) => (out1 += b));
    let second: ReturnType<typeof spawn> | undefined;
    try {
      const console1 = await waitFor('the first serve to listen', () => consoleOf(out1), (u) => u !== undefined, 60_000);
      const created = await fetch(`${console1}/kind/api/v1/clusters`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'killed' }) });
      expect(created.status).toBe(202);
      const { job_id } = (await created.json()) as { job_id: string };
      // kind holds at its first stage (its gate is never opened): the job is running.
      await waitFor('the job to run kind', async () => (await (await fetch(`${console1}/kind/api/v1/jobs/${job_id}`)).json()) as { status: string; progress_stage: string | null }, (j) => j.status === 'running' && /Ensuring node image/.test(j.progress_stage ?? ''), 30_000);
      const pid = Number(readFileSync(join(data, SERVE_PID), 'utf8'));
      expect(pid).toBeGreaterThan(0);
      process.kill(pid, 'SIGKILL');
      // At once: no wait for the first to be gone.
      second = spawn(process.execPath, SERVE_ARGS, { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let out2 = '';
      second.stdout?.on('data', (b) => (out2 += b));
      second.stderr?.on('data', (b) => (out2 += b));
      const exited = new Promise<number | null>((r) => second?.once('exit', r));
      const console2 = await Promise.race([waitFor('the second serve to listen', () => consoleOf(out2), (u) => u !== undefined, 60_000), exited.then((code) => Promise.reject(new Error(`the second serve exited ${code}:\n${out2}`)))]);
      // The killed one is still there, unreaped: the kernel's lock went with its death, not with its pid.
      expect(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0]).toBe('Z');
      const job = (await (await fetch(`${console2}/kind/api/v1/jobs/${job_id}`)).json()) as { status: string; error: string | null };
      expect(job.status).toBe('failed');
      expect(job.error).toMatch(/interrupted/);
    } finally {
      for (const p of [first, second]) if (p?.pid) try { process.kill(-p.pid, 'SIGKILL'); } catch {}
      // Let the stand-in kind that the killed serve left through its gates, so it ends.
      for (let i = 0; i < 10; i++) writeFileSync(join(gates, String(i)), '');
      stand.cleanup();
    }
  }, 120_000);
});
