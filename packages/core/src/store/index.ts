export type { StoreQuery } from './query-log';
export { isUniqueViolation, type NamedMigration, Store, type StoreOptions } from './store';
