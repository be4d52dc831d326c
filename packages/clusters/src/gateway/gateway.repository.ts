import type { ClustersDb } from '../shared/tables';

export interface GatewayKeyRow {
  clusterId: string;
  name: string;
  keyHash: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** Which object: enough to get or delete it again. */
export interface ObjectKey {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

export interface GatewayStateRow {
  clusterId: string;
  appliedHash: string | null;
  appliedProvider: string | null;
  appliedObjects: ObjectKey[];
  jobId: string | null;
  state: string;
  error: string | null;
  hookError: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

/** The only SQL for the gateway's keys and reconcile state. */
export class GatewayRepository {
  async insertKey(db: ClustersDb, k: GatewayKeyRow): Promise<void> {
    await db
      .insertInto('cluster_gateway_keys')
      .values({ cluster_id: k.clusterId, name: k.name, key_hash: k.keyHash, created_at: k.createdAt, last_used_at: k.lastUsedAt })
      .execute();
  }

  async listKeys(db: ClustersDb, clusterId: string): Promise<GatewayKeyRow[]> {
    const rows = await db.selectFrom('cluster_gateway_keys').selectAll().where('cluster_id', '=', clusterId).orderBy('name').execute();
    return rows.map((r) => ({ clusterId: r.cluster_id, name: r.name, keyHash: r.key_hash, createdAt: r.created_at, lastUsedAt: r.last_used_at }));
  }

  async deleteKey(db: ClustersDb, clusterId: string, name: string): Promise<boolean> {
    const r = await db.deleteFrom('cluster_gateway_keys').where('cluster_id', '=', clusterId).where('name', '=', name).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async keyByHash(db: ClustersDb, keyHash: string): Promise<GatewayKeyRow | null> {
    const r = await db.selectFrom('cluster_gateway_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
    return r ? { clusterId: r.cluster_id, name: r.name, keyHash: r.key_hash, createdAt: r.created_at, lastUsedAt: r.last_used_at } : null;
  }

  async touchKey(db: ClustersDb, clusterId: string, name: string, at: string): Promise<void> {
    await db.updateTable('cluster_gateway_keys').set({ last_used_at: at }).where('cluster_id', '=', clusterId).where('name', '=', name).execute();
  }

  async state(db: ClustersDb, clusterId: string): Promise<GatewayStateRow | null> {
    const r = await db.selectFrom('cluster_gateway_state').selectAll().where('cluster_id', '=', clusterId).executeTakeFirst();
    if (!r) return null;
    return {
      clusterId: r.cluster_id,
      appliedHash: r.applied_hash,
      appliedProvider: r.applied_provider,
      appliedObjects: r.applied_objects ? (JSON.parse(r.applied_objects) as ObjectKey[]) : [],
      jobId: r.job_id,
      state: r.state,
      error: r.error,
      hookError: r.hook_error,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
    };
  }

  async putState(db: ClustersDb, s: GatewayStateRow): Promise<void> {
    const values = {
      applied_hash: s.appliedHash,
      applied_provider: s.appliedProvider,
      applied_objects: JSON.stringify(s.appliedObjects),
      job_id: s.jobId,
      state: s.state,
      error: s.error,
      hook_error: s.hookError,
      started_at: s.startedAt,
      finished_at: s.finishedAt,
    };
    await db
      .insertInto('cluster_gateway_state')
      .values({ cluster_id: s.clusterId, ...values })
      .onConflict((oc) => oc.column('cluster_id').doUpdateSet(values))
      .execute();
  }
}
