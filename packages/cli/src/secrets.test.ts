/**
 * Secrets never land where ironlens writes: recognisable secrets (the control-plane token,
 * the console token, agent tokens literal and `${NAME}`, credentials in an agent URL) are
 * sent through every path that handles them, against `ironlens serve` in its own process
 * with its request log on (`IRONLENS_LOG=1`), and then looked for in its output, the
 * operations log and every file of its data directory (the store included; on PostgreSQL, in
 * the suite's PostgreSQL run, a dump of its database).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dumpDatabase, testDatabaseEnv, waitFor } from '@ironlens/core/testing';
import { FakeAgent } from '@ironlens/metal/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CP_TOKEN = 'cp-secret-7a61e';
const CONSOLE_TOKEN = 'console-secret-7a61e';
const AGENT_TOKEN = 'agent-secret-7a61e';
const AGENT_ENV_TOKEN = 'agent-env-secret-7a61e';
const URL_PASSWORD = 'url-secret-7a61e';
const SECRETS = [CP_TOKEN, CONSOLE_TOKEN, AGENT_TOKEN, AGENT_ENV_TOKEN, URL_PASSWORD];
/** `${NAME}`, as an agent token names an environment variable. */
const envRef = (name: string) => `$\{${name}}`;

let dir: string;
let child: ChildProcess;
let output = '';
let agent: FakeAgent;
let boot: string;
let consoleUrl: string;
let dbEnv: Record<string, string>;

async function api(method: string, path: string, body?: unknown, token = CP_TOKEN): Promise<{ status: number; text: string }> {
  const res = await fetch(boot + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** Every file under `root` but the key that seals secrets, as raw bytes (latin1 keeps them 1:1). */
function filesUnder(root: string): Array<{ file: string; text: string }> {
  const out: Array<{ file: string; text: string }> = [];
  for (const name of readdirSync(root)) {
    const p = join(root, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else if (name !== 'secret.key') out.push({ file: p, text: readFileSync(p).toString('latin1') });
  }
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-secrets-'));
  agent = await new FakeAgent({ token: AGENT_ENV_TOKEN }).start();
  dbEnv = await testDatabaseEnv();
  const script = "const { serve } = await import('./packages/cli/src/serve.ts'); await serve(process.env);";
  child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: new URL('../../../', import.meta.url).pathname,
    env: {
      PATH: process.env.PATH,
      IRONLENS_DATA_DIR: join(dir, 'data'),
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_TOKEN: CONSOLE_TOKEN,
      IPXE_CP_TOKEN: CP_TOKEN,
      IPXE_CP_DNSMASQ_RELOAD: 'false',
      IPXE_AGENT_E2E_TOKEN: AGENT_ENV_TOKEN,
      IRONLENS_LOG: '1',
      ...dbEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  await waitFor('ironlens serve to listen', () => output, (o) => /console on /.test(o) || child.exitCode !== null, 30_000);
  boot = output.match(/provisioning API on \S+ \((http:\/\/[^;)]+)/)?.[1] ?? '';
  consoleUrl = output.match(/console on \S+ \((http:\/\/[^/;)]+)/)?.[1] ?? '';
  if (!boot || !consoleUrl) throw new Error(`ironlens serve did not start:\n${output}`);
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('secrets through ironlens serve', () => {
  it('reach the agent they are meant for, and no log line, operations entry or file of the data dir', async () => {
    const port = new URL(agent.url).port;
    // Agent tokens: registered literally, rotated to a ${NAME}, sent on every agent call.
    expect((await api('POST', '/agents', { id: 'ag1', base_url: agent.url, token: AGENT_TOKEN, role: { disk: true } })).status).toBe(201);
    expect((await api('PUT', '/agents/ag1', { base_url: agent.url, token: envRef('IPXE_AGENT_E2E_TOKEN'), role: { disk: true } })).status).toBe(200);
    expect((await api('POST', '/agents/probe', { base_url: agent.url, token: AGENT_TOKEN })).status).toBe(502); // the agent wants the other one
    expect((await api('POST', '/agents/probe', { base_url: agent.url, agent_id: 'ag1' })).status).toBe(200);
    expect((await api('POST', '/workers', { worker_id: 'w1' })).status).toBe(200);
    expect((await api('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' })).status).toBe(200);
    // Credentials in an agent URL, and the console token tried as an agent token.
    expect((await api('POST', '/agents', { id: 'ag2', base_url: `http://ops:${URL_PASSWORD}@127.0.0.1:${port}`, role: { disk: true } })).status).toBe(201);
    expect((await api('POST', '/agents/probe', { base_url: agent.url, token: envRef('IRONLENS_CONSOLE_TOKEN') })).status).toBe(400);
    // The console token, and a wrong control-plane token, on their listeners.
    expect((await fetch(`${consoleUrl}/kind/api/v1/jobs?limit=1`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } })).status).toBe(200);
    expect((await api('GET', '/workers', undefined, `${CP_TOKEN}-wrong`)).status).toBe(401);
    const listed = await api('GET', '/agents');
    const operations = await api('GET', '/operations');

    // The secrets did travel where they belong.
    const sent = agent.calls.map((c) => c.authorization ?? '');
    expect(sent).toContain(`Bearer ${AGENT_ENV_TOKEN}`);
    expect(sent).toContain(`Bearer ${AGENT_TOKEN}`);
    expect(sent).toContain(`Basic ${Buffer.from(`ops:${URL_PASSWORD}`).toString('base64')}`);
    // And the places looked at hold what they should, so an empty place cannot pass.
    expect(output).toContain('"url":"/agents/probe"');
    expect(operations.text).toContain('"token_rotated":true');
    const files = filesUnder(join(dir, 'data'));
    if (dbEnv.IRONLENS_DATABASE_URL) {
      // The store is the PostgreSQL database: every row of it, as a dump, is one more place.
      expect(files.map((f) => f.file).join('\n')).not.toMatch(/ironlens\.db/);
      files.push({ file: 'the PostgreSQL database (pg_dump)', text: dumpDatabase(dbEnv.IRONLENS_DATABASE_URL) });
    } else {
      expect(files.map((f) => f.file).join('\n')).toMatch(/ironlens\.db/);
    }
    expect(files.some((f) => f.text.includes('agent:ag1:token') || f.text.includes('v1:'))).toBe(true);

    const places = [
      { where: 'serve output (IRONLENS_LOG=1)', text: output },
      { where: 'GET /agents', text: listed.text },
      { where: 'GET /operations', text: operations.text },
      ...files.map((f) => ({ where: f.file, text: f.text })),
    ];
    const leaks = places.flatMap((p) => SECRETS.filter((s) => p.text.includes(s)).map((s) => `${s} in ${p.where}`));
    expect(leaks).toEqual([]);
  });
});
