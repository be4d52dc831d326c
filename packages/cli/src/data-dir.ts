import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Env, replaceFileSync, tryLockFile } from '@ironlens/core';

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

/** The lock of a `serve` on a SQLite data dir: held (a kernel lock, see {@link tryLockFile}) while it runs. */
export const SERVE_LOCK = 'serve.lock';
/** Who holds it, for the message of a refused start (written after the lock is taken, removed at release). */
export const SERVE_PID = 'serve.pid';

/**
 * One `serve` per SQLite data dir: takes the data dir's lock and returns its release. The lock is
 * one the kernel releases when its process has exited (a `kill -9`, a crash), and taking it waits
 * up to `LOCK_WAIT_MS` (3 s) for that, so a supervisor's immediate restart is not refused by a
 * predecessor that is still exiting; one still held by a running process after that wait is
 * refused, naming that pid (`serve.pid`). PostgreSQL replicas need no lock.
 */
export function lockDataDir(dataDir: string, pid: number = process.pid): () => void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lock = tryLockFile(join(dataDir, SERVE_LOCK));
  const pidFile = join(dataDir, SERVE_PID);
  if (!lock) {
    let holder = '?';
    try {
      holder = readFileSync(pidFile, 'utf8').trim() || '?';
    } catch {
      // it has not written its pid yet
    }
    throw new Error(`another ironlens serve (pid ${holder}) already uses the data dir ${dataDir} (${join(dataDir, SERVE_LOCK)}); stop it, or give this one another IRONLENS_DATA_DIR`);
  }
  try {
    replaceFileSync(pidFile, `${pid}\n`, 0o600);
  } catch (err) {
    lock.release();
    throw err;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    try {
      if (existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() === String(pid)) rmSync(pidFile, { force: true });
    } finally {
      lock.release();
    }
  };
}
