import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

let processReplicaId: string | undefined;

/**
 * This process's name among the replicas sharing one database: `<hostname>:<pid>:<random>`
 * (the random part tells apart two processes that reuse a pid after a restart). The same
 * value for the whole process. It marks the jobs a replica owns (`jobs.owner`) and the change
 * notifications it sends. `IRONLENS_REPLICA_ID` replaces it (`serve` passes it to
 * {@link setReplicaId}); it must be unique per live process.
 */
export function replicaId(): string {
  processReplicaId ??= `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  return processReplicaId;
}

/** Replica ids: printable, no spaces (they separate fields of a notification), at most 200 characters. */
export const REPLICA_ID_PATTERN = /^[A-Za-z0-9._:@/-]{1,200}$/;

/** Sets this process's replica id (from `IRONLENS_REPLICA_ID`); call before anything uses it. */
export function setReplicaId(id: string): void {
  if (!REPLICA_ID_PATTERN.test(id)) throw new Error(`replica id ${JSON.stringify(id.slice(0, 60))} is not 1-200 characters of A-Z a-z 0-9 . _ : @ / -`);
  processReplicaId = id;
}
