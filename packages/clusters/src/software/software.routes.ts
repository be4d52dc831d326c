import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { ClusterIdParams, CrdApplySchema, CrdStatusSchema, PrepullSchema, PrepullStatusSchema, SoftwareDownloadStatusSchema } from '../api/clusters';
import { onClusterErrors, security } from '../shared/routes';
import type { CrdsService } from './crds.service';
import type { PrepullService } from './prepull.service';
import type { SoftwareService } from './software.service';

/** What ironlens installs on a registered cluster (seed 000): the pinned sources, the image pre-pull, the CRDs. */
export function softwareRoutes(instance: FastifyInstance, s: { software: SoftwareService; prepull: PrepullService; crds: CrdsService }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['clusters'];

  app.post(
    '/api/cluster/clusters/:cluster_id/software-downloads',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Download the pinned llm-d and llm-d-benchmark sources (body ignored)', response: { 202: SoftwareDownloadStatusSchema, ...onClusterErrors(400) } } },
    async (req, reply) => {
      const status = await s.software.start(req.params.cluster_id);
      reply.code(202);
      return status;
    },
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/software-downloads',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Software download state', response: { 200: SoftwareDownloadStatusSchema, ...onClusterErrors() } } },
    async (req) => s.software.status(req.params.cluster_id),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/images/prepull',
    { schema: { tags, security, params: ClusterIdParams, body: PrepullSchema, summary: 'Pre-pull the pinned llm-d images on every node', response: { 200: PrepullStatusSchema, ...onClusterErrors(400) } } },
    async (req) => s.prepull.start(req.params.cluster_id, req.body?.accelerators ?? []),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/images/prepull',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Image pre-pull state', response: { 200: PrepullStatusSchema, ...onClusterErrors() } } },
    async (req) => s.prepull.status(req.params.cluster_id),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/crds',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Apply the pinned Gateway API / Inference Extension CRDs', response: { 200: CrdApplySchema, ...onClusterErrors() } } },
    async (req) => s.crds.apply(req.params.cluster_id),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/crds',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Gateway API / Inference Extension CRD state', response: { 200: CrdStatusSchema, ...onClusterErrors() } } },
    async (req) => s.crds.status(req.params.cluster_id),
  );
}
