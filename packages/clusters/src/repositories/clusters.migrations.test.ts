import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clustersMigrations } from './clusters.migrations';

// The cluster manager's migrations are written for both engines of the store: they are compiled
// with Kysely's PostgreSQL dialect and run by a real, throw-away PostgreSQL (Debian's binaries).

const PG_ROOT = '/usr/lib/postgresql';
let pgBin: string;
let dir: string;
let port: number;
let started = false;

function asPostgres(cmd: string, args: string[], input?: string): string {
  const r = spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { input, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

const psql = (sqlText: string) => asPostgres('psql', ['-h', dir, '-p', String(port), '-U', 'postgres', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', 'postgres'], sqlText);

beforeAll(async () => {
  if (!existsSync(PG_ROOT)) throw new Error('PostgreSQL server binaries are missing (Debian package postgresql)');
  const major = readdirSync(PG_ROOT).sort().pop();
  pgBin = join(PG_ROOT, major!, 'bin');
  dir = mkdtempSync(join(tmpdir(), 'ironlens-pg-'));
  const pw = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim();
  const gid = execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim();
  chownSync(dir, Number(pw), Number(gid));
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const a = srv.address();
  port = typeof a === 'object' && a ? a.port : 0;
  await new Promise<void>((r) => srv.close(() => r()));
  asPostgres(join(pgBin, 'initdb'), ['-D', join(dir, 'data'), '-U', 'postgres', '--auth-local=trust', '--auth-host=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  asPostgres(join(pgBin, 'pg_ctl'), [
    '-D',
    join(dir, 'data'),
    '-l',
    join(dir, 'log'),
    '-o',
    `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c fsync=off`,
    '-w',
    'start',
  ]);
  started = true;
}, 120_000);

afterAll(() => {
  if (started) spawnSync('runuser', ['-u', 'postgres', '--', join(pgBin, 'pg_ctl'), '-D', join(dir, 'data'), '-m', 'immediate', 'stop']);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The SQL the migrations produce for PostgreSQL (values inlined: DDL takes no parameters). */
async function postgresSql(): Promise<string[]> {
  const out: string[] = [];
  const db = new Kysely<unknown>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: (e) => {
      if (e.level === 'query') {
        expect(e.query.parameters).toEqual([]);
        out.push(e.query.sql);
      }
    },
  });
  for (const m of clustersMigrations) await m.up(db);
  await db.destroy();
  return out;
}

describe('clusters migrations on PostgreSQL', () => {
  it('create the tables, and keep names unique among non-drafts only (NULL active_name for drafts)', async () => {
    const statements = await postgresSql();
    expect(statements.join('\n')).not.toMatch(/autoincrement/i);
    psql(`${statements.join(';\n')};\n`);
    const row = (id: string, active: string | null) =>
      `INSERT INTO clusters (id, name, active_name, description, created_at, updated_at, draft, proxy, kubeconfig_sealed, gateway_namespace, gateway_name, inotify_max_user_instances) VALUES ('${id}', 'Prod', ${active === null ? 'NULL' : `'${active}'`}, '', '2026-01-01T00:00:00Z', 'x', ${active === null ? 1 : 0}, '{}', 'v1:x', 'lens-gateway-${id}', 'lens-gateway', 8192);`;
    psql(row('aaaaaaaa', 'prod') + row('bbbbbbbb', null) + row('cccccccc', null));
    expect(() => psql(row('dddddddd', 'prod'))).toThrow(/duplicate key value violates unique constraint/);
    psql(`INSERT INTO cluster_sessions (id, cluster_id, created_at, active) VALUES ('s1', 'aaaaaaaa', 'x', 1);
INSERT INTO cluster_downloads (cluster_id, component, ref, state, updated_at) VALUES ('aaaaaaaa', 'llmD', 'v0.10.0', 'ready', 'x');
DELETE FROM clusters WHERE id = 'aaaaaaaa';`);
    expect(psql('SELECT count(*) FROM cluster_sessions; SELECT count(*) FROM cluster_downloads;').replace(/\s+/g, ' ')).toMatch(/count -+ 0 .*count -+ 0/);
  });
});
