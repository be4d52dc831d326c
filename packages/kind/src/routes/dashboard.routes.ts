import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { escapeAttr, webAssetRoutes } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';

export interface DashboardOptions {
  /** Directory of the built web assets (`kind.html`, `js/`, `assets/`). */
  webDist: string;
  /** Swagger UI, opened from the navigation in the `kind_swagger` window. */
  docsUrl: string;
  /** ReDoc, opened in the `kind_redoc` window. */
  redocUrl: string;
  /** Named on the page shown when the assets are missing. Default: none (the page says to build them). */
  buildCommand?: string;
}


/**
 * The dashboard page at `/`, `/ui` → 307 to it, and the built assets under `/static/`.
 * The page is `kind.html` from the web build, with `data-api-base` (and the asset URLs)
 * set for the prefix the plugin is mounted under.
 */
export async function dashboardRoutes(app: FastifyInstance, opts: DashboardOptions): Promise<void> {
  const base = app.prefix; // '' standalone, '/kind' inside `ironlens serve`
  const build = opts.buildCommand ? `Build them with <code>${escapeAttr(opts.buildCommand)}</code>` : 'Build the web assets';

  app.get('/', { schema: { hide: true } }, async (_req, reply) => {
    let html: string;
    try {
      html = await readFile(join(opts.webDist, 'kind.html'), 'utf8');
    } catch {
      return reply
        .status(503)
        .type('text/html; charset=utf-8')
        .send(
          `<!doctype html><html><head><meta charset="utf-8"><title>kind panel: web assets missing</title></head><body>` +
            `<h1>The kind dashboard is not built</h1><p>The web assets were not found in <code>${escapeAttr(opts.webDist)}</code>.</p>` +
            `<p>${build}, then reload. The API works without them: <a href="${escapeAttr(base)}/api/v1/health">${escapeAttr(base)}/api/v1/health</a>.</p></body></html>`,
        );
    }
    const page = html
      .replace(/data-api-base="[^"]*"/, `data-api-base="${escapeAttr(`${base}/api/v1`)}"`)
      .replace(/data-docs-url="[^"]*"/, `data-docs-url="${escapeAttr(opts.docsUrl)}"`)
      .replace(/data-redoc-url="[^"]*"/, `data-redoc-url="${escapeAttr(opts.redocUrl)}"`)
      .replace(/(src|href)="\.\/(?!\/)/g, `$1="${base}/static/`);
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(page);
  });

  app.get('/ui', { schema: { hide: true } }, (_req, reply) => reply.redirect(`${base}/`, 307));

  webAssetRoutes(app, opts);
}
