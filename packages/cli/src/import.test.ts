/**
 * `ironlens import` as an operator runs it (the real binary, a real data directory): a
 * layout with a record outside the API's grammar exits non-zero, names file, record and
 * field, and leaves the store empty (issue 13, finding 5). Operations imported with their ids
 * are followed by new ones numbered after them, on SQLite and on PostgreSQL (whose identity
 * sequence explicit ids do not move).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { OperationsLog } from '@ironlens/core';
import { testDatabaseEnv } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from './serve';

const BIN = new URL('../bin/ironlens.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'ironlens-cli-import-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// The store of each data dir: its SQLite file, or a fresh PostgreSQL database in the suite's PostgreSQL run.
const databases = new Map<string, Record<string, string>>();
beforeAll(async () => {
  for (const d of ['data', 'data-ops']) databases.set(d, await testDatabaseEnv());
});

function envOf(dataDir = 'data'): Record<string, string | undefined> {
  // IRONLENS_FROM_SOURCE: the sources under test, never a stale packages/cli/dist.
  return { ...process.env, IRONLENS_DATA_DIR: join(dir, dataDir), IPXE_CP_DNSMASQ_RELOAD: 'false', IRONLENS_LOG_LEVEL: 'silent', IRONLENS_FROM_SOURCE: '1', ...databases.get(dataDir) };
}

async function ironlens(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return ironlensIn('data', ...args);
}

async function ironlensIn(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = envOf(dataDir);
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

  it('numbers the operations written after an import after the imported ids', async () => {
    const root = join(dir, 'layout-ops');
    mkdirSync(join(root, 'state'), { recursive: true });
    writeFileSync(
      join(root, 'state', 'operations.jsonl'),
      '{"id":3,"ts":"2026-07-27T14:20:00+00:00","op":"create_worker","status":"started","worker_id":"w1"}\n{"id":9,"ts":"2026-07-27T14:21:00+00:00","op":"delete_worker","status":"ok","worker_id":"w1"}\n',
    );
    const imported = await ironlensIn('data-ops', 'import', root);
    expect(imported.stderr).toBe('');
    expect(JSON.parse(imported.stdout)).toMatchObject({ operations: 2 });
    const store = await openStore(envOf('data-ops'));
    try {
      const ops = new OperationsLog(store);
      await ops.append({ op: 'device.register', mac: '02:00:00:00:00:01' });
      await ops.append([{ op: 'worker.create', worker_id: 'w2' }, { op: 'device.bind', mac: '02:00:00:00:00:01', worker_id: 'w2' }]);
      const { entries } = await ops.list({});
      expect(entries.map((e) => [e.id, e.op])).toEqual([
        [3, 'create_worker'],
        [9, 'delete_worker'],
        [10, 'device.register'],
        [11, 'worker.create'],
        [12, 'device.bind'],
      ]);
    } finally {
      await store.close();
    }
  });
});
