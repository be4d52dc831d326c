/**
 * The day-to-day commands (issue 23): `ironlens devices|workers|disks|agents|clusters|jobs|
 * operations …`, a client of a running ironlens over its HTTP API: the console listener
 * (`--url` / `IRONLENS_URL`, default `http://127.0.0.1:8080`), where the provisioning API is
 * reached under `/api/metal` as the console reaches it, and the cluster manager at its own paths.
 * The token comes from `IRONLENS_TOKEN`, else from the config file `ironlens login` writes
 * (`$XDG_CONFIG_HOME/ironlens/cli.json`, mode 0600). Exit codes: 0; 1 on an API error (its
 * status and code printed); 2 on a usage error.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';

import type { ClientCommand } from './main';

export type { ClientCommand };

export class UsageError extends Error {}
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

interface Saved {
  url?: string;
  token?: string;
}

export function configFile(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), '.config'), 'ironlens', 'cli.json');
}

function readSaved(env: NodeJS.ProcessEnv): Saved {
  const f = configFile(env);
  if (!existsSync(f)) return {};
  try {
    return JSON.parse(readFileSync(f, 'utf8')) as Saved;
  } catch {
    return {};
  }
}

/** Options after the verb: `--name value`, `--flag`, `-o json`; the rest are positionals. */
function parse(argv: string[], valued: string[], switches: string[]): { pos: string[]; opts: Record<string, string>; flags: Set<string>; help: boolean } {
  const pos: string[] = [];
  const opts: Record<string, string> = {};
  const flags = new Set<string>();
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') help = true;
    else if (a === '-o' || a === '--output' || a.startsWith('--output=')) {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (v !== 'json' && v !== 'table') throw new UsageError(`-o takes json or table, got ${JSON.stringify(v ?? '')}`);
      opts.output = v;
    } else if (a.startsWith('--')) {
      const [name, inline] = a.includes('=') ? [a.slice(2, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a.slice(2), undefined];
      if (name === 'url' || valued.includes(name)) {
        const v = inline ?? argv[++i];
        if (v === undefined) throw new UsageError(`--${name} needs a value`);
        opts[name] = v;
      } else if (switches.includes(name) && inline === undefined) flags.add(name);
      else throw new UsageError(`unknown option ${a}`);
    } else if (a.startsWith('-') && a !== '-') throw new UsageError(`unknown option ${a}`);
    else pos.push(a);
  }
  return { pos, opts, flags, help };
}

/** A small HTTP client of one ironlens. */
export class IronlensClient {
  constructor(
    readonly url: string,
    private readonly token: string | undefined,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await this.fetchImpl(new URL(path, this.url), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
    } catch (err) {
      throw new ApiError(0, 'unreachable', `cannot reach ${this.url}: ${(err as Error).cause ? String(((err as Error).cause as Error).message ?? (err as Error).cause) : (err as Error).message}`);
    }
    const text = await res.text();
    let json: unknown = text;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: kept as text
    }
    if (!res.ok) {
      const o = (json && typeof json === 'object' ? json : {}) as Record<string, unknown>;
      const code = typeof o.code === 'string' ? o.code : res.status === 401 ? 'auth_required' : undefined;
      const detail = typeof o.detail === 'string' ? o.detail : Array.isArray(o.detail) ? JSON.stringify(o.detail) : typeof o.message === 'string' ? o.message : typeof o.error === 'string' ? o.error : typeof o.title === 'string' ? o.title : String(text).slice(0, 300);
      throw new ApiError(res.status, code, detail);
    }
    return json;
  }
}

const metal = (p: string) => `/api/metal${p}`;
const enc = encodeURIComponent;

type Row = Record<string, unknown>;

/** A plain table: a header row and left-aligned columns (no colour: scripts read it too). */
export function table(rows: Row[], columns: Array<[string, (r: Row) => unknown]>): string {
  const cells = rows.map((r) => columns.map(([, f]) => fmt(f(r))));
  const head = columns.map(([h]) => h.toUpperCase());
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]))).join('  ').trimEnd();
  return `${[line(head), ...cells.map(line)].join('\n')}\n`;
}

function fmt(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (Array.isArray(v)) return v.length ? v.map(fmt).join(',') : '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v).replace(/[\r\n\t]/g, ' ');
}

/** `key: value` lines of one object (nested values as JSON). */
function details(o: Row): string {
  const w = Math.max(...Object.keys(o).map((k) => k.length));
  return `${Object.entries(o)
    .map(([k, v]) => `${k.padEnd(w)}  ${fmt(v)}`)
    .join('\n')}\n`;
}

