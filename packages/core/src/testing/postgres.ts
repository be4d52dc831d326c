import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { StoreOptions } from '../store';
import { freeTcpPort } from './wait';

/**
 * A throw-away PostgreSQL cluster for tests: Debian's server binaries (package `postgresql`),
 * `initdb` in a temp dir, `pg_ctl` on a free 127.0.0.1 port, trust authentication, no system
 * service. Throws when the binaries are missing (a test never passes without its tool).
 */
export interface Postgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  readonly url: string;
  readonly port: number;
  /** Creates an empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** `pg_ctl stop -m fast` then `start`: every connection is cut, the data stays. */
  restart(): void;
  stop(): void;
}

const PG_ROOT = '/usr/lib/postgresql';

function serverBin(): string {
  if (!existsSync(PG_ROOT)) throw new Error('PostgreSQL server binaries are missing: install the Debian package postgresql (scripts/install-test-deps.sh)');
  const major = readdirSync(PG_ROOT)
    .filter((d) => existsSync(join(PG_ROOT, d, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(a) - Number(b))
    .pop();
  if (!major) throw new Error(`no PostgreSQL server under ${PG_ROOT}`);
  return join(PG_ROOT, major, 'bin');
}

/** Runs a server binary as the `postgres` user (initdb refuses root). */
function asPostgres(cmd: string, args: string[]): void {
  const r = spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.stdout}`);
}

export async function startPostgres(): Promise<Postgres> {
  const bin = serverBin();
  const dir = mkdtempSync(join(tmpdir(), 'ironlens-pg-'));
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(dir, uid, gid);
  const port = await freeTcpPort();
  const data = join(dir, 'data');
  asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const ctl = (...args: string[]) => asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'log'), ...args]);
  const options = `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`;
  ctl('-o', options, '-w', 'start');
  let running = true;
  const base = `postgres://postgres@127.0.0.1:${port}`;
  return {
    url: `${base}/postgres`,
    port,
    createDatabase: (name?: string) => createDatabaseOn(`${base}/postgres`, name),
    restart() {
      ctl('-m', 'fast', '-w', 'stop');
      ctl('-o', options, '-w', 'start');
    },
    stop() {
      if (!running) return;
      running = false;
      spawnSync('runuser', ['-u', 'postgres', '--', join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The environment variable through which the PostgreSQL run of the suite (vitest project
 * `postgres`, see vitest.config.ts) hands every test file the server it started.
 */
export const TEST_PG_ENV = 'IRONLENS_TEST_POSTGRES_URL';

/**
 * Set to `postgres` by the vitest project `postgres` only (its `env`): the URL above is set in
 * vitest's main process by the globalSetup and so reaches the workers of every project; this
 * marker says which run a test file is in.
 */
export const TEST_STORE_ENV = 'IRONLENS_TEST_STORE';

/** True in the suite's PostgreSQL run. */
export function onPostgres(): boolean {
  return process.env[TEST_STORE_ENV] === 'postgres' && Boolean(process.env[TEST_PG_ENV]);
}

/** A fresh, empty database on the suite's PostgreSQL (only in its PostgreSQL run). */
export async function freshDatabaseUrl(): Promise<string> {
  const url = onPostgres() ? process.env[TEST_PG_ENV] : undefined;
  if (!url) throw new Error(`${TEST_PG_ENV} is not set: this runs only in the suite's PostgreSQL run`);
  return createDatabaseOn(url);
}

/** Creates an empty database (a random `t_…` name by default) on the server of `url`; answers its URL. */
async function createDatabaseOn(url: string, name = `t_${randomBytes(6).toString('hex')}`): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`bad database name ${name}`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return url.replace(/\/[^/]*$/, `/${name}`);
}

/**
 * Where a test's store lives: `{file}` (SQLite) normally, a fresh PostgreSQL database in the
 * suite's PostgreSQL run. Reuse the answer to reopen the same store (a restart).
 */
export async function testStoreTarget(file: string): Promise<Pick<StoreOptions, 'file' | 'url'>> {
  return onPostgres() ? { url: await freshDatabaseUrl() } : { file };
}

/**
 * Environment for an `ironlens serve` a test starts: `IRONLENS_DATABASE_URL` of a fresh database
 * in the suite's PostgreSQL run, nothing otherwise (the data dir's SQLite file).
 */
export async function testDatabaseEnv(): Promise<Record<string, string>> {
  return onPostgres() ? { IRONLENS_DATABASE_URL: await freshDatabaseUrl() } : {};
}

/**
 * Every row of the database at `url` as SQL text (`pg_dump --data-only --inserts`, Debian's
 * binary): what a test greps for plaintext secrets where, on SQLite, it reads the store file.
 */
export function dumpDatabase(url: string): string {
  if (!/^postgres(ql)?:\/\//.test(url)) throw new Error(`not a postgres:// URL: ${url}`);
  const r = spawnSync(join(serverBin(), 'pg_dump'), ['--data-only', '--inserts', '--no-owner', `--dbname=${url}`], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`pg_dump: ${r.stderr || r.error?.message}`);
  return r.stdout;
}
