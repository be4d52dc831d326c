import { AppError } from '@ironlens/core';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  ClusterIdParams,
  ClusterIdQuery,
  ClusterListSchema,
  ClusterSettingsUpdateSchema,
  ClusterWithSessionSchema,
  CordonResultsSchema,
  CrdApplySchema,
  CrdStatusSchema,
  GatewayPortCheckSchema,
  HfTokenSecretCreateSchema,
  HfTokenSecretRefSchema,
  HfTokenSecretUpdateSchema,
  KubernetesVersionSchema,
  LegacySessionSchema,
  LensHostsSchema,
  ListQuery,
  ModelSecretsSchema,
  NodeNamesSchema,
  OverviewSchema,
  PLANNING_RESOURCES,
  PlanningDiscoverySchema,
  PlanningParams,
  PortQuery,
  PrepullSchema,
  PrepullStatusSchema,
  RegisterFormDoc,
  SessionIdParams,
  SoftwareDownloadStatusSchema,
  StackProfileSchema,
} from '../api/clusters';
import { CLUSTER_ERRORS, COMMON_ERRORS, NoContent, problems } from '../api/problem';
import type { RegisterClusterInput } from './cluster.service';
import type { ClusterServices } from '../wiring';

const security = [{ bearer: [] }];
const MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024;
const MAX_FIELD_BYTES = 1024 * 1024;
const MAX_FIELDS = 32;
/** @fastify/multipart's limit errors; a limit hit while a part streams ends that stream early. */
const LIMIT_ERRORS = new Set(['FST_PARTS_LIMIT', 'FST_FILES_LIMIT', 'FST_FIELDS_LIMIT', 'FST_REQ_FILE_TOO_LARGE', 'ERR_STREAM_PREMATURE_CLOSE']);

/**
 * Reads POST /api/cluster/clusters' multipart form: text fields and the `file` upload. The
 * kubeconfig comes only as a file part (a text field `file` is what an HTML form of another site
 * can post without a file picker: refused). More than 32 fields, a second file, a field over 1 MiB
 * or a kubeconfig over 4 MiB is a 413 `form_too_large`, never cut (issue 18, finding 12).
 */
async function readRegisterForm(req: FastifyRequest): Promise<RegisterClusterInput> {
  if (!req.isMultipart()) throw new AppError('validation_failed', 'the request must be multipart/form-data (fields name, file, …)');
  const fields: Record<string, string> = {};
  let file: Buffer | undefined;
  const tooLarge = (what: string) => new AppError('form_too_large', what);
  try {
    for await (const part of req.parts({ limits: { fileSize: MAX_KUBECONFIG_BYTES, files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES } })) {
      if (part.type === 'file') {
        const buf = await part.toBuffer();
        if (part.file.truncated) throw tooLarge(`the kubeconfig is larger than ${MAX_KUBECONFIG_BYTES} bytes`);
        if (part.fieldname === 'file') file = buf;
      } else {
        if (part.valueTruncated || part.fieldnameTruncated) throw tooLarge(`form field ${part.fieldname.slice(0, 64)} is larger than ${MAX_FIELD_BYTES} bytes`);
        if (part.fieldname === 'file') throw new AppError('validation_failed', 'form field file must be a file upload (the kubeconfig), not a text field');
        fields[part.fieldname] = String(part.value ?? '');
      }
    }
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== undefined && LIMIT_ERRORS.has(code)) throw tooLarge(`the form is over its limits: at most ${MAX_FIELDS} fields, one file of at most ${MAX_KUBECONFIG_BYTES} bytes, fields of at most ${MAX_FIELD_BYTES} bytes`);
    throw err;
  }
  if (fields.name === undefined) throw new AppError('validation_failed', 'form field name is required');
  if (file === undefined) throw new AppError('validation_failed', 'form field file (the kubeconfig upload) is required');
  return {
    name: fields.name,
    description: fields.description,
    kubeconfig: file,
    proxy: fields.proxy,
    gatewayProvider: fields.gatewayProvider,
    gatewayNamespace: fields.gatewayNamespace,
    gatewayPublicUrl: fields.gatewayPublicUrl,
    gatewayPort: fields.gatewayPort,
    gatewayAuthzHost: fields.gatewayAuthzHost,
    inotifyMaxUserInstances: fields.inotifyMaxUserInstances,
    draft: fields.draft,
  };
}

