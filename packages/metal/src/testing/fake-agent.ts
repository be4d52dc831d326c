import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** A target a {@link FakeAgent} holds (`master`: the master its disk was cloned from). */
export interface FakeTarget {
  backing: string;
  filename: string;
  master?: string;
  initiator?: string;
  chap_user?: string;
}

export interface FakeAgentCall {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  authorization: string | undefined;
}

type Handler = (call: FakeAgentCall, res: ServerResponse) => void | Promise<void>;

export interface FakeAgentOptions {
  /** Bearer token it requires on every path but `/healthz`. Default is none (auth off, like the real agent without a token). */
  token?: string;
  /** Master image names `/masters` lists. Default is none. */
  masters?: string[];
  /** Default is `iqn.2026-07.com.controller`. */
  baseIqn?: string;
  /** Delay of every answer, ms (the rollout benchmark's stand-in latency). Default is `0`. */
  latencyMs?: number | ((call: FakeAgentCall) => number);
}

/**
 * A stand-in for the storage agent's HTTP protocol (packages/agent), for failure paths a
 * real agent will not produce on demand: garbage answers, hangs, a ledger write that fails
 * after the agent made a disk, a rogue agent. It records every call. Without an override
 * it answers like the real agent: it keeps the targets it made (`/luns`), answers 409 for
 * an IQN it has, 404 for one it has not, 401 for a wrong token. The contract test
 * (`adapters/storage-agent.contract.test.ts`) runs the same checks against it and the real
 * agent, so the two cannot drift apart.
 */
export class FakeAgent {
  readonly calls: FakeAgentCall[] = [];
  private server: Server | undefined;
  url = '';
  /** Per `METHOD /path` override. */
  readonly handlers = new Map<string, Handler>();
  /** The targets it holds, by IQN. */
  readonly targets = new Map<string, FakeTarget>();
  /** Targets removed with their file kept (what the real agent's index remembers): a scan makes them again. */
  readonly kept = new Map<string, FakeTarget>();

  constructor(private readonly opts: FakeAgentOptions = {}) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const addr = this.server.address();
    this.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const u = new URL(req.url ?? '/', 'http://x');
    const text = Buffer.concat(chunks).toString();
    const call: FakeAgentCall = { method: req.method ?? 'GET', path: u.pathname, query: Object.fromEntries(u.searchParams), body: text ? JSON.parse(text) : null, authorization: req.headers.authorization };
    this.calls.push(call);
    const delay = typeof this.opts.latencyMs === 'function' ? this.opts.latencyMs(call) : (this.opts.latencyMs ?? 0);
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const h = this.handlers.get(`${call.method} ${call.path}`);
    if (h) return h(call, res);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (call.path === '/healthz') return json(200, { status: 'ok' });
    if (this.opts.token && call.authorization !== `Bearer ${this.opts.token}`) return json(401, { detail: 'missing or invalid bearer token' });
    const answer = this.answer(call);
    json(answer.status, answer.body);
  }

  /** The real agent's happy and not-found paths, for the endpoints the control plane calls. */
  private answer(call: FakeAgentCall): { status: number; body: unknown } {
    const baseIqn = this.opts.baseIqn ?? 'iqn.2026-07.com.controller';
    const route = `${call.method} ${call.path}`;
    if (route === 'GET /capabilities') return { status: 200, body: { backend: 'stgt', base_iqn: baseIqn, cd: true, fs_type: 'xfs' } };
    if (route === 'GET /masters') return { status: 200, body: { masters: (this.opts.masters ?? []).map((name) => ({ name, size: 0, mtime: 0 })) } };
    if (route === 'GET /luns') {
      const body = [...this.targets].map(([iqn, t], i) => ({ iqn, tid: i + 1, luns: [{ backing: t.backing }], acl: t.initiator ? [t.initiator] : ['ALL'], ...(t.chap_user ? { accounts: [t.chap_user] } : {}) }));
      return { status: 200, body };
    }
    if (route === 'POST /luns/disk' || route === 'POST /luns/cd') {
      const b = call.body as { iqn?: string; filename?: string; iso?: string; master?: string; initiator?: string; chap?: { user: string } };
      const filename = route === 'POST /luns/cd' ? String(b.iso) : (b.filename ?? `${String(b.iqn).split(':').pop()}.img`);
      const iqn = b.iqn ?? `${baseIqn}:${filename.toLowerCase()}`;
      if (this.targets.has(iqn)) return { status: 409, body: { detail: `iqn already exists: ${iqn}` } };
      if (b.master !== undefined && !(this.opts.masters ?? []).includes(b.master)) return { status: 404, body: { detail: `master not found: ${b.master}` } };
      const t = { backing: `/images/${filename}`, filename, ...(b.master !== undefined ? { master: b.master } : {}) };
      // Like the real agent: the initiator and the CHAP user are answered, the secret never.
      const access = { ...(b.initiator ? { initiator: b.initiator } : {}), ...(b.chap ? { chap_user: b.chap.user } : {}) };
      this.targets.set(iqn, { ...t, ...access });
      this.kept.delete(iqn);
      return { status: 200, body: { iqn, backing: t.backing, filename: t.filename, ...(route === 'POST /luns/disk' ? { clone: null } : {}), ...access } };
    }
    if (route === 'DELETE /luns') {
      const deleteFile = call.query.delete_file === 'true';
      const t = this.targets.get(call.query.iqn);
      if (!t) {
        if (deleteFile) this.kept.delete(call.query.iqn);
        if (call.query.ignore_missing === 'true') return { status: 200, body: { deleted: call.query.iqn, delete_file: deleteFile, ignored_missing: true } };
        return { status: 404, body: { detail: 'iqn not found' } };
      }
      this.targets.delete(call.query.iqn);
      if (!deleteFile) this.kept.set(call.query.iqn, t);
      return { status: 200, body: { deleted: call.query.iqn, delete_file: deleteFile } };
    }
    if (route === 'POST /luns/scan') {
      const created = [...this.kept].map(([iqn, t]) => ({ iqn, cd: false, filename: t.filename }));
      for (const [iqn, t] of this.kept) this.targets.set(iqn, t);
      this.kept.clear();
      return { status: 200, body: { created, skipped: [] } };
    }
    return { status: 404, body: { detail: 'Not Found' } };
  }

  /** The target is lost while its file stays (a tgtd restart, a `tgtadm --op delete` by hand): the next scan makes it again. */
  dropTarget(iqn: string): void {
    const t = this.targets.get(iqn);
    if (!t) return;
    this.targets.delete(iqn);
    this.kept.set(iqn, t);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
