import { STATUS_CODES } from 'node:http';
import { AppError, type ErrorHandlingOptions, type ErrorRenderer, type ValidationDetail } from '@ironlens/core';
import type { Problem } from '../api/problem';

/**
 * Seed 000's error body, as llm-d Lens answers it: RFC 9457 `application/problem+json` with
 * `type`, `title`, `status`, `detail` and the catalog `code`. `type` is `about:blank` (the
 * status says it all; the code is the stable key), `title` the status phrase. Schema errors
 * are 422 `validation_failed` and also list the violations under `errors`.
 *
 * Exported so every route of the cluster manager (the Kubespray bootstrap included) renders
 * errors the same way: `installErrorHandling(app, renderProblem, problemErrorOptions)`.
 */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * The body, as the API schema `Problem` (`../api/problem`) declares it: every route serializes its
 * errors through that schema, so a field rendered here and missing there would be dropped.
 */
export type ProblemBody = Problem;

export const renderProblem: ErrorRenderer = (err: AppError): ProblemBody => {
  const body: ProblemBody = {
    type: 'about:blank',
    title: STATUS_CODES[err.status] ?? 'Error',
    status: err.status,
    detail: err.message,
    code: err.code,
  };
  if (Array.isArray(err.extra.errors)) body.errors = err.extra.errors as ValidationDetail[];
  if (err.code === 'insufficient_accelerators' && Array.isArray(err.extra.free)) body.free = err.extra.free as ProblemBody['free'];
  if (err.code === 'permission_denied') {
    for (const k of ['permission', 'actor', 'role'] as const) if (typeof err.extra[k] === 'string') body[k] = err.extra[k] as string;
  }
  return body;
};

/** Maps schema violations to 422 `validation_failed`. */
export function problemValidation(detail: ValidationDetail[]): AppError {
  const text = detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ');
  return new AppError('validation_failed', text || 'request does not match the schema', { errors: detail });
}

/** Options for `installErrorHandling` that give seed 000's problem+json bodies. */
export const problemErrorOptions: ErrorHandlingOptions = {
  contentType: PROBLEM_CONTENT_TYPE,
  renderValidation: problemValidation,
};
