export type { StoreQuery } from './query-log';
export { autoIncrementId, type Dialect, isUniqueViolation, type NamedMigration, Store, type StoreOptions } from './store';
