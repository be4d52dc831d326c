import { AppError } from '@ironlens/core';
import type { ClustersDb } from '../shared/tables';
import type { GatewayKeyRow, GatewayRepository } from './gateway.repository';
import { FAIRNESS_HEADER } from './gateway.render';
import { KEY_PREFIX } from './gateway-keys.service';
import { sha256 } from './gateway.settings';

/**
 * The provider's external-authorization call (the hook): a key of this very cluster gives the
 * fairness id (the key's name); anything else is refused, and each source is rate-limited.
 */
export class GatewayAuthorizer {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    /** Where the keys are (`ClusterAccess` gives the store's). */
    private readonly store: { readonly db: ClustersDb },
    private readonly repo: GatewayRepository,
    /** Calls per second per source address (`perSecond` refill, `burst` bucket size). */
    private readonly rate: { perSecond: number; burst: number },
  ) {}

  private get db() {
    return this.store.db;
  }

  /** One token of the source's bucket; false when it is empty. */
  private take(source: string): boolean {
    const now = Date.now();
    const { perSecond, burst } = this.rate;
    const b = this.buckets.get(source) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    if (this.buckets.size > 10_000 && !this.buckets.has(source)) this.buckets.clear();
    this.buckets.set(source, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** The current key `Authorization: Bearer …` carries, or null; the source's rate limit first, then no key → 401. */
  private async key(authorization: string | undefined, source: string): Promise<GatewayKeyRow | null> {
    if (!this.take(source)) throw new AppError('gateway_rate_limited', 'too many authorization calls from this source');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new AppError('gateway_unauthorized', 'a gateway access key is required');
    const key = m[1];
    return key.startsWith(KEY_PREFIX) && key.length < 200 ? await this.repo.keyByHash(this.db, sha256(key)) : null;
  }

  /**
   * The cluster and name of the gateway key a request carries (the OpenAI-style `/v1/models` of
   * issue 28: the key says which cluster's models), under the hook's rules: the same rate limit,
   * 401 without a key, 403 with any other, and its last use recorded.
   */
  async owner(authorization: string | undefined, source: string): Promise<{ clusterId: string; name: string }> {
    const row = await this.key(authorization, source);
    if (!row) throw new AppError('gateway_forbidden', 'access denied');
    await this.used(row);
    return { clusterId: row.clusterId, name: row.name };
  }

  /**
   * The provider's external-authorization call: allowed (the fairness header set to the key's
   * name) only for a current key of this very cluster. Denials say nothing about why.
   */
  async authorize(clusterId: string, authorization: string | undefined, source: string): Promise<{ headers: Record<string, string> }> {
    const row = await this.key(authorization, source);
    if (!row || row.clusterId !== clusterId) throw new AppError('gateway_forbidden', 'access denied');
    await this.used(row);
    return { headers: { [FAIRNESS_HEADER]: row.name } };
  }

  /** Records a key's use (at most once a minute). */
  private async used(row: GatewayKeyRow): Promise<void> {
    const at = new Date().toISOString();
    if (!row.lastUsedAt || Date.parse(at) - Date.parse(row.lastUsedAt) > 60_000) await this.repo.touchKey(this.db, row.clusterId, row.name, at);
  }
}
