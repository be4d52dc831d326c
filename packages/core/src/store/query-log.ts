import type { LogEvent } from 'kysely';

/** One store query, as `StoreOptions.onQuery` sees it: no SQL text, no parameters. */
export interface StoreQuery {
  /** `select`, `insert`, `update`, `delete`, or the lower-cased name of another statement kind (`raw`, `createtable`…). */
  operation: string;
  durationMs: number;
  /** True when the driver threw (a constraint violation included). */
  failed: boolean;
}

/** Kysely's `log` option, reduced to what `onQuery` is told. */
export function queryLogger(onQuery: (q: StoreQuery) => void): (event: LogEvent) => void {
  return (event) => {
    const kind = event.query.query.kind;
    onQuery({ operation: kind.replace(/(Query)?Node$/, '').toLowerCase(), durationMs: event.queryDurationMillis, failed: event.level === 'error' });
  };
}
