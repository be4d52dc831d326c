/**
 * The day-to-day commands (issue 23) against a real `ironlens serve`, on both of its listeners
 * (issue 33 item 7): tables and JSON, binds, disks, the API's errors as exit 1 with their code,
 * usage errors as exit 2, `login`'s 0600 config file bound to its URL (issue 29 item 11), a
 * saved login that cannot be read (issue 32 item 7), terminal controls stored in the store shown
 * escaped (issue 29 item 8), answers checked against their schemas, every call's schema held to
 * its route's (issue 32 item 3), `jobs watch`, and the bash completion run by a real bash.
 */
import { execFileSync } from 'node:child_process';
import { linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registeredRoutes } from '@ironlens/core';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAgent } from '@ironlens/metal/testing';
import { CALLS } from './client/api';
import { type ClientIo, runClient } from './client/index';
import { completionScript } from './client/verbs/session';
import { type Running, serve } from './serve';
import { CLIENT, type ClientCommand, COMMAND_USAGE } from './vocabulary';

let dir: string;
let running: Running;
const TOKEN = 'client-test-console-token';
const CP_TOKEN = 'client-test-provisioning-token';
const VOCABULARY: ClientIo['vocabulary'] = { client: CLIENT, commands: Object.keys(COMMAND_USAGE) };

async function cli(argv: string[], env: Record<string, string> = {}, stdin = ''): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runClient(argv[0] as ClientCommand, argv.slice(1), {
    out: (s) => out.push(s),
    err: (s) => err.push(s),
    env: { HOME: dir, XDG_CONFIG_HOME: join(dir, 'config'), IRONLENS_URL: running.urls.console, IRONLENS_TOKEN: TOKEN, ...env },
    readStdin: () => stdin,
    pollMs: 20,
    vocabulary: VOCABULARY,
  });
  return { code, out: out.join(''), err: err.join('') };
}

