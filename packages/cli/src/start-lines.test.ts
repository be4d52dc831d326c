/**
 * What `ironlens kind` and `ironlens agent` print: the bound address and the token state at
 * start, a line when they stop on SIGTERM (sent in-process here; serve's lines are in
 * serve.test.ts, and a real SIGTERM to the compiled command in compiled.test.ts).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from './main';
import { sleep } from '@ironlens/core/testing';

let dir: string;
let saved: NodeJS.ProcessEnv;

/** Runs a long-lived command until `line` appears on stderr, then SIGTERM; all of stderr and the exit code. */
async function runUntil(argv: string[], env: Record<string, string>, line: RegExp): Promise<{ code: number; lines: string[] }> {
  const err: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  Object.assign(process.env, env);
  process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
  try {
    const done = main(argv);
    const until = Date.now() + 30_000;
    while (!line.test(err.join(''))) {
      if (Date.now() > until) throw new Error(`no ${line} in: ${err.join('')}`);
      await sleep(20);
    }
    process.emit('SIGTERM', 'SIGTERM');
    const code = await done;
    return { code, lines: err.join('').split('\n').filter((l) => l.startsWith('[ironlens]')) };
  } finally {
    process.stderr.write = write;
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-start-lines-'));
  saved = { ...process.env };
});

afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  rmSync(dir, { recursive: true, force: true });
});

describe('start and stop lines', () => {
  it('ironlens kind: bound address, open API without KIND_K8S_TOKEN, a line on stop', async () => {
    const env = { KIND_K8S_WEB_HOST: '127.0.0.1', KIND_K8S_WEB_PORT: '0', KIND_K8S_DB: join(dir, 'kind.sqlite'), KIND_K8S_CLUSTERS_DIR: join(dir, 'clusters') };
    const r = await runUntil(['kind'], env, /kind panel on/);
    expect(r.code).toBe(0);
    expect(r.lines[0]).toMatch(/^\[ironlens\] kind panel on 127\.0\.0\.1:(\d+) \(http:\/\/127\.0\.0\.1:\1; API open: no token, KIND_K8S_TOKEN is not set\)$/);
    expect(r.lines.slice(1)).toEqual(['[ironlens] SIGTERM: stopping ironlens kind', '[ironlens] ironlens kind stopped']);
  });

  it('ironlens kind with KIND_K8S_TOKEN: says the token is required, never prints it', async () => {
    const env = { KIND_K8S_WEB_PORT: '0', KIND_K8S_TOKEN: 'kind-secret-token', KIND_K8S_DB: join(dir, 'kind.sqlite'), KIND_K8S_CLUSTERS_DIR: join(dir, 'clusters') };
    const r = await runUntil(['kind'], env, /kind panel on/);
    expect(r.lines[0]).toContain('bearer token required (KIND_K8S_TOKEN)');
    expect(r.lines.join('\n')).not.toContain('kind-secret-token');
  });

  it('ironlens agent: bound address, token state, disk dir, a line on stop', async () => {
    mkdirSync(join(dir, 'disks'));
    const env = { DISK_DIR: join(dir, 'disks'), IPXE_AGENT_TOKEN: 'agent-secret-token', IRONLENS_LOG_LEVEL: 'silent' };
    const r = await runUntil(['agent', '--agent-listen', '127.0.0.1:0'], env, /storage agent on/);
    expect(r.code).toBe(0);
    expect(r.lines[0]).toMatch(new RegExp(`^\\[ironlens\\] storage agent on 127\\.0\\.0\\.1:(\\d+) \\(http://127\\.0\\.0\\.1:\\1; bearer token required; disks in ${join(dir, 'disks')}\\)$`));
    expect(r.lines.slice(1)).toEqual(['[ironlens] SIGTERM: stopping ironlens agent', '[ironlens] ironlens agent stopped']);
    expect(r.lines.join('\n')).not.toContain('agent-secret-token');
  });
});
