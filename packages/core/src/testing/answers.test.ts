import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../http/app';
import { answerCheck } from './answers';

describe('answerCheck', () => {
  it('records an answer whose schema drops a field or changes a type, and passes one that says what the handler returned', async () => {
    const answers = answerCheck();
    const app = await createHttpApp({ title: 't', docs: false, instrument: answers.install });
    const schema = Type.Object({ a: Type.String(), n: Type.Optional(Type.Integer()) });
    app.get('/exact', { schema: { response: { 200: schema } } }, async () => ({ a: 'x', n: 1 }));
    app.get('/narrow', { schema: { response: { 200: schema } } }, async () => ({ a: 'x', extra: true }));
    app.get('/coerced', { schema: { response: { 200: schema } } }, async () => ({ a: 5 }));
    app.get('/text', async (_req, reply) => reply.type('text/plain').send('#!ipxe\n'));
    for (const url of ['/exact', '/narrow', '/coerced', '/text']) expect((await app.inject({ url })).statusCode).toBe(200);
    await app.close();
    expect(answers.drifts).toEqual([
      { route: 'GET /narrow', status: 200, returned: { a: 'x', extra: true }, answered: { a: 'x' } },
      { route: 'GET /coerced', status: 200, returned: { a: 5 }, answered: { a: '5' } },
    ]);
    expect([...answers.checked].sort()).toEqual(['GET /coerced 200', 'GET /exact 200', 'GET /narrow 200']);
  });
});
