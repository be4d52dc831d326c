import type { DownloadState } from '../shared/domain';
import type { ClustersDb } from '../shared/tables';

export interface DownloadRow {
  clusterId: string;
  component: 'llmD' | 'llmDBenchmark';
  ref: string;
  state: DownloadState;
  path: string | null;
  error: string | null;
  jobId: string | null;
}

/** The only SQL for software download states and pre-pull requests. */
export class DownloadRepository {
  async list(db: ClustersDb, clusterId: string): Promise<DownloadRow[]> {
    const rows = await db.selectFrom('cluster_downloads').selectAll().where('cluster_id', '=', clusterId).execute();
    return rows.map((r) => ({
      clusterId: r.cluster_id,
      component: r.component as DownloadRow['component'],
      ref: r.ref,
      state: r.state as DownloadState,
      path: r.path,
      error: r.error,
      jobId: r.job_id,
    }));
  }

  /** Ready paths of every cluster: `clusterId → component → path`. */
  async readyPaths(db: ClustersDb): Promise<Map<string, Record<string, string>>> {
    const rows = await db.selectFrom('cluster_downloads').select(['cluster_id', 'component', 'path']).where('state', '=', 'ready').execute();
    const out = new Map<string, Record<string, string>>();
    for (const r of rows) {
      if (!r.path) continue;
      const m = out.get(r.cluster_id) ?? {};
      m[r.component] = r.path;
      out.set(r.cluster_id, m);
    }
    return out;
  }

  async put(db: ClustersDb, d: DownloadRow): Promise<void> {
    const values = { ref: d.ref, state: d.state, path: d.path, error: d.error, job_id: d.jobId, updated_at: new Date().toISOString() };
    // One statement (ON CONFLICT, SQLite and PostgreSQL alike): two writers of the same row
    // never both find it missing and collide on the insert.
    await db
      .insertInto('cluster_downloads')
      .values({ cluster_id: d.clusterId, component: d.component, ...values })
      .onConflict((oc) => oc.columns(['cluster_id', 'component']).doUpdateSet(values))
      .execute();
  }
}

export interface PrepullRow {
  clusterId: string;
  accelerators: string[];
  images: string[];
  jobId: string | null;
  requestedAt: string;
}

export class PrepullRepository {
  async get(db: ClustersDb, clusterId: string): Promise<PrepullRow | null> {
    const r = await db.selectFrom('cluster_prepulls').selectAll().where('cluster_id', '=', clusterId).executeTakeFirst();
    return r
      ? { clusterId: r.cluster_id, accelerators: JSON.parse(r.accelerators), images: JSON.parse(r.images), jobId: r.job_id, requestedAt: r.requested_at }
      : null;
  }

  async put(db: ClustersDb, p: PrepullRow): Promise<void> {
    const values = { accelerators: JSON.stringify(p.accelerators), images: JSON.stringify(p.images), job_id: p.jobId, requested_at: p.requestedAt };
    await db
      .insertInto('cluster_prepulls')
      .values({ cluster_id: p.clusterId, ...values })
      .onConflict((oc) => oc.column('cluster_id').doUpdateSet(values))
      .execute();
  }
}
