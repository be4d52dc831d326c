/**
 * `ironlens import` as an operator runs it (the real binary, a real data directory): a
 * layout with a record outside the API's grammar exits non-zero, names file, record and
 * field, and leaves the store empty (issue 13, finding 5).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = new URL('../bin/ironlens.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'ironlens-cli-import-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function ironlens(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // IRONLENS_FROM_SOURCE: the sources under test, never a stale packages/cli/dist.
  const env = { ...process.env, IRONLENS_DATA_DIR: join(dir, 'data'), IPXE_CP_DNSMASQ_RELOAD: 'false', IRONLENS_LOG_LEVEL: 'silent', IRONLENS_FROM_SOURCE: '1' };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('ironlens import', () => {
  it('exits 1 on a hostname with a newline and a dnsmasq tag, naming the record, and imports nothing', async () => {
    const root = join(dir, 'layout');
    mkdirSync(join(root, 'state'), { recursive: true });
    writeFileSync(join(root, 'state', 'workers.yml'), 'workers:\n  ok-1: {}\n  w1:\n    hostname: "evil\\nhost,set:x"\n');
    const bad = await ironlens('import', root);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('state/workers.yml: worker "w1": hostname: invalid hostname');
    const out = join(dir, 'export');
    expect((await ironlens('export', out)).code).toBe(0);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(join(out, 'state', 'workers.yml'), 'utf8')).toBe('workers: {}\n');
  });

  it("exits 1 on an agent token that names one of ironlens' settings (IPXE_AGENT_BACKEND: allowed by IPXE_CP_AGENT_TOKEN_ENV's pattern, refused by the settings list)", async () => {
    const root = join(dir, 'layout-agents');
    mkdirSync(join(root, 'config'), { recursive: true });
    writeFileSync(join(root, 'config', 'agents.yml'), 'agents:\n  a1:\n    base_url: http://127.0.0.1:1\n    token: "$' + '{IPXE_AGENT_BACKEND}"\n');
    const bad = await ironlens('import', root);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`config/agents.yml: agent "a1": token names $\{IPXE_AGENT_BACKEND}`);
    const out = join(dir, 'export-agents');
    expect((await ironlens('export', out)).code).toBe(0);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(join(out, 'config', 'agents.yml'), 'utf8')).toBe('agents: {}\n');
  });
});
