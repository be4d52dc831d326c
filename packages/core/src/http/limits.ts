import type { Socket } from 'node:net';
import type { Server } from 'node:http';
import { type Env, envInt } from '../config';

/**
 * How long a client may take and how many connections it may hold, per listener (issue 18,
 * finding 9: 3,000 connections trickling one byte every 5 s were all held).
 */
export interface HttpLimits {
  /** The whole request (headers and body) must arrive within this; otherwise 408 and the socket is closed. Default is `60000`. */
  requestTimeoutMs: number;
  /** The request headers must arrive within this. Default is `10000` (kept below `requestTimeoutMs`). */
  headersTimeoutMs: number;
  /** Connections open at once on the listener; more are closed as they arrive. Default is `4096`. */
  maxConnections: number;
  /** Connections open at once from one client address (the socket's, not X-Forwarded-For); more are closed as they arrive. Default is `512`. */
  maxConnectionsPerSource: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = { requestTimeoutMs: 60_000, headersTimeoutMs: 10_000, maxConnections: 4096, maxConnectionsPerSource: 512 };

/**
 * `IRONLENS_HTTP_REQUEST_TIMEOUT_MS`, `IRONLENS_HTTP_HEADERS_TIMEOUT_MS`,
 * `IRONLENS_HTTP_MAX_CONNECTIONS`, `IRONLENS_HTTP_MAX_CONNECTIONS_PER_SOURCE`: the same for every
 * listener of the process (defaults in {@link DEFAULT_HTTP_LIMITS}).
 */
export function httpLimitsFromEnv(env: Env): HttpLimits {
  const d = DEFAULT_HTTP_LIMITS;
  return {
    requestTimeoutMs: envInt(env, 'IRONLENS_HTTP_REQUEST_TIMEOUT_MS', d.requestTimeoutMs, 100),
    headersTimeoutMs: envInt(env, 'IRONLENS_HTTP_HEADERS_TIMEOUT_MS', d.headersTimeoutMs, 100),
    maxConnections: envInt(env, 'IRONLENS_HTTP_MAX_CONNECTIONS', d.maxConnections, 1),
    maxConnectionsPerSource: envInt(env, 'IRONLENS_HTTP_MAX_CONNECTIONS_PER_SOURCE', d.maxConnectionsPerSource, 1),
  };
}

/** Node's server options for the limits (the headers timeout stays below the request timeout, as Node requires). */
export function serverTimeouts(limits: HttpLimits): { requestTimeout: number; headersTimeout: number; connectionsCheckingInterval: number } {
  const requestTimeout = limits.requestTimeoutMs;
  const headersTimeout = Math.min(limits.headersTimeoutMs, Math.max(1, requestTimeout - 1));
  // Node checks the timeouts on this period (30 s by default, which would let a slow client stay 30 s more).
  return { requestTimeout, headersTimeout, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 2))) };
}

/**
 * Caps the connections of one server: in all (`server.maxConnections`, Node closes the extra
 * ones) and per client address (closed here, on arrival, before a byte is read).
 */
export function capConnections(server: Server, limits: HttpLimits): void {
  server.maxConnections = limits.maxConnections;
  const perSource = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const source = socket.remoteAddress ?? '';
    const n = (perSource.get(source) ?? 0) + 1;
    if (n > limits.maxConnectionsPerSource) {
      socket.destroy();
      return;
    }
    perSource.set(source, n);
    socket.once('close', () => {
      const left = (perSource.get(source) ?? 1) - 1;
      if (left <= 0) perSource.delete(source);
      else perSource.set(source, left);
    });
  });
}
