import { AppError } from '@ironlens/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RegisterClusterInput } from '../services/cluster.service';
import { PLANNING_RESOURCES } from '../services/platform.service';
import type { ClusterServices } from '../wiring';
import {
  ClusterIdParams,
  ClusterIdQuery,
  ClusterSettingsUpdateSchema,
  type ClusterSettingsUpdateBody,
  HfTokenSecretCreateSchema,
  type HfTokenSecretCreateBody,
  HfTokenSecretUpdateSchema,
  type HfTokenSecretUpdateBody,
  ListQuery,
  NodeNamesSchema,
  type NodeNamesBody,
  PortQuery,
  PrepullSchema,
  type PrepullBody,
  RegisterFormDoc,
  PlanningParams,
  SessionIdParams,
} from './schemas';

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
export function clusterRoutes(app: FastifyInstance, s: ClusterServices): void {
  const tags = ['clusters'];

  app.get('/api/cluster/lens-hosts', { schema: { tags, security, summary: 'Candidate addresses of this host' } }, async () => s.clusters.lensHosts());

  app.get<{ Querystring: ListQuery }>('/api/cluster/clusters', { schema: { tags, security, querystring: ListQuery, summary: 'List clusters (ready probed concurrently)' } }, async (req) =>
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

  app.patch<{ Params: ClusterIdParams; Body: ClusterSettingsUpdateBody }>(
    '/api/cluster/clusters/:cluster_id',
    { schema: { tags, security, params: ClusterIdParams, body: ClusterSettingsUpdateSchema, summary: 'Update cluster settings' } },
    async (req) => s.clusters.update(req.params.cluster_id, req.body as never),
  );

  app.delete<{ Params: ClusterIdParams }>(
    '/api/cluster/clusters/:cluster_id',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Delete a cluster, with the remote cleanup' } },
    async (req, reply) => {
      await s.clusters.delete(req.params.cluster_id);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: ClusterIdParams; Body: HfTokenSecretCreateBody }>(
    '/api/cluster/clusters/:cluster_id/hf-token-secrets',
    { schema: { tags, security, params: ClusterIdParams, body: HfTokenSecretCreateSchema, summary: 'Create the HF_TOKEN secret on the cluster' } },
    async (req, reply) => {
      const ref = await s.hfToken.create(req.params.cluster_id, req.body);
      reply.code(201);
      return ref;
    },
  );

  app.put<{ Params: ClusterIdParams; Body: HfTokenSecretUpdateBody }>(
    '/api/cluster/clusters/:cluster_id/hf-token-secret',
    { schema: { tags, security, params: ClusterIdParams, body: HfTokenSecretUpdateSchema, summary: 'Rotate the HF_TOKEN secret (apply)' } },
    async (req) => s.hfToken.rotate(req.params.cluster_id, req.body),
  );

  app.post<{ Params: ClusterIdParams }>(
    '/api/cluster/clusters/:cluster_id/software-downloads',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Download the pinned llm-d and llm-d-benchmark sources (body ignored)' } },
    async (req, reply) => {
      const status = await s.software.start(req.params.cluster_id);
      reply.code(202);
      return status;
    },
  );

  app.get<{ Params: ClusterIdParams }>(
    '/api/cluster/clusters/:cluster_id/software-downloads',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Software download state' } },
    async (req) => s.software.status(req.params.cluster_id),
  );

  app.post<{ Params: ClusterIdParams; Body: PrepullBody }>(
    '/api/cluster/clusters/:cluster_id/images/prepull',
    { schema: { tags, security, params: ClusterIdParams, body: PrepullSchema, summary: 'Pre-pull the pinned llm-d images on every node' } },
    async (req) => s.prepull.start(req.params.cluster_id, req.body?.accelerators ?? []),
  );

  app.get<{ Params: ClusterIdParams }>(
    '/api/cluster/clusters/:cluster_id/images/prepull',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Image pre-pull state' } },
    async (req) => s.prepull.status(req.params.cluster_id),
  );

  app.post<{ Params: ClusterIdParams }>(
    '/api/cluster/clusters/:cluster_id/crds',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Apply the pinned Gateway API / Inference Extension CRDs' } },
    async (req) => s.crds.apply(req.params.cluster_id),
  );

  app.get<{ Params: ClusterIdParams }>(
    '/api/cluster/clusters/:cluster_id/crds',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Gateway API / Inference Extension CRD state' } },
    async (req) => s.crds.status(req.params.cluster_id),
  );

  app.get<{ Params: ClusterIdParams }>(
    '/api/cluster/clusters/:cluster_id/kubernetes-version',
    { schema: { tags, security, params: ClusterIdParams, summary: 'Reachability and version against min_k8s_version' } },
    async (req) => s.platform.kubernetesVersion(req.params.cluster_id),
  );

  app.get<{ Params: ClusterIdParams; Querystring: PortQuery }>(
    '/api/cluster/clusters/:cluster_id/gateway-port-check',
    { schema: { tags, security, params: ClusterIdParams, querystring: PortQuery, summary: 'Is a NodePort free for the shared gateway?' } },
    async (req) => s.clusters.gatewayPortCheck(req.params.cluster_id, req.query.port),
  );

  app.post<{ Params: ClusterIdParams; Body: NodeNamesBody }>(
    '/api/cluster/clusters/:cluster_id/nodes/cordon',
    { schema: { tags, security, params: ClusterIdParams, body: NodeNamesSchema, summary: 'Cordon nodes (control-plane nodes refused)' } },
    async (req) => s.platform.setSchedulable(req.params.cluster_id, req.body.names, true),
  );

  app.post<{ Params: ClusterIdParams; Body: NodeNamesBody }>(
    '/api/cluster/clusters/:cluster_id/nodes/uncordon',
    { schema: { tags, security, params: ClusterIdParams, body: NodeNamesSchema, summary: 'Uncordon nodes (control-plane nodes refused)' } },
    async (req) => s.platform.setSchedulable(req.params.cluster_id, req.body.names, false),
  );

  app.get<{ Querystring: ClusterIdQuery }>(
    '/api/cluster/model-secrets',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Secrets holding HF_TOKEN (names only)' } },
    async (req) => s.platform.modelSecrets(req.query.clusterId),
  );

  app.get<{ Querystring: ClusterIdQuery }>(
    '/api/cluster/session',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Get or create the active session of a cluster' } },
    async (req) => s.clusters.session(req.query.clusterId),
  );

  app.get<{ Querystring: ClusterIdQuery }>(
    '/api/cluster/overview',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Live overview: nodes, GPUs, namespaces, capacity' } },
    async (req) => s.overview.overview(req.query.clusterId),
  );

  app.get<{ Params: SessionIdParams }>(
    '/api/cluster/sessions/:session_id',
    { schema: { tags, security, params: SessionIdParams, summary: 'An active session and its cluster' } },
    async (req) => s.clusters.sessionInfo(req.params.session_id),
  );

  app.get<{ Params: PlanningParams }>(
    '/api/cluster/sessions/:session_id/planning-discovery/:resource',
    {
      // A resource outside the enum keeps the seed's 422 invalid_planning_resource (the service says so).
      attachValidation: true,
      schema: { tags, security, params: PlanningParams, summary: 'Allow-listed planning discovery read ({"result": null} when it fails)' },
    },
    async (req) => {
      if (req.validationError && Object.hasOwn(PLANNING_RESOURCES, String(req.params.resource))) throw req.validationError;
      return s.platform.planningDiscovery(req.params.session_id, req.params.resource);
    },
  );

  // Legacy overview session routes (Lens' older front end).
  app.get<{ Params: SessionIdParams }>(
    '/api/cluster-overview/sessions/:session_id',
    { schema: { tags, security, params: SessionIdParams, summary: 'Legacy: an active overview session' } },
    async (req) => s.clusters.legacySession(req.params.session_id),
  );

  app.post<{ Params: SessionIdParams }>(
    '/api/cluster-overview/sessions/:session_id/disconnect',
    { schema: { tags, security, params: SessionIdParams, summary: 'Legacy: end an overview session' } },
    async (req, reply) => {
      await s.clusters.disconnect(req.params.session_id);
      return reply.code(204).send();
    },
  );

  // Unknown paths under this API answer in its own shape (more specific routes, the bootstrap's
  // included, always win over these wildcards).
  const notFound = async () => {
    throw new AppError('route_not_found', 'Not Found');
  };
  app.all('/api/cluster/*', { schema: { hide: true } }, notFound);
  app.all('/api/cluster-overview/*', { schema: { hide: true } }, notFound);

  app.get('/api/v1/versions', { schema: { tags, security, summary: 'The llm-d stack profile (pinned versions)' } }, async () => s.profile);
}
