import type { Authenticator } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';
import { consolePageRoutes } from './console-page.routes';
import { metalProxyRoutes, restrictToProxiedRoutes } from './metal-proxy.routes';

export interface ConsoleOptions {
  /** Built web assets (`@ironlens/web`'s `dist`, or a test's build). */
  webDist: string;
  buildCommand: string;
  /** The in-process provisioning API the console reaches under `/api/metal`; absent: no machines API. */
  metal?: FastifyInstance;
  /** The console listener's authentication (its `IRONLENS_CONSOLE_TOKEN` and the named tokens). */
  authenticator?: Authenticator;
  metalToken?: string;
}

/** Where the console reaches the provisioning API on its own listener. */
export const METAL_PROXY_PREFIX = '/api/metal';

/**
 * The web console on the console listener: the page at `/` and at each page path (history
 * fallback), its assets under `/static/`, and the provisioning API under `/api/metal`.
 */
export async function mountConsole(app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  await app.register(consolePageRoutes, {
    webDist: opts.webDist,
    buildCommand: opts.buildCommand,
    data: { metalBase: METAL_PROXY_PREFIX, clustersBase: '', kindUrl: '/kind/', docsUrl: '/docs', redocUrl: '/redoc' },
  });
  if (opts.metal) {
    const metal = opts.metal;
    restrictToProxiedRoutes(metal);
    await metal.ready();
    await app.register(metalProxyRoutes, { prefix: METAL_PROXY_PREFIX, metal, authenticator: opts.authenticator, metalToken: opts.metalToken });
    app.addHook('onClose', async () => metal.close());
  }
}
