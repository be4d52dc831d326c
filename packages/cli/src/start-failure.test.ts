/**
 * A start that fails on a taken port: exit 1, and the error names the setting that moves the
 * listener. (That the process then exits instead of hanging with another listener open is
 * checked on the compiled command, in compiled.test.ts, and for serve's listeners in serve.test.ts.)
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from './main';

let dir: string;
let taken: Server;
let takenPort: number;
let saved: NodeJS.ProcessEnv;

async function run(argv: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const err: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  Object.assign(process.env, env);
  process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
  try {
    return { code: await main(argv), stderr: err.join('') };
  } finally {
    process.stderr.write = write;
  }
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-start-failure-'));
  saved = { ...process.env };
  taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  takenPort = (taken.address() as AddressInfo).port;
});

afterEach(async () => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  await new Promise((r) => taken.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('a failed start', () => {
  it('ironlens serve exits 1 and names IRONLENS_CONSOLE_LISTEN', async () => {
    const r = await run(['serve', '--data-dir', join(dir, 'data'), '--boot-listen', 'off', '--console-listen', `127.0.0.1:${takenPort}`], { IPXE_CP_DNSMASQ_RELOAD: 'false' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`ironlens serve: cannot listen on 127.0.0.1:${takenPort} (EADDRINUSE); change IRONLENS_CONSOLE_LISTEN (--console-listen), or set it to off`);
  });

  it('ironlens agent exits 1 and names IRONLENS_AGENT_LISTEN', async () => {
    mkdirSync(join(dir, 'disks'));
    const r = await run(['agent', '--agent-listen', `127.0.0.1:${takenPort}`], { DISK_DIR: join(dir, 'disks'), IPXE_AGENT_TOKEN: 't', IRONLENS_LOG_LEVEL: 'silent' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ironlens agent: .*EADDRINUSE.*; change IRONLENS_AGENT_LISTEN \(--agent-listen\)\n$/);
  });

  it('ironlens kind exits 1 and names KIND_K8S_WEB_HOST / KIND_K8S_WEB_PORT', async () => {
    const r = await run(['kind'], { KIND_K8S_WEB_PORT: String(takenPort), KIND_K8S_DB: join(dir, 'kind.sqlite'), KIND_K8S_CLUSTERS_DIR: join(dir, 'clusters') });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ironlens kind: .*EADDRINUSE.*; change KIND_K8S_WEB_HOST \/ KIND_K8S_WEB_PORT\n$/);
  });
});
