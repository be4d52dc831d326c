import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { isAppError } from '../errors';
import { resolveInside } from '../fs';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Escapes a value for an HTML attribute (or text) written into a served page. */
export const escapeAttr = (s: string): string => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export interface WebAssetsOptions {
  /** Directory of the built web assets. */
  webDist: string;
  /** Named in the 404 when the directory itself is missing. Default: none. */
  buildCommand?: string;
}

/**
 * `GET /static/*` of one context: files of the web build, resolved inside `webDist` (anything
 * else is a 404), never cached without revalidation, `nosniff`. Shared by the kind dashboard and
 * the console.
 */
export function webAssetRoutes(app: FastifyInstance, opts: WebAssetsOptions): void {
  app.get('/static/*', { schema: { hide: true }, config: { permission: 'public' } }, async (req, reply) => {
    const rel = (req.params as { '*': string })['*'];
    let file: string;
    try {
      file = resolveInside(opts.webDist, rel);
    } catch (err) {
      if (isAppError(err)) return reply.status(404).send({ detail: 'Not Found' });
      // The dist directory itself is missing.
      return reply.status(404).send({ detail: opts.buildCommand ? `web assets not built: run ${opts.buildCommand}` : 'web assets not built' });
    }
    try {
      const body = await readFile(file);
      return reply
        .type(TYPES[extname(file)] ?? 'application/octet-stream')
        .header('cache-control', 'no-cache')
        .header('x-content-type-options', 'nosniff')
        .send(body);
    } catch {
      return reply.status(404).send({ detail: 'Not Found' });
    }
  });
}
