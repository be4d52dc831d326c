import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface FakeAgentCall {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  authorization: string | undefined;
}

type Handler = (call: FakeAgentCall, res: ServerResponse) => void | Promise<void>;

/**
 * A stand-in for the storage agent's HTTP protocol (packages/agent), for failure paths a
 * real agent will not produce on demand: garbage answers, hangs, a ledger write that fails
 * after the agent made a disk. It records every call. Unhandled paths answer like the
 * real agent's happy path for the few endpoints the control plane needs.
 */
export class FakeAgent {
  readonly calls: FakeAgentCall[] = [];
  private server: Server | undefined;
  url = '';
  /** Per `METHOD /path` override. */
  readonly handlers = new Map<string, Handler>();

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
    if (call.path === '/capabilities') return json(200, { backend: 'stgt', base_iqn: 'iqn.2026-07.com.controller', cd: true, fs_type: 'xfs' });
    if (call.method === 'POST' && call.path === '/luns/disk') {
      const b = call.body as { iqn: string; filename: string };
      return json(200, { iqn: b.iqn, backing: `/images/${b.filename}`, filename: b.filename, clone: null });
    }
    if (call.method === 'DELETE' && call.path === '/luns') return json(200, { deleted: call.query.iqn, delete_file: call.query.delete_file === 'true' });
    if (call.path === '/luns') return json(200, []);
    if (call.path === '/masters') return json(200, { masters: [] });
    json(404, { detail: 'Not Found' });
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
