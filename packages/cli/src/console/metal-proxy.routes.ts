import { AppError, type Authenticator, installErrorHandling, renderDetail } from '@ironlens/core';
import type { FastifyInstance, HTTPMethods } from 'fastify';

export interface MetalProxyOptions {
  /** The provisioning API as an in-process Fastify app (not listening); requests are injected into it. */
  metal: FastifyInstance;
  /**
   * The console listener's authentication: the in-process provisioning API checks the caller's
   * own token with it (the caller's role applies, never the proxy's). Default: none required.
   */
  authenticator?: Authenticator;
  /** `IPXE_CP_TOKEN`: while it is set, an open console (no token at all) refuses to proxy. */
  metalToken?: string;
}

/**
 * Management paths of seed 004 the console may reach. The machines' own paths (`/boot-vars`,
 * `/devices/report`) and the docs are left out: they belong to the provisioning listener.
 */
export function isProxiedMetalPath(path: string): boolean {
  if (path === '/devices/report') return false;
  return (
    path === '/healthz' ||
    path === '/masters' ||
    path === '/operations' ||
    path === '/settings/auto-register' ||
    /^\/(devices|workers|agents)(\/|$)/.test(path)
  );
}

const FORWARDED_HEADERS = ['content-type', 'accept', 'authorization'] as const;

/**
 * The provisioning API (seed 004) for the console, under one prefix of the console listener
 * (`/api/metal/…` → `/…`), by Fastify `inject` into an in-process instance of the metal app
 * over the same services and store, built with the console listener's authentication: the
 * caller's `Authorization` is forwarded and its own role applies (issue 20). While the
 * provisioning API has a token and the console requires none (no console token, no named
 * token), every request is refused (403): an open console must not open a closed provisioning API.
 */
export async function metalProxyRoutes(app: FastifyInstance, opts: MetalProxyOptions): Promise<void> {
  installErrorHandling(app, renderDetail);
  // Bodies are passed through as bytes; the metal app parses and validates them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // `public` here: the provisioning API behind decides, per route, with the caller's token.
  app.all('/*', { schema: { hide: true }, config: { permission: 'public' } }, async (req, reply) => {
    if (opts.metalToken && !(await opts.authenticator?.required())) throw new AppError('console_token_required');
    const rest = `/${(req.params as { '*': string })['*'] ?? ''}`;
    if (!isProxiedMetalPath(rest)) throw new AppError('route_not_found', 'Not Found');
    const q = req.url.indexOf('?');
    const headers: Record<string, string> = {};
    for (const h of FORWARDED_HEADERS) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const res = await opts.metal.inject({
      method: req.method as HTTPMethods,
      url: rest + (q === -1 ? '' : req.url.slice(q)),
      headers,
      payload: Buffer.isBuffer(req.body) ? req.body : undefined,
      // The operations log records the browser's address, not the proxy's.
      remoteAddress: req.ip,
    });
    const type = res.headers['content-type'];
    if (typeof type === 'string') reply.type(type);
    for (const h of ['www-authenticate', 'retry-after']) {
      const v = res.headers[h];
      if (typeof v === 'string') reply.header(h, v);
    }
    return reply.status(res.statusCode).header('cache-control', 'no-store').send(res.rawPayload);
  });
}
