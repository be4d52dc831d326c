import { AppError, declareRoutePermissions, installErrorHandling, renderDetail, type ValidationDetail } from '@ironlens/core';
import { KIND_ROUTE_PERMISSIONS } from './permissions';
import type { FastifyInstance } from 'fastify';
import { kindApiRoutes } from './routes/api.routes';
import { dashboardRoutes } from './routes/dashboard.routes';
import type { KindServices } from './services/kind-services';

export interface KindPluginOptions {
  services: KindServices;
  /**
   * Directory of the built web assets (`kind.html`, `js/`, `assets/`). The caller hands it in
   * (the CLI passes `@ironlens/web`'s `webDistDir`), so this package does not depend on the web one.
   */
  webDist: string;
  /** Shown on the page that says the assets are missing. Default: a sentence without a command. */
  webBuildCommand?: string;
  /** Swagger UI of the listener, for the dashboard's navigation. Default is `/docs`. */
  docsUrl?: string;
  /** ReDoc of the listener. Default is `/redoc`. */
  redocUrl?: string;
  /**
   * Bearer token for the API (`<prefix>/api/v1/*`): when set, a request without
   * `Authorization: Bearer <token>` gets 401 `{"detail": ...}`. The dashboard, its assets and the
   * docs stay open (they hold no state). Default: unset, the API is open as in the seed.
   */
  token?: string;
}

/**
 * Seed 001's validation errors: a body that fails its schema answers 400 (the seed says so for
 * `POST /clusters`), in FastAPI's list shape; a query or path parameter answers FastAPI's 422.
 */
export function renderKindValidation(detail: ValidationDetail[]): AppError | { detail: ValidationDetail[] } {
  if (detail.some((d) => d.loc[0] === 'body')) return new AppError('request_invalid', 'request body is invalid', { detail }, 400);
  return { detail };
}

/**
 * The kind panel as one Fastify plugin: the seed's API under `<prefix>/api/v1`, the
 * dashboard at `<prefix>/` (`<prefix>/ui` → 307, assets under `<prefix>/static/`), errors
 * in FastAPI's `{"detail": ...}` shape. Mount it at the root (`ironlens kind`, the seed's
 * exact layout) or under `/kind` (inside `ironlens serve`).
 */
export async function kindPlugin(app: FastifyInstance, opts: KindPluginOptions): Promise<void> {
  try {
    installErrorHandling(app, renderDetail, { renderValidation: renderKindValidation });
  } catch {
    // Mounted at the root of an app that already has a not-found handler for '/'
    // (createHttpApp sets one, in the same shape); the error handler is set regardless.
  }
  declareRoutePermissions(app, KIND_ROUTE_PERMISSIONS);
  await app.register(kindApiRoutes, { prefix: '/api/v1', services: opts.services, token: opts.token });
  await app.register(dashboardRoutes, {
    webDist: opts.webDist,
    docsUrl: opts.docsUrl ?? '/docs',
    redocUrl: opts.redocUrl ?? '/redoc',
    buildCommand: opts.webBuildCommand,
  });
}
