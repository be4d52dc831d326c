import { AppError } from '@ironlens/core';

/** What the control plane needs to reach one agent. */
export interface AgentEndpoint {
  id: string;
  base_url: string;
  /** Already expanded (`${ENV}` resolved); never logged. */
  token: string | null;
}

export interface AgentResponse<T = unknown> {
  status: number;
  body: T;
}

export interface AgentRequestOptions {
  body?: unknown;
  /** Send the bearer token. Default is `true`. */
  auth?: boolean;
  query?: Record<string, string | boolean | undefined>;
  /** Overrides the client's deadline (disk clones take longer than a status call). */
  timeoutMs?: number;
}

/** The storage agent's HTTP API (packages/agent), as the control plane calls it. */
export interface AgentApi {
  request<T = unknown>(agent: AgentEndpoint, method: string, path: string, opts?: AgentRequestOptions): Promise<AgentResponse<T>>;
}

/**
 * `fetch` with a deadline (`IPXE_CP_AGENT_TIMEOUT`). An agent that is down or slow is a
 * 503 `agent_unreachable`; one that answers garbage is a 502 `agent_bad_gateway`; its own
 * errors come back as they are (status + body) for the caller to pass through.
 */
export class HttpAgentApi implements AgentApi {
  constructor(private readonly timeoutMs: number) {}

  async request<T>(agent: AgentEndpoint, method: string, path: string, opts: AgentRequestOptions = {}): Promise<AgentResponse<T>> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const url = new URL(agent.base_url.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (opts.auth !== false && agent.token) headers.authorization = `Bearer ${agent.token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.message);
      throw new AppError('agent_unreachable', `agent ${agent.id} unreachable: ${why}`, { agent: agent.id, error: `unreachable: ${why}` });
    }
    const text = await res.text().catch(() => '');
    let body: unknown;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      if (res.ok) throw new AppError('agent_bad_gateway', `agent ${agent.id} answered something that is not JSON`, { agent: agent.id, error: 'invalid JSON from agent' });
      body = { detail: text.slice(0, 500) };
    }
    return { status: res.status, body: body as T };
  }
}

/** The agent's own error text: FastAPI `detail`, or whatever it sent. */
export function agentErrorText(body: unknown): string {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (typeof b.detail === 'string') return b.detail;
    if (b.detail !== undefined) return JSON.stringify(b.detail);
    if (typeof b.error === 'string') return b.error;
  }
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/** An agent's error answer, passed through with its status: `{"agent": id, "error": ...}`. */
export function passThrough(agentId: string, res: AgentResponse): AppError {
  const text = agentErrorText(res.body);
  const status = res.status >= 400 && res.status < 600 ? res.status : 502;
  return new AppError('agent_error', text, { agent: agentId, error: text }, status);
}
