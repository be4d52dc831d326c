import { createRequire } from 'node:module';
import type pg from 'pg';

let loaded: typeof pg | undefined;

/**
 * The `pg` driver, loaded at its first use (it is CommonJS, so synchronously): a process on
 * SQLite never needs it, and loading it was part of `ironlens serve`'s start (issue 19).
 */
export function pgDriver(): typeof pg {
  loaded ??= createRequire(import.meta.url)('pg') as typeof pg;
  return loaded;
}
