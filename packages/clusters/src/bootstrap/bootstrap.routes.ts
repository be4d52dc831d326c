import { Authenticator, declareRoutePermissions, installAccessControl, installErrorHandling } from '@ironlens/core';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { problemErrorOptions, renderProblem } from '../shared/http-problem';
import { CLUSTERS_ROUTE_PERMISSIONS } from '../shared/permissions';
import {
  HostKeysRequest,
  HostKeysResponse,
  IdParams,
  ListResponse,
  PreflightRequest,
  PreflightResponse,
  PublicKeyResponse,
  StartRequest,
  StartResponse,
  StatusResponse,
} from '../api/bootstrap';
import { NoContent, problems } from '../api/problem';
import type { BootstrapService } from './bootstrap.service';

export interface BootstrapServices {
  bootstrap: BootstrapService;
}

export interface BootstrapPluginOptions {
  services: BootstrapServices;
  /** Bearer token (`IRONLENS_CONSOLE_TOKEN`): when set, every route answers 401 without it. Default: unset, open. */
  token?: string;
}

const tags = ['cluster bootstrap'];
/** Every route's errors (problem+json): 503 `bootstrap_register_unavailable`, 404 `bootstrap_not_found`. */
const errors = problems(400, 401, 403, 404, 409, 422, 429, 500, 503);

/**
 * The Kubespray bootstrap API at seed 000's paths (`/api/cluster/bootstrap…`), errors as
 * `application/problem+json`. Thin: schema, one service call, status.
 */
export async function bootstrapPlugin(instance: FastifyInstance, opts: BootstrapPluginOptions): Promise<void> {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const { bootstrap } = opts.services;
  installErrorHandling(app, renderProblem, problemErrorOptions);
  declareRoutePermissions(app, CLUSTERS_ROUTE_PERMISSIONS);
  if (opts.token) {
    installAccessControl(app, { authenticator: new Authenticator([{ variable: 'IRONLENS_CONSOLE_TOKEN', token: opts.token }]) });
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, security: [{ bearer: [] }] };
    });
  }

  app.post(
    '/api/cluster/bootstrap/host-keys',
    { schema: { tags, summary: 'Read the SSH host keys of the expanded hosts, without authenticating', body: HostKeysRequest, response: { 200: HostKeysResponse, ...errors } } },
    (req) => bootstrap.hostKeys(req.body.nodes),
  );

  app.post(
    '/api/cluster/bootstrap/preflight',
    { schema: { tags, summary: 'Check every node over its pinned key: ssh, sudo, hostname, os, existing Kubernetes, memory', body: PreflightRequest, response: { 200: PreflightResponse, ...errors } } },
    (req) => bootstrap.preflight(req.body),
  );

  app.get('/api/cluster/bootstrap/ssh-public-key', { schema: { tags, summary: "ironlens' own SSH public key (ed25519)", response: { 200: PublicKeyResponse, ...errors } } }, () =>
    bootstrap.publicKey(),
  );

  app.get('/api/cluster/bootstrap', { schema: { tags, summary: 'Bootstrap jobs, newest first (no secrets)', response: { 200: ListResponse, ...errors } } }, () => bootstrap.list());

  app.post(
    '/api/cluster/bootstrap',
    { schema: { tags, summary: 'Start a Kubespray bootstrap job', body: StartRequest, response: { 200: StartResponse, ...errors } } },
    (req) => bootstrap.start(req.body),
  );

  app.get(
    '/api/cluster/bootstrap/:id',
    { schema: { tags, summary: 'A bootstrap job: phase, log tail, error; the kubeconfig once', params: IdParams, response: { 200: StatusResponse, ...errors } } },
    (req) => bootstrap.status(req.params.id),
  );

  app.post(
    '/api/cluster/bootstrap/:id/cancel',
    { schema: { tags, summary: 'Cancel a bootstrap job (any phase)', params: IdParams, response: { 204: NoContent, ...errors } } },
    async (req, reply) => {
      await bootstrap.cancel(req.params.id);
      return reply.status(204).send(null);
    },
  );
}
