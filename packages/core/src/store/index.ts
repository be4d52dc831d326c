export { ADVISORY_LOCK_CLASS, AdvisoryLeader, type AdvisoryLeaderOptions, advisoryLockKey } from './advisory-leader';
export { CHANGES_CHANNEL, type Change, type ChangeFeed, type ChangeFeedOptions, type ChangeHandler, LocalChangeFeed, openChangeFeed, PgChangeFeed, parseChangePayload } from './change-feed';
export { REPLICA_ID_PATTERN, replicaId, replicaIdFromEnv } from './replica';
export type { StoreQuery } from './query-log';
export { type FileLock, LOCK_WAIT_MS, tryLockFile } from './file-lock';
export { backupSqlite, migratedSqliteSchema, type SchemaObject, schemaDifferences, sqliteAppliedMigrations, sqliteSchema } from './sqlite-backup';
export { autoIncrementId, type Dialect, isUniqueViolation, lockInTransaction, type NamedMigration, partOf, Store, type StoreOptions } from './store';
