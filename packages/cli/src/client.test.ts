/**
 * The day-to-day commands (issue 23) against a real `ironlens serve`: tables and JSON, binds,
 * disks, the API's errors as exit 1 with their code, usage errors as exit 2, `login`'s 0600
 * config file, `jobs watch`, and the bash completion run by a real bash.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionScript, runClient } from './client';
import { CLIENT_USAGE, type ClientCommand, COMMAND_USAGE, VERBS } from './main';
import { type Running, serve } from './serve';

let dir: string;
let running: Running;
const TOKEN = 'client-test-console-token';

async function cli(argv: string[], env: Record<string, string> = {}, stdin = ''): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runClient(argv[0] as ClientCommand, argv.slice(1), {
    out: (s) => out.push(s),
    err: (s) => err.push(s),
    env: { HOME: dir, XDG_CONFIG_HOME: join(dir, 'config'), IRONLENS_URL: running.urls.console, IRONLENS_TOKEN: TOKEN, ...env },
    readStdin: () => stdin,
    pollMs: 20,
    commands: Object.keys(COMMAND_USAGE),
    usage: CLIENT_USAGE,
    verbs: VERBS,
  });
  return { code, out: out.join(''), err: err.join('') };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-client-'));
  running = await serve(
    { IRONLENS_DATA_DIR: join(dir, 'data'), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_TOKEN: TOKEN, IPXE_CP_DNSMASQ_RELOAD: 'false' },
    () => {},
  );
  for (const m of ['02:00:00:00:00:01', '02:00:00:00:00:02']) expect((await fetch(`${running.urls.boot}/devices/report?mac=${m}`)).status).toBe(200);
});
afterAll(async () => {
  await running?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens devices / workers / disks / operations', () => {
  it('lists devices as a table and as the API’s JSON', async () => {
    const t = await cli(['devices', 'list']);
    expect(t.code).toBe(0);
    expect(t.out.split('\n')[0]).toMatch(/^MAC\s+STATE\s+WORKER\s+LAST SEEN$/);
    expect(t.out).toMatch(/^02:00:00:00:00:01\s+pooled\s+-\s+/m);
    const j = await cli(['devices', 'list', '-o', 'json', '--state', 'pooled']);
    expect(JSON.parse(j.out).map((d: { mac: string }) => d.mac)).toEqual(['02:00:00:00:00:01', '02:00:00:00:00:02']);
  });

  it('creates a worker bound to a device, binds and unbinds, and the operations log shows it', async () => {
    expect((await cli(['workers', 'create', 'gpu-01', '--mac', '02:00:00:00:00:01'])).code).toBe(0);
    const w = await cli(['workers', 'list']);
    expect(w.out).toMatch(/^gpu-01\s+gpu-01\s+02:00:00:00:00:01\s+/m);
    expect((await cli(['workers', 'create', 'gpu-02'])).code).toBe(0);
    const b = await cli(['devices', 'bind', '02:00:00:00:00:02', 'gpu-02', '-o', 'json']);
    expect(b.code).toBe(0);
    expect(JSON.parse(b.out)).toMatchObject({ mac: '02:00:00:00:00:02', state: 'bound', bound_worker_id: 'gpu-02' });
    expect((await cli(['devices', 'unbind', '02:00:00:00:00:02'])).out).toMatch(/^state\s+pooled$/m);
    const ops = await cli(['operations', '--limit', '50']);
    expect(ops.out).toMatch(/device\.bind/);
    expect(ops.out).toMatch(/device\.unbind/);
  });

  it('an API refusal exits 1 with its status and code; a usage error exits 2 with the usage', async () => {
    const missing = await cli(['devices', 'show', '02:00:00:00:00:99']);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^ironlens devices: 404 /);
    const conflict = await cli(['devices', 'bind', '02:00:00:00:00:01', 'gpu-02']);
    expect(conflict.code).toBe(1);
    expect(conflict.err).toMatch(/^ironlens devices: 409 /);
    const noToken = await cli(['devices', 'list'], { IRONLENS_TOKEN: '' });
    expect(noToken.code).toBe(1);
    expect(noToken.err).toContain('401 auth_required');
    for (const argv of [['devices'], ['devices', 'frobnicate'], ['devices', 'show'], ['devices', 'list', '--bogus'], ['devices', 'list', '-o', 'yaml'], ['disks', 'create', 'gpu-01']]) {
      const r = await cli(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err).toContain(`usage: ironlens ${argv[0]}`);
    }
    const unreachable = await cli(['devices', 'list'], { IRONLENS_URL: 'http://127.0.0.1:1' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toContain('unreachable: cannot reach http://127.0.0.1:1');
  });

  it('disks: an empty disk on a worker with no agent is refused by the API (exit 1), and list shows none', async () => {
    const r = await cli(['disks', 'create', 'gpu-01', '--os', 'debian', '--size', '1G']);
    expect(r.code).toBe(1);
    expect((await cli(['disks', 'list', 'gpu-01'])).out).toBe('OS  IQN  AGENT  FILE\n');
  });
});

describe('ironlens login / logout', () => {
  it('checks the token, then saves URL and token 0600; later commands use them', async () => {
    expect((await cli(['login'], { IRONLENS_TOKEN: '' }, 'wrong-token\n')).code).toBe(1);
    const ok = await cli(['login'], { IRONLENS_TOKEN: '' }, `${TOKEN}\n`);
    expect(ok.code).toBe(0);
    const file = join(dir, 'config', 'ironlens', 'cli.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: running.urls.console, token: TOKEN });
    expect((await cli(['devices', 'list'], { IRONLENS_TOKEN: '', IRONLENS_URL: '' })).code).toBe(0);
    expect((await cli(['logout'])).code).toBe(0);
    expect((await cli(['devices', 'list'], { IRONLENS_TOKEN: '', IRONLENS_URL: running.urls.console })).code).toBe(1);
  });
});

describe('ironlens jobs watch', () => {
  let stub: Server;
  afterAll(() => new Promise((r) => stub?.close(r)));
  it('prints a progress bar per change and exits 0 when the job succeeded, 1 when it failed', async () => {
    // A stand-in of GET /api/cluster/bootstrap/{id} (seed 000's job shape): queued → running → done.
    const states: Record<string, Array<{ status: string; progress: number; phase?: string }>> = {
      ok: [{ status: 'queued', progress: 0 }, { status: 'running', progress: 40, phase: 'kubespray' }, { status: 'running', progress: 40, phase: 'kubespray' }, { status: 'succeeded', progress: 100 }],
      bad: [{ status: 'running', progress: 10 }, { status: 'failed', progress: 10 }],
    };
    const seen: Record<string, number> = {};
    stub = createServer((req, res) => {
      const id = String(req.url).split('/').pop() as string;
      const list = states[id];
      const i = Math.min(seen[id] ?? 0, list.length - 1);
      seen[id] = i + 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id, ...list[i] }));
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
    const ok = await cli(['jobs', 'watch', 'ok'], { IRONLENS_URL: url });
    expect(ok.code).toBe(0);
    expect(ok.out).toBe(['[....................]   0% queued', '[########............]  40% running kubespray', '[####################] 100% succeeded', ''].join('\n'));
    expect((await cli(['jobs', 'watch', 'bad'], { IRONLENS_URL: url })).code).toBe(1);
  });
});

describe('ironlens completion', () => {
  it('bash completes commands and verbs', () => {
    const script = join(dir, 'completion.bash');
    writeFileSync(script, completionScript('bash', ['serve', 'agent'], VERBS));
    const complete = (words: string) =>
      execFileSync('bash', ['-c', `source ${script}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _ironlens; echo "\${COMPREPLY[*]}"`], { encoding: 'utf8' }).trim();
    expect(complete('ironlens dev')).toBe('devices');
    expect(complete('ironlens se')).toBe('serve');
    expect(complete('ironlens devices b')).toBe('bind');
    expect(complete('ironlens jobs w')).toBe('watch');
    expect(completionScript('zsh', [], VERBS)).toMatch(/^#compdef ironlens\n/);
  });
});
