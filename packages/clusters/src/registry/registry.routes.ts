import { AppError } from '@ironlens/core';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  ClusterIdParams,
  DeleteClusterQuery,
  ClusterIdQuery,
  ClusterListSchema,
  ClusterSettingsUpdateSchema,
  ClusterWithSessionSchema,
  type DatabaseStatus,
  DatabaseStatusSchema,
  GatewayPortCheckSchema,
  HfTokenSecretCreateSchema,
  HfTokenSecretRefSchema,
  HfTokenSecretUpdateSchema,
  LegacySessionSchema,
  LensHostsSchema,
  ListQuery,
  PortQuery,
  RegisterFormDoc,
  SessionIdParams,
  StackProfileSchema,
} from '../api/clusters';
import { NoContent, problems } from '../api/problem';
import type { StackProfile } from '../shared/profile';
import { commonErrors, onClusterErrors, security } from '../shared/routes';
import type { ClusterService, RegisterClusterInput } from './cluster.service';
import type { HfTokenService } from './hf-token.service';

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

/**
 * Seed 000's registrations and sessions: register, list, settings, delete, the HF token secret,
 * the gateway port check, sessions (and the legacy overview session routes), the stack profile.
 */
export function registryRoutes(instance: FastifyInstance, s: { clusters: ClusterService; hfToken: HfTokenService; profile: StackProfile; database: DatabaseStatus }): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['clusters'];

  app.get('/api/cluster/lens-hosts', { schema: { tags, security, summary: 'Candidate addresses of this host', response: { 200: LensHostsSchema, ...commonErrors } } }, async () => s.clusters.lensHosts());

  app.get('/api/cluster/clusters', { schema: { tags, security, querystring: ListQuery, summary: 'List clusters (ready probed concurrently)', response: { 200: ClusterListSchema, ...commonErrors } } }, async (req) =>
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
        response: { 201: ClusterWithSessionSchema, ...commonErrors, ...problems(400, 409, 413) },
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
    { schema: { tags, security, params: ClusterIdParams, body: ClusterSettingsUpdateSchema, summary: 'Update cluster settings', response: { 200: ClusterWithSessionSchema, ...onClusterErrors(400, 409) } } },
    async (req) => s.clusters.update(req.params.cluster_id, req.body),
  );

  app.delete(
    '/api/cluster/clusters/:cluster_id',
    {
      schema: {
        tags,
        security,
        params: ClusterIdParams,
        querystring: DeleteClusterQuery,
        summary: 'Delete a cluster, with the remote cleanup',
        description:
          'A draft that no write of ironlens ever reached is removed without a remote cleanup. `force=true` (this route is an admin’s: cluster:cluster:delete) removes the record when the cleanup fails, and names what may be left on the cluster in the operations log.',
        response: { 204: NoContent, ...onClusterErrors(409) },
      },
    },
    async (req, reply) => {
      await s.clusters.delete(req.params.cluster_id, { force: req.query.force === true });
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/cluster/clusters/:cluster_id/hf-token-secrets',
    { schema: { tags, security, params: ClusterIdParams, body: HfTokenSecretCreateSchema, summary: 'Create the HF_TOKEN secret on the cluster', response: { 201: HfTokenSecretRefSchema, ...onClusterErrors(400, 409) } } },
    async (req, reply) => {
      const ref = await s.hfToken.create(req.params.cluster_id, req.body);
      reply.code(201);
      return ref;
    },
  );

  app.put(
    '/api/cluster/clusters/:cluster_id/hf-token-secret',
    { schema: { tags, security, params: ClusterIdParams, body: HfTokenSecretUpdateSchema, summary: 'Rotate the HF_TOKEN secret (apply)', response: { 200: HfTokenSecretRefSchema, ...onClusterErrors(400) } } },
    async (req) => s.hfToken.rotate(req.params.cluster_id, req.body),
  );

  app.get(
    '/api/cluster/clusters/:cluster_id/gateway-port-check',
    { schema: { tags, security, params: ClusterIdParams, querystring: PortQuery, summary: 'Is a NodePort free for the shared gateway?', response: { 200: GatewayPortCheckSchema, ...onClusterErrors() } } },
    async (req) => s.clusters.gatewayPortCheck(req.params.cluster_id, req.query.port),
  );

  app.get(
    '/api/cluster/session',
    { schema: { tags, security, querystring: ClusterIdQuery, summary: 'Get or create the active session of a cluster', response: { 200: ClusterWithSessionSchema, ...onClusterErrors() } } },
    async (req) => s.clusters.session(req.query.clusterId),
  );

  app.get(
    '/api/cluster/sessions/:session_id',
    { schema: { tags, security, params: SessionIdParams, summary: 'An active session and its cluster', response: { 200: ClusterWithSessionSchema, ...commonErrors, ...problems(404) } } },
    async (req) => s.clusters.sessionInfo(req.params.session_id),
  );

  // Legacy overview session routes (Lens' older front end).
  app.get(
    '/api/cluster-overview/sessions/:session_id',
    { schema: { tags, security, params: SessionIdParams, summary: 'Legacy: an active overview session', response: { 200: LegacySessionSchema, ...commonErrors, ...problems(404) } } },
    async (req) => s.clusters.legacySession(req.params.session_id),
  );

  app.post(
    '/api/cluster-overview/sessions/:session_id/disconnect',
    { schema: { tags, security, params: SessionIdParams, summary: 'Legacy: end an overview session', response: { 204: NoContent, ...commonErrors, ...problems(404) } } },
    async (req, reply) => {
      await s.clusters.disconnect(req.params.session_id);
      return reply.code(204).send(null);
    },
  );

  app.get('/api/v1/versions', { schema: { tags, security, summary: 'The llm-d stack profile (pinned versions)', response: { 200: StackProfileSchema, ...commonErrors } } }, async () => s.profile);

  // Lens' database check, its create-cluster wizard's first call (issue 33).
  app.get(
    '/api/v1/system/database',
    { schema: { tags: ['system'], security, summary: 'The store ironlens keeps its records in (Lens’ DatabaseStatus)', response: { 200: DatabaseStatusSchema, ...commonErrors } } },
    async () => s.database,
  );
}
