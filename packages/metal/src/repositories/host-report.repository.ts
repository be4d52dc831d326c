import type { BootTimeline, HostView } from '../api/schemas';
import type { MetalDb } from './tables';

/** A worker's stored report: what it said (validated), when, and its last boot's timeline. */
export interface HostReportRecord {
  worker_id: string;
  mac: string;
  host: HostView;
  report_ts: number;
  boot: BootTimeline;
}

const toRecord = (r: { worker_id: string; mac: string; report: string; reported_at: string; report_ts: number | string; boot: string }): HostReportRecord => ({
  worker_id: r.worker_id,
  mac: r.mac,
  host: { ...(JSON.parse(r.report) as Omit<HostView, 'reported_at'>), reported_at: r.reported_at },
  report_ts: Number(r.report_ts),
  boot: JSON.parse(r.boot) as BootTimeline,
});

/** The only SQL of `host_reports` and `worker_addresses` (issue 24). */
export class HostReportRepository {
  async get(db: MetalDb, workerId: string): Promise<HostReportRecord | null> {
    const r = await db.selectFrom('host_reports').selectAll().where('worker_id', '=', workerId).executeTakeFirst();
    return r ? toRecord(r) : null;
  }

  async all(db: MetalDb): Promise<Map<string, HostReportRecord>> {
    const rows = await db.selectFrom('host_reports').selectAll().execute();
    return new Map(rows.map((r) => [r.worker_id, toRecord(r)]));
  }

  async put(db: MetalDb, rec: HostReportRecord): Promise<void> {
    const { reported_at, ...report } = rec.host;
    const values = { worker_id: rec.worker_id, mac: rec.mac, report: JSON.stringify(report), reported_at, report_ts: rec.report_ts, boot: JSON.stringify(rec.boot) };
    await db
      .insertInto('host_reports')
      .values(values)
      .onConflict((oc) => oc.column('worker_id').doUpdateSet({ mac: values.mac, report: values.report, reported_at: values.reported_at, report_ts: values.report_ts, boot: values.boot }))
      .execute();
  }

  async fixedAddress(db: MetalDb, workerId: string): Promise<string | null> {
    const r = await db.selectFrom('worker_addresses').select('ipv4').where('worker_id', '=', workerId).executeTakeFirst();
    return r?.ipv4 ?? null;
  }

  async fixedAddresses(db: MetalDb): Promise<Map<string, string>> {
    const rows = await db.selectFrom('worker_addresses').selectAll().execute();
    return new Map(rows.map((r) => [r.worker_id, r.ipv4]));
  }

  async setFixedAddress(db: MetalDb, workerId: string, ipv4: string | null): Promise<void> {
    await db.deleteFrom('worker_addresses').where('worker_id', '=', workerId).execute();
    if (ipv4) await db.insertInto('worker_addresses').values({ worker_id: workerId, ipv4 }).execute();
  }

  /** The workers that joined this cluster, by id. */
  async workersOfCluster(db: MetalDb, clusterId: string): Promise<string[]> {
    const rows = await db.selectFrom('worker_clusters').select('worker_id').where('cluster_id', '=', clusterId).orderBy('worker_id').execute();
    return rows.map((r) => r.worker_id);
  }

  async clusters(db: MetalDb): Promise<Map<string, string>> {
    const rows = await db.selectFrom('worker_clusters').select(['worker_id', 'cluster_id']).execute();
    return new Map(rows.map((r) => [r.worker_id, r.cluster_id]));
  }

  async setCluster(db: MetalDb, workerId: string, clusterId: string, at: string): Promise<void> {
    await db
      .insertInto('worker_clusters')
      .values({ worker_id: workerId, cluster_id: clusterId, joined_at: at })
      .onConflict((oc) => oc.column('worker_id').doUpdateSet({ cluster_id: clusterId, joined_at: at }))
      .execute();
  }
}