const DEVICE_COLUMNS: Array<[string, (r: Row) => unknown]> = [
  ['mac', (r) => r.mac],
  ['state', (r) => r.state],
  ['worker', (r) => r.bound_worker_id],
  ['last seen', (r) => r.last_seen_at ?? r.last_seen],
];
const WORKER_COLUMNS: Array<[string, (r: Row) => unknown]> = [
  ['worker', (r) => r.worker_id],
  ['hostname', (r) => r.hostname],
  ['mac', (r) => r.mac],
  ['state', (r) => r.state],
  ['disks', (r) => ((r.disks as Row[] | undefined) ?? []).map((d) => d.os)],
];

export interface ClientIo {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
  readStdin: () => string;
  fetch?: typeof fetch;
  /** Poll interval of `jobs watch`. Default is 1000 ms. */
  pollMs?: number;
  /** Every command of \`ironlens\`, for the completion script. */
  commands: string[];
  /** The client commands' usage texts and verbs (kept in main.ts, which holds every usage text). */
  usage: Record<ClientCommand, string>;
  verbs: Record<ClientCommand, string[]>;
}

/** Runs one client command line; resolves to the exit code. */
export async function runClient(cmd: ClientCommand, argv: string[], io: ClientIo): Promise<number> {
  try {
    return await dispatch(cmd, argv, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`ironlens ${cmd}: ${err.message}\n${io.usage[cmd]}`);
      return 2;
    }
    if (err instanceof ApiError) {
      io.err(`ironlens ${cmd}: ${err.status ? `${err.status} ` : ''}${err.code ?? 'error'}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

async function dispatch(cmd: ClientCommand, argv: string[], io: ClientIo): Promise<number> {
  const valued = ['state', 'mac', 'hostname', 'os', 'master', 'size', 'agent', 'limit'];
  const switches = ['force', 'network', 'delete-disk', 'delete-file'];
  const { pos, opts, flags, help } = parse(argv, valued, switches);
  const VERBS = io.verbs;
  if (help) {
    io.out(io.usage[cmd]);
    return 0;
  }
  if (cmd === 'completion') {
    const shell = pos[0];
    if (shell !== 'bash' && shell !== 'zsh') throw new UsageError('bash or zsh');
    io.out(completionScript(shell, io.commands, io.verbs));
    return 0;
  }
  const saved = readSaved(io.env);
  const url = opts.url || io.env.IRONLENS_URL || saved.url || 'http://127.0.0.1:8080';
  if (!/^https?:\/\/[^\s/]+/.test(url)) throw new UsageError(`--url must be an http(s) URL, got ${JSON.stringify(url)}`);
  if (cmd === 'logout') {
    const f = configFile(io.env);
    if (existsSync(f)) writeFileSync(f, '{}\n', { mode: 0o600 });
    io.out(`forgot the saved URL and token (${f})\n`);
    return 0;
  }
  if (cmd === 'login') {
    const token = io.readStdin().split(/\r?\n/)[0]?.trim();
    if (!token) throw new UsageError('the token is read from standard input (first line)');
    await new IronlensClient(url, token, io.fetch).call('GET', '/api/cluster/clusters');
    const f = configFile(io.env);
    mkdirSync(dirname(f), { recursive: true, mode: 0o700 });
    writeFileSync(`${f}.partial`, `${JSON.stringify({ url, token })}\n`, { mode: 0o600 });
    chmodSync(`${f}.partial`, 0o600);
    renameSync(`${f}.partial`, f);
    io.out(`logged in to ${url}; saved in ${f} (mode 0600)\n`);
    return 0;
  }
  const c = new IronlensClient(url, io.env.IRONLENS_TOKEN || saved.token, io.fetch);
  const json = opts.output === 'json';
  const verb = pos[0] ?? (cmd === 'operations' ? 'list' : undefined);
  if (!verb) throw new UsageError(`a verb is needed: ${VERBS[cmd].join(', ')}`);
  if (!VERBS[cmd].includes(verb)) throw new UsageError(`unknown verb ${JSON.stringify(verb)}: ${VERBS[cmd].join(', ')}`);
  const args = pos.slice(1);
  const need = (n: number, what: string) => {
    if (args.length !== n) throw new UsageError(`${cmd} ${verb} takes ${what}`);
  };
  const print = (value: unknown, render: () => string) => io.out(json ? `${JSON.stringify(value, null, 2)}\n` : render());

  switch (`${cmd} ${verb}`) {
    case 'devices list': {
      need(0, 'no arguments');
      const q = opts.state ? `?state=${enc(opts.state)}` : '';
      const rows = (await c.call('GET', metal(`/devices${q}`))) as Row[];
      print(rows, () => table(rows, DEVICE_COLUMNS));
      return 0;
    }
    case 'devices show':
    case 'devices create':
    case 'devices revoke':
    case 'devices unbind': {
      need(1, 'a MAC');
      const m = enc(args[0]);
      const r = (await (verb === 'show'
        ? c.call('GET', metal(`/devices/${m}`))
        : verb === 'create'
          ? c.call('POST', metal('/devices'), { mac: args[0] })
          : verb === 'revoke'
            ? c.call('DELETE', metal(`/devices/${m}`))
            : c.call('DELETE', metal(`/devices/${m}/bind`)))) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'devices bind': {
      need(2, 'a MAC and a worker id');
      const r = (await c.call('POST', metal(`/devices/${enc(args[0])}/bind?worker_id=${enc(args[1])}${flags.has('force') ? '&force=true' : ''}`))) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'devices power': {
      need(2, 'a MAC and on, off, cycle or soft-off');
      if (!['on', 'off', 'cycle', 'soft-off'].includes(args[1])) throw new UsageError('the action is on, off, cycle or soft-off');
      const r = (await c.call('POST', metal(`/devices/${enc(args[0])}/power`), { action: args[1], boot: flags.has('network') ? 'network' : null })) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'workers list': {
      need(0, 'no arguments');
      const rows = (await c.call('GET', metal('/workers'))) as Row[];
      print(rows, () => table(rows, WORKER_COLUMNS));
      return 0;
    }
    case 'workers show': {
      need(1, 'a worker id');
      const r = (await c.call('GET', metal(`/workers/${enc(args[0])}`))) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'workers create': {
      need(1, 'a worker id');
      const body: Row = { worker_id: args[0] };
      if (opts.mac) body.mac = opts.mac;
      if (opts.hostname) body.hostname = opts.hostname;
      const r = (await c.call('POST', metal('/workers'), body)) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'workers delete': {
      need(1, 'a worker id');
      const r = (await c.call('DELETE', metal(`/workers/${enc(args[0])}${flags.has('delete-disk') ? '?delete_disk=true' : ''}`))) as Row;
      print(r, () => details(r ?? { deleted: args[0] }));
      return 0;
    }
    case 'disks list': {
      need(1, 'a worker id');
      const w = (await c.call('GET', metal(`/workers/${enc(args[0])}`))) as Row;
      const rows = ((w.disks as Row[] | undefined) ?? []) as Row[];
      print(rows, () => table(rows, [['os', (r) => r.os], ['iqn', (r) => r.iqn], ['agent', (r) => r.agent], ['file', (r) => r.backing_file ?? r.file]]));
      return 0;
    }
    case 'disks create': {
      need(1, 'a worker id (and --os)');
      if (!opts.os) throw new UsageError('--os is needed');
      const body: Row = { type: opts.master ? 'master' : 'empty', os: opts.os };
      if (opts.master) body.name = opts.master;
      if (opts.size) body.size = opts.size;
      if (opts.agent) body.disk_agent = opts.agent;
      const r = (await c.call('POST', metal(`/workers/${enc(args[0])}/luns/disk`), body)) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'disks delete': {
      need(2, 'a worker id and an os');
      const r = (await c.call('DELETE', metal(`/workers/${enc(args[0])}/luns/disk/${enc(args[1])}${flags.has('delete-file') ? '?delete_file=true' : ''}`))) as Row;
      print(r, () => details(r ?? { deleted: `${args[0]} ${args[1]}` }));
      return 0;
    }
    case 'agents list': {
      need(0, 'no arguments');
      const rows = (await c.call('GET', metal('/agents'))) as Row[];
      print(rows, () => table(rows, [['agent', (r) => r.agent_id ?? r.id], ['url', (r) => r.base_url], ['roles', (r) => r.roles], ['enabled', (r) => r.enabled], ['healthy', (r) => (r.health as Row | undefined)?.ok ?? r.healthy]]));
      return 0;
    }
    case 'agents show': {
      need(1, 'an agent id');
      const r = (await c.call('GET', metal(`/agents/${enc(args[0])}`))) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'clusters list': {
      need(0, 'no arguments');
      const r = (await c.call('GET', '/api/cluster/clusters')) as Row | Row[];
      const rows = (Array.isArray(r) ? r : ((r.clusters ?? r.items ?? []) as Row[])) as Row[];
      print(r, () => table(rows, [['id', (x) => x.id], ['name', (x) => x.name], ['ready', (x) => x.ready ?? x.status], ['server', (x) => x.server ?? x.apiServer]]));
      return 0;
    }
    case 'clusters show': {
      need(1, 'a cluster id');
      const r = (await c.call('GET', `/api/cluster/clusters/${enc(args[0])}`)) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'jobs list': {
      need(0, 'no arguments');
      const r = (await c.call('GET', '/api/cluster/bootstrap')) as Row | Row[];
      const rows = (Array.isArray(r) ? r : ((r.items ?? r.jobs ?? []) as Row[])) as Row[];
      print(r, () => table(rows, [['id', (x) => x.id], ['status', (x) => x.status], ['phase', (x) => x.phase ?? x.stage], ['progress', (x) => x.progress ?? x.percent], ['created', (x) => x.createdAt ?? x.created_at]]));
      return 0;
    }
    case 'jobs show': {
      need(1, 'a job id');
      const r = (await c.call('GET', `/api/cluster/bootstrap/${enc(args[0])}`)) as Row;
      print(r, () => details(r));
      return 0;
    }
    case 'jobs watch': {
      need(1, 'a job id');
      return watchJob(c, args[0], io, json);
    }
    case 'operations list': {
      need(0, 'no arguments');
      const q = new URLSearchParams();
      if (opts.limit) q.set('limit', opts.limit);
      if (opts.mac) q.set('mac', opts.mac);
      const r = (await c.call('GET', metal(`/operations${q.size ? `?${q}` : ''}`))) as Row;
      const rows = ((r.entries as Row[] | undefined) ?? []) as Row[];
      print(r, () => table(rows, [['id', (x) => x.id], ['at', (x) => x.ts ?? x.at ?? x.time], ['op', (x) => x.op], ['actor', (x) => x.actor], ['subject', (x) => x.mac ?? x.worker_id ?? x.agent_id]]));
      return 0;
    }
  }
  throw new UsageError(`unknown verb ${verb}`);
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'canceled', 'completed', 'error']);

/** Follows a bootstrap job: one progress line per change (a bar on a terminal), until it ends. */
async function watchJob(c: IronlensClient, id: string, io: ClientIo, json: boolean): Promise<number> {
  let last = '';
  for (;;) {
    const j = (await c.call('GET', `/api/cluster/bootstrap/${enc(id)}`)) as Row;
    const status = String(j.status ?? 'unknown');
    const pct = Math.max(0, Math.min(100, Number(j.progress ?? j.percent ?? 0) || 0));
    const phase = String(j.phase ?? j.stage ?? '');
    const line = json ? JSON.stringify({ status, progress: pct, phase }) : `[${'#'.repeat(Math.round(pct / 5)).padEnd(20, '.')}] ${String(pct).padStart(3)}% ${status}${phase ? ` ${phase}` : ''}`;
    if (line !== last) io.out(`${line}\n`);
    last = line;
    if (TERMINAL.has(status)) return status === 'succeeded' || status === 'completed' ? 0 : 1;
    // Not core's `sleep`: the client commands load nothing of the server packages (a fast start).
    await new Promise((r) => setTimeout(r, io.pollMs ?? 1000));
  }
}

/** A completion script for bash or zsh, from the command and verb tables. */
export function completionScript(shell: 'bash' | 'zsh', commands: string[], verbs: Record<string, string[]>): string {
  const all = [...new Set([...commands, ...Object.keys(verbs)])];
  const cases = Object.entries(verbs)
    .filter(([, v]) => v.length)
    .map(([c, v]) => `    ${c}) COMPREPLY=( $(compgen -W "${v.join(' ')} --help --url -o" -- "$cur") ) ;;`)
    .join('\n');
  const bash = `# bash completion for ironlens: source <(ironlens completion bash)
_ironlens() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${all.join(' ')} --help" -- "$cur") )
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases}
    *) COMPREPLY=( $(compgen -W "--help" -- "$cur") ) ;;
  esac
}
complete -F _ironlens ironlens
`;
  if (shell === 'bash') return bash;
  return `#compdef ironlens
# zsh completion for ironlens (bash's, through bashcompinit)
autoload -U +X bashcompinit && bashcompinit
${bash}`;
}
