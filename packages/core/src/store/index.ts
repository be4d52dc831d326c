export { isUniqueViolation, type NamedMigration, Store, type StoreOptions } from './store';
