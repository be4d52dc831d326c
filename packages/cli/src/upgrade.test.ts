/**
 * Upgrading (issue 23): a store made by the previous release (ironlens 0.1.0, a fixture in the
 * repository) is upgraded by `ironlens migrate` and then served with everything in it.
 * `migrate --status` says what a start would apply, without applying it.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from './main';
import { ALL_MIGRATIONS, serve } from './serve';

const FIXTURE = join(import.meta.dirname, '..', 'test', 'fixtures', 'store-0.1.0', 'ironlens.db');
/** What 0.1.0 had applied (the fixture's README lists the same). */
const APPLIED_IN_0_1_0 = [
  'bootstrap-0001-jobs',
  'clusters-0001-clusters',
  'clusters-0002-sessions',
  'clusters-0003-downloads-prepulls',
  'core-0001-operations',
  'core-0002-jobs',
  'core-0003-job-leases',
  'core-0003-store-meta',
  'metal-0001-ledger',
  'metal-0002-worker-chap',
];

let dir: string;
let saved: NodeJS.ProcessEnv;
const ENV = () => ({ IRONLENS_DATA_DIR: join(dir, 'data'), IRONLENS_SECRET_KEY: 'ab'.repeat(32), IPXE_CP_DNSMASQ_RELOAD: 'false' });

async function cli(argv: string[]): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
  Object.assign(process.env, ENV());
  try {
    return { code: await main(argv), out: out.join('') };
  } finally {
    process.stdout.write = write;
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-upgrade-'));
  mkdirSync(join(dir, 'data'));
  copyFileSync(FIXTURE, join(dir, 'data', 'ironlens.db'));
  saved = { ...process.env };
});
afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  rmSync(dir, { recursive: true, force: true });
});

describe('upgrading a store made by ironlens 0.1.0', () => {
  it('migrate --status lists what is applied and what is pending, and applies nothing', async () => {
    const pending = ALL_MIGRATIONS.map((m) => m.name).filter((n) => !APPLIED_IN_0_1_0.includes(n));
    for (let round = 0; round < 2; round++) {
      const r = await cli(['migrate', '--status']);
      expect(r.code).toBe(0);
      const lines = r.out.trim().split('\n');
      for (const n of APPLIED_IN_0_1_0) expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^applied \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  ${n}$`)));
      for (const n of pending) expect(lines).toContain(`pending  ${n}`);
      expect(lines.at(-1)).toBe(pending.length ? `${pending.length} pending migration(s) in ${join(dir, 'data')}: \`ironlens migrate\` (or the next start) applies them` : `store in ${join(dir, 'data')} is up to date`);
    }
  });

  it('migrate upgrades it; served, it has the 0.1.0 ledger and operations log', async () => {
    expect((await cli(['migrate'])).out).toBe(`store ready in ${join(dir, 'data')}\n`);
    expect((await cli(['migrate', '--status'])).out).toContain(`store in ${join(dir, 'data')} is up to date\n`);
    const lines: string[] = [];
    const running = await serve({ ...ENV(), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: 'off' }, (m) => lines.push(m));
    try {
      // The key the 0.1.0 store was sealed with still opens it: no warning.
      expect(lines.join('\n')).not.toContain('is not the one the secrets in the store were sealed with');
      const get = async (p: string) => (await fetch(`${running.urls.boot}${p}`)).json();
      expect(await get('/workers/gpu-01')).toMatchObject({ worker_id: 'gpu-01', mac: '02:00:00:00:00:01' });
      expect(await get('/workers/gpu-02')).toMatchObject({ worker_id: 'gpu-02', mac: '02:00:00:00:00:02' });
      const devices = (await get('/devices')) as Array<{ mac: string; state: string }>;
      expect(devices.map((d) => [d.mac, d.state])).toEqual([
        ['02:00:00:00:00:01', 'bound'],
        ['02:00:00:00:00:02', 'bound'],
        ['02:00:00:00:00:03', 'revoked'],
      ]);
      const ops = ((await get('/operations')) as { entries: Array<{ op: string }> }).entries.map((e) => e.op);
      expect(ops.filter((o) => o === 'device.register')).toHaveLength(3);
      expect(ops).toContain('device.revoke');
      // And it takes new writes.
      expect((await fetch(`${running.urls.boot}/devices/report?mac=02:00:00:00:00:04`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });
});
