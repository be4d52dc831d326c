export { isoSeconds, type OperationEntry, type OperationInput, OperationsLog, type OperationsTable, type OperationsTables, operationsMigrations } from './operations';
export { isSecretKey, redact, redactUrlCredentials } from './redact';
