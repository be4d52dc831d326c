export type { StoreQuery } from './query-log';
export { autoIncrementId, type Dialect, isUniqueViolation, lockInTransaction, type NamedMigration, Store, type StoreOptions } from './store';
