import { AppError, isUniqueViolation, type OperationsLog } from '@ironlens/core';
import { type AgentApi, type AgentEndpoint, type AgentRequestOptions, agentErrorText, passThrough } from '../adapters/agent-client';
import { isValidId } from '../domain/identifiers';
import type { Agent } from '../domain/types';
import type { AgentRepository } from '../repositories/agent.repository';
import type { MetalDb, MetalStore } from '../repositories/tables';
import { type DataPlaneLookup, LIO_SEP, STGT_SEP } from './boot-vars.service';
import type { RequestContext } from './settings.service';

export interface AgentInput {
  id?: string;
  base_url: string;
  token?: string | null;
  iscsi_server?: string | null;
  role?: { disk?: boolean; cd?: boolean } | null;
  tags?: string[] | null;
  enabled?: boolean | null;
}

export interface Capabilities {
  backend?: string;
  fs_type?: string;
  cd?: boolean;
  persistent?: string;
  base_iqn?: string;
  clone?: string;
  empty_disk?: string;
  [k: string]: unknown;
}

/** An agent as the API shows it: never its token. */
export type AgentView = Omit<Agent, 'token'> & { health?: string; capabilities?: Capabilities | null; error?: string };

const CAPS_TTL_MS = 60_000;
const CAPS_FAILURE_TTL_MS = 10_000;

/** `${NAME}` placeholders are expanded from the environment when the token is used. */
export function expandToken(token: string | null | undefined, env: NodeJS.ProcessEnv = process.env): string | null {
  if (!token) return null;
  return token.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => env[name] ?? '');
}

export function normalizeBaseUrl(input: unknown): string {
  const s = typeof input === 'string' ? input.trim() : '';
  if (!/^https?:\/\/[^\s/]+/i.test(s)) throw new AppError('agent_url_invalid', `base_url must start with http:// or https://: ${JSON.stringify(input)}`);
  try {
    new URL(s);
  } catch {
    throw new AppError('agent_url_invalid', `base_url is not a URL: ${JSON.stringify(input)}`);
  }
  return s.replace(/\/+$/, '');
}

/** The data-plane address: `iscsi_server`, else the host of `base_url` (seed §5). */
export function iscsiServerOf(a: Pick<Agent, 'iscsi_server' | 'base_url'>): string {
  if (a.iscsi_server) return a.iscsi_server;
  return new URL(a.base_url).hostname.replace(/^\[|\]$/g, '');
}

/**
 * The agent registry (seed §6) and the way to talk to an agent. Tokens are stored as
 * given (possibly `${ENV}`), expanded only when used, never returned.
 */
export class AgentService implements DataPlaneLookup {
  private readonly caps = new Map<string, { at: number; caps: Capabilities | null; error?: string }>();

  constructor(
    private readonly store: MetalStore,
    private readonly repo: AgentRepository,
    private readonly api: AgentApi,
    private readonly ops: OperationsLog,
    private readonly onChange: () => void = () => {},
  ) {}

  private get db(): MetalDb {
    return this.store.db;
  }

  static view(a: Agent): AgentView {
    const { token: _token, ...rest } = a;
    return rest;
  }

  endpoint(a: Agent): AgentEndpoint {
    return { id: a.id, base_url: a.base_url, token: expandToken(a.token) };
  }

  async require(id: string): Promise<Agent> {
    const a = await this.repo.get(this.db, String(id).toLowerCase());
    if (!a) throw new AppError('agent_not_found', `agent not found: ${id}`);
    return a;
  }

  list(): Promise<Agent[]> {
    return this.repo.list(this.db);
  }

  /** §6: the registry, optionally with live `/healthz` + `/capabilities`. */
  async listViews(live: boolean): Promise<AgentView[]> {
    const agents = await this.repo.list(this.db);
    if (!live) return agents.map(AgentService.view);
    return Promise.all(
      agents.map(async (a) => {
        const v = AgentService.view(a);
        if (!a.enabled) return { ...v, health: 'disabled', capabilities: null };
        const ep = this.endpoint(a);
        try {
          const h = await this.api.request(ep, 'GET', '/healthz', { auth: false });
          if (h.status !== 200) return { ...v, health: 'error', capabilities: null, error: `healthz answered ${h.status}` };
        } catch (err) {
          return { ...v, health: 'unreachable', capabilities: null, error: (err as AppError).message };
        }
        try {
          const caps = await this.fetchCapabilities(a);
          return { ...v, health: 'ok', capabilities: caps };
        } catch (err) {
          return { ...v, health: 'ok', capabilities: null, error: (err as AppError).message };
        }
      }),
    );
  }

  private validate(input: AgentInput, id: string, oldToken: string | null): Agent {
    const base_url = normalizeBaseUrl(input.base_url);
    const iscsi = typeof input.iscsi_server === 'string' && input.iscsi_server.trim() !== '' ? input.iscsi_server.trim() : null;
    if (iscsi && !/^[A-Za-z0-9.:[\]-]{1,253}$/.test(iscsi)) throw new AppError('request_invalid', `invalid iscsi_server: ${JSON.stringify(input.iscsi_server)}`);
    const tags = (input.tags ?? []).map((t) => String(t).trim()).filter(Boolean);
    const token = typeof input.token === 'string' && input.token !== '' ? input.token : oldToken;
    return {
      id,
      base_url,
      token,
      iscsi_server: iscsi,
      role: { disk: input.role?.disk === true, cd: input.role?.cd === true },
      tags,
      enabled: input.enabled !== false,
    };
  }

