import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

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
  readonly targets = new Map<string, { backing: string; filename: string; initiator?: string; chap_user?: string }>();

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
      const b = call.body as { iqn?: string; filename?: string; iso?: string; initiator?: string; chap?: { user: string } };
      const filename = route === 'POST /luns/cd' ? String(b.iso) : (b.filename ?? `${String(b.iqn).split(':').pop()}.img`);
      const iqn = b.iqn ?? `${baseIqn}:${filename.toLowerCase()}`;
      if (this.targets.has(iqn)) return { status: 409, body: { detail: `iqn already exists: ${iqn}` } };
      const t = { backing: `/images/${filename}`, filename };
      // Like the real agent: the initiator and the CHAP user are answered, the secret never.
      const access = { ...(b.initiator ? { initiator: b.initiator } : {}), ...(b.chap ? { chap_user: b.chap.user } : {}) };
      this.targets.set(iqn, { ...t, ...access });
      return { status: 200, body: { iqn, ...t, ...(route === 'POST /luns/disk' ? { clone: null } : {}), ...access } };
    }
    if (route === 'DELETE /luns') {
      if (!this.targets.delete(call.query.iqn)) return { status: 404, body: { detail: 'iqn not found' } };
      return { status: 200, body: { deleted: call.query.iqn, delete_file: call.query.delete_file === 'true' } };
    }
    if (route === 'POST /luns/scan') return { status: 200, body: { created: [], skipped: [] } };
    return { status: 404, body: { detail: 'Not Found' } };
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
