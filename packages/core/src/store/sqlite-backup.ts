import Database from 'better-sqlite3';

/**
 * A consistent copy of a live SQLite store through SQLite's online backup API (never a file
 * copy, which could catch the database file and its WAL at different moments). It reads through
 * a connection of its own, so the store's writers go on meanwhile: the copy is the database as
 * one committed state, from a moment during the call. The destination must not exist.
 */
export async function backupSqlite(source: string, destination: string): Promise<{ pages: number }> {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // After the first step, the rest in one step: a write by another connection between two
    // steps restarts the copy, so one step under one read lock always completes.
    const r = await db.backup(destination, { progress: () => 1 << 30 });
    return { pages: r.totalPages };
  } finally {
    db.close();
  }
}
