import { AppError, type ErrorRenderer, errorCatalog, type ValidationDetail } from '@ironlens/core';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * Seed 000's error body, as Lens answers it: RFC 9457 problem details with the catalog code.
 * (The cluster manager renders the same shape; the two are to be folded into one renderer.)
 */
export const renderProblem: ErrorRenderer = (err: AppError) => ({
  type: `urn:ironlens:error:${err.code}`,
  title: errorCatalog[err.code]?.message ?? err.code,
  status: err.status,
  detail: err.message,
  code: err.code,
});

/** A schema violation becomes one 422 problem naming the first offending field. */
export function renderValidationProblem(detail: ValidationDetail[]): AppError {
  const first = detail[0];
  const where = first ? first.loc.join('.') : 'body';
  return new AppError('validation_failed', first ? `${where}: ${first.msg}` : 'request body failed validation', {}, 422);
}
