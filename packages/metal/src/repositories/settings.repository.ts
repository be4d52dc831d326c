import type { MetalDb } from './tables';

/** Runtime settings (seed: state/settings.json), one JSON value per key. */
export class SettingsRepository {
  async get<T>(db: MetalDb, key: string): Promise<T | undefined> {
    const r = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
    return r ? (JSON.parse(r.value) as T) : undefined;
  }

  async all(db: MetalDb): Promise<Record<string, unknown>> {
    const rows = await db.selectFrom('settings').selectAll().execute();
    return Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value)]));
  }

  async set(db: MetalDb, key: string, value: unknown): Promise<void> {
    const v = JSON.stringify(value);
    await db
      .insertInto('settings')
      .values({ key, value: v })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: v }))
      .execute();
  }

  /** Every setting (`ironlens import --replace`). */
  async deleteAll(db: MetalDb): Promise<void> {
    await db.deleteFrom('settings').execute();
  }
}
