import type { Device, DeviceState, Fingerprint } from '../domain/types';
import type { DevicesTable, MetalDb } from './tables';

const toDevice = (r: DevicesTable): Device => ({
  mac: r.mac,
  uuid: r.uuid,
  state: r.state as DeviceState,
  bound_worker_id: r.bound_worker_id,
  key_hash: r.key_hash,
  source: r.source as Device['source'],
  fingerprint: JSON.parse(r.fingerprint) as Fingerprint,
  first_seen: r.first_seen,
  last_seen: r.last_seen,
});

/** The only SQL of the device pool. */
export class DeviceRepository {
  async get(db: MetalDb, mac: string): Promise<Device | null> {
    const r = await db.selectFrom('devices').selectAll().where('mac', '=', mac).executeTakeFirst();
    return r ? toDevice(r) : null;
  }

  /** The devices of `macs` that exist, in any order (one query; callers bound the list). */
  async getMany(db: MetalDb, macs: readonly string[]): Promise<Device[]> {
    if (macs.length === 0) return [];
    return (await db.selectFrom('devices').selectAll().where('mac', 'in', macs).execute()).map(toDevice);
  }

  /** Sets `last_seen` of every device of `macs` (one statement). */
  async touch(db: MetalDb, macs: readonly string[], lastSeen: string): Promise<void> {
    if (macs.length === 0) return;
    await db.updateTable('devices').set({ last_seen: lastSeen }).where('mac', 'in', macs).execute();
  }

  async list(db: MetalDb, state?: DeviceState): Promise<Device[]> {
    let q = db.selectFrom('devices').selectAll().orderBy('mac');
    if (state) q = q.where('state', '=', state);
    return (await q.execute()).map(toDevice);
  }

  async countPooled(db: MetalDb): Promise<number> {
    const r = await db.selectFrom('devices').select((eb) => eb.fn.countAll<number>().as('n')).where('state', '=', 'pooled').executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  async boundTo(db: MetalDb, workerId: string): Promise<Device | null> {
    const r = await db.selectFrom('devices').selectAll().where('bound_worker_id', '=', workerId).executeTakeFirst();
    return r ? toDevice(r) : null;
  }

  /** worker_id → bound MAC, for every bound device. */
  async bindings(db: MetalDb): Promise<Map<string, string>> {
    const rows = await db.selectFrom('devices').select(['mac', 'bound_worker_id']).where('bound_worker_id', 'is not', null).execute();
    return new Map(rows.map((r) => [r.bound_worker_id as string, r.mac]));
  }

  async insert(db: MetalDb, d: Device): Promise<void> {
    await db
      .insertInto('devices')
      .values({ ...d, fingerprint: JSON.stringify(d.fingerprint) })
      .execute();
  }

  async update(db: MetalDb, mac: string, patch: Partial<Omit<Device, 'mac'>>): Promise<void> {
    const values: Partial<DevicesTable> = { ...(patch as Partial<DevicesTable>) };
    if (patch.fingerprint) values.fingerprint = JSON.stringify(patch.fingerprint);
    await db.updateTable('devices').set(values).where('mac', '=', mac).execute();
  }

  /** Returns every device bound to `workerId` to the pool. */
  async unbindWorker(db: MetalDb, workerId: string): Promise<string[]> {
    const rows = await db.selectFrom('devices').select('mac').where('bound_worker_id', '=', workerId).execute();
    if (rows.length) {
      await db.updateTable('devices').set({ state: 'pooled', bound_worker_id: null }).where('bound_worker_id', '=', workerId).execute();
    }
    return rows.map((r) => r.mac);
  }

  /** `mac,hostname` for every bound device, in hostname order: what dnsmasq reads. */
  async dhcpHosts(db: MetalDb): Promise<Array<{ mac: string; hostname: string; ipv4: string | null }>> {
    return db
      .selectFrom('devices')
      .innerJoin('workers', 'workers.worker_id', 'devices.bound_worker_id')
      .leftJoin('worker_addresses', 'worker_addresses.worker_id', 'workers.worker_id')
      .select(['devices.mac as mac', 'workers.hostname as hostname', 'worker_addresses.ipv4 as ipv4'])
      .where('devices.state', '=', 'bound')
      .orderBy('workers.hostname')
      .execute();
  }

  /** Every device (`ironlens import --replace`). */
  async deleteAll(db: MetalDb): Promise<void> {
    await db.deleteFrom('devices').execute();
  }

  /** Devices per state (the `ironlens_devices` gauge). */
  async countByState(db: MetalDb): Promise<Map<string, number>> {
    const rows = await db.selectFrom('devices').select((eb) => ['state', eb.fn.countAll<number>().as('n')]).groupBy('state').execute();
    return new Map(rows.map((r) => [r.state, Number(r.n)]));
  }
}
