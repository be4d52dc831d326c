import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { escapeAttr, webAssetRoutes } from '@ironlens/core';
import type { FastifyInstance, FastifyReply } from 'fastify';

export interface ConsolePageOptions {
  /** Directory of the built web assets (`index.html`, `js/`, `assets/`). */
  webDist: string;
  /** Shown when the assets are missing. */
  buildCommand: string;
  /** What the page is told through `<body data-…>`: where each API and page is. */
  data: {
    metalBase: string;
    clustersBase: string;
    kindUrl: string;
    docsUrl: string;
    redocUrl: string;
  };
}

/**
 * The console's own page paths: every one answers `index.html` (history API fallback) and the
 * app picks the page from the URL. Listed, not a catch-all, so an unknown API path still gets
 * its API's 404 and `/kind/…`, `/docs`, `/redoc`, `/api/…` are never shadowed.
 */
export const CONSOLE_PAGE_PATHS = ['/', '/machines', '/machines/*', '/clusters', '/clusters/*', '/deployments/*', '/bootstrap', '/bootstrap/*', '/local-clusters', '/access'];


/** The single-page console: `index.html` at each page path, the built assets under `/static/`. */
export async function consolePageRoutes(app: FastifyInstance, opts: ConsolePageOptions): Promise<void> {
  const page = async (reply: FastifyReply) => {
    let html: string;
    try {
      html = await readFile(join(opts.webDist, 'index.html'), 'utf8');
    } catch {
      return reply
        .status(503)
        .type('text/html; charset=utf-8')
        .send(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ironlens console: web assets missing</title></head><body>` +
            `<h1>The console is not built</h1><p>The web assets were not found in <code>${escapeAttr(opts.webDist)}</code>.</p>` +
            `<p>Build them with <code>${escapeAttr(opts.buildCommand)}</code>, then reload. The APIs work without them.</p></body></html>`,
        );
    }
    const d = opts.data;
    const body = html
      .replace(/data-metal-base="[^"]*"/, `data-metal-base="${escapeAttr(d.metalBase)}"`)
      .replace(/data-clusters-base="[^"]*"/, `data-clusters-base="${escapeAttr(d.clustersBase)}"`)
      .replace(/data-kind-url="[^"]*"/, `data-kind-url="${escapeAttr(d.kindUrl)}"`)
      .replace(/data-docs-url="[^"]*"/, `data-docs-url="${escapeAttr(d.docsUrl)}"`)
      .replace(/data-redoc-url="[^"]*"/, `data-redoc-url="${escapeAttr(d.redocUrl)}"`)
      .replace(/(src|href)="\.\/(?!\/)/g, '$1="/static/');
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').send(body);
  };
  for (const path of CONSOLE_PAGE_PATHS) app.get(path, { schema: { hide: true }, config: { permission: 'public' } }, async (_req, reply) => page(reply));

  webAssetRoutes(app, opts);
}
