import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who the work in progress acts for: the request's principal (set by the access hook), kept along
 * the async calls it makes, so the operations log and the jobs record it without importing auth.
 */

/** What entries written by ironlens itself (no request) record as their actor. */
export const SYSTEM_ACTOR = 'ironlens';

const actorContext = new AsyncLocalStorage<{ actor: string }>();

/** The actor of the request being handled (and of the work it started), `ironlens` outside any request. */
export function currentActor(): string {
  return actorContext.getStore()?.actor ?? SYSTEM_ACTOR;
}

/** Runs `fn` as `actor` (what the request hook does; tests and the CLI use it too). */
export function runAsActor<T>(actor: string, fn: () => T): T {
  return actorContext.run({ actor }, fn);
}
