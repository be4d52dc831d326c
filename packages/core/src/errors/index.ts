export { AppError, isAppError } from './app-error';
export { type ErrorCode, errorCatalog } from './catalog';
