import { createHttpApp, type HttpAppOptions, type HttpLimits, type ListenerMetrics } from '@ironlens/core';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { DiskImages } from './adapters/disk-images.adapter';
import type { IscsiTargets } from './adapters/iscsi-targets';
import { LunIndex } from './repositories/lun-index.repository';
import { agentRoutes } from './routes/agent.routes';
import { LunService } from './services/lun.service';
import { MasterCatalog } from './services/master.service';

export interface AgentDeps {
  /** The image directory (DISK_DIR). */
  diskDir: string;
  baseIqn: string;
  /** Serve CD targets. */
  cd: boolean;
  /** Bearer token; empty turns auth off. */
  token?: string;
  /** Let a scan export a file with no recorded initiator open to every initiator. Default is `false`. */
  scanOpen?: boolean;
  /** The iSCSI backend: `TgtadmTargets` or `TargetcliTargets`. */
  targets: IscsiTargets;
  /** Default is a `DiskImages` over `diskDir`. */
  images?: DiskImages;
  /** Default is a `LunService` over the pieces above. */
  luns?: LunService;
  /** Default is a `MasterCatalog` over `images` (not started: `startAgent` runs its timer). */
  masters?: MasterCatalog;
  /** Fastify logger. Default is `false`. */
  logger?: FastifyServerOptions['logger'];
  /** Serve OpenAPI docs at /docs, /redoc, /openapi.json. Default is `true`. */
  docs?: boolean;
  /** Record requests and serve `GET /metrics` (docs/metrics.md). Default: no metrics. */
  metrics?: ListenerMetrics;
  /** Timeouts and connection caps (`httpLimitsFromEnv`). Default: core's defaults. */
  limits?: HttpLimits;
  /** Called with the bare app before any route is added (`HttpAppOptions.instrument`: tests' answer checks). Default: none. */
  instrument?: HttpAppOptions['instrument'];
}

/** The agent's services, wired by hand from its dependencies. */
export function wireAgent(deps: AgentDeps): { images: DiskImages; luns: LunService; masters: MasterCatalog } {
  const images = deps.images ?? new DiskImages(deps.diskDir);
  const luns =
    deps.luns ?? new LunService({ baseIqn: deps.baseIqn, cdRole: deps.cd, targets: deps.targets, images, index: new LunIndex(images.dir), scanOpen: deps.scanOpen });
  const masters = deps.masters ?? new MasterCatalog(images);
  return { images, luns, masters };
}

/** Builds the agent's HTTP app (it does not listen; `startAgent` does). */
export async function buildAgentApp(deps: AgentDeps): Promise<FastifyInstance> {
  const { luns, masters } = wireAgent(deps);
  const app = await createHttpApp({
    title: 'ironlens storage agent',
    description: 'Clones master images and exports them as iSCSI targets (stgt or LIO).',
    docs: deps.docs ?? true,
    logger: deps.logger ?? false,
    metrics: deps.metrics,
    limits: deps.limits,
    instrument: deps.instrument,
  });
  await app.register(agentRoutes, { luns, masters, token: deps.token });
  return app;
}