  /** §6.1: register; 201 by the route, 409 on a duplicate id. */
  async create(input: AgentInput, ctx: RequestContext): Promise<AgentView> {
    const id = String(input.id ?? '')
      .trim()
      .toLowerCase();
    if (!isValidId(id)) throw new AppError('agent_id_invalid', `invalid agent id: ${JSON.stringify(input.id)} (letters, digits, dot, underscore, hyphen)`);
    const agent = this.validate(input, id, null);
    try {
      await this.store.transaction(async (trx) => {
        if (await this.repo.get(trx, id)) throw new AppError('agent_exists', `agent already exists: ${id}`);
        await this.repo.insert(trx, agent);
        await this.ops.append({ op: 'agent.register', agent: id, base_url: agent.base_url, client: ctx.client }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('agent_exists', `agent already exists: ${id}`);
      throw err;
    }
    this.changed(id);
    return AgentService.view(agent);
  }

  /** §6.3: overwrite; the id stays, an empty token keeps the old one. */
  async update(idInput: string, input: AgentInput, ctx: RequestContext): Promise<AgentView> {
    const id = String(idInput).toLowerCase();
    const agent = await this.store.transaction(async (trx) => {
      const old = await this.repo.get(trx, id);
      if (!old) throw new AppError('agent_not_found', `agent not found: ${id}`);
      const next = this.validate(input, id, old.token);
      await this.repo.update(trx, next);
      await this.ops.append({ op: 'agent.update', agent: id, base_url: next.base_url, enabled: next.enabled, token_rotated: next.token !== old.token, client: ctx.client }, trx);
      return next;
    });
    this.changed(id);
    return AgentService.view(agent);
  }

  private changed(id: string): void {
    this.caps.delete(id);
    this.onChange();
  }

  /** §6.2: a preview that writes nothing. 502 when the agent cannot be reached or refuses. */
  async probe(input: { base_url: string; token?: string | null; agent_id?: string | null }) {
    const base_url = normalizeBaseUrl(input.base_url);
    let token = typeof input.token === 'string' && input.token !== '' ? input.token : null;
    if (!token && input.agent_id) token = (await this.repo.get(this.db, String(input.agent_id).toLowerCase()))?.token ?? null;
    const ep: AgentEndpoint = { id: input.agent_id ?? 'probe', base_url, token: expandToken(token) };
    const fail = (why: string) => new AppError('agent_bad_gateway', `agent probe failed: ${why}`);
    let h: { status: number };
    try {
      h = await this.api.request(ep, 'GET', '/healthz', { auth: false });
    } catch (err) {
      throw fail((err as AppError).message);
    }
    if (h.status !== 200) throw fail(`/healthz answered ${h.status}`);
    let c: { status: number; body: unknown };
    try {
      c = await this.api.request<Capabilities>(ep, 'GET', '/capabilities');
    } catch (err) {
      throw fail((err as AppError).message);
    }
    if (c.status !== 200 || !c.body || typeof c.body !== 'object') throw fail(`/capabilities answered ${c.status}: ${agentErrorText(c.body)}`);
    const caps = c.body as Capabilities;
    const backend = caps.backend === 'lio' ? 'lio' : 'stgt';
    return {
      base_url,
      role: { disk: true, cd: caps.cd === true },
      tags: ['storage', backend],
      iscsi_server: new URL(base_url).hostname.replace(/^\[|\]$/g, ''),
      enabled: true,
      backend,
      fs_type: caps.fs_type,
      base_iqn: caps.base_iqn,
      clone: caps.clone,
      empty_disk: caps.empty_disk,
      persistent: caps.persistent,
    };
  }

  /** `/capabilities`, cached for a minute (failures for ten seconds). */
  async fetchCapabilities(a: Agent): Promise<Capabilities> {
    const hit = this.caps.get(a.id);
    const now = Date.now();
    if (hit && now - hit.at < (hit.caps ? CAPS_TTL_MS : CAPS_FAILURE_TTL_MS)) {
      if (hit.caps) return hit.caps;
      throw new AppError('agent_unreachable', hit.error ?? `agent ${a.id} unreachable`, { agent: a.id, error: hit.error ?? 'unreachable' });
    }
    try {
      const res = await this.api.request<Capabilities>(this.endpoint(a), 'GET', '/capabilities');
      if (res.status !== 200 || !res.body || typeof res.body !== 'object') throw passThrough(a.id, res);
      this.caps.set(a.id, { at: now, caps: res.body });
      return res.body;
    } catch (err) {
      this.caps.set(a.id, { at: now, caps: null, error: (err as Error).message });
      throw err;
    }
  }

  /** §5: iscsi_server and the root-path separator for `/boot-vars`. */
  async dataPlane(agentId: string): Promise<{ iscsi_server: string; iscsi_sep: string } | null> {
    const a = await this.repo.get(this.db, agentId);
    if (!a) return null;
    let sep: string;
    const tags = a.tags.map((t) => t.toLowerCase());
    if (tags.includes('lio')) sep = LIO_SEP;
    else if (tags.includes('stgt')) sep = STGT_SEP;
    else {
      const backend = await this.fetchCapabilities(a).then(
        (c) => c.backend,
        () => undefined,
      );
      sep = backend === 'lio' ? LIO_SEP : STGT_SEP;
    }
    return { iscsi_server: iscsiServerOf(a), iscsi_sep: sep };
  }

  /** Calls an agent and passes its error through (status + `{"agent","error"}`). */
  async call<T>(a: Agent, method: string, path: string, opts: AgentRequestOptions = {}): Promise<T> {
    const res = await this.api.request<T>(this.endpoint(a), method, path, opts);
    if (res.status < 200 || res.status >= 300) throw passThrough(a.id, res);
    return res.body;
  }

  /** Like `call` but returns the raw answer, for callers that treat some statuses as fine. */
  raw<T>(a: Agent, method: string, path: string, opts: AgentRequestOptions = {}) {
    return this.api.request<T>(this.endpoint(a), method, path, opts);
  }
}
