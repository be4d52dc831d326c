export { AppError, isAppError } from './app-error';
export { type ErrorCode, errorCatalog } from './catalog';
export { clip, clipStrings, ECHO_MAX, echo } from './echo';