/** Seed 000's `/api/cluster/…` routes (except the Kubespray bootstrap) and the legacy overview session routes. */
export function clusterRoutes(instance: FastifyInstance, s: ClusterServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['clusters'];
  /** The errors of a route that needs no registered cluster. */
  const common = problems(...COMMON_ERRORS);
  /** The errors of a route on a registered cluster (404 unknown, 502/504 its API server); `extra`: the route's own. */
  const onCluster = <const S extends readonly number[]>(...extra: S) => ({ ...problems(...CLUSTER_ERRORS), ...problems(...extra) });

  app.get('/api/cluster/lens-hosts', { schema: { tags, security, summary: 'Candidate addresses of this host', response: { 200: LensHostsSchema, ...common } } }, async () => s.clusters.lensHosts());

  app.get('/api/cluster/clusters', { schema: { tags, security, querystring: ListQuery, summary: 'List clusters (ready probed concurrently)', response: { 200: ClusterListSchema, ...common } } }, async (req) =>
    s.clusters.list(req.query.includeDrafts),
  );

  app.post(
    '/api/cluster/clusters',
    {
      schema: {
        tags,
        security,
        summary: 'Register a cluster (multipart form)',
        consumes: ['multipart/form-data'],
        response: { 201: ClusterWithSessionSchema, ...common, ...problems(400, 409, 413) },
        description: `Form fields: ${Object.entries(RegisterFormDoc.properties)
          .map(([k, v]) => `\`${k}\` (${v.type}${'description' in v ? `: ${v.description}` : ''})`)
          .join(', ')}. Required: name, file.`,
      },
    },
    async (req, reply) => {
      const input = await readRegisterForm(req);
      reply.code(201);
      return s.clusters.create(input);
    },
  );

  app.patch(
    '/api/cluster/clusters/:cluster_id',
    { schema: { tags, security, params: ClusterIdParams, body: ClusterSettingsUpdateSchema, summary: 'Update cluster settings', response: { 200: ClusterWithSessionSchema, ...onCluster(400, 409) } } },
    async (req) => s.clusters.update(req.params.cluster_id, req.body),
  );

  app.delete(
    '/api/cluster/clusters/:cluster_id',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Delete a cluster, with the remote cleanup', response: { 204: NoContent, ...onCluster(409) } } },
    async (req, reply) => {
      await s.clusters.delete(req.params.cluster_id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/hf-token-secrets',
    { schema: { tags, security, params: ClusterIdParams, body: HfTokenSecretCreateSchema, summary: 'Create the HF_TOKEN secret on the cluster', response: { 201: HfTokenSecretRefSchema, ...onCluster(400, 409) } } },
    async (req, reply) => {
      const ref = await s.hfToken.create(req.params.cluster_id, req.body);
      reply.code(201);
      return ref;
    },
  );

  app.put(
    '/api/cluster/clusters/:cluster_id/hf-token-secret',
    { schema: { tags, security, params: ClusterIdParams, body: HfTokenSecretUpdateSchema, summary: 'Rotate the HF_TOKEN secret (apply)', response: { 200: HfTokenSecretRefSchema, ...onCluster(400) } } },
    async (req) => s.hfToken.rotate(req.params.cluster_id, req.body),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/software-downloads',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Download the pinned llm-d and llm-d-benchmark sources (body ignored)', response: { 202: SoftwareDownloadStatusSchema, ...onCluster(400) } } },
    async (req, reply) => {
      const status = await s.software.start(req.params.cluster_id);
      reply.code(202);
      return status;
    },
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/software-downloads',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Software download state', response: { 200: SoftwareDownloadStatusSchema, ...onCluster() } } },
    async (req) => s.software.status(req.params.cluster_id),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/images/prepull',
    { schema: { tags, security, params: ClusterIdParams, body: PrepullSchema, summary: 'Pre-pull the pinned llm-d images on every node', response: { 200: PrepullStatusSchema, ...onCluster(400) } } },
    async (req) => s.prepull.start(req.params.cluster_id, req.body?.accelerators ?? []),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/images/prepull',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Image pre-pull state', response: { 200: PrepullStatusSchema, ...onCluster() } } },
    async (req) => s.prepull.status(req.params.cluster_id),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/crds',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Apply the pinned Gateway API / Inference Extension CRDs', response: { 200: CrdApplySchema, ...onCluster() } } },
    async (req) => s.crds.apply(req.params.cluster_id),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/crds',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Gateway API / Inference Extension CRD state', response: { 200: CrdStatusSchema, ...onCluster() } } },
    async (req) => s.crds.status(req.params.cluster_id),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/kubernetes-version',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Reachability and version against min_k8s_version', response: { 200: KubernetesVersionSchema, ...onCluster() } } },
    async (req) => s.platform.kubernetesVersion(req.params.cluster_id),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/gateway-port-check',
    { schema: { tags, security, params: ClusterIdParams, querystring: PortQuery, summary: 'Is a NodePort free for the shared gateway?', response: { 200: GatewayPortCheckSchema, ...onCluster() } } },
    async (req) => s.clusters.gatewayPortCheck(req.params.cluster_id, req.query.port),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/nodes/cordon',
    { schema: { tags, security, params: ClusterIdParams, body: NodeNamesSchema, summary: 'Cordon nodes (control-plane nodes refused)', response: { 200: CordonResultsSchema, ...onCluster(400) } } },
    async (req) => s.platform.setSchedulable(req.params.cluster_id, req.body.names, true),
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/nodes/uncordon',
    { schema: { tags, security, params: ClusterIdParams, body: NodeNamesSchema, summary: 'Uncordon nodes (control-plane nodes refused)', response: { 200: CordonResultsSchema, ...onCluster(400) } } },
    async (req) => s.platform.setSchedulable(req.params.cluster_id, req.body.names, false),
  );

  app.get(
    '/api/cluster/model-secrets',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Secrets holding HF_TOKEN (names only)', response: { 200: ModelSecretsSchema, ...onCluster() } } },
    async (req) => s.platform.modelSecrets(req.query.clusterId),
  );

  app.get(
    '/api/cluster/session',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Get or create the active session of a cluster', response: { 200: ClusterWithSessionSchema, ...onCluster() } } },
    async (req) => s.clusters.session(req.query.clusterId),
  );

  app.get(
    '/api/cluster/overview',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Live overview: nodes, GPUs, namespaces, capacity', response: { 200: OverviewSchema, ...onCluster() } } },
    async (req) => s.overview.overview(req.query.clusterId),
  );

  app.get(
    '/api/cluster/sessions/:session_id',
    { schema: { tags, security, params: SessionIdParams, summary: 'An active session and its cluster', response: { 200: ClusterWithSessionSchema, ...common, ...problems(404) } } },
    async (req) => s.clusters.sessionInfo(req.params.session_id),
  );

  app.get(
    '/api/cluster/sessions/:session_id/planning-discovery/:resource',
    {
      // A resource outside the enum keeps the seed's 422 invalid_planning_resource (the service says so).
      attachValidation: true,
      schema: { tags, security, params: PlanningParams, summary: 'Allow-listed planning discovery read ({"result": null} when it fails)', response: { 200: PlanningDiscoverySchema, ...common, ...problems(404) } },
    },
    async (req) => {
      if (req.validationError && Object.hasOwn(PLANNING_RESOURCES, String(req.params.resource))) throw req.validationError;
      return s.platform.planningDiscovery(req.params.session_id, req.params.resource);
    },
  );

  // Legacy overview session routes (Lens' older front end).
  app.get(
    '/api/cluster-overview/sessions/:session_id',
    { schema: { tags, security, params: SessionIdParams, summary: 'Legacy: an active overview session', response: { 200: LegacySessionSchema, ...common, ...problems(404) } } },
    async (req) => s.clusters.legacySession(req.params.session_id),
  );

  app.post(
    '/api/cluster-overview/sessions/:session_id/disconnect',
    { schema: { tags, security, params: SessionIdParams, summary: 'Legacy: end an overview session', response: { 204: NoContent, ...common, ...problems(404) } } },
    async (req, reply) => {
      await s.clusters.disconnect(req.params.session_id);
      return reply.code(204).send(null);
    },
  );

  // Unknown paths under this API answer in its own shape (more specific routes, the bootstrap's
  // included, always win over these wildcards).
  const notFound = async () => {
    throw new AppError('route_not_found', 'Not Found');
  };
  app.all('/api/cluster/*', { schema: { hide: true } }, notFound);
  app.all('/api/cluster-overview/*', { schema: { hide: true } }, notFound);

  app.get('/api/v1/versions', { schema: { tags, security, summary: 'The llm-d stack profile (pinned versions)', response: { 200: StackProfileSchema, ...common } } }, async () => s.profile);
}
