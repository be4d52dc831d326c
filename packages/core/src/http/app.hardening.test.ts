import { describe, expect, it } from 'vitest';
import { AppError, echo } from '../errors';
import { createHttpApp } from './app';

async function build() {
  const app = await createHttpApp({ title: 'test', docs: false });
  app.put('/flag', { schema: { body: { type: 'object', required: ['enabled'], properties: { enabled: { type: 'boolean' } } } } }, async (req) => req.body);
  app.post('/named', { schema: { body: { type: 'object', required: ['worker_id'], properties: { worker_id: { type: 'string' } } } } }, async (req) => req.body);
  app.get('/q', { schema: { querystring: { type: 'object', properties: { force: { type: 'boolean' }, limit: { type: 'integer' } } } } }, async (req) => req.query);
  app.post('/echo', async (req) => {
    throw new AppError('hostname_invalid', `invalid hostname: ${(req.body as { hostname: string }).hostname}`);
  });
  return app;
}

describe('JSON bodies are taken as sent', () => {
  it('answers 422 to null, an array or a string where a boolean is wanted', async () => {
    const app = await build();
    for (const enabled of [null, [true], 'true', 0]) {
      const r = await app.inject({ method: 'PUT', url: '/flag', payload: { enabled } });
      expect(r.statusCode, JSON.stringify(enabled)).toBe(422);
      expect(r.json().detail[0].loc).toEqual(['body', 'enabled']);
    }
    const ok = await app.inject({ method: 'PUT', url: '/flag', payload: { enabled: false } });
    expect(ok.json()).toEqual({ enabled: false });
  });

  it('answers 422 to a number where a string is wanted', async () => {
    const app = await build();
    expect((await app.inject({ method: 'POST', url: '/named', payload: { worker_id: 123 } })).statusCode).toBe(422);
    expect((await app.inject({ method: 'POST', url: '/named', payload: { worker_id: '123' } })).json()).toEqual({ worker_id: '123' });
  });

  it('still coerces query strings, which are text', async () => {
    const app = await build();
    const r = await app.inject({ url: '/q?force=true&limit=10' });
    expect(r.json()).toEqual({ force: true, limit: 10 });
  });
});

describe('error bodies', () => {
  it('cut an echoed 10 MB value to a few hundred characters', async () => {
    const app = await build();
    const r = await app.inject({ method: 'POST', url: '/echo', payload: { hostname: 'x'.repeat(10 * 1024 * 1024) } });
    expect(r.statusCode).toBe(400);
    expect(r.body.length).toBeLessThan(1_000);
    expect(r.json().detail).toMatch(/^invalid hostname: x{100}/);
  });

  it('echo() quotes a value and says how much it left out', () => {
    expect(echo('abc')).toBe('"abc"');
    expect(echo('y'.repeat(500), 10)).toBe('"yyyyyyyyy…(+492 chars)');
  });
});
