import multipart from '@fastify/multipart';
import { AppError, Authenticator, declareRoutePermissions, installAccessControl, installErrorHandling } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';
import { gatewayRoutes } from './gateway/gateway.routes';
import { overviewRoutes } from './overview/overview.routes';
import { registryRoutes } from './registry/registry.routes';
import { problemErrorOptions, renderProblem } from './shared/http-problem';
import { CLUSTERS_ROUTE_PERMISSIONS } from './shared/permissions';
import { softwareRoutes } from './software/software.routes';
import { deploymentRoutes } from './deployments/deployments.routes';
import type { ClusterServices } from './wiring';

export interface ClustersPluginOptions {
  services: ClusterServices;
  /**
   * Bearer token (`IRONLENS_CONSOLE_TOKEN`): when set, every route of this plugin answers 401
   * (problem+json, `auth_required`) without `Authorization: Bearer <token>`. Default: unset, open.
   */
  token?: string;
}

/**
 * The cluster manager (seed 000) as one Fastify plugin, mounted at the root of the console
 * listener: `/api/v1/versions`, `/api/cluster/…` (the Kubespray bootstrap routes under
 * `/api/cluster/bootstrap` are not part of it) and the legacy `/api/cluster-overview/…`.
 * Errors are `application/problem+json` in this plugin's context only.
 */
export async function clustersPlugin(app: FastifyInstance, opts: ClustersPluginOptions): Promise<void> {
  await opts.services.ready;
  try {
    installErrorHandling(app, renderProblem, problemErrorOptions);
  } catch {
    // At the root of an app that already set the not-found handler for '/': the error handler is set regardless.
  }
  await app.register(multipart, { throwFileSizeLimit: false });
  declareRoutePermissions(app, CLUSTERS_ROUTE_PERMISSIONS);
  if (opts.token) installAccessControl(app, { authenticator: new Authenticator([{ variable: 'IRONLENS_CONSOLE_TOKEN', token: opts.token }]) });
  // The gateway's authorization hook is `public` here: the gateway's own access keys authenticate it, never a console token.
  const s = opts.services;
  gatewayRoutes(app, s.gateway);
  registryRoutes(app, s);
  overviewRoutes(app, s);
  softwareRoutes(app, s);
  deploymentRoutes(app, s.deployments);
  // Unknown paths under this API answer in its own shape (more specific routes, the bootstrap's
  // included, always win over these wildcards).
  const notFound = async () => {
    throw new AppError('route_not_found', 'Not Found');
  };
  app.all('/api/cluster/*', { schema: { hide: true } }, notFound);
  app.all('/api/cluster-overview/*', { schema: { hide: true } }, notFound);
}
