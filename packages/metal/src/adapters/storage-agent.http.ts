import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { AppError } from '@ironlens/core';
import { parseCapabilities, parseCreatedLun, parseMasters, parseScan, parseTargets } from './agent-answers';
import { checkAgentAddress, dnsResolver, guardedAgentLookup, type Resolver } from './agent-address';
import {
  AgentAnswerInvalidError,
  type AgentEndpoint,
  AgentFailedError,
  AgentTimeoutError,
  AgentTokenRejectedError,
  AgentUnreachableError,
  type CreateCdRequest,
  type CreateDiskRequest,
  type DeleteTargetRequest,
  type ScanRequest,
  type StorageAgent,
  type StorageAgents,
} from './storage-agent';

export interface HttpStorageAgentsOptions {
  /** Deadline of a call (`IPXE_CP_AGENT_TIMEOUT`). */
  timeoutMs: number;
  /** Let calls reach link-local and metadata addresses (`IPXE_CP_AGENT_ALLOW_LINK_LOCAL`). Default is `false`. */
  allowLinkLocal?: boolean;
  /** Name resolution for that check and for each connection. Default is the system resolver. */
  resolve?: Resolver;
}

/** The answer of one HTTP call: status and body text. */
interface RawAnswer {
  status: number;
  text: string;
}

/** The most an agent's answer may hold (a LUN list of thousands of targets is well under it); more is refused while it streams. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/**
 * One HTTP(S) call with a deadline, connecting through `lookup` (the link-local guard) when
 * given. Fails with the guard's `AppError`, a `TimeoutError`, or the socket's error.
 */
function httpCall(url: URL, init: { method: string; headers: Record<string, string>; body?: string; timeoutMs: number; lookup?: LookupFunction }): Promise<RawAnswer> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (e: Error | null, v?: RawAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (e) {
        reject(e);
        req.destroy();
      } else resolve(v!);
    };
    const headers = { ...init.headers, ...(init.body !== undefined ? { 'content-length': String(Buffer.byteLength(init.body)) } : {}) };
    const req = send(url, { method: init.method, headers, ...(init.lookup ? { lookup: init.lookup } : {}) }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER_BYTES) finish(new Error(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => finish(null, { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (e) => finish(e));
      res.on('aborted', () => finish(new Error('the answer was cut off')));
    });
    const timer = setTimeout(() => finish(Object.assign(new Error(`no answer within ${init.timeoutMs} ms`), { name: 'TimeoutError' })), init.timeoutMs);
    req.on('error', (e) => finish(e));
    req.end(init.body);
  });
}

/** The storage agents' HTTP API (packages/agent): one HTTP call per request, with a deadline. */
export class HttpStorageAgents implements StorageAgents {
  constructor(private readonly opts: HttpStorageAgentsOptions) {}

  connect(endpoint: AgentEndpoint): StorageAgent {
    return new HttpStorageAgent(endpoint, this.opts);
  }
}

interface SendOptions {
  query?: Record<string, string | boolean>;
  body?: unknown;
  /** Send the token. Default is `true`. */
  auth?: boolean;
  timeoutMs?: number;
}

class HttpStorageAgent implements StorageAgent {
  readonly id: string;

  constructor(
    private readonly ep: AgentEndpoint,
    private readonly opts: HttpStorageAgentsOptions,
  ) {
    this.id = ep.id;
  }

  async health(): Promise<void> {
    await this.call('GET', '/healthz', { auth: false });
  }

  async capabilities() {
    return parseCapabilities(this.id, await this.call('GET', '/capabilities'));
  }

  async listLuns() {
    return parseTargets(this.id, await this.call('GET', '/luns'));
  }

  async createDisk(req: CreateDiskRequest) {
    const { timeoutMs, ...body } = req;
    return parseCreatedLun(this.id, await this.call('POST', '/luns/disk', { body, timeoutMs }), req.iqn);
  }

  async createCd(req: CreateCdRequest) {
    const { timeoutMs, ...body } = req;
    return parseCreatedLun(this.id, await this.call('POST', '/luns/cd', { body, timeoutMs }), req.iqn);
  }

  async deleteTarget(req: DeleteTargetRequest): Promise<'deleted' | 'missing'> {
    try {
      await this.call('DELETE', '/luns', { query: { iqn: req.iqn, delete_file: req.deleteFile } });
      return 'deleted';
    } catch (err) {
      // The agent's 404 is "iqn not found" (seed §14).
      if (req.ignoreMissing && err instanceof AgentFailedError && err.agentStatus === 404) return 'missing';
      throw err;
    }
  }

  async scan(req: ScanRequest = {}) {
    return parseScan(this.id, await this.call('POST', '/luns/scan', req.chap?.length ? { body: { chap: req.chap } } : {}));
  }

  async masters() {
    return parseMasters(this.id, await this.call('GET', '/masters'));
  }

  /** One request; a 2xx answer's JSON body, or the typed error for anything else. */
  private async call(method: string, path: string, opts: SendOptions = {}): Promise<unknown> {
    const { status, body } = await this.send(method, path, opts);
    if (status >= 200 && status < 300) return body;
    if ((status === 401 || status === 403) && opts.auth !== false) throw new AgentTokenRejectedError(this.id);
    throw new AgentFailedError(this.id, status, body);
  }

  private async send(method: string, path: string, opts: SendOptions): Promise<{ status: number; body: unknown }> {
    if (!this.opts.allowLinkLocal) await checkAgentAddress(this.ep.base_url, this.opts.resolve ?? dnsResolver);
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    const url = new URL(this.ep.base_url.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    // Credentials in the URL (`http://user:pass@host`, for a proxy in front of the agent) go
    // as Basic auth when there is no bearer token; fetch refuses them in the URL itself.
    const basic = url.username || url.password ? Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64') : null;
    url.username = '';
    url.password = '';
    if (opts.auth !== false && this.ep.token) headers.authorization = `Bearer ${this.ep.token}`;
    else if (basic) headers.authorization = `Basic ${basic}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    let res: RawAnswer;
    try {
      res = await httpCall(url, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        timeoutMs,
        // Every connection's addresses are checked too (DNS rebinding after checkAgentAddress).
        lookup: this.opts.allowLinkLocal ? undefined : guardedAgentLookup(this.opts.resolve ?? dnsResolver),
      });
    } catch (err) {
      if (err instanceof AppError) throw err;
      const e = err as Error & { code?: string };
      if (e.name === 'TimeoutError') throw new AgentTimeoutError(this.id, timeoutMs);
      throw new AgentUnreachableError(this.id, e.code ?? e.message);
    }
    const text = res.text;
    try {
      return { status: res.status, body: text === '' ? null : JSON.parse(text) };
    } catch {
      if (res.status >= 200 && res.status < 300) throw new AgentAnswerInvalidError(this.id, 'something that is not JSON');
      return { status: res.status, body: { detail: text.slice(0, 500) } };
    }
  }
}
