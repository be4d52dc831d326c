import { isoSeconds } from '@ironlens/core';
import type { Os } from '../domain/identifiers';
import type { Cd, Disk, WorkerRecord, WorkerState } from '../domain/types';
import type { DisksTable, MetalDb, WorkersTable } from './tables';

const toDisk = (r: DisksTable): Disk => ({
  agent: r.agent,
  iqn: r.iqn,
  filename: r.filename,
  backing: r.backing,
  os: r.os as Os,
  source: JSON.parse(r.source),
});

const toWorker = (r: WorkersTable, disks: Disk[]): WorkerRecord => ({
  worker_id: r.worker_id,
  hostname: r.hostname,
  arch: r.arch,
  state: r.state as WorkerState,
  default_os: (r.default_os as Os | null) ?? null,
  boot: { menu_default: r.menu_default, menu_timeout: r.menu_timeout },
  disks,
  cd: r.cd ? (JSON.parse(r.cd) as Cd) : null,
});

/** The only SQL of the worker ledger (workers and their system disks). */
export class WorkerRepository {
  async get(db: MetalDb, workerId: string): Promise<WorkerRecord | null> {
    const r = await db.selectFrom('workers').selectAll().where('worker_id', '=', workerId).executeTakeFirst();
    if (!r) return null;
    return toWorker(r, await this.disksOf(db, workerId));
  }

  /** Looks a worker up by hostname first, then by worker id (seed §5). */
  async findByHostname(db: MetalDb, name: string): Promise<WorkerRecord | null> {
    const r =
      (await db.selectFrom('workers').selectAll().where('hostname', '=', name).executeTakeFirst()) ??
      (await db.selectFrom('workers').selectAll().where('worker_id', '=', name).executeTakeFirst());
    if (!r) return null;
    return toWorker(r, await this.disksOf(db, r.worker_id));
  }

  async hostnameTaken(db: MetalDb, hostname: string): Promise<boolean> {
    const r = await db.selectFrom('workers').select('worker_id').where('hostname', '=', hostname).executeTakeFirst();
    return !!r;
  }

  async list(db: MetalDb): Promise<WorkerRecord[]> {
    const rows = await db.selectFrom('workers').selectAll().orderBy('worker_id').execute();
    const disks = await db.selectFrom('disks').selectAll().orderBy('worker_id').orderBy('seq').execute();
    const byWorker = new Map<string, Disk[]>();
    for (const d of disks) {
      const list = byWorker.get(d.worker_id) ?? [];
      list.push(toDisk(d));
      byWorker.set(d.worker_id, list);
    }
    return rows.map((r) => toWorker(r, byWorker.get(r.worker_id) ?? []));
  }

  async disksOf(db: MetalDb, workerId: string): Promise<Disk[]> {
    const rows = await db.selectFrom('disks').selectAll().where('worker_id', '=', workerId).orderBy('seq').execute();
    return rows.map(toDisk);
  }

  async insert(db: MetalDb, w: WorkerRecord): Promise<void> {
    await db
      .insertInto('workers')
      .values({
        worker_id: w.worker_id,
        hostname: w.hostname,
        arch: w.arch,
        state: w.state,
        default_os: w.default_os,
        menu_default: w.boot.menu_default ?? null,
        menu_timeout: w.boot.menu_timeout ?? null,
        cd: w.cd ? JSON.stringify(w.cd) : null,
        created_at: isoSeconds(),
      })
      .execute();
    for (const d of w.disks) await this.addDisk(db, w.worker_id, d);
  }

  async update(
    db: MetalDb,
    workerId: string,
    patch: { state?: WorkerState; default_os?: Os | null; menu_default?: string | null; menu_timeout?: number | null; cd?: Cd | null },
  ): Promise<void> {
    const values: Partial<WorkersTable> = {};
    if (patch.state !== undefined) values.state = patch.state;
    if (patch.default_os !== undefined) values.default_os = patch.default_os;
    if (patch.menu_default !== undefined) values.menu_default = patch.menu_default;
    if (patch.menu_timeout !== undefined) values.menu_timeout = patch.menu_timeout;
    if (patch.cd !== undefined) values.cd = patch.cd ? JSON.stringify(patch.cd) : null;
    if (Object.keys(values).length === 0) return;
    await db.updateTable('workers').set(values).where('worker_id', '=', workerId).execute();
  }

  async addDisk(db: MetalDb, workerId: string, d: Disk): Promise<void> {
    const max = await db.selectFrom('disks').select((eb) => eb.fn.max('seq').as('m')).where('worker_id', '=', workerId).executeTakeFirst();
    await db
      .insertInto('disks')
      .values({ worker_id: workerId, os: d.os, seq: Number(max?.m ?? 0) + 1, agent: d.agent, iqn: d.iqn, filename: d.filename, backing: d.backing, source: JSON.stringify(d.source) })
      .execute();
  }

  async removeDisk(db: MetalDb, workerId: string, os: Os): Promise<void> {
    await db.deleteFrom('disks').where('worker_id', '=', workerId).where('os', '=', os).execute();
  }

  async delete(db: MetalDb, workerId: string): Promise<void> {
    await db.deleteFrom('disks').where('worker_id', '=', workerId).execute();
    // The worker's CHAP account goes with it (its targets are gone by now).
    await db.deleteFrom('worker_chap').where('worker_id', '=', workerId).execute();
    // What it reported and its fixed address too (issue 24).
    await db.deleteFrom('host_reports').where('worker_id', '=', workerId).execute();
    await db.deleteFrom('worker_addresses').where('worker_id', '=', workerId).execute();
    await db.deleteFrom('worker_clusters').where('worker_id', '=', workerId).execute();
    // Its image history (issue 31): a new worker of that id starts afresh.
    await db.deleteFrom('worker_images').where('worker_id', '=', workerId).execute();
    await db.deleteFrom('workers').where('worker_id', '=', workerId).execute();
  }

  /** Every worker and its disks (`ironlens import --replace`). */
  async deleteAll(db: MetalDb): Promise<void> {
    await db.deleteFrom('disks').execute();
    await db.deleteFrom('host_reports').execute();
    await db.deleteFrom('worker_addresses').execute();
    await db.deleteFrom('worker_clusters').execute();
    await db.deleteFrom('worker_images').execute();
    await db.deleteFrom('workers').execute();
  }

  /** Workers per state (the `ironlens_workers` gauge). */
  async countByState(db: MetalDb): Promise<Map<string, number>> {
    const rows = await db.selectFrom('workers').select((eb) => ['state', eb.fn.countAll<number>().as('n')]).groupBy('state').execute();
    return new Map(rows.map((r) => [r.state, Number(r.n)]));
  }
}
