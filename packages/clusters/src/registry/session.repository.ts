import type { ClustersDb } from '../shared/tables';

export interface SessionRow {
  id: string;
  clusterId: string;
  createdAt: string;
  active: boolean;
}

/** The only SQL for cluster sessions. */
export class SessionRepository {
  async activeFor(db: ClustersDb, clusterId: string): Promise<SessionRow | null> {
    const r = await db
      .selectFrom('cluster_sessions')
      .selectAll()
      .where('cluster_id', '=', clusterId)
      .where('active', '=', 1)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    return r ? { id: r.id, clusterId: r.cluster_id, createdAt: r.created_at, active: true } : null;
  }

  async get(db: ClustersDb, id: string): Promise<SessionRow | null> {
    const r = await db.selectFrom('cluster_sessions').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? { id: r.id, clusterId: r.cluster_id, createdAt: r.created_at, active: Number(r.active) === 1 } : null;
  }

  async insert(db: ClustersDb, s: SessionRow): Promise<void> {
    await db.insertInto('cluster_sessions').values({ id: s.id, cluster_id: s.clusterId, created_at: s.createdAt, active: s.active ? 1 : 0 }).execute();
  }

  async deactivate(db: ClustersDb, id: string): Promise<boolean> {
    const r = await db.updateTable('cluster_sessions').set({ active: 0 }).where('id', '=', id).where('active', '=', 1).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }
}
