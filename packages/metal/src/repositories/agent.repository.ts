import type { SecretBox } from '@ironlens/core';
import type { Agent } from '../domain/types';
import type { AgentsTable, MetalDb } from './tables';

const SEALED = 'v1:';
const purposeOf = (id: string, field: 'token' | 'base_url' = 'token') => `agent:${id}:${field}`;
/** `scheme://user:password@…`: a base URL that carries credentials is sealed like a token. */
const hasCredentials = (url: string) => /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url);

/**
 * The agent registry (seed: config/agents.yml), in registration order. Tokens, and base
 * URLs that carry credentials, are sealed with the store's `SecretBox` (bound to the agent
 * id) on every write and opened on read; a value written before sealing existed is read as
 * it is and sealed by its next write.
 */
export class AgentRepository {
  constructor(private readonly secrets: SecretBox) {}

  private toAgent(r: AgentsTable): Agent {
    const token = r.token?.startsWith(SEALED) ? this.secrets.openText(r.token, purposeOf(r.id)) : r.token;
    return {
      id: r.id,
      base_url: r.base_url.startsWith(SEALED) ? this.secrets.openText(r.base_url, purposeOf(r.id, 'base_url')) : r.base_url,
      token,
      iscsi_server: r.iscsi_server,
      role: { disk: !!r.role_disk, cd: !!r.role_cd },
      tags: JSON.parse(r.tags),
      enabled: !!r.enabled,
    };
  }

  private toRow(a: Agent) {
    return {
      base_url: hasCredentials(a.base_url) ? this.secrets.seal(a.base_url, purposeOf(a.id, 'base_url')) : a.base_url,
      token: a.token === null ? null : this.secrets.seal(a.token, purposeOf(a.id)),
      iscsi_server: a.iscsi_server,
      role_disk: a.role.disk ? 1 : 0,
      role_cd: a.role.cd ? 1 : 0,
      tags: JSON.stringify(a.tags),
      enabled: a.enabled ? 1 : 0,
    };
  }

  async list(db: MetalDb): Promise<Agent[]> {
    return (await db.selectFrom('agents').selectAll().orderBy('seq').orderBy('id').execute()).map((r) => this.toAgent(r));
  }

  async get(db: MetalDb, id: string): Promise<Agent | null> {
    const r = await db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? this.toAgent(r) : null;
  }

  async insert(db: MetalDb, a: Agent): Promise<void> {
    const max = await db.selectFrom('agents').select((eb) => eb.fn.max('seq').as('m')).executeTakeFirst();
    await db
      .insertInto('agents')
      .values({ id: a.id, seq: Number(max?.m ?? 0) + 1, ...this.toRow(a) })
      .execute();
  }

  async update(db: MetalDb, a: Agent): Promise<void> {
    await db.updateTable('agents').set(this.toRow(a)).where('id', '=', a.id).execute();
  }

  /** How many system disks the ledger places on each agent (for automatic placement). */
  async diskCounts(db: MetalDb): Promise<Map<string, number>> {
    const rows = await db.selectFrom('disks').select(['agent', (eb) => eb.fn.countAll().as('n')]).groupBy('agent').execute();
    return new Map(rows.map((r) => [r.agent, Number(r.n)]));
  }

  /**
   * What the ledger keeps on one agent: the workers whose system disk or install CD it holds
   * (`/boot-vars` needs the agent's `iscsi_server` for each of them).
   */
  async usedBy(db: MetalDb, id: string): Promise<{ disks: string[]; cds: string[] }> {
    const disks = await db.selectFrom('disks').select('worker_id').distinct().where('agent', '=', id).orderBy('worker_id').execute();
    const withCd = await db.selectFrom('workers').select(['worker_id', 'cd']).where('cd', 'is not', null).orderBy('worker_id').execute();
    const cds = withCd.filter((w) => (JSON.parse(w.cd as string) as { agent?: unknown }).agent === id).map((w) => w.worker_id);
    return { disks: disks.map((d) => d.worker_id), cds };
  }

  /** True when there was an agent to delete (its master tags go with it: foreign key). */
  async delete(db: MetalDb, id: string): Promise<boolean> {
    const r = await db.deleteFrom('agents').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Every agent (`ironlens import --replace`). */
  async deleteAll(db: MetalDb): Promise<void> {
    await db.deleteFrom('agents').execute();
  }
}
