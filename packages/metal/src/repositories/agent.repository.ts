import type { Agent } from '../domain/types';
import type { AgentsTable, MetalDb } from './tables';

const toAgent = (r: AgentsTable): Agent => ({
  id: r.id,
  base_url: r.base_url,
  token: r.token,
  iscsi_server: r.iscsi_server,
  role: { disk: !!r.role_disk, cd: !!r.role_cd },
  tags: JSON.parse(r.tags),
  enabled: !!r.enabled,
});

const toRow = (a: Agent) => ({
  base_url: a.base_url,
  token: a.token,
  iscsi_server: a.iscsi_server,
  role_disk: a.role.disk ? 1 : 0,
  role_cd: a.role.cd ? 1 : 0,
  tags: JSON.stringify(a.tags),
  enabled: a.enabled ? 1 : 0,
});

/** The agent registry (seed: config/agents.yml), in registration order. */
export class AgentRepository {
  async list(db: MetalDb): Promise<Agent[]> {
    return (await db.selectFrom('agents').selectAll().orderBy('seq').execute()).map(toAgent);
  }

  async get(db: MetalDb, id: string): Promise<Agent | null> {
    const r = await db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toAgent(r) : null;
  }

  async insert(db: MetalDb, a: Agent): Promise<void> {
    const max = await db.selectFrom('agents').select((eb) => eb.fn.max('seq').as('m')).executeTakeFirst();
    await db
      .insertInto('agents')
      .values({ id: a.id, seq: Number(max?.m ?? 0) + 1, ...toRow(a) })
      .execute();
  }

  async update(db: MetalDb, a: Agent): Promise<void> {
    await db.updateTable('agents').set(toRow(a)).where('id', '=', a.id).execute();
  }

  /** How many system disks the ledger places on each agent (for automatic placement). */
  async diskCounts(db: MetalDb): Promise<Map<string, number>> {
    const rows = await db.selectFrom('disks').select(['agent', (eb) => eb.fn.countAll().as('n')]).groupBy('agent').execute();
    return new Map(rows.map((r) => [r.agent, Number(r.n)]));
  }

  /** Every agent (`ironlens import --replace`). */
  async deleteAll(db: MetalDb): Promise<void> {
    await db.deleteFrom('agents').execute();
  }
}
