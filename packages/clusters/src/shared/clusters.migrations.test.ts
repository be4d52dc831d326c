import { spawnSync } from 'node:child_process';
import { type Postgres, startPostgres } from '@ironlens/core/testing';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clustersMigrations } from './clusters.migrations';
import type { ClustersDatabase } from './tables';

// The cluster manager's migrations are written for both engines of the store: they are compiled
// with Kysely's PostgreSQL dialect and run by a real, throw-away PostgreSQL (Debian's binaries).

let pg: Postgres | undefined;

function psql(sqlText: string): string {
  const r = spawnSync('psql', [pg!.url, '-X', '-q', '-v', 'ON_ERROR_STOP=1'], { input: sqlText, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql: ${r.stderr || r.stdout}`);
  return r.stdout;
}

beforeAll(async () => {
  pg = await startPostgres();
}, 120_000);

afterAll(() => pg?.stop());

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

describe('clusters-0033 on a store of before it (SQLite)', () => {
  it('reads a record’s proxy mode system back as auto, and takes records made before as reached', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { Store } = await import('@ironlens/core');
    const dir = mkdtempSync(join(tmpdir(), 'ironlens-clusters-0033-'));
    const file = join(dir, 'store.db');
    const before = clustersMigrations.filter((m) => m.name !== 'clusters-0033-seed-clients');
    const old = await Store.open<ClustersDatabase>({ file, migrations: before });
    const row = (id: string, mode: string) => ({
      id, name: id, active_name: null, description: '', created_at: '2026-01-01T00:00:00Z', updated_at: 'x', draft: 1,
      proxy: JSON.stringify({ mode, httpProxy: null, httpsProxy: null, noProxy: null }), kubeconfig_sealed: 'v1:x', gateway_namespace: `lens-gateway-${id}`, gateway_name: 'g', inotify_max_user_instances: 8192,
    });
    await old.db.insertInto('clusters').values([row('aaaaaaaa', 'system'), row('bbbbbbbb', 'none')]).execute();
    await old.close();
    const now = await Store.open<ClustersDatabase>({ file, migrations: clustersMigrations });
    const rows = await now.db.selectFrom('clusters').select(['id', 'proxy', 'reached_at']).orderBy('id').execute();
    await now.close();
    rmSync(dir, { recursive: true, force: true });
    expect(rows).toEqual([
      { id: 'aaaaaaaa', proxy: '{"mode":"auto","httpProxy":null,"httpsProxy":null,"noProxy":null}', reached_at: '2026-01-01T00:00:00Z' },
      { id: 'bbbbbbbb', proxy: '{"mode":"none","httpProxy":null,"httpsProxy":null,"noProxy":null}', reached_at: '2026-01-01T00:00:00Z' },
    ]);
  });
});
