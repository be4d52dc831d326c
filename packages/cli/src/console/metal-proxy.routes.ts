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
    path === '/settings/registration-window' ||
    // issue 31: rollouts and drift (the fleet's view and its reconcile)
    /^\/(devices|workers|agents|rollouts|drift)(\/|$)/.test(path)
  );
}

/**
 * The path as the metal app will route it, or a `proxy_path_invalid` error: any segment that is
 * `.` or `..` once percent-decoded (`%2e`, `%2E`, `.%2e`…), a percent-encoded slash or backslash,
 * a raw backslash (URL parsers read it as `/`), or a malformed escape. Checked on the raw path,
 * before the allow-list, so `devices/../boot-vars` cannot reach a path the list leaves out
 * (issue 18, finding 8).
 */
export function checkedProxyPath(raw: string): string {
  if (raw.includes('\\')) throw new AppError('proxy_path_invalid');
  for (const segment of raw.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw new AppError('proxy_path_invalid');
    }
    if (decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\')) throw new AppError('proxy_path_invalid');
  }
  return raw;
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
    // The raw path after the prefix (the router's `*` is decoded), forwarded as sent once checked.
    const q = req.url.indexOf('?');
    const rawPath = q === -1 ? req.url : req.url.slice(0, q);
    const prefix = app.prefix;
    if (!rawPath.startsWith(prefix)) throw new AppError('route_not_found', 'Not Found');
    const rest = checkedProxyPath(rawPath.slice(prefix.length) || '/');
    if (!isProxiedMetalPath(decodeURI(rest))) throw new AppError('route_not_found', 'Not Found');
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
