import type { SecretBox } from '@ironlens/core';
import type { BmcCredentials, BootResult, LastPower, PowerAction } from '../domain/power';
import type { DevicePowerTable, MetalDb } from './tables';

const purposeOf = (mac: string) => `device:${mac}:bmc`;

export interface StoredBmc {
  credentials: BmcCredentials;
  updated_at: string;
}

/**
 * The BMCs of devices (issue 21): the only SQL of `device_bmc`. The password is sealed with
 * the store's `SecretBox` bound to the MAC on write and opened on read; it leaves this class
 * only towards an adapter that makes a call.
 */
export class BmcRepository {
  constructor(private readonly secrets: SecretBox) {}

  async get(db: MetalDb, mac: string): Promise<StoredBmc | null> {
    const r = await db.selectFrom('device_bmc').selectAll().where('mac', '=', mac).executeTakeFirst();
    if (!r) return null;
    const password = this.secrets.openText(r.password_sealed, purposeOf(mac));
    const credentials: BmcCredentials =
      r.driver === 'ipmi'
        ? { driver: 'ipmi', host: r.address, port: Number(r.port ?? 623), username: r.username, password, cipherSuite: Number(r.cipher_suite ?? 3) }
        : { driver: 'redfish', url: r.address, username: r.username, password, verifyTls: Number(r.verify_tls) !== 0 };
    return { credentials, updated_at: r.updated_at };
  }

  async put(db: MetalDb, mac: string, c: BmcCredentials): Promise<string> {
    const updated_at = new Date().toISOString();
    const row = {
      mac,
      driver: c.driver,
      address: c.driver === 'redfish' ? c.url : c.host,
      port: c.driver === 'ipmi' ? c.port : null,
      username: c.username,
      password_sealed: this.secrets.seal(c.password, purposeOf(mac)),
      verify_tls: c.driver === 'redfish' && c.verifyTls ? 1 : 0,
      cipher_suite: c.driver === 'ipmi' ? c.cipherSuite : null,
      updated_at,
    };
    await db
      .insertInto('device_bmc')
      .values(row)
      .onConflict((oc) => oc.column('mac').doUpdateSet({ ...row, mac: undefined }))
      .execute();
    return updated_at;
  }

  async remove(db: MetalDb, mac: string): Promise<boolean> {
    const r = await db.deleteFrom('device_bmc').where('mac', '=', mac).executeTakeFirst();
    return Number(r.numDeletedRows ?? 0) > 0;
  }

  async macs(db: MetalDb): Promise<Set<string>> {
    return new Set((await db.selectFrom('device_bmc').select('mac').execute()).map((r) => r.mac));
  }

  /** Every BMC (`ironlens export`). */
  async all(db: MetalDb): Promise<Map<string, StoredBmc>> {
    const out = new Map<string, StoredBmc>();
    for (const { mac } of await db.selectFrom('device_bmc').select('mac').orderBy('mac').execute()) {
      const b = await this.get(db, mac);
      if (b) out.set(mac, b);
    }
    return out;
  }

  async deleteAll(db: MetalDb): Promise<void> {
    await db.deleteFrom('device_bmc').execute();
  }
}

/** A power row as the proof-of-boot watcher reads it. */
export interface PowerRecord {
  mac: string;
  action: PowerAction;
  boot: 'network' | null;
  requested_at: string;
  bmc_ok: boolean;
  report_seen_at: string | null;
  boot_vars_seen_at: string | null;
  network_boot_seen_at: string | null;
  result: BootResult | null;
  detail: string | null;
  deadline_ms: number | null;
}

const toRecord = (r: DevicePowerTable): PowerRecord => ({
  mac: r.mac,
  action: r.action as PowerAction,
  boot: r.boot === 'network' ? 'network' : null,
  requested_at: r.requested_at,
  bmc_ok: Number(r.bmc_ok) !== 0,
  report_seen_at: r.report_seen_at,
  boot_vars_seen_at: r.boot_vars_seen_at,
  network_boot_seen_at: r.network_boot_seen_at,
  result: (r.result as BootResult | null) ?? null,
  detail: r.detail,
  deadline_ms: r.deadline_ms === null ? null : Number(r.deadline_ms),
});

export const lastPowerOf = (r: PowerRecord): LastPower => ({
  action: r.action,
  boot: r.boot,
  requested_at: r.requested_at,
  bmc_ok: r.bmc_ok,
  network_boot_seen_at: r.network_boot_seen_at,
  result: r.result,
  detail: r.detail,
});

/** The only SQL of `device_power`: each device's last power action and its proof of boot. */
export class PowerRepository {
  async get(db: MetalDb, mac: string): Promise<PowerRecord | null> {
    const r = await db.selectFrom('device_power').selectAll().where('mac', '=', mac).executeTakeFirst();
    return r ? toRecord(r) : null;
  }

  async all(db: MetalDb): Promise<Map<string, PowerRecord>> {
    const rows = await db.selectFrom('device_power').selectAll().execute();
    return new Map(rows.map((r) => [r.mac, toRecord(r)]));
  }

  async put(db: MetalDb, p: PowerRecord): Promise<void> {
    const row: DevicePowerTable = { ...p, bmc_ok: p.bmc_ok ? 1 : 0 };
    await db
      .insertInto('device_power')
      .values(row)
      .onConflict((oc) => oc.column('mac').doUpdateSet({ ...row, mac: undefined }))
      .execute();
  }

  async update(db: MetalDb, mac: string, patch: Partial<Omit<PowerRecord, 'mac'>>): Promise<void> {
    const values: Partial<DevicePowerTable> = { ...(patch as Partial<DevicePowerTable>) };
    if (patch.bmc_ok !== undefined) values.bmc_ok = patch.bmc_ok ? 1 : 0;
    await db.updateTable('device_power').set(values).where('mac', '=', mac).execute();
  }

  async pending(db: MetalDb): Promise<PowerRecord[]> {
    return (await db.selectFrom('device_power').selectAll().where('result', '=', 'pending').execute()).map(toRecord);
  }

  async remove(db: MetalDb, mac: string): Promise<void> {
    await db.deleteFrom('device_power').where('mac', '=', mac).execute();
  }

  async deleteAll(db: MetalDb): Promise<void> {
    await db.deleteFrom('device_power').execute();
  }
}
