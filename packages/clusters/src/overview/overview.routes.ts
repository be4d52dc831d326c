import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import {
  ClusterIdParams,
  ClusterIdQuery,
  CordonResultsSchema,
  KubernetesVersionSchema,
  ModelSecretsSchema,
  NodeNamesSchema,
  OverviewSchema,
  PLANNING_RESOURCES,
  PlanningDiscoverySchema,
  PlanningParams,
} from '../api/clusters';
import { problems } from '../api/problem';
import { commonErrors, onClusterErrors, security } from '../shared/routes';
import type { OverviewService } from './overview.service';
import type { PlatformService } from './platform.service';

/** The live reads of a registered cluster (seed 000): the overview, its version, nodes, model secrets, planning discovery. */
export function overviewRoutes(instance: FastifyInstance, s: { overview: OverviewService; platform: PlatformService }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['clusters'];

  app.get(
    '/api/cluster/overview',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Live overview: nodes, GPUs, namespaces, capacity', response: { 200: OverviewSchema, ...onClusterErrors() } } },
    async (req) => s.overview.overview(req.query.clusterId),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/kubernetes-version',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Reachability and version against min_k8s_version', response: { 200: KubernetesVersionSchema, ...onClusterErrors() } } },
    async (req) => s.platform.kubernetesVersion(req.params.cluster_id),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/nodes/cordon',
    { schema: { tags, security, params: ClusterIdParams, body: NodeNamesSchema, summary: 'Cordon nodes (control-plane nodes refused)', response: { 200: CordonResultsSchema, ...onClusterErrors(400) } } },
    async (req) => s.platform.setSchedulable(req.params.cluster_id, req.body.names, true),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/nodes/uncordon',
    { schema: { tags, security, params: ClusterIdParams, body: NodeNamesSchema, summary: 'Uncordon nodes (control-plane nodes refused)', response: { 200: CordonResultsSchema, ...onClusterErrors(400) } } },
    async (req) => s.platform.setSchedulable(req.params.cluster_id, req.body.names, false),
  );

  app.get(
    '/api/cluster/model-secrets',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Secrets holding HF_TOKEN (names only)', response: { 200: ModelSecretsSchema, ...onClusterErrors() } } },
    async (req) => s.platform.modelSecrets(req.query.clusterId),
  );

  app.get(
    '/api/cluster/sessions/:session_id/planning-discovery/:resource',
    {
      // A resource outside the enum keeps the seed's 422 invalid_planning_resource (the service says so).
      attachValidation: true,
      schema: { tags, security, params: PlanningParams, summary: 'Allow-listed planning discovery read ({"result": null} when it fails)', response: { 200: PlanningDiscoverySchema, ...commonErrors, ...problems(404) } },
    },
    async (req) => {
      if (req.validationError && Object.hasOwn(PLANNING_RESOURCES, String(req.params.resource))) throw req.validationError;
      return s.platform.planningDiscovery(req.params.session_id, req.params.resource);
    },
  );
}
