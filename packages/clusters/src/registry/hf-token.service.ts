import { AppError, type OperationsLog } from '@ironlens/core';
import { KubeApiError } from '../adapters/kube.adapter';
import { type HfTokenSecretRef, isDnsLabel, isDnsSubdomain, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../shared/domain';
import type { ClusterRepository } from './cluster.repository';
import { type ClusterAccess, onCluster } from './cluster-access';
import { ensureNamespace, FIELD_MANAGER } from '../shared/manifests';

export interface HfTokenSecretCreate {
  namespace: string;
  name: string;
  token: string;
}

export interface HfTokenSecretUpdate {
  namespace?: string | null;
  name?: string | null;
  token: string;
}

function checkCoordinates(namespace: unknown, name: unknown): HfTokenSecretRef {
  if (typeof namespace !== 'string' || !isDnsLabel(namespace)) throw new AppError('invalid_secret_coordinates', `namespace ${JSON.stringify(namespace)} is not a namespace name`);
  if (typeof name !== 'string' || !isDnsSubdomain(name)) throw new AppError('invalid_secret_coordinates', `name ${JSON.stringify(name)} is not a Secret name`);
  return { namespace, name };
}

function checkToken(token: unknown): string {
  if (typeof token !== 'string' || token.trim() === '') throw new AppError('invalid_secret_token', 'token must not be empty');
  return token;
}

const secretBody = (ref: HfTokenSecretRef, token: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: ref.name, namespace: ref.namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
  type: 'Opaque',
  data: { HF_TOKEN: Buffer.from(token, 'utf8').toString('base64') },
});

/**
 * The cluster's HF_TOKEN Secret. The token goes to the cluster only: it is never stored,
 * logged, written to the operations log or returned; the record keeps the coordinates.
 */
export class HfTokenService {
  constructor(
    private readonly access: ClusterAccess,
    private readonly repo: ClusterRepository,
    private readonly ops: OperationsLog,
  ) {}

  /** POST hf-token-secrets: namespace created when missing (labelled ours), Secret created; 409 when it exists. */
  async create(clusterId: string, input: HfTokenSecretCreate): Promise<HfTokenSecretRef> {
    const row = await this.access.record(clusterId);
    const ref = checkCoordinates(input.namespace, input.name);
    const token = checkToken(input.token);
    const kube = this.access.kube(row);
    await onCluster(async () => {
      await ensureNamespace(kube, ref.namespace);
      try {
        await kube.createSecret(secretBody(ref, token) as never);
      } catch (e) {
        if (e instanceof KubeApiError && e.status === 409) {
          throw new AppError('secret_already_exists', `secret ${ref.namespace}/${ref.name} already exists; rotate it with PUT hf-token-secret`);
        }
        throw e;
      }
    });
    await this.record(clusterId, ref, 'cluster.hf_token.create');
    return ref;
  }

  /** PUT hf-token-secret: apply (overwrite); coordinates default to the recorded ones. */
  async rotate(clusterId: string, input: HfTokenSecretUpdate): Promise<HfTokenSecretRef> {
    const row = await this.access.record(clusterId);
    const token = checkToken(input.token);
    const namespace = (input.namespace ?? '').trim() || row.hfTokenSecret?.namespace;
    const name = (input.name ?? '').trim() || row.hfTokenSecret?.name;
    if (!namespace || !name) throw new AppError('invalid_secret_coordinates', 'the cluster has no recorded HF token secret: give namespace and name');
    const ref = checkCoordinates(namespace, name);
    const kube = this.access.kube(row);
    await onCluster(async () => {
      await ensureNamespace(kube, ref.namespace);
      await kube.apply(secretBody(ref, token), FIELD_MANAGER, true);
    });
    await this.record(clusterId, ref, 'cluster.hf_token.rotate');
    return ref;
  }

  private async record(clusterId: string, ref: HfTokenSecretRef, op: string): Promise<void> {
    await this.access.db.transaction().execute(async (trx) => {
      const row = await this.repo.get(trx, clusterId);
      if (!row) return;
      await this.repo.update(trx, { ...row, hfTokenSecret: ref, updatedAt: new Date().toISOString() });
      await this.ops.append({ op, status: 'ok', cluster_id: clusterId, object: `${ref.namespace}/${ref.name}` }, trx);
    });
  }
}
