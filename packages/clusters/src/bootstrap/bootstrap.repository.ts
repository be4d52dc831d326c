import type { JobsTables, NamedMigration, Store } from '@ironlens/core';
import type { Kysely } from 'kysely';
import type { NodeRole } from './nodes';

/** How a node logs in, as recorded (never the credential itself). */
export type NodeAuth = 'private_key' | 'password' | 'ironlens_key';

/** What the store keeps of a node: no private key, no password. */
export interface StoredNode {
  host: string;
  port: number;
  roles: NodeRole[];
  username: string;
  /** The worker the node was given as (issue 24), when it was. */
  workerId?: string;
  auth: NodeAuth;
}

/** `none` until the job ends with a kubeconfig; `held` (sealed) until the first read takes it; then `delivered`. */
export type KubeconfigState = 'none' | 'held' | 'delivered';

export interface BootstrapRecord {
  id: string;
  jobId: string;
  nodes: StoredNode[];
  register: { name: string; description?: string } | null;
  kubeconfigState: KubeconfigState;
  clusterId: string | null;
  createdAt: string;
}

/** The `bootstrap_jobs` table as stored (`bootstrapMigrations`). */
export interface BootstrapJobsTable {
  id: string;
  job_id: string;
  nodes: string;
  register_name: string | null;
  register_description: string | null;
  kubeconfig_sealed: string | null;
  kubeconfig_state: KubeconfigState;
  cluster_id: string | null;
  created_at: string;
}

/** `bootstrap_identity` (`bootstrap-0002-ssh-identity`): ironlens' own SSH key, sealed, one for every replica. */
export interface BootstrapIdentityTable {
  name: string;
  private_key_sealed: string;
  updated_at: string;
}

export interface BootstrapTables {
  bootstrap_jobs: BootstrapJobsTable;
  bootstrap_identity: BootstrapIdentityTable;
}

/** Every table the bootstrap's store holds: its own and core's `jobs` (`jobsMigrations`), whose rows its rows stand beside. */
export type BootstrapDatabase = BootstrapTables & JobsTables;

/**
 * One row per bootstrap job beside core's `jobs` row (status, phase as its stage, log tail,
 * error): the public id, the nodes without credentials, the register request, and the admin
 * kubeconfig sealed with `SecretBox` until it is handed out. Text ids, no autoincrement, so the
 * schema moves to PostgreSQL unchanged.
 */
export const bootstrapMigrations: NamedMigration[] = [
  {
    name: 'bootstrap-0001-jobs',
    async up(db) {
      await db.schema
        .createTable('bootstrap_jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('job_id', 'text', (c) => c.notNull().unique())
        .addColumn('nodes', 'text', (c) => c.notNull())
        .addColumn('register_name', 'text')
        .addColumn('register_description', 'text')
        .addColumn('kubeconfig_sealed', 'text')
        .addColumn('kubeconfig_state', 'text', (c) => c.notNull().defaultTo('none'))
        .addColumn('cluster_id', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('bootstrap_jobs_created').on('bootstrap_jobs').columns(['created_at', 'id']).execute();
    },
  },
  {
    // Issue 29, finding 10: the key masters are built with and nodes trust lives in the store
    // (sealed), so a restored store, or another replica, has the same one.
    name: 'bootstrap-0002-ssh-identity',
    async up(db) {
      await db.schema
        .createTable('bootstrap_identity')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('private_key_sealed', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
];

function toRecord(r: BootstrapJobsTable): BootstrapRecord {
  return {
    id: r.id,
    jobId: r.job_id,
    nodes: JSON.parse(r.nodes) as StoredNode[],
    register: r.register_name == null ? null : r.register_description == null ? { name: r.register_name } : { name: r.register_name, description: r.register_description },
    kubeconfigState: r.kubeconfig_state,
    clusterId: r.cluster_id ?? null,
    createdAt: r.created_at,
  };
}

/** The only SQL of the bootstrap. */
export class BootstrapRepository {
  private readonly db: Kysely<BootstrapDatabase>;

  constructor(store: Store<BootstrapDatabase>) {
    this.db = store.db;
  }

  async create(r: { id: string; jobId: string; nodes: StoredNode[]; register: { name: string; description?: string } | null }): Promise<void> {
    await this.db
      .insertInto('bootstrap_jobs')
      .values({
        id: r.id,
        job_id: r.jobId,
        nodes: JSON.stringify(r.nodes),
        register_name: r.register?.name ?? null,
        register_description: r.register?.description ?? null,
        kubeconfig_sealed: null,
        kubeconfig_state: 'none',
        cluster_id: null,
        created_at: new Date().toISOString(),
      })
      .execute();
  }

  async get(id: string): Promise<BootstrapRecord | undefined> {
    const r = await this.db.selectFrom('bootstrap_jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toRecord(r) : undefined;
  }

  /** Newest first. */
  async list(limit = 200): Promise<BootstrapRecord[]> {
    const rows = await this.db.selectFrom('bootstrap_jobs').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toRecord);
  }

  async holdKubeconfig(id: string, sealed: string): Promise<void> {
    await this.db.updateTable('bootstrap_jobs').set({ kubeconfig_sealed: sealed, kubeconfig_state: 'held' }).where('id', '=', id).execute();
  }

  async setClusterId(id: string, clusterId: string): Promise<void> {
    await this.db.updateTable('bootstrap_jobs').set({ cluster_id: clusterId }).where('id', '=', id).execute();
  }

  /**
   * Takes the held kubeconfig exactly once: the update only matches while the sealed value is
   * still there, so of two readers racing, one gets it and the other gets undefined.
   */
  async takeKubeconfig(id: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('bootstrap_jobs').select('kubeconfig_sealed').where('id', '=', id).where('kubeconfig_state', '=', 'held').executeTakeFirst();
    const sealed = r?.kubeconfig_sealed;
    if (!sealed) return undefined;
    const u = await this.db
      .updateTable('bootstrap_jobs')
      .set({ kubeconfig_sealed: null, kubeconfig_state: 'delivered' })
      .where('id', '=', id)
      .where('kubeconfig_sealed', '=', sealed)
      .executeTakeFirst();
    return Number(u.numUpdatedRows) === 1 ? sealed : undefined;
  }

  /** ironlens' SSH identity of this name, sealed; undefined when the store has none yet. */
  async identity(name: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('bootstrap_identity').select('private_key_sealed').where('name', '=', name).executeTakeFirst();
    return r?.private_key_sealed;
  }

  /** Stores the identity unless one is there (the first replica to start wins); `replace` overwrites it. */
  async putIdentity(name: string, sealed: string, opts: { replace?: boolean } = {}): Promise<void> {
    const row = { name, private_key_sealed: sealed, updated_at: new Date().toISOString() };
    await this.db
      .insertInto('bootstrap_identity')
      .values(row)
      .onConflict((oc) => (opts.replace ? oc.column('name').doUpdateSet({ private_key_sealed: sealed, updated_at: row.updated_at }) : oc.column('name').doNothing()))
      .execute();
  }

  /** Deletes the rows whose core job was pruned, sealed kubeconfig included. */
  async pruneOrphans(): Promise<number> {
    const r = await this.db
      .deleteFrom('bootstrap_jobs')
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('jobs').select('jobs.id').whereRef('jobs.id', '=', 'bootstrap_jobs.job_id'))))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
