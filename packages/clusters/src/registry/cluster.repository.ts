import { AppError, isUniqueViolation } from '@ironlens/core';
import type { ProxyConfig, StoredCluster } from '../shared/domain';
import type { ClustersDb, ClustersTable } from '../shared/tables';

export interface ClusterRow extends StoredCluster {
  kubeconfigSealed: string;
  updatedAt: string;
  /** When a write first reached the cluster (null: never); set by `markReached` only, never by `update`. */
  reachedAt?: string | null;
}

const toCluster = (r: ClustersTable): ClusterRow => ({
  id: r.id,
  name: r.name,
  description: r.description,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  draft: Number(r.draft) === 1,
  proxy: JSON.parse(r.proxy) as ProxyConfig,
  kubeconfigSealed: r.kubeconfig_sealed,
  gatewayProvider: r.gateway_provider,
  gatewayNamespace: r.gateway_namespace,
  gatewayName: r.gateway_name,
  gatewayPublicUrl: r.gateway_public_url,
  gatewayPort: r.gateway_port == null ? null : Number(r.gateway_port),
  gatewayAuthzHost: r.gateway_authz_host,
  inotifyMaxUserInstances: Number(r.inotify_max_user_instances),
  hfTokenSecret: r.hf_secret_namespace && r.hf_secret_name ? { namespace: r.hf_secret_namespace, name: r.hf_secret_name } : null,
  reachedAt: r.reached_at ?? null,
});

const toRow = (c: ClusterRow): ClustersTable => ({
  id: c.id,
  name: c.name,
  active_name: c.draft ? null : c.name.trim().toLowerCase(),
  description: c.description,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
  draft: c.draft ? 1 : 0,
  proxy: JSON.stringify(c.proxy),
  kubeconfig_sealed: c.kubeconfigSealed,
  gateway_provider: c.gatewayProvider,
  gateway_namespace: c.gatewayNamespace,
  gateway_name: c.gatewayName,
  gateway_public_url: c.gatewayPublicUrl,
  gateway_port: c.gatewayPort,
  gateway_authz_host: c.gatewayAuthzHost,
  inotify_max_user_instances: c.inotifyMaxUserInstances,
  hf_secret_namespace: c.hfTokenSecret?.namespace ?? null,
  hf_secret_name: c.hfTokenSecret?.name ?? null,
});

function nameConflict(name: string): AppError {
  return new AppError('cluster_name_conflict', `a cluster named ${JSON.stringify(name)} already exists`);
}

/** The only SQL for cluster records. Name uniqueness (case-insensitive, non-drafts) is a unique index. */
export class ClusterRepository {
  async list(db: ClustersDb, opts: { includeDrafts: boolean }): Promise<ClusterRow[]> {
    let q = db.selectFrom('clusters').selectAll().orderBy('created_at').orderBy('id');
    if (!opts.includeDrafts) q = q.where('draft', '=', 0);
    return (await q.execute()).map(toCluster);
  }

  async get(db: ClustersDb, id: string): Promise<ClusterRow | null> {
    const r = await db.selectFrom('clusters').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toCluster(r) : null;
  }

  /** Records the first write that reached the cluster (kept once set). */
  async markReached(db: ClustersDb, id: string, at: string): Promise<void> {
    await db.updateTable('clusters').set({ reached_at: at }).where('id', '=', id).where('reached_at', 'is', null).execute();
  }

  async exists(db: ClustersDb, id: string): Promise<boolean> {
    return !!(await db.selectFrom('clusters').select('id').where('id', '=', id).executeTakeFirst());
  }

  async insert(db: ClustersDb, c: ClusterRow): Promise<void> {
    try {
      await db.insertInto('clusters').values(toRow(c)).execute();
    } catch (err) {
      if (isUniqueViolation(err) && /active_name/.test(String((err as Error).message))) throw nameConflict(c.name);
      throw err;
    }
  }

  async update(db: ClustersDb, c: ClusterRow): Promise<void> {
    const { id: _id, created_at: _c, ...rest } = toRow(c);
    try {
      await db.updateTable('clusters').set(rest).where('id', '=', c.id).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw nameConflict(c.name);
      throw err;
    }
  }

  async delete(db: ClustersDb, id: string): Promise<void> {
    await db.deleteFrom('clusters').where('id', '=', id).execute();
  }
}
