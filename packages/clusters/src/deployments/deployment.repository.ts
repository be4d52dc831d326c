import type { Selectable } from 'kysely';
import type { DeploymentFailure, DeploymentStatus, PlacementAnswer, Readiness } from '../api/deployments';
import type { ClusterDeploymentsTable, ClustersDb } from '../shared/tables';
import type { DeploymentSpec } from './deployment.spec';

/** Which object: enough to get or delete it again. */
export interface AppliedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

/** What a deployment applied, so that its delete removes exactly that. */
export interface Applied {
  namespace: string | null;
  objects: AppliedObject[];
  release: { release: string; namespace: string } | null;
  publication: AppliedObject[];
  /** The HF token Secret copied into the namespace. */
  secret: AppliedObject | null;
}

export interface SmokeRecord {
  latency_ms: number;
  at: string;
  status_code: number;
  text: string;
}

export interface DeploymentRow {
  id: string;
  runId: string;
  clusterId: string;
  sessionId: string | null;
  name: string;
  displayName: string;
  description: string;
  status: DeploymentStatus;
  revision: number;
  spec: DeploymentSpec;
  readySpec: DeploymentSpec | null;
  placement: PlacementAnswer | null;
  applied: Applied | null;
  readiness: Readiness | null;
  reason: string | null;
  logs: string | null;
  failure: DeploymentFailure | null;
  smoke: SmokeRecord | null;
  endpoint: string | null;
  jobId: string | null;
  stage: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

const json = <T>(v: string | null): T | null => (v === null ? null : (JSON.parse(v) as T));
const text = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

function fromRow(r: Selectable<ClusterDeploymentsTable>): DeploymentRow {
  return {
    id: r.id,
    runId: r.run_id,
    clusterId: r.cluster_id,
    sessionId: r.session_id,
    name: r.name,
    displayName: r.display_name,
    description: r.description,
    status: r.status as DeploymentStatus,
    revision: Number(r.revision),
    spec: JSON.parse(r.spec) as DeploymentSpec,
    readySpec: json(r.ready_spec),
    placement: json(r.placement),
    applied: json(r.applied),
    readiness: json(r.readiness),
    reason: r.reason,
    logs: r.logs,
    failure: json(r.failure),
    smoke: json(r.smoke),
    endpoint: r.endpoint,
    jobId: r.job_id,
    stage: r.stage,
    createdBy: r.created_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export type DeploymentPatch = Partial<Omit<DeploymentRow, 'id' | 'runId' | 'clusterId' | 'createdAt' | 'createdBy'>>;

/** The only SQL for deployments. */
export class DeploymentRepository {
  async insert(db: ClustersDb, d: DeploymentRow): Promise<void> {
    await db
      .insertInto('cluster_deployments')
      .values({
        id: d.id,
        run_id: d.runId,
        cluster_id: d.clusterId,
        session_id: d.sessionId,
        name: d.name,
        display_name: d.displayName,
        description: d.description,
        status: d.status,
        revision: d.revision,
        spec: JSON.stringify(d.spec),
        ready_spec: text(d.readySpec),
        placement: text(d.placement),
        applied: text(d.applied),
        readiness: text(d.readiness),
        reason: d.reason,
        logs: d.logs,
        failure: text(d.failure),
        smoke: text(d.smoke),
        endpoint: d.endpoint,
        job_id: d.jobId,
        stage: d.stage,
        created_by: d.createdBy,
        created_at: d.createdAt,
        updated_at: d.updatedAt,
      })
      .execute();
  }

  async get(db: ClustersDb, id: string): Promise<DeploymentRow | null> {
    const r = await db.selectFrom('cluster_deployments').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? fromRow(r) : null;
  }

  async byRun(db: ClustersDb, runId: string): Promise<DeploymentRow | null> {
    const r = await db.selectFrom('cluster_deployments').selectAll().where('run_id', '=', runId).executeTakeFirst();
    return r ? fromRow(r) : null;
  }

  async list(db: ClustersDb, o: { clusterId?: string; statuses?: string[] } = {}): Promise<DeploymentRow[]> {
    let q = db.selectFrom('cluster_deployments').selectAll();
    if (o.clusterId) q = q.where('cluster_id', '=', o.clusterId);
    if (o.statuses?.length) q = q.where('status', 'in', o.statuses);
    const rows = await q.orderBy('created_at', 'desc').orderBy('id').execute();
    return rows.map(fromRow);
  }

  /** Writes the given fields (and `updated_at`). */
  async update(db: ClustersDb, id: string, p: DeploymentPatch, at: string): Promise<void> {
    const set: Partial<ClusterDeploymentsTable> = { updated_at: at };
    if (p.sessionId !== undefined) set.session_id = p.sessionId;
    if (p.name !== undefined) set.name = p.name;
    if (p.displayName !== undefined) set.display_name = p.displayName;
    if (p.description !== undefined) set.description = p.description;
    if (p.status !== undefined) set.status = p.status;
    if (p.revision !== undefined) set.revision = p.revision;
    if (p.spec !== undefined) set.spec = JSON.stringify(p.spec);
    if (p.readySpec !== undefined) set.ready_spec = text(p.readySpec);
    if (p.placement !== undefined) set.placement = text(p.placement);
    if (p.applied !== undefined) set.applied = text(p.applied);
    if (p.readiness !== undefined) set.readiness = text(p.readiness);
    if (p.reason !== undefined) set.reason = p.reason;
    if (p.logs !== undefined) set.logs = p.logs;
    if (p.failure !== undefined) set.failure = text(p.failure);
    if (p.smoke !== undefined) set.smoke = text(p.smoke);
    if (p.endpoint !== undefined) set.endpoint = p.endpoint;
    if (p.jobId !== undefined) set.job_id = p.jobId;
    if (p.stage !== undefined) set.stage = p.stage;
    await db.updateTable('cluster_deployments').set(set).where('id', '=', id).execute();
  }

  async delete(db: ClustersDb, id: string): Promise<void> {
    await db.deleteFrom('cluster_deployments').where('id', '=', id).execute();
  }
}
