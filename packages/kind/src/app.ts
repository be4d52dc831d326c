import { type BrowserGuardOptions, createHttpApp, type HttpLimits, type ListenerMetrics } from '@ironlens/core';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { kindPlugin } from './plugin';
import type { KindServices } from './services/kind-services';

export interface KindAppDeps {
  services: KindServices;
  /** Built web assets (the CLI passes `@ironlens/web`'s `webDistDir`). */
  webDist: string;
  /** Named when the assets are missing (the CLI passes `@ironlens/web`'s `WEB_BUILD_COMMAND`). */
  webBuildCommand?: string;
  logger?: FastifyServerOptions['logger'];
  /** Bearer token the API requires (`KIND_K8S_TOKEN`). Default: unset, the API is open. */
  token?: string;
  /** Record requests and serve `GET /metrics` (docs/metrics.md). Default: no metrics. */
  metrics?: ListenerMetrics;
  /** Timeouts and connection caps (`httpLimitsFromEnv`). Default: core's defaults. */
  limits?: HttpLimits;
  /** Host names served besides the loopback names and the listener's addresses (`KIND_K8S_HOSTS`). Default: none. */
  hosts?: readonly string[];
}

/**
 * The standalone panel (`ironlens kind`), laid out exactly as the seed: the API at
 * `/api/v1`, the dashboard at `/`, Swagger UI at `/docs`, ReDoc at `/redoc`. Does not listen.
 */
export async function buildKindApp(deps: KindAppDeps): Promise<FastifyInstance> {
  const app = await createHttpApp({
    title: 'ironlens kind panel',
    description: 'Local kind clusters: health, kindest/node versions, clusters (create as a job, details, kubeconfig, workloads, delete) and jobs.',
    logger: deps.logger,
    metrics: deps.metrics,
    limits: deps.limits,
    browserGuard: { hosts: deps.hosts } satisfies BrowserGuardOptions,
  });
  await app.register(kindPlugin, { services: deps.services, webDist: deps.webDist, webBuildCommand: deps.webBuildCommand, token: deps.token });
  return app;
}
