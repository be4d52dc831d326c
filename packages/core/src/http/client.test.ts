import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ApiError, errorCode, query, readAnswer, unreachable } from './client';

describe('@ironlens/core/http-client', () => {
  it('imports nothing: the console’s bundle and the command’s client load it without server code', () => {
    const text = readFileSync(new URL('./client.ts', import.meta.url), 'utf8');
    expect(text).not.toMatch(/^\s*(import|export)\b[^;]*\bfrom\s+['"]/m);
    expect(text).not.toMatch(/\bimport\s*\(|\brequire\s*\(/);
  });

  it('reads a 2xx answer as JSON (text when it is not, null when empty), and any other as an ApiError in its API’s shape', async () => {
    expect(await readAnswer(new Response('{"a":1}', { status: 200 }))).toEqual({ a: 1 });
    expect(await readAnswer(new Response('plain', { status: 200 }))).toBe('plain');
    expect(await readAnswer(new Response(null, { status: 204 }))).toBeNull();
    const refusal = async (body: string, status: number) => readAnswer(new Response(body, { status })).then(() => undefined, (e: ApiError) => [e.status, e.code, e.message]);
    expect(await refusal('{"detail":"device not found","code":"device_not_found"}', 404)).toEqual([404, 'device_not_found', 'device not found']);
    expect(await refusal('{"type":"about:blank","title":"Conflict","status":409,"detail":"a cluster named x exists","code":"cluster_name_conflict"}', 409)).toEqual([409, 'cluster_name_conflict', 'a cluster named x exists']);
    expect(await refusal('{"detail":"Unauthorized"}', 401)).toEqual([401, 'auth_required', 'Unauthorized']);
    expect(await refusal('{"detail":"no","permission":"metal:device:write","actor":"ci","role":"viewer","code":"permission_denied"}', 403)).toEqual([403, 'permission_denied', 'your token (ci, viewer) may not metal:device:write']);
    expect(await refusal('Bad Gateway', 502)).toEqual([502, undefined, 'Bad Gateway']);
    expect(errorCode(null, 500)).toBeUndefined();
  });

  it('names why a request got no answer, and builds query strings of the given values only', () => {
    const e = unreachable('cannot reach http://127.0.0.1:1', Object.assign(new TypeError('fetch failed'), { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') }));
    expect([e.status, e.code, e.message]).toEqual([0, 'unreachable', 'cannot reach http://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1']);
    expect(query({ state: 'pooled', force: undefined, limit: 5, mac: '', x: null })).toBe('?state=pooled&limit=5');
    expect(query({})).toBe('');
  });
});
