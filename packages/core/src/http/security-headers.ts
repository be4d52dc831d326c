import type { FastifyInstance } from 'fastify';

/**
 * The console's, the kind dashboard's and the API docs' content security policy: scripts, styles,
 * images, fonts and connections from the listener itself only (inline styles allowed: ReDoc and
 * Swagger UI inject them; no inline or foreign script), ReDoc's blob: worker, no plugins, no
 * `<base>`, forms posting only to the listener, and framing by the listener's own pages only (the
 * console frames the kind panel; another site cannot: clickjacking).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

/**
 * Sets on every answer of the app (issue 18, finding 11): `X-Content-Type-Options: nosniff`,
 * `X-Frame-Options: SAMEORIGIN`, `Referrer-Policy: no-referrer`, and {@link CONTENT_SECURITY_POLICY}
 * (an answer that set its own CSP keeps it).
 */
export function installSecurityHeaders(app: FastifyInstance): void {
  // A callback hook, not an async one: no promise per answer (issue 32, item 9).
  app.addHook('onSend', (_req, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('x-frame-options', 'SAMEORIGIN');
    reply.header('referrer-policy', 'no-referrer');
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    done(null, payload);
  });
}
