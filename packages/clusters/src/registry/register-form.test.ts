/**
 * POST /api/cluster/clusters' multipart form at its edges (issue 18, findings 2 and 12): the
 * kubeconfig only as a file part, too many fields and a too large file answered 413, never a 500
 * or a silently cut upload.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClustersTestApp, closedPort, kubeconfigWithKey, multipart, startClustersApp } from '../testing/app';

let t: ClustersTestApp;
let kubeconfig: string;

beforeAll(async () => {
  t = await startClustersApp();
  kubeconfig = kubeconfigWithKey(`https://127.0.0.1:${await closedPort()}`).kubeconfig;
});
afterAll(async () => {
  await t?.close();
});

const PROBLEM = 'application/problem+json';

async function post(payload: Buffer, headers: Record<string, string>) {
  return t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
}

async function count(): Promise<number> {
  const res = await t.app.inject({ method: 'GET', url: '/api/cluster/clusters?includeDrafts=true' });
  return (res.json() as { items: unknown[] }).items.length;
}

describe('the register form', () => {
  it('takes the kubeconfig as a file part (the seed’s form), and refuses it as a text field', async () => {
    const before = await count();
    const asText = multipart({ name: 'text-field', draft: 'true', file: kubeconfig });
    const refused = await post(asText.payload, asText.headers);
    expect(refused.statusCode).toBe(422);
    expect(String(refused.headers['content-type'])).toContain(PROBLEM);
    expect(refused.json().code).toBe('validation_failed');
    expect(await count()).toBe(before);

    const asFile = multipart({ name: 'file-part', draft: 'true' }, { content: kubeconfig });
    const created = await post(asFile.payload, asFile.headers);
    expect(created.statusCode).toBe(201);
    expect(await count()).toBe(before + 1);
  });

  it('answers 413 to a form of more than 32 fields', async () => {
    const fields: Record<string, string> = { name: 'many', draft: 'true' };
    for (let i = 0; i < 40; i++) fields[`f${i}`] = 'x';
    const form = multipart(fields, { content: kubeconfig });
    const res = await post(form.payload, form.headers);
    expect(res.statusCode).toBe(413);
    expect(String(res.headers['content-type'])).toContain(PROBLEM);
    expect(res.json().code).toBe('form_too_large');
  });

  it('answers 413 to a kubeconfig file over 4 MiB, and to a text field over 1 MiB, never cutting either', async () => {
    const before = await count();
    const big = multipart({ name: 'big', draft: 'true' }, { content: `${kubeconfig}\n${'#'.repeat(4 * 1024 * 1024)}\n` });
    const file = await post(big.payload, big.headers);
    expect(file.statusCode).toBe(413);
    expect(file.json().code).toBe('form_too_large');

    const longField = multipart({ name: 'long', draft: 'true', description: 'd'.repeat(1024 * 1024 + 10) }, { content: kubeconfig });
    const field = await post(longField.payload, longField.headers);
    expect(field.statusCode).toBe(413);
    expect(field.json().code).toBe('form_too_large');
    expect(await count()).toBe(before);
  });
});
