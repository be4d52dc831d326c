import type { MasterTagsTable, MetalDb } from './tables';

/** A master image's annotation, as `PUT /agents/{id}/masters/{name}/tag` stores it. */
export type MasterTag = Omit<MasterTagsTable, 'updated_at'>;

/** Master tags (seed control plane's `state/masters.yml`), one per agent and master name. */
export class MasterTagRepository {
  async list(db: MetalDb): Promise<MasterTag[]> {
    return db.selectFrom('master_tags').select(['agent_id', 'name', 'os', 'os_version', 'remark']).orderBy('agent_id').orderBy('name').execute();
  }

  async set(db: MetalDb, tag: MasterTag, at: string): Promise<void> {
    const values = { os: tag.os, os_version: tag.os_version, remark: tag.remark, updated_at: at };
    await db
      .insertInto('master_tags')
      .values({ agent_id: tag.agent_id, name: tag.name, ...values })
      .onConflict((oc) => oc.columns(['agent_id', 'name']).doUpdateSet(values))
      .execute();
  }

  /** True when there was a tag to remove. */
  async remove(db: MetalDb, agentId: string, name: string): Promise<boolean> {
    const r = await db.deleteFrom('master_tags').where('agent_id', '=', agentId).where('name', '=', name).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Every tag of one agent; how many there were. */
  async removeAgent(db: MetalDb, agentId: string): Promise<number> {
    const r = await db.deleteFrom('master_tags').where('agent_id', '=', agentId).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
