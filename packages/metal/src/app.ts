import { Authenticator, createHttpApp, declareRoutePermissions, type HttpAppOptions, installErrorHandling, renderDetail } from '@ironlens/core';
import { METAL_ROUTE_PERMISSIONS } from './permissions';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { bootRoutes } from './routes/boot.routes';
import { deviceRoutes } from './routes/device.routes';
import { hostReportRoutes } from './routes/host-report.routes';
import { powerRoutes } from './routes/power.routes';
import { driftRoutes, rolloutRoutes } from './routes/rollout.routes';
import { storageRoutes } from './routes/storage.routes';
import { workerRoutes } from './routes/worker.routes';
import type { MetalServices } from './wiring';

export interface MetalPluginOptions {
  services: MetalServices;
  /** Extra routes mounted in the same context (the storage side adds its own). */
  extraRoutes?: Array<(app: FastifyInstance, s: MetalServices) => void>;
}

/** Paths iPXE calls without a token (seed §1.3, §5, §16.6). */
export const PUBLIC_PATHS = new Set(['/healthz', '/boot-vars', '/devices/report', '/hosts/report', '/boot.ipxe']);

/**
 * The boot control plane's API (seed 004) as one Fastify plugin: each route's permission
 * ({@link METAL_ROUTE_PERMISSIONS}, enforced by the app's access control) and its error shape
 * (`{"detail": ...}`), mountable under any prefix.
 */
export const metalPlugin: FastifyPluginAsync<MetalPluginOptions> = async (app, opts) => {
  const s = opts.services;
  installErrorHandling(app, renderDetail);
  declareRoutePermissions(app, METAL_ROUTE_PERMISSIONS);
  bootRoutes(app, s);
  deviceRoutes(app, s);
  workerRoutes(app, s);
  storageRoutes(app, s);
  hostReportRoutes(app, s);
  powerRoutes(app, s);
  rolloutRoutes(app, s);
  driftRoutes(app, s);
  for (const add of opts.extraRoutes ?? []) add(app, s);
};

/**
 * The provisioning listener's app: docs + the metal API at the root. Does not listen. Access:
 * `http.access`, by default `IPXE_CP_TOKEN` (the services' `config.token`) alone.
 */
export async function buildMetalApp(opts: MetalPluginOptions & { http?: Partial<HttpAppOptions> }): Promise<FastifyInstance> {
  const access = opts.http?.access ?? { authenticator: new Authenticator([{ variable: 'IPXE_CP_TOKEN', token: opts.services.config.token }]) };
  const app = await createHttpApp({ title: 'ironlens boot control plane', description: 'iPXE + iSCSI diskless boot control plane (seed 004).', ...opts.http, access });
  await app.register(metalPlugin, { services: opts.services, extraRoutes: opts.extraRoutes });
  return app;
}
