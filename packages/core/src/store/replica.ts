import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

let processReplicaId: string | undefined;

/**
 * This process's name among the replicas sharing one database: `<hostname>:<pid>:<random>`
 * (the random part tells apart two processes that reuse a pid after a restart). The same
 * value for the whole process. It marks the jobs a replica owns (`jobs.owner`) and the change
 * notifications it sends. `IRONLENS_REPLICA_ID` replaces it ({@link replicaIdFromEnv}); it
 * must be unique per live process.
 */
export function replicaId(): string {
  processReplicaId ??= `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  return processReplicaId;
}

/** Replica ids: printable, no spaces (they separate fields of a notification), at most 200 characters. */
export const REPLICA_ID_PATTERN = /^[A-Za-z0-9._:@/-]{1,200}$/;

/** `IRONLENS_REPLICA_ID` when set (validated), else this process's {@link replicaId}. */
export function replicaIdFromEnv(env: Record<string, string | undefined>): string {
  const id = env.IRONLENS_REPLICA_ID;
  if (id === undefined || id === '') return replicaId();
  if (!REPLICA_ID_PATTERN.test(id)) throw new Error(`IRONLENS_REPLICA_ID ${JSON.stringify(id.slice(0, 60))} is not 1-200 characters of A-Z a-z 0-9 . _ : @ / -`);
  return id;
}
