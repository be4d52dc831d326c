export { isoSeconds, type OperationEntry, type OperationInput, OperationsLog, operationsMigrations } from './operations';
export { redact } from './redact';
