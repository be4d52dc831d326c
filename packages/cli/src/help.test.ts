/**
 * `--help` and `-h` on every command: the command's own usage on stdout, exit 0, and nothing
 * else (no listener, no store, no data dir, no failure on a missing DISK_DIR).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort } from '@ironlens/agent/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMAND_USAGE, main } from './main';

let dir: string;
let saved: NodeJS.ProcessEnv;

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const write = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
  process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => err.push(String(s)) > 0) as typeof process.stderr.write;
  try {
    const code = await main(argv);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
  }
}

/** Something listening on the port? */
async function portInUse(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/`).then(
    () => true,
    () => false,
  );
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-help-'));
  saved = { ...process.env };
  const [boot, consolePort, agent, kind] = [await freeTcpPort(), await freeTcpPort(), await freeTcpPort(), await freeTcpPort()];
  // If a command ran instead of printing its usage, it would use these, and the test would see it.
  Object.assign(process.env, {
    IRONLENS_DATA_DIR: join(dir, 'data'),
    IRONLENS_BOOT_LISTEN: `127.0.0.1:${boot}`,
    IRONLENS_CONSOLE_LISTEN: `127.0.0.1:${consolePort}`,
    IRONLENS_AGENT_LISTEN: `127.0.0.1:${agent}`,
    DISK_DIR: join(dir, 'no-such-disk-dir'),
    KIND_K8S_WEB_HOST: '127.0.0.1',
    KIND_K8S_WEB_PORT: String(kind),
    KIND_K8S_DB: join(dir, 'kind', 'kind.sqlite'),
    KIND_K8S_CLUSTERS_DIR: join(dir, 'kind', 'clusters'),
    IPXE_CP_DNSMASQ_RELOAD: 'false',
  });
});

afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens <command> --help', () => {
  // Every command there is: a new one gets this test by being added to the usage table.
  for (const cmd of Object.keys(COMMAND_USAGE)) {
    for (const flag of ['--help', '-h']) {
      it(`${cmd} ${flag} prints its own usage, exits 0, and starts, creates and fails nothing`, async () => {
        const ports = ['IRONLENS_BOOT_LISTEN', 'IRONLENS_CONSOLE_LISTEN', 'IRONLENS_AGENT_LISTEN'].map((k) => Number(process.env[k]?.split(':')[1]));
        const r = await run([cmd, flag]);
        expect(r.code).toBe(0);
        expect(r.stdout.startsWith(`usage: ironlens ${cmd}`)).toBe(true);
        expect(r.stderr).toBe('');
        expect(readdirSync(dir)).toEqual([]); // no data dir, no kind store
        for (const p of [...ports, Number(process.env.KIND_K8S_WEB_PORT)]) expect(await portInUse(p)).toBe(false);
      });
    }
  }

  it('answers the same usage for `help <command>`, with any flags around it', async () => {
    const serve = await run(['serve', '--help']);
    expect((await run(['help', 'serve'])).stdout).toBe(serve.stdout);
    expect((await run(['serve', '--data-dir', join(dir, 'x'), '-h'])).stdout).toBe(serve.stdout);
    expect(existsSync(join(dir, 'x'))).toBe(false);
    expect(serve.stdout).toContain('IRONLENS_CONSOLE_LISTEN');
    expect((await run(['import', '-h'])).stdout).toContain('--replace');
  });
});

describe('ironlens --help', () => {
  it('prints the command list and exits 0 for --help, -h and help', async () => {
    for (const argv of [['--help'], ['-h'], ['help']]) {
      const r = await run(argv);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^usage: ironlens <command>/);
      for (const cmd of Object.keys(COMMAND_USAGE)) expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    }
  });

  it('exits 2 with the usage on stderr for no command, an unknown command or an unknown option', async () => {
    for (const argv of [[], ['bogus'], ['help', 'bogus'], ['serve', '--bogus'], ['migrate', '--replace'], ['serve', '--data-dir']]) {
      const r = await run(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('usage: ironlens');
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it('exits 2 when import or export is given no directory, before opening the store', async () => {
    for (const cmd of ['import', 'export']) {
      const r = await run([cmd]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`usage: ironlens ${cmd} DIR`);
    }
    expect(readdirSync(dir)).toEqual([]);
  });
});
