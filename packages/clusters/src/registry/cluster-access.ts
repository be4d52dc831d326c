import { AppError, type SecretBox, type Store } from '@ironlens/core';
import { type Kube, KubeApiError, type KubeConnector, KubeResponseError, KubeUnreachableError } from '../adapters/kube.adapter';
import type { HostResolver } from '../adapters/address-guard';
import { KubeconfigRefused } from '../adapters/kubeconfig';
import type { ClusterRepository, ClusterRow } from './cluster.repository';
import type { ClustersDatabase, ClustersDb } from '../shared/tables';

/** The `Kube` calls that only read (or end the connection): they never leave anything on a cluster. */
const READS = /^(readyz|version|get[A-Z]\w*|list[A-Z]\w*|nodeSummary|crdEstablished|serviceProxyGet|close)$/;

/** The SecretBox purpose a cluster's kubeconfig is sealed for: a sealed value cannot move to another record. */
export const kubeconfigPurpose = (id: string) => `cluster:${id}:kubeconfig`;

/**
 * Turns a failure talking to a cluster into the API's error: unreachable → 502
 * `cluster_request_failed` (504 when it timed out); an API server error status → 502 with its
 * Status message; an answer too large or not of the kind asked for → 502
 * `cluster_response_too_large` / `cluster_response_invalid`. Anything else is passed through.
 */
export function clusterFailure(e: unknown): unknown {
  if (e instanceof AppError) return e;
  if (e instanceof KubeUnreachableError) return new AppError('cluster_request_failed', e.message, {}, e.timedOut ? 504 : 502);
  if (e instanceof KubeApiError) return new AppError('cluster_request_failed', e.message);
  if (e instanceof KubeResponseError) return new AppError(e.code, e.message);
  return e;
}

/** Runs a call against a cluster, mapping its failures (see `clusterFailure`). */
export async function onCluster<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw clusterFailure(e);
  }
}

export interface ClusterAccessOptions {
  /** Per-request timeout towards a cluster. */
  requestTimeoutMs: number;
  /** Cap of one answer from a cluster, bytes. Default: the adapter's (4 MiB). */
  maxResponseBytes?: number;
  /** Cap of one list answer, bytes. Default: the adapter's (64 MiB). */
  maxListBytes?: number;
  env: Record<string, string | undefined>;
  /** Kubeconfig servers on link-local / metadata addresses are accepted. Default is `false`. */
  allowLinkLocal?: boolean;
  /** Resolves a server's name at each connection (checked by the adapter's guard). Default: the system resolver. */
  resolve?: HostResolver;
}

/**
 * Loads cluster records and opens their API connections. A connection is kept per record
 * version (`updatedAt`), so repeated calls reuse its keep-alive agent and a PATCH of the
 * proxy settings takes effect at once. The kubeconfig is opened from its sealed form only here.
 */
export class ClusterAccess {
  private readonly connections = new Map<string, { version: string; kube: Kube }>();

  constructor(
    private readonly store: Store<ClustersDatabase>,
    private readonly repo: ClusterRepository,
    private readonly box: SecretBox,
    private readonly connector: KubeConnector,
    private readonly opts: ClusterAccessOptions,
  ) {}

  get db(): ClustersDb {
    return this.store.db;
  }

  /** The record, or 404 `cluster_not_found`. */
  async record(id: string): Promise<ClusterRow> {
    const row = typeof id === 'string' && id ? await this.repo.get(this.db, id) : null;
    if (!row) throw new AppError('cluster_not_found', `cluster not found: ${id}`);
    return row;
  }

  async exists(id: string): Promise<boolean> {
    return this.repo.exists(this.db, id);
  }

  kube(row: ClusterRow): Kube {
    const version = `${row.updatedAt}|${row.kubeconfigSealed.length}`;
    const hit = this.connections.get(row.id);
    if (hit && hit.version === version) return hit.kube;
    hit?.kube.close();
    const kubeconfig = this.box.openText(row.kubeconfigSealed, kubeconfigPurpose(row.id));
    let kube: Kube;
    try {
      kube = this.connector(kubeconfig, {
        proxy: row.proxy,
        timeoutMs: this.opts.requestTimeoutMs,
        env: this.opts.env,
        allowLinkLocal: this.opts.allowLinkLocal,
        resolve: this.opts.resolve,
        maxResponseBytes: this.opts.maxResponseBytes,
        maxListBytes: this.opts.maxListBytes,
      });
    } catch (e) {
      // A record stored before today's kubeconfig rules (or written around them) is never opened.
      if (e instanceof KubeconfigRefused) throw new AppError('invalid_kubeconfig', `the stored kubeconfig of cluster ${row.id} is not accepted: ${e.message}; register the cluster again`);
      throw e;
    }
    if (!row.reachedAt) kube = this.noteWrites(row.id, kube);
    this.connections.set(row.id, { version, kube });
    return kube;
  }

  /**
   * The connection of a record no write has reached yet: the first write the API server answers
   * (done, or refused with a status) is recorded (`reached_at`), so a draft's delete knows whether
   * anything of ironlens' can be on the cluster. Reads, and writes that never got there (the
   * server unreachable), record nothing.
   */
  private noteWrites(id: string, kube: Kube): Kube {
    let noted: Promise<void> | null = null;
    // Recorded before the write's caller goes on (once per connection), so what follows sees it.
    const note = (): Promise<void> => {
      noted ??= this.repo.markReached(this.db, id, new Date().toISOString()).catch(() => {
        noted = null;
      });
      return noted;
    };
    return new Proxy(kube, {
      get: (target, prop) => {
        const v = Reflect.get(target, prop);
        if (typeof v !== 'function') return v;
        if (typeof prop !== 'string' || READS.test(prop)) return v.bind(target);
        return (...args: unknown[]) => {
          const out = v.apply(target, args);
          if (!(out instanceof Promise)) return out;
          return out.then(
            async (x) => {
              await note();
              return x;
            },
            async (e: unknown) => {
              if (!(e instanceof KubeUnreachableError)) await note();
              throw e;
            },
          );
        };
      },
    });
  }

  /** The kubeconfig in clear, for a tool that reads it from a file of its own (Helm); never logged or stored. */
  kubeconfigText(row: ClusterRow): string {
    return this.box.openText(row.kubeconfigSealed, kubeconfigPurpose(row.id));
  }

  forget(id: string): void {
    this.connections.get(id)?.kube.close();
    this.connections.delete(id);
  }

  close(): void {
    for (const { kube } of this.connections.values()) kube.close();
    this.connections.clear();
  }
}
