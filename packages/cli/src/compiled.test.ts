/**
 * The compiled command end to end: builds the bundle (as `npm install`'s prepare step does)
 * into a directory of its own under `.artifacts/`, next to a copy of the real `bin/ironlens.mjs`,
 * and runs it as a user would: `--help`, `serve` on free loopback ports answering /healthz on
 * both listeners and serving the console's assets and the ReDoc bundle (files found at run time
 * relative to their packages), a clean stop on SIGTERM, a failed start that exits 1, and the
 * fallback to the sources (with a message) when the build is missing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeTcpPort } from '@ironlens/agent/testing';
import { artifactPath, sleep } from '@ironlens/core/testing';
import { webDistDir } from '@ironlens/web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, testOnlyInputs } from './build';

const BIN_SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'ironlens.mjs');

let root: string;
let bin: string;
let work: string;

interface Proc {
  child: ChildProcess;
  stderr: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
}

function start(argv: string[], env: Record<string, string> = {}): Proc {
  // Its own process group, so a stuck child and anything it started can be killed together.
  const child = spawn(process.execPath, [bin, ...argv], { cwd: work, env: { ...process.env, IRONLENS_FROM_SOURCE: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitForLine(p: Proc, re: RegExp, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!re.test(p.stderr())) {
    if (p.child.exitCode !== null) throw new Error(`exited with ${p.child.exitCode} before ${re}: ${p.stderr()}`);
    if (Date.now() > until) throw new Error(`timed out waiting for ${re}: ${p.stderr()}`);
    await sleep(50);
  }
}

function killGroup(p: Proc): void {
  if (p.child.exitCode === null && p.child.pid) {
    try {
      process.kill(-p.child.pid, 'SIGKILL');
    } catch {}
  }
}

beforeAll(async () => {
  root = artifactPath('cli-build');
  bin = join(root, 'bin', 'ironlens.mjs');
  mkdirSync(dirname(bin), { recursive: true });
  copyFileSync(BIN_SOURCE, bin);
  await buildCli(join(root, 'dist'));
  work = mkdtempSync(join(tmpdir(), 'ironlens-compiled-'));
}, 120_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the compiled ironlens command', () => {
  it('splits each subcommand into chunks of its own: the entry imports nothing from the workspace statically', async () => {
    const { readFileSync } = await import('node:fs');
    const entry = readFileSync(join(root, 'dist', 'main.js'), 'utf8');
    expect(entry).not.toMatch(/^import .* from "/m);
    expect(entry).toMatch(/await import\("\.\/serve-[A-Z0-9]+\.js"\)/);
    expect(readdirSync(join(root, 'dist')).filter((f) => f.endsWith('.js')).length).toBeGreaterThan(2);
  });

  it('carries no module only tests use (issue 29, finding 12): none of its sources is under testing/ or a *.test.ts', async () => {
    const { readFileSync } = await import('node:fs');
    const sources = readdirSync(join(root, 'dist'))
      .filter((f) => f.endsWith('.js.map'))
      .flatMap((f) => (JSON.parse(readFileSync(join(root, 'dist', f), 'utf8')) as { sources: string[] }).sources);
    expect(sources.some((s) => s.includes('packages/agent/src/'))).toBe(true);
    expect(sources.filter((s) => /\/testing\/|\.test\.tsx?$/.test(s))).toEqual([]);
    // And the build refuses to write such a bundle.
    expect(testOnlyInputs(['packages/agent/src/testing/tgtd.ts', 'packages/core/src/testing/artifacts.ts', 'packages/cli/src/x.test.ts', 'packages/agent/src/master/master-build.ts', 'node_modules/x/testing/y.js'])).toEqual([
      'packages/agent/src/testing/tgtd.ts',
      'packages/cli/src/x.test.ts',
      'packages/core/src/testing/artifacts.ts',
    ]);
  });

  it('answers --help from the bundle, without the tsx fallback', async () => {
    const p = start(['--help']);
    expect(await within(20_000, '--help', p.exited)).toBe(0);
    expect(p.stdout()).toMatch(/^usage: ironlens <command>/);
    expect(p.stderr()).toBe('');
    const s = start(['serve', '-h']);
    expect(await within(20_000, 'serve -h', s.exited)).toBe(0);
    expect(s.stdout()).toMatch(/^usage: ironlens serve/);
  });

  it('falls back to the TypeScript sources, saying so, when the build is missing', async () => {
    // A second copy of the bin, beside the sources but without dist/.
    const bare = artifactPath('cli-no-build');
    mkdirSync(join(bare, 'bin'), { recursive: true });
    copyFileSync(BIN_SOURCE, join(bare, 'bin', 'ironlens.mjs'));
    symlinkSync(join(dirname(BIN_SOURCE), '..', 'src'), join(bare, 'src'));
    try {
      const child = spawn(process.execPath, [join(bare, 'bin', 'ironlens.mjs'), 'migrate', '--help'], { cwd: work, env: { ...process.env, IRONLENS_FROM_SOURCE: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        err += d;
      });
      const code = await within(60_000, 'fallback run', new Promise<number | null>((r) => child.once('exit', r)));
      expect(code).toBe(0);
      expect(out).toMatch(/^usage: ironlens migrate/);
      expect(err).toContain('the compiled command (packages/cli/dist) is missing: run `npm run build:cli`');
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  it('serves both listeners on free loopback ports, with the console assets and ReDoc found at run time, and stops on SIGTERM', async () => {
    const [boot, consolePort] = [await freeTcpPort(), await freeTcpPort()];
    const p = start(['serve', '--boot-listen', `127.0.0.1:${boot}`, '--console-listen', `127.0.0.1:${consolePort}`, '--data-dir', join(work, 'data')], { IPXE_CP_DNSMASQ_RELOAD: 'false' });
    try {
      await waitForLine(p, /console on /);
      for (const port of [boot, consolePort]) {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ status: 'ok' });
      }
      // The store, the validation and serialisation of both APIs, through the bundle.
      const created = await fetch(`http://127.0.0.1:${boot}/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ worker_id: 'w1' }) });
      expect(created.status).toBe(200);
      expect(await (await fetch(`http://127.0.0.1:${boot}/workers/w1`)).json()).toMatchObject({ worker_id: 'w1', state: 'registered' });
      expect((await fetch(`http://127.0.0.1:${boot}/workers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(422); // schema: worker_id required
      expect(await (await fetch(`http://127.0.0.1:${consolePort}/kind/api/v1/jobs?limit=5`)).json()).toEqual([]);
      const swaggerCss = await fetch(`http://127.0.0.1:${boot}/docs/static/swagger-ui.css`);
      expect(swaggerCss.status, 'Swagger UI serves its files from node_modules').toBe(200);
      const redoc = await fetch(`http://127.0.0.1:${boot}/redoc/redoc.standalone.js`);
      expect(redoc.status, 'the ReDoc bundle is read from node_modules at run time').toBe(200);
      expect((await redoc.text()).length).toBeGreaterThan(100_000);
      const dashboard = await fetch(`http://127.0.0.1:${consolePort}/kind/`);
      const html = await dashboard.text();
      if (existsSync(join(webDistDir, 'kind.html'))) {
        expect(dashboard.status, 'the console assets are found in packages/web/dist').toBe(200);
        expect(html).toContain('<script');
      } else {
        // Assets not built: the page must still name packages/web's build, proving the path resolved to that package.
        expect(html).toContain('npm run build -w @ironlens/web');
      }
      expect(existsSync(join(work, 'data', 'ironlens.db'))).toBe(true);
      // The API client through the bundle (its schemas and TypeBox in chunks of their own), on either listener.
      for (const port of [consolePort, boot]) {
        const client = start(['workers', 'list'], { IRONLENS_URL: `http://127.0.0.1:${port}`, XDG_CONFIG_HOME: join(work, 'config') });
        expect(await within(20_000, `workers list on :${port}`, client.exited), client.stderr()).toBe(0);
        expect(client.stdout()).toMatch(/^WORKER\s+HOSTNAME\s+MAC\s+STATE\s+DISKS\nw1\s+w1\s+-\s+registered\s+-\n$/);
      }
      p.child.kill('SIGTERM');
      expect(await within(20_000, 'exit after SIGTERM', p.exited)).toBe(0);
      expect(p.stderr()).toContain('[ironlens] SIGTERM: stopping ironlens serve');
      expect(p.stderr()).toContain('[ironlens] ironlens serve stopped');
    } finally {
      killGroup(p);
    }
  });

  it('exits 1 on a taken console port, naming IRONLENS_CONSOLE_LISTEN, instead of hanging with the boot listener open', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const takenPort = (taken.address() as { port: number }).port;
    const boot = await freeTcpPort();
    const p = start(['serve', '--boot-listen', `127.0.0.1:${boot}`, '--console-listen', `127.0.0.1:${takenPort}`, '--data-dir', join(work, 'data2')], { IPXE_CP_DNSMASQ_RELOAD: 'false' });
    try {
      expect(await within(30_000, 'exit on a failed start', p.exited)).toBe(1);
      expect(p.stderr()).toContain(`ironlens serve: cannot listen on 127.0.0.1:${takenPort} (EADDRINUSE); change IRONLENS_CONSOLE_LISTEN (--console-listen), or set it to off`);
    } finally {
      killGroup(p);
      await new Promise((r) => taken.close(r));
    }
  });
});
