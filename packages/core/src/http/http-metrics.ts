import type { FastifyInstance } from 'fastify';
import { bearerMatches } from '../auth/bearer';
import { AppError } from '../errors';
import type { Metrics } from '../metrics/metrics';

/** What one listener records and serves. */
export interface ListenerMetrics {
  /** The process' metrics (one registry per process). */
  metrics: Metrics;
  /** The `listener` label of this listener's HTTP metrics (`boot`, `console`, `agent`, `kind`). */
  listener: string;
  /** The bearer token `GET /metrics` requires; when empty, `/metrics` is open like the rest of the listener. */
  token?: string;
}

/** The `route` label of a request no route matched (a 404): never its URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Records every answered request of `app` (and of the plugins registered after this call) by its
 * route pattern (`/devices/:mac`, never the URL: no MAC, token or query string becomes a label).
 */
export function recordHttpMetrics(app: FastifyInstance, opts: ListenerMetrics): void {
  const { metrics, listener } = opts;
  // A callback hook, not an async one: no promise per request.
  app.addHook('onResponse', (req, reply, done) => {
    metrics.httpRequest(listener, req.method, req.routeOptions.url ?? UNMATCHED_ROUTE, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/**
 * Serves `GET /metrics` in the Prometheus text format, behind `token` when one is set (a 401
 * rendered by the app's error handler otherwise).
 */
export function metricsRoute(app: FastifyInstance, opts: ListenerMetrics): void {
  const { metrics, token } = opts;
  app.get(
    '/metrics',
    {
      config: { permission: 'core:metrics:read' },
      schema: {
        tags: ['metrics'],
        summary: 'Prometheus metrics of this process (text exposition format 0.0.4)',
        description: token ? 'Requires the listener’s bearer token.' : 'Open: this listener has no bearer token.',
        ...(token ? { security: [{ bearer: [] }] } : {}),
        response: { 200: { content: { 'text/plain': { schema: { type: 'string', description: 'Prometheus text exposition format 0.0.4' } } } } },
      },
      onRequest: async (req, reply) => {
        if (token && !bearerMatches(req.headers.authorization, token)) {
          reply.header('www-authenticate', 'Bearer');
          throw new AppError('auth_required', 'Unauthorized');
        }
      },
    },
    async (_req, reply) => {
      const text = await metrics.text();
      reply.type(metrics.contentType).header('cache-control', 'no-store');
      return text;
    },
  );
}
