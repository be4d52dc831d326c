import { randomBytes } from 'node:crypto';
import { AppError, type OperationsLog } from '@ironlens/core';
import type { GatewayKeyCreated, GatewayKeyList } from '../api/gateway';
import type { ClusterAccess } from '../registry/cluster-access';
import type { GatewayRepository } from './gateway.repository';
import { sha256 } from './gateway.settings';

const KEY_NAME = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;
/** Every gateway access key starts so (the hook looks up nothing else). */
export const KEY_PREFIX = 'ilgw_';

/** The hook's access keys of a registration: created (shown once, kept as a SHA-256), listed, revoked. */
export class GatewayKeys {
  constructor(
    private readonly access: ClusterAccess,
    private readonly repo: GatewayRepository,
    private readonly ops: OperationsLog,
  ) {}

  private get db() {
    return this.access.db;
  }

  async createKey(clusterId: string, name: unknown): Promise<GatewayKeyCreated> {
    await this.access.record(clusterId);
    const n = typeof name === 'string' ? name.trim() : '';
    if (!KEY_NAME.test(n)) throw new AppError('gateway_key_name_invalid', 'name must be 1-63 lower-case letters, digits, dots, dashes or underscores, starting and ending with a letter or digit');
    const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    const createdAt = new Date().toISOString();
    try {
      await this.repo.insertKey(this.db, { clusterId, name: n, keyHash: sha256(key), createdAt, lastUsedAt: null });
    } catch (e) {
      if ((await this.repo.listKeys(this.db, clusterId)).some((k) => k.name === n)) throw new AppError('gateway_key_exists', `cluster ${clusterId} already has a key named ${n}`);
      throw e;
    }
    await this.ops.append({ op: 'cluster.gateway.key.create', status: 'ok', cluster_id: clusterId, name: n });
    return { name: n, key, createdAt };
  }

  async listKeys(clusterId: string): Promise<GatewayKeyList> {
    await this.access.record(clusterId);
    const rows = await this.repo.listKeys(this.db, clusterId);
    return { items: rows.map((k) => ({ name: k.name, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt })) };
  }

  async deleteKey(clusterId: string, name: string): Promise<void> {
    await this.access.record(clusterId);
    if (!(await this.repo.deleteKey(this.db, clusterId, name))) throw new AppError('gateway_key_not_found', `cluster ${clusterId} has no key named ${name}`);
    await this.ops.append({ op: 'cluster.gateway.key.delete', status: 'ok', cluster_id: clusterId, name });
  }
}
