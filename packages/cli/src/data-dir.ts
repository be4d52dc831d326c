import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Env } from '@ironlens/core';

/**
 * The repository this command runs from, when it runs from a checkout: the folder three levels
 * above this module (`packages/cli/src/` or the compiled `packages/cli/dist/`) holding `.git`
 * and the workspace. Installed from the release package, there is none.
 */
export function checkoutRoot(moduleUrl: string = import.meta.url): string | null {
  const root = resolve(fileURLToPath(new URL('.', moduleUrl)), '..', '..', '..');
  return existsSync(join(root, '.git')) && existsSync(join(root, 'packages', 'cli', 'package.json')) ? root : null;
}

/**
 * The data dir when `IRONLENS_DATA_DIR` is not set, always an absolute path: `.ironlens` in the
 * repository when run from a checkout; otherwise `/var/lib/ironlens` for root (what the systemd
 * unit's `StateDirectory` makes) and `$XDG_STATE_HOME/ironlens` (default `~/.local/state/ironlens`)
 * for anyone else. Never a folder relative to wherever the process happened to start.
 */
export function defaultDataDir(env: Env, opts: { checkout?: string | null; uid?: number; home?: string } = {}): string {
  const checkout = opts.checkout === undefined ? checkoutRoot() : opts.checkout;
  if (checkout) return join(checkout, '.ironlens');
  const uid = opts.uid ?? process.getuid?.() ?? -1;
  if (uid === 0) return '/var/lib/ironlens';
  const xdg = env.XDG_STATE_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(opts.home ?? homedir(), '.local', 'state'), 'ironlens');
}

/** `IRONLENS_DATA_DIR` (resolved against the working directory), else {@link defaultDataDir}. */
export function dataDirFrom(env: Env): string {
  const set = env.IRONLENS_DATA_DIR?.trim();
  return set ? resolve(set) : defaultDataDir(env);
}

/** The lock file of a `serve` on a SQLite data dir. */
export const SERVE_LOCK = 'serve.pid';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One `serve` per SQLite data dir: takes `<dataDir>/serve.pid` (created exclusively) and
 * returns its release. A lock whose process is gone (a crash, a kill -9) is taken over; one
 * held by a live process is refused at once, naming that pid. PostgreSQL replicas need no lock.
 */
export function lockDataDir(dataDir: string, pid: number = process.pid): () => void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, SERVE_LOCK);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${pid}\n`);
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        if (existsSync(file) && readFileSync(file, 'utf8').trim() === String(pid)) rmSync(file, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) {
        throw new Error(`another ironlens serve (pid ${holder}) already uses the data dir ${dataDir} (${file}); stop it, or give this one another IRONLENS_DATA_DIR`);
      }
      rmSync(file, { force: true }); // a stale lock: its process is gone
    }
  }
  throw new Error(`cannot take the lock ${file}`);
}
