import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { detailSchema, hostReportAnswer, hostReportBody } from '../api/schemas';
import type { MetalServices } from '../wiring';

/** A report is a few KiB; the cap keeps a hostile sender from making the parser work. */
export const HOST_REPORT_BODY_LIMIT = 64 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's bytes as received (only on `/hosts/report`, whose signature covers them). */
    rawBody?: Buffer;
  }
  interface FastifyContextConfig {
    /** The route's one permission (`area:object:verb`, or `public`): the same declaration as issue 20's access hook. */
    permission?: string;
  }
}

/**
 * `POST /hosts/report` (issue 24): open like `/boot-vars` (permission `public`), because the
 * report authenticates itself (the worker's bound MAC and hostname, and with CHAP its signature).
 * Registered in a context of its own, whose JSON parser keeps the raw body for the signature.
 */
export function hostReportRoutes(app: FastifyInstance, s: MetalServices): void {
  app.register(async (context) => {
    const child = context.withTypeProvider<TypeBoxTypeProvider>();
    child.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: HOST_REPORT_BODY_LIMIT }, (req, body, done) => {
      const raw = body as Buffer;
      req.rawBody = raw;
      try {
        done(null, JSON.parse(raw.toString('utf8')));
      } catch {
        const err = new Error('body is not JSON') as Error & { statusCode: number };
        err.statusCode = 400;
        done(err, undefined);
      }
    });
    child.post(
      '/hosts/report',
      {
        config: { permission: 'public' },
        bodyLimit: HOST_REPORT_BODY_LIMIT,
        schema: {
          tags: ['hosts'],
          summary: "A booted worker's host report (no token: signed with the worker's CHAP secret, or from its bound MAC and hostname)",
          description:
            'Sent by the host reporter in the master image at every boot and when something changes. Headers: `X-Ironlens-Timestamp` (unix seconds) and, when the worker has a CHAP account, `X-Ironlens-Signature: v1=<hex HMAC-SHA256(key = CHAP secret, message = timestamp + "." + raw body)>`.',
          body: hostReportBody,
          response: { 200: hostReportAnswer, 400: detailSchema, 401: detailSchema, 403: detailSchema, 413: detailSchema, 422: detailSchema },
        },
      },
      async (req) => {
        const header = (name: string) => {
          const v = req.headers[name];
          return Array.isArray(v) ? v[0] : v;
        };
        return s.hostReports.report(
          { body: req.body, raw: req.rawBody ?? Buffer.from(JSON.stringify(req.body)), timestamp: header('x-ironlens-timestamp'), signature: header('x-ironlens-signature') },
          { client: req.ip },
        );
      },
    );
  });
}
