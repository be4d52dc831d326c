import { createHttpApp, type HttpAppOptions, installBearerGuard, installErrorHandling, isDocsPath, renderDetail } from '@ironlens/core';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { bootRoutes } from './routes/boot.routes';
import { deviceRoutes } from './routes/device.routes';
import { hostReportRoutes } from './routes/host-report.routes';
import { powerRoutes } from './routes/power.routes';
import { storageRoutes } from './routes/storage.routes';
import { workerRoutes } from './routes/worker.routes';
import type { MetalServices } from './wiring';

export interface MetalPluginOptions {
  services: MetalServices;
  /** Extra routes mounted in the same context (the storage side adds its own). */
  extraRoutes?: Array<(app: FastifyInstance, s: MetalServices) => void>;
}

/** Paths iPXE calls without a token (seed §1.3, §5, §16.6). */
export const PUBLIC_PATHS = new Set(['/healthz', '/boot-vars', '/devices/report', '/hosts/report']);

/**
 * The boot control plane's API (seed 004) as one Fastify plugin: its own auth hook and
 * error shape (`{"detail": ...}`), mountable under any prefix.
 */
export const metalPlugin: FastifyPluginAsync<MetalPluginOptions> = async (app, opts) => {
  const s = opts.services;
  const prefix = app.prefix;
  installErrorHandling(app, renderDetail);
  installBearerGuard(app, {
    token: s.config.token,
    publicPaths: (path) => {
      const p = prefix && path.startsWith(prefix) ? path.slice(prefix.length) || '/' : path;
      return PUBLIC_PATHS.has(p) || isDocsPath(p);
    },
  });
  bootRoutes(app, s);
  deviceRoutes(app, s);
  workerRoutes(app, s);
  storageRoutes(app, s);
  hostReportRoutes(app, s);
  powerRoutes(app, s);
  for (const add of opts.extraRoutes ?? []) add(app, s);
};

/** The provisioning listener's app: docs + the metal API at the root. Does not listen. */
export async function buildMetalApp(opts: MetalPluginOptions & { http?: Partial<HttpAppOptions> }): Promise<FastifyInstance> {
  const app = await createHttpApp({ title: 'ironlens boot control plane', description: 'iPXE + iSCSI diskless boot control plane (seed 004).', ...opts.http });
  await app.register(metalPlugin, { services: opts.services, extraRoutes: opts.extraRoutes });
  return app;
}
