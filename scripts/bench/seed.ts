/**
 * Writes the fleet into a fresh store: one stgt agent, `n` ready workers with an ubuntu
 * system disk and `default_os: ubuntu`, and `n` devices bound one-to-one. This is test
 * setup, so it goes straight to the tables in one transaction (multi-row inserts): ten
 * thousand workers take well under a second, where the HTTP API would take minutes.
 */
import { isoSeconds, type NamedMigration, operationsMigrations, Store } from '@ironlens/core';
import { type MetalDatabase, metalMigrations } from '@ironlens/metal';
import { AGENT, hostnameOf, iqnOf, macOf } from './fleet';

export const BENCH_MIGRATIONS = [...operationsMigrations, ...metalMigrations];

const CHUNK = 500;

/** `rows` in slices of {@link CHUNK}: one multi-row insert each. */
function chunks<T>(rows: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += CHUNK) out.push(rows.slice(i, i + CHUNK));
  return out;
}

/**
 * `target`: a SQLite file, or `{ url }` of a PostgreSQL database (the replicated mode). The
 * migrations default to the provisioning listener's; pass `ironlens serve`'s full set when
 * `serve` opens the store afterwards.
 */
export async function seedFleet(target: string | { url: string }, n: number, migrations: NamedMigration[] = BENCH_MIGRATIONS): Promise<void> {
  const store = await Store.open<MetalDatabase>(typeof target === 'string' ? { file: target, migrations } : { url: target.url, migrations });
  try {
    const now = isoSeconds();
    const ids = Array.from({ length: n }, (_, k) => k + 1);
    await store.transaction(async (trx) => {
      await trx
        .insertInto('agents')
        .values({ id: AGENT.id, base_url: AGENT.base_url, token: null, iscsi_server: AGENT.iscsi_server, role_disk: 1, role_cd: 1, tags: JSON.stringify(AGENT.tags), enabled: 1, seq: 1 })
        .execute();
      const workers = ids.map((i) => ({ worker_id: hostnameOf(i), hostname: hostnameOf(i), arch: 'x86_64', state: 'ready', default_os: 'ubuntu', menu_default: null, menu_timeout: null, cd: null, created_at: now }));
      for (const chunk of chunks(workers)) await trx.insertInto('workers').values(chunk).execute();
      const disks = ids.map((i) => ({
        worker_id: hostnameOf(i),
        os: 'ubuntu',
        seq: 1,
        agent: AGENT.id,
        iqn: iqnOf(i),
        filename: `${hostnameOf(i)}.ubuntu.img`,
        backing: `/srv/ironlens/disks/${hostnameOf(i)}.ubuntu.img`,
        source: JSON.stringify({ type: 'master', name: 'ubuntu-24.04.img' }),
      }));
      for (const chunk of chunks(disks)) await trx.insertInto('disks').values(chunk).execute();
      const devices = ids.map((i) => ({
        mac: macOf(i),
        uuid: null,
        state: 'bound',
        bound_worker_id: hostnameOf(i),
        key_hash: null,
        source: 'manual',
        fingerprint: JSON.stringify({ manufacturer: 'ASUSTeK COMPUTER INC.' }),
        first_seen: null,
        last_seen: null,
      }));
      for (const chunk of chunks(devices)) await trx.insertInto('devices').values(chunk).execute();
    });
  } finally {
    await store.close();
  }
}