/** A stand-in HTTP server for what a real serve cannot be made to answer; records each request's path and Authorization. */
async function standIn(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; seen: Array<{ url: string; authorization?: string }>; server: Server }> {
  const seen: Array<{ url: string; authorization?: string }> = [];
  const server = createServer((req, res) => {
    seen.push({ url: String(req.url), authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    answer(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}
const standIns: Server[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ironlens-client-'));
  running = await serve(
    { IRONLENS_DATA_DIR: join(dir, 'data'), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_TOKEN: TOKEN, IPXE_CP_TOKEN: CP_TOKEN, IPXE_CP_DNSMASQ_RELOAD: 'false' },
    () => {},
  );
  for (const m of ['02:00:00:00:00:01', '02:00:00:00:00:02']) expect((await fetch(`${running.urls.boot}/devices/report?mac=${m}`)).status).toBe(200);
});
afterAll(async () => {
  for (const s of standIns) await new Promise((r) => s.close(r));
  await running?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ironlens devices / workers / disks / operations', () => {
  it('lists devices as a table and as the API’s JSON', async () => {
    const t = await cli(['devices', 'list']);
    expect(t.code).toBe(0);
    expect(t.out.split('\n')[0]).toMatch(/^MAC\s+STATE\s+WORKER\s+LAST SEEN$/);
    expect(t.out).toMatch(/^02:00:00:00:00:01\s+pooled\s+-\s+20\d\d-/m);
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
    for (const argv of [
      ['devices'],
      ['devices', 'frobnicate'],
      ['devices', 'show'],
      ['devices', 'list', '--bogus'],
      ['devices', 'list', '-o', 'yaml'],
      ['devices', 'list', '--force'],
      ['devices', 'list', '--state', 'lost'],
      ['disks', 'create', 'gpu-01'],
      ['operations', '--limit', 'ten'],
      ['login', 'extra'],
    ]) {
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

  it('agents, clusters and jobs answer their lists; show of an unknown one says what there is', async () => {
    expect((await cli(['agents', 'list'])).out).toBe('AGENT  URL  ROLES  ENABLED  HEALTHY\n');
    const agent = await cli(['agents', 'show', 'storage-9']);
    expect(agent.code).toBe(1);
    expect(agent.err).toBe('ironlens agents: no agent "storage-9"; the agents are: none\n');
    expect((await cli(['clusters', 'list'])).out).toBe('ID  NAME  READY  DRAFT  CREATED\n');
    expect(JSON.parse((await cli(['clusters', 'list', '--drafts', '-o', 'json'])).out)).toEqual({ items: [] });
    expect((await cli(['clusters', 'show', 'nope'])).code).toBe(1);
    expect((await cli(['jobs', 'list'])).out).toBe('ID  PHASE  PROGRESS  CREATED  ERROR\n');
    expect((await cli(['jobs', 'show', 'bootstrap-000000000000'])).err).toMatch(/^ironlens jobs: 404 /);
  });
});

describe('terminal controls in data from the server (issue 29 item 8)', () => {
  const MAC = '02:00:00:00:00:02';
  // What a device report can carry (`uuid=%1b]0;X%07%1b[2J`): retitle the terminal, clear the screen;
  // and in the fingerprint a CSI as one C1 character, a right-to-left override and a line separator.
  const UUID = '\x1b]0;X\x07\x1b[2J';
  const PRODUCT = 'box\x9b2J\u202Egnp.exe\u2028line\x7f';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters that must never reach the terminal raw
  const RAW = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

  beforeAll(() => {
    // Written into the store directly: the API refuses such values where they enter (harden-metal);
    // what is stored already, or comes from elsewhere, must still print safely.
    const db = new Database(join(dir, 'data', 'ironlens.db'));
    try {
      db.pragma('busy_timeout = 5000');
      expect(db.prepare('UPDATE devices SET uuid = ?, fingerprint = ? WHERE mac = ?').run(UUID, JSON.stringify({ product: PRODUCT }), MAC).changes).toBe(1);
    } finally {
      db.close();
    }
  });

  it('devices show and list print them as \\u escapes, on both listeners; -o json stays JSON that decodes to the stored value', async () => {
    for (const [url, token] of [
      [running.urls.console, TOKEN],
      [running.urls.boot, CP_TOKEN],
    ]) {
      const show = await cli(['devices', 'show', MAC], { IRONLENS_URL: url, IRONLENS_TOKEN: token });
      expect(show.code).toBe(0);
      expect(show.out).not.toMatch(RAW);
      expect(show.out).toMatch(/^uuid\s+\\u001b\]0;X\\u0007\\u001b\[2J$/m);
      expect(show.out).toContain('box\\u009b2J\\u202egnp.exe\\u2028line\\u007f');
      const list = await cli(['devices', 'list', '-o', 'json'], { IRONLENS_URL: url, IRONLENS_TOKEN: token });
      expect(list.out).not.toMatch(RAW);
      const device = JSON.parse(list.out).find((d: { mac: string }) => d.mac === MAC);
      expect(device.uuid).toBe(UUID);
      expect(device.fingerprint.product).toBe(PRODUCT);
    }
  });

  it('an error message from the server is escaped too (standard error)', async () => {
    const s = await standIn((req, res) => {
      res.statusCode = req.url === '/api/metal/healthz' ? 200 : 409;
      res.end(JSON.stringify(req.url === '/api/metal/healthz' ? { status: 'ok' } : { detail: `conflict \x1b[31mred\x1b[0m\u202Eevil` }));
    });
    standIns.push(s.server);
    const r = await cli(['devices', 'revoke', MAC], { IRONLENS_URL: s.url });
    expect(r.code).toBe(1);
    expect(r.err).toBe('ironlens devices: 409 error: conflict \\u001b[31mred\\u001b[0m\\u202eevil\n');
  });
});

describe('the provisioning listener (issue 33 item 7)', () => {
  const boot = () => ({ IRONLENS_URL: running.urls.boot, IRONLENS_TOKEN: CP_TOKEN });

  it('the seed-004 commands work against it as against the console listener', async () => {
    const viaConsole = await cli(['devices', 'list', '-o', 'json']);
    const viaBoot = await cli(['devices', 'list', '-o', 'json'], boot());
    expect(viaBoot.code).toBe(0);
    expect(JSON.parse(viaBoot.out)).toEqual(JSON.parse(viaConsole.out));
    expect((await cli(['workers', 'create', 'gpu-03'], boot())).code).toBe(0);
    expect((await cli(['workers', 'show', 'gpu-03'])).out).toMatch(/^worker_id\s+gpu-03$/m);
    expect((await cli(['operations', '--mac', '02:00:00:00:00:01'], boot())).out).toMatch(/^ID\s+AT\s+OP/);
    expect((await cli(['devices', 'show', '02:00:00:00:00:99'], boot())).err).toMatch(/^ironlens devices: 404 /);
    // Its own token only: the console's is refused there, as the listener decides.
    expect((await cli(['devices', 'list'], { ...boot(), IRONLENS_TOKEN: TOKEN })).err).toContain('401 auth_required');
  });

  it('cluster commands there say which listener serves them, instead of a 404', async () => {
    for (const argv of [['clusters', 'list'], ['jobs', 'list'], ['jobs', 'watch', 'bootstrap-000000000000']]) {
      const r = await cli(argv, boot());
      expect(r.code, argv.join(' ')).toBe(1);
      expect(r.err).toContain(`${running.urls.boot} is the provisioning listener`);
      expect(r.err).toContain('console listener');
      expect(r.err).not.toContain('404');
    }
  });

  it('login works there too (the token is checked on /api/auth, on both listeners)', async () => {
    const env = { XDG_CONFIG_HOME: join(dir, 'config-boot'), IRONLENS_TOKEN: '' };
    expect((await cli(['login', '--url', running.urls.boot], env, `${TOKEN}\n`)).code).toBe(1);
    expect((await cli(['login', '--url', running.urls.boot], env, `${CP_TOKEN}\n`)).code).toBe(0);
    expect((await cli(['devices', 'list'], { ...env, IRONLENS_URL: '' })).code).toBe(0);
  });

  it('asks each URL which listener it is once, without a token', async () => {
    const s = await standIn((req, res) => {
      res.statusCode = req.url === '/api/metal/healthz' ? 404 : 200;
      res.end(req.url === '/api/metal/healthz' ? '{"detail":"Not Found"}' : '{"next_cursor":0,"entries":[]}');
    });
    standIns.push(s.server);
    for (let i = 0; i < 2; i++) expect((await cli(['operations'], { IRONLENS_URL: s.url, IRONLENS_TOKEN: 'x' })).code).toBe(0);
    expect(s.seen).toEqual([{ url: '/api/metal/healthz' }, { url: '/operations', authorization: 'Bearer x' }, { url: '/operations', authorization: 'Bearer x' }]);
  });
});

describe('answers are checked against their route’s schema', () => {
  it('an answer of the wrong shape stops the command with where it differs (exit 1), not a crash', async () => {
    // A real device of the real serve, with one field of the wrong type.
    const real = JSON.parse((await cli(['devices', 'list', '-o', 'json'])).out)[0];
    const s = await standIn((req, res) => {
      res.end(req.url === '/api/metal/healthz' ? '{"status":"ok"}' : JSON.stringify([{ ...real, mac: 5 }]));
    });
    standIns.push(s.server);
    const r = await cli(['devices', 'list'], { IRONLENS_URL: s.url });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^ironlens devices: GET \/api\/metal\/devices answered what its schema does not allow \(at \/0\/mac: Expected string\)/);
  });

  it('every call’s route and answer schema are the ones its route declares, on the listener the call goes to', () => {
    for (const [name, c] of Object.entries(CALLS)) {
      const app = c.api === 'metal' ? running.apps.boot : running.apps.console;
      const url = c.route.replace(/\{(\w+)\}/g, ':$1');
      const route = registeredRoutes(app).find((r) => r.method === c.method && r.url === url);
      expect(route, `${name}: ${c.method} ${c.route}`).toBeDefined();
      expect(JSON.parse(JSON.stringify(route?.response?.[c.status] ?? null)), `${name}: ${c.method} ${c.route} ${c.status}`).toEqual(JSON.parse(JSON.stringify(c.answer)));
    }
  });
});

describe('ironlens login / logout', () => {
  const FILE = () => join(dir, 'config', 'ironlens', 'cli.json');

  it('checks the token, then saves URL and token 0600; later commands use them', async () => {
    expect((await cli(['login'], { IRONLENS_TOKEN: '' }, 'wrong-token\n')).code).toBe(1);
    const ok = await cli(['login'], { IRONLENS_TOKEN: '' }, `${TOKEN}\n`);
    expect(ok.code).toBe(0);
    expect(statSync(FILE()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(FILE(), 'utf8'))).toEqual({ url: running.urls.console, token: TOKEN });
    expect((await cli(['devices', 'list'], { IRONLENS_TOKEN: '', IRONLENS_URL: '' })).code).toBe(0);
    expect((await cli(['logout'])).code).toBe(0);
    expect((await cli(['devices', 'list'], { IRONLENS_TOKEN: '', IRONLENS_URL: running.urls.console })).code).toBe(1);
  });

  it('saving the token writes through nothing planted: not at the old .partial name, not a symlink where the file goes (review 1, M1)', async () => {
    rmSync(join(dir, 'config'), { recursive: true, force: true });
    mkdirSync(join(dir, 'config', 'ironlens'), { recursive: true, mode: 0o700 });
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'theirs');
    writeFileSync(`${FILE()}.partial`, '', { mode: 0o666 });
    linkSync(`${FILE()}.partial`, join(dir, 'partial.kept'));
    symlinkSync(victim, FILE());
    expect((await cli(['login'], { IRONLENS_TOKEN: '' }, `${TOKEN}\n`)).code).toBe(0);
    expect(readFileSync(join(dir, 'partial.kept'), 'utf8')).toBe('');
    expect(readFileSync(victim, 'utf8')).toBe('theirs');
    expect(lstatSync(FILE()).isFile()).toBe(true);
    expect(statSync(FILE()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(FILE(), 'utf8'))).toEqual({ url: running.urls.console, token: TOKEN });
    expect(readdirSync(join(dir, 'config', 'ironlens')).sort()).toEqual(['cli.json', 'cli.json.partial']);
  });

  it('the saved token goes to its own URL only: another --url does not get it, and is told what to do (issue 29 item 11)', async () => {
    expect((await cli(['login'], { IRONLENS_TOKEN: '' }, `${TOKEN}\n`)).code).toBe(0);
    const other = await standIn((req, res) => {
      res.statusCode = req.url === '/api/metal/healthz' ? 200 : 401;
      res.end(req.url === '/api/metal/healthz' ? '{"status":"ok"}' : '{"detail":"Unauthorized"}');
    });
    standIns.push(other.server);
    const r = await cli(['devices', 'list', '--url', other.url], { IRONLENS_TOKEN: '', IRONLENS_URL: '' });
    expect(r.code).toBe(1);
    expect(other.seen.map((s) => s.authorization)).toEqual([undefined, undefined]);
    expect(r.err).toContain(`401 auth_required: Unauthorized (the token \`ironlens login\` saved is for ${running.urls.console}, and is sent nowhere else: \`ironlens login --url ${other.url}\``);
    // The same origin, written with a path: the token is sent.
    expect((await cli(['devices', 'list', '--url', `${running.urls.console}/`], { IRONLENS_TOKEN: '', IRONLENS_URL: '' })).code).toBe(0);
    // An explicit IRONLENS_TOKEN goes wherever the command is pointed.
    expect((await cli(['operations', '--url', other.url], { IRONLENS_TOKEN: 'explicit', IRONLENS_URL: '' })).code).toBe(1);
    expect(other.seen.at(-1)?.authorization).toBe('Bearer explicit');
  });

  it('a saved login that cannot be read stops the command with which file and why, instead of logging out (issue 32 item 7)', async () => {
    mkdirSync(join(dir, 'config', 'ironlens'), { recursive: true });
    for (const [text, why] of [
      ['{"url": "http://127.0.0.1:8080", "token": ', 'is not valid JSON'],
      ['{"url": "http://127.0.0.1:8080", "token": 7}', 'is not a login ({"url": …, "token": …}; /token: Expected string)'],
      ['["http://127.0.0.1:8080"]', 'is not a login'],
    ]) {
      writeFileSync(FILE(), text, { mode: 0o600 });
      const r = await cli(['devices', 'list'], { IRONLENS_TOKEN: '', IRONLENS_URL: '' });
      expect(r.code, text).toBe(1);
      expect(r.err).toContain(`ironlens devices: the saved login ${FILE()} ${why}`);
      expect(r.err).toContain('`ironlens logout` removes it');
      expect(readFileSync(FILE(), 'utf8')).toBe(text);
    }
    // Not needed when the environment gives both URL and token.
    expect((await cli(['devices', 'list'])).code).toBe(0);
    expect((await cli(['logout'])).code).toBe(0);
    expect(readFileSync(FILE(), 'utf8')).toBe('{}\n');
    expect((await cli(['devices', 'list'], { IRONLENS_TOKEN: '' })).err).toContain('401 auth_required');
  });
});

describe('ironlens jobs watch', () => {
  it('prints a progress bar per phase change and exits 0 when the job succeeded, 1 when it failed', async () => {
    // A stand-in of the console listener's bootstrap list (GET /api/cluster/bootstrap, in its schema's shape), stepping
    // each job through its phases one read at a time: what a real bootstrap needs (SSH hosts, Kubespray) is not here.
    const job = (id: string, phase: string, error: string | null = null) => ({
      id,
      phase,
      error,
      nodes: [{ host: '10.0.0.1', port: 22, roles: ['control-plane'], username: 'root' }],
      register: { name: 'lab' },
      clusterId: phase === 'succeeded' ? 'c0ffee01' : null,
      kubeconfigDelivered: false,
      createdAt: '2026-12-01T10:00:00Z',
      finishedAt: null,
    });
    const steps: Record<string, Array<[string, string | null]>> = {
      'bootstrap-00000000000a': [['queued', null], ['preflight', null], ['preflight', null], ['running', null], ['succeeded', null]],
      'bootstrap-00000000000b': [['running', null], ['failed', 'kubespray exited 2\x1b[2J']],
    };
    const reads: Record<string, number> = {};
    const s = await standIn((req, res) => {
      if (req.url === '/api/metal/healthz') return res.end('{"status":"ok"}');
      const items = Object.entries(steps).map(([id, list]) => {
        const i = Math.min(reads[id] ?? 0, list.length - 1);
        return job(id, ...list[i]);
      });
      for (const id of Object.keys(steps)) reads[id] = (reads[id] ?? 0) + 1;
      res.end(JSON.stringify({ items }));
    });
    standIns.push(s.server);
    const ok = await cli(['jobs', 'watch', 'bootstrap-00000000000a'], { IRONLENS_URL: s.url });
    expect(ok.code).toBe(0);
    expect(ok.out).toBe(['[....................]   0% queued', '[####................]  20% preflight', '[############........]  60% running', '[####################] 100% succeeded', ''].join('\n'));
    for (const id of Object.keys(steps)) reads[id] = 0;
    const bad = await cli(['jobs', 'watch', 'bootstrap-00000000000b'], { IRONLENS_URL: s.url });
    expect(bad.code).toBe(1);
    expect(bad.out).toBe(['[############........]  60% running', '[############........]  60% failed', ''].join('\n'));
    expect(bad.err).toBe('ironlens jobs: bootstrap-00000000000b failed: kubespray exited 2\\u001b[2J\n');
    expect((await cli(['jobs', 'watch', 'bootstrap-00000000000c'], { IRONLENS_URL: s.url })).err).toContain('no bootstrap job "bootstrap-00000000000c"');
  });
});

describe('ironlens rollouts (issue 31)', () => {
  it('creates a rollout, lists and shows it (a worker rolled back: the agent refuses the new disk), resumes and aborts it', async () => {
    const agent = await new FakeAgent({ masters: ['_tpl_a.img', '_tpl_b.img'] }).start();
    const metal = (method: string, path: string, body?: unknown) =>
      fetch(`${running.urls.boot}${path}`, { method, headers: { authorization: `Bearer ${CP_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
    try {
      expect((await metal('POST', '/agents', { id: 'ro-agent', base_url: agent.url, role: { disk: true, cd: false } })).status).toBe(201);
      for (const [i, id] of ['ro-01', 'ro-02'].entries()) {
        expect((await metal('POST', '/devices', { mac: `02:00:00:31:00:0${i + 1}` })).status).toBe(201);
        expect((await metal('POST', '/workers', { worker_id: id, mac: `02:00:00:31:00:0${i + 1}` })).status).toBe(200);
        expect((await metal('POST', `/workers/${id}/luns/disk`, { type: 'master', os: 'debian', name: '_tpl_a.img', disk_agent: 'ro-agent' })).status).toBe(200);
      }
      agent.handlers.set('POST /luns/disk', (_call, res) => {
        res.writeHead(507, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ detail: 'no space left' }));
      });
      expect((await cli(['rollouts', 'create', '--master', '_tpl_b.img', '--max-unavailable', '1'])).code).toBe(2);
      expect((await cli(['rollouts', 'create', '--master', '_tpl_b.img', '--max-unavailable', '0', '--prefix', 'ro-'])).code).toBe(2);
      const created = await cli(['rollouts', 'create', '--master', '_tpl_b.img', '--max-unavailable', '50%', '--prefix', 'ro-', '-o', 'json']);
      expect(created.code, created.err).toBe(0);
      const id = (JSON.parse(created.out) as { id: string; batch_size: number }).id;
      expect(JSON.parse(created.out)).toMatchObject({ master: '_tpl_b.img', max_unavailable: '50%', batch_size: 1 });
      const until = async (state: string) => {
        for (let i = 0; i < 200; i++) {
          const r = JSON.parse((await cli(['rollouts', 'show', id, '-o', 'json'])).out) as { state: string };
          if (r.state === state) return;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`rollout ${id} never ${state}`);
      };
      await until('paused');
      const show = await cli(['rollouts', 'show', id]);
      expect(show.code).toBe(0);
      expect(show.out.split('\n')[0]).toMatch(new RegExp(`^${id}  _tpl_b\\.img  paused: batch 1: ro-01 was rolled back: `));
      expect(show.out).toMatch(/^WORKER\s+BATCH\s+PHASE\s+NODE\s+LAST STEP\s+REASON$/m);
      expect(show.out).toMatch(/^ro-01\s+1\s+rolled_back\s/m);
      expect(show.out).toMatch(/^ro-02\s+2\s+queued\s/m);
      const list = await cli(['rollouts', 'list']);
      expect(list.out).toMatch(new RegExp(`^${id}\\s+_tpl_b\\.img\\s+paused\\s+0/2\\s+1\\s+50%`, 'm'));
      expect((await cli(['rollouts', 'pause', id])).code).toBe(1);
      expect((await cli(['rollouts', 'resume', id, '--no-retry'])).code).toBe(0);
      await until('paused');
      expect((await cli(['rollouts', 'abort', id])).code).toBe(0);
      await until('aborted');
      // --no-retry left ro-01 rolled back; ro-02 was refused the same way before the abort.
      const end = JSON.parse((await cli(['rollouts', 'show', id, '-o', 'json'])).out) as { workers: Array<{ worker_id: string; phase: string }> };
      expect(end.workers.map((w) => [w.worker_id, w.phase])).toEqual([
        ['ro-01', 'rolled_back'],
        ['ro-02', 'rolled_back'],
      ]);
    } finally {
      await agent.stop();
    }
  });
});

describe('ironlens completion', () => {
  it('bash completes commands and verbs', () => {
    const script = join(dir, 'completion.bash');
    writeFileSync(script, completionScript('bash', { client: CLIENT, commands: ['serve', 'agent'] }));
    const complete = (words: string) =>
      execFileSync('bash', ['-c', `source ${script}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _ironlens; echo "\${COMPREPLY[*]}"`], { encoding: 'utf8' }).trim();
    expect(complete('ironlens dev')).toBe('devices');
    expect(complete('ironlens se')).toBe('serve');
    expect(complete('ironlens devices b')).toBe('bind');
    expect(complete('ironlens jobs w')).toBe('watch');
    expect(completionScript('zsh', VOCABULARY)).toMatch(/^#compdef ironlens\n/);
  });
});
