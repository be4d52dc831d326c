import { chmodSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';

/** A lock held by this process until {@link FileLock.release}, or until the process ends, however it ends. */
export interface FileLock {
  release(): void;
}

/**
 * The connections that hold locks, until released: better-sqlite3 closes a connection that is
 * garbage-collected, and its lock with it, so a caller that drops the returned lock (or keeps it
 * only where the collector can reach it) would lose it silently, minutes into a run.
 */
const HELD = new Set<Database.Database>();

/** How long {@link tryLockFile} waits for another holder to let go by default: 3 s. */
export const LOCK_WAIT_MS = 3000;

/**
 * Takes an exclusive lock on `file` (created when missing, mode 0600), or answers null when
 * another holder, in this process or any other, still has it after `waitMs` (default
 * {@link LOCK_WAIT_MS}; the call blocks meanwhile, retrying as SQLite's busy handler does). The
 * lock is SQLite's own (a POSIX `fcntl` lock on a small database of its own, held by an open
 * connection in exclusive locking mode): the kernel drops it when the process has exited,
 * `kill -9` included and before it is reaped, so nothing stale is ever left to take over, and no
 * pid is ever guessed at (issue 29, finding 15: a pid check refused a restart while the killed
 * predecessor was still a zombie). A killed process that is still exiting (freeing a large
 * memory, closing its files) holds it until it is done: the wait covers that (review 1, M5).
 *
 * POSIX locks belong to the process and vanish when it closes any descriptor of the file: the
 * file must never be opened other than through this function (SQLite itself defers such closes).
 */
export function tryLockFile(file: string, opts: { waitMs?: number } = {}, retry = true): FileLock | null {
  const waitMs = Math.max(0, Math.floor(opts.waitMs ?? LOCK_WAIT_MS));
  let db: Database.Database | undefined;
  try {
    db = new Database(file);
    chmodSync(file, 0o600);
    db.pragma(`busy_timeout = ${waitMs}`);
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = MEMORY');
    // The first write takes the exclusive lock; in exclusive locking mode it is kept after COMMIT.
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS lock (taken_at TEXT); DELETE FROM lock; COMMIT');
    db.prepare('INSERT INTO lock VALUES (?)').run(new Date().toISOString());
  } catch (err) {
    try {
      db?.close();
    } catch {
      // closing a connection that never locked anything
    }
    const code = (err as { code?: string }).code;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') return null;
    // Not a lock of ours (an older version's pid file under this name): nobody can hold a lock on it.
    if (code === 'SQLITE_NOTADB' && retry) {
      rmSync(file, { force: true });
      return tryLockFile(file, opts, false);
    }
    throw err;
  }
  const held = db;
  HELD.add(held);
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      HELD.delete(held);
      held.close();
    },
  };
}
