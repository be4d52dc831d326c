import { describe, expect, it } from 'vitest';
import { AppError } from '../errors';
import { createHttpApp, installBearerGuard, isDocsPath } from './app';

async function build(token?: string) {
  const app = await createHttpApp({ title: 'test' });
  installBearerGuard(app, { token, publicPaths: (p) => p === '/open' || isDocsPath(p) });
  app.get('/open', async () => ({ ok: true }));
  app.get('/closed', async () => ({ ok: true }));
  app.get('/boom', async () => {
    throw new AppError('worker_not_found', 'worker not found: w1');
  });
  app.post('/typed', { schema: { body: { type: 'object', required: ['count'], properties: { count: { type: 'integer', minimum: 1 } } } } }, async () => ({ ok: true }));
  return app;
}

describe('http app', () => {
  it('renders catalog errors in the FastAPI detail shape with their status', async () => {
    const app = await build();
    const r = await app.inject({ url: '/boom' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ detail: 'worker not found: w1' });
  });

  it('answers schema failures with 422 and a FastAPI-style detail list', async () => {
    const app = await build();
    const r = await app.inject({ method: 'POST', url: '/typed', payload: { count: 0 } });
    expect(r.statusCode).toBe(422);
    expect(Array.isArray(r.json().detail)).toBe(true);
    expect(r.json().detail[0].loc).toEqual(['body', 'count']);
  });

  it('answers malformed JSON with 400, not a stack trace', async () => {
    const app = await build();
    const r = await app.inject({ method: 'POST', url: '/typed', payload: '{"count":', headers: { 'content-type': 'application/json' } });
    expect(r.statusCode).toBe(400);
    expect(r.json().detail).toBeTypeOf('string');
    expect(r.body).not.toMatch(/at .*\.ts/);
  });

  it('requires the bearer token when one is configured, except on public paths', async () => {
    const app = await build('s3cret');
    expect((await app.inject({ url: '/closed' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/closed', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401);
    expect((await app.inject({ url: '/closed', headers: { authorization: 'Bearer s3cret' } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/open?x=1' })).statusCode).toBe(200);
  });

  it('serves OpenAPI 3, Swagger UI and ReDoc', async () => {
    const app = await build('s3cret');
    const spec = (await app.inject({ url: '/openapi.json' })).json();
    expect(spec.openapi).toMatch(/^3\./);
    expect(Object.keys(spec.paths)).toContain('/typed');
    expect((await app.inject({ url: '/docs/' })).statusCode).toBe(200);
    const redoc = await app.inject({ url: '/redoc' });
    expect(redoc.body).toContain('<redoc spec-url="openapi.json">');
    expect((await app.inject({ url: '/redoc/redoc.standalone.js' })).statusCode).toBe(200);
  });

  it('answers unknown routes with 404 detail', async () => {
    const app = await build();
    const r = await app.inject({ url: '/nope' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ detail: 'Not Found' });
  });
});
