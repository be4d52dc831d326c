export { isoSeconds, type OperationEntry, type OperationInput, OperationsLog, type OperationsTable, type OperationsTables, operationsMigrations } from './operations';
export { isSecretKey, isSecretParam, redact, redactQuery, redactUrlCredentials } from './redact';
