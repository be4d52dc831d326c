/**
 * Where `ironlens serve` keeps its state when nobody says (issue 23): an absolute path, never the
 * working directory of whoever started it; and one serve per SQLite data dir.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkoutRoot, dataDirFrom, defaultDataDir, lockDataDir, SERVE_LOCK } from './data-dir';
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

  it('a second serve on the same data dir refuses at once, naming the first one’s pid; after the first stops it starts', async () => {
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
    expect(existsSync(join(dir, 'data', SERVE_LOCK))).toBe(false);
    const again = await serve(env(), () => {});
    await again.close();
  });

  it('takes over the lock of a process that is gone (a kill -9)', async () => {
    const child = spawn(process.execPath, ['-e', '0']);
    const pid = child.pid as number;
    await new Promise((r) => child.on('exit', r));
    const data = join(dir, 'data');
    lockDataDir(data, 1)(); // creates the folder
    writeFileSync(join(data, SERVE_LOCK), `${pid}\n`);
    const release = lockDataDir(data);
    release();
    expect(existsSync(join(data, SERVE_LOCK))).toBe(false);
  });
});
