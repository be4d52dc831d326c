import { type ErrorCode, errorCatalog } from './catalog';

/**
 * The one error type that crosses layers. It carries a stable `code` from the catalog,
 * the HTTP `status` that code maps to, a human message, and optional extra fields that
 * an API may render (for example `agent` for errors passed through from a storage agent).
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extra: Record<string, unknown>;

  constructor(code: ErrorCode, message?: string, extra: Record<string, unknown> = {}, status?: number) {
    const entry = errorCatalog[code];
    super(message ?? entry.message);
    this.name = 'AppError';
    this.code = code;
    this.status = status ?? entry.status;
    this.extra = extra;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

