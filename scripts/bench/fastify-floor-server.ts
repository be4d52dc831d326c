/**
 * Experiment: the floor of a Fastify route on this machine. The same app shell as
 * ironlens (`createHttpApp`: docs, error handling) and the same `/boot-vars` schema,
 * answering a constant text (and `#!ipxe` at `/devices/report`). `BENCH_FASTIFY_FLOOR=bare` uses `Fastify()` with no plugins.
 */
import { createHttpApp } from '@ironlens/core';
import Fastify from 'fastify';
import { bootScriptOf, REPORT_TEXT } from './fleet';

const text = bootScriptOf(1);
const bare = process.env.BENCH_FASTIFY_FLOOR === 'bare';
const app = bare ? Fastify() : await createHttpApp({ title: 'floor' });
app.get(
  '/boot-vars',
  bare
    ? {}
    : {
        schema: {
          querystring: {
            type: 'object',
            properties: { mac: { type: 'string' }, hostname: { type: 'string' }, format: { type: 'string', enum: ['ipxe', 'json'], default: 'ipxe' } },
          },
        },
      },
  async (_req, reply) => reply.type('text/plain; charset=utf-8').send(text),
);
app.get(
  '/devices/report',
  bare ? {} : { schema: { querystring: { type: 'object', required: ['mac'], properties: { mac: { type: 'string' } } } } },
  async (_req, reply) => reply.type('text/plain; charset=utf-8').send(REPORT_TEXT),
);
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
process.send?.({ port: typeof addr === 'object' && addr ? addr.port : 0 });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
process.on('disconnect', () => process.exit(0));
