import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { bmcErrorResponses, errorResponses, fleetDriftSchema, reconcileResultSchema, rolloutCreateBody, rolloutListSchema, rolloutParams, rolloutResumeBody, rolloutSchema, security, workerParams } from '../api/schemas';
import type { MetalServices } from '../wiring';

/** Rollouts (issue 31): beside `/workers`, never under it (a worker may be called anything). */
export function rolloutRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['rollouts'];
  const one = { 200: rolloutSchema, ...errorResponses, ...bmcErrorResponses, 503: errorResponses[500] };
  const write = { permission: 'metal:rollout:write' };
  const read = { permission: 'metal:rollout:read' };

  app.post(
    '/rollouts',
    {
      config: write,
      schema: { tags, security, summary: 'Roll a master image across workers, batch by batch (drain, re-clone, power-cycle, prove, re-admit)', body: rolloutCreateBody, response: { ...one, 201: rolloutSchema } },
    },
    async (req, reply) => {
      reply.status(201);
      return s.rollouts.create(req.body);
    },
  );
  app.get('/rollouts', { config: read, schema: { tags, security, summary: 'Rollouts, newest first', response: { 200: rolloutListSchema } } }, async () => s.rollouts.list());
  app.get('/rollouts/:rollout_id', { config: read, schema: { tags, security, params: rolloutParams, summary: 'A rollout: its batches and every worker’s steps', response: one } }, async (req) => s.rollouts.get(req.params.rollout_id));
  app.post('/rollouts/:rollout_id/pause', { config: write, schema: { tags, security, params: rolloutParams, summary: 'Pause after the batch in flight', response: one } }, async (req) => s.rollouts.pause(req.params.rollout_id));
  app.post(
    '/rollouts/:rollout_id/resume',
    { config: write, schema: { tags, security, params: rolloutParams, body: rolloutResumeBody, summary: 'Resume a paused (or interrupted) rollout where it stopped', response: one } },
    async (req) => s.rollouts.resume(req.params.rollout_id, req.body ?? {}),
  );
  app.post('/rollouts/:rollout_id/abort', { config: write, schema: { tags, security, params: rolloutParams, summary: 'Roll back the batch in flight and stop', response: one } }, async (req) => s.rollouts.abort(req.params.rollout_id));
}

/** Drift (issue 31): the fleet's view and the reconcile, beside `/workers`. */
export function driftRoutes(instance: FastifyInstance, s: MetalServices): void {
  const app = instance.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['drift'];
  const reconcile = { permission: 'metal:drift:reconcile' };
  app.get('/drift', { config: { permission: 'metal:drift:read' }, schema: { tags, security, summary: 'Workers whose reality is out of step with the ledger', response: { 200: fleetDriftSchema, ...errorResponses } } }, async () => s.drift.fleet());
  app.post('/drift/reconcile', { config: reconcile, schema: { tags, security, summary: 'Fix what ironlens owns, for every worker (hosts file, missing targets)', response: { 200: reconcileResultSchema, ...errorResponses } } }, async (req) =>
    s.drift.reconcile(undefined, { client: req.ip }),
  );
  app.post(
    '/workers/:worker_id/reconcile',
    { config: reconcile, schema: { tags: ['workers', ...tags], security, params: workerParams, summary: "Fix what ironlens owns for this worker (hosts file, missing targets)", response: { 200: reconcileResultSchema, ...errorResponses } } },
    async (req) => s.drift.reconcile(req.params.worker_id, { client: req.ip }),
  );
}
