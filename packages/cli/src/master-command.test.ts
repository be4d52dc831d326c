/** `ironlens master build`'s command line: usage, refused arguments (the build itself: packages/agent/src/master). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-master-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ironlens master --help', () => {
  async function run(argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const w = { o: process.stdout.write.bind(process.stdout), e: process.stderr.write.bind(process.stderr) };
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
    try {
      return { code: await main(argv), stdout: out.join(''), stderr: err.join('') };
    } finally {
      process.stdout.write = w.o;
      process.stderr.write = w.e;
    }
  }

  it('prints its usage; refuses unknown or missing arguments with exit 2 and builds nothing', async () => {
    for (const argv of [['master', 'build', '--help'], ['master', '--help'], ['help', 'master']]) {
      const r = await run(argv);
      expect(r.code, argv.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/^usage: ironlens master build --os debian-12 --disk-dir DIR/);
    }
    expect((await run(['master', 'build', '--os', 'debian-12'])).stderr).toMatch(/--disk-dir is required/);
    expect((await run(['master', 'build', '--os', 'debian-12', '--disk-dir', dir, '--bogus'])).code).toBe(2);
    const bad = await run(['master', 'build', '--os', 'debian-12', '--disk-dir', dir, '--name', '../evil']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid master name/);
    expect((await run(['master', 'frobnicate'])).code).toBe(2);
  });
});
