import { AppError, type ChangeFeed, isUniqueViolation, type OperationsLog, redactUrlCredentials } from '@ironlens/core';
import { type AgentCapabilities, type AgentEndpoint, AgentFailedError, AgentAnswerInvalidError, AgentTokenRejectedError, AgentUnreachableError, type StorageAgent, type StorageAgents } from '../adapters/storage-agent';
import type { AgentInput, AgentProbe, AgentProbeRequest, AgentView } from '../api/schemas';
import { checkTokenEnv, expandToken, refuseRequestPlaceholders } from '../domain/agent-token';
import { isValidId } from '../domain/identifiers';
import type { Agent } from '../domain/types';
import type { AgentRepository } from '../repositories/agent.repository';
import { lockLedger, type MetalDb, type MetalStore } from '../repositories/tables';
import { type DataPlaneLookup, LIO_SEP, STGT_SEP } from './boot-vars.service';
import type { RequestContext } from './settings.service';

export type { AgentInput };

export type Capabilities = AgentCapabilities;

/** An agent as the API shows it: never its token, nor credentials in its URL. */
export type { AgentView };

/** How the agent service reads tokens: which `${NAME}`s it may expand, from which environment. */
export interface AgentTokenPolicy {
  /** Patterns of allowed names (`IPXE_CP_AGENT_TOKEN_ENV`). */
  allowedEnv: readonly string[];
  /** Default is `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** The change-feed topic of agent records (key: the agent id). */
export const AGENT_TOPIC = 'metal.agent';

const CAPS_TTL_MS = 60_000;
const CAPS_FAILURE_TTL_MS = 10_000;

/** An agent's failure while probing: the answer is a 502 that says why. */
function isAgentFailure(err: unknown): err is AppError {
  return err instanceof AgentUnreachableError || err instanceof AgentFailedError || err instanceof AgentAnswerInvalidError || err instanceof AgentTokenRejectedError;
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
 * given (possibly `${NAME}`, for names the token policy allows: only through the admin's
 * create and update), expanded only when used, sent only to the agent's own registered
 * `base_url`, never returned. A request's own placeholder is expanded only for an admin's probe.
 */
export class AgentService implements DataPlaneLookup {
  private readonly caps = new Map<string, { at: number; caps: Capabilities | null; error?: string }>();

  constructor(
    private readonly store: MetalStore,
    private readonly repo: AgentRepository,
    private readonly agents: StorageAgents,
    private readonly ops: OperationsLog,
    private readonly tokens: AgentTokenPolicy,
    private readonly onChange: () => void = () => {},
    /** Where agent changes are told to the other replicas. Default: nobody. */
    private readonly changes: Pick<ChangeFeed, 'publish'> | null = null,
  ) {}

  private get db(): MetalDb {
    return this.store.db;
  }

  static view(a: Agent): AgentView {
    const { token: _token, ...rest } = a;
    return { ...rest, base_url: redactUrlCredentials(a.base_url) };
  }

  private expand(token: string | null, whose: string): string | null {
    return expandToken(token, this.tokens.env ?? process.env, this.tokens.allowedEnv, whose);
  }

  /** A client for a registered agent: its own token, to its own base_url. */
  client(a: Agent): StorageAgent {
    const ep: AgentEndpoint = { id: a.id, base_url: a.base_url, token: this.expand(a.token, `the token of agent ${a.id}`) };
    return this.agents.connect(ep);
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
        try {
          await this.client(a).health();
        } catch (err) {
          if (err instanceof AgentFailedError) return { ...v, health: 'error', capabilities: null, error: `healthz answered ${err.agentStatus}` };
          return { ...v, health: 'unreachable', capabilities: null, error: (err as Error).message };
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
    const given = typeof input.token === 'string' && input.token !== '' ? input.token : null;
    checkTokenEnv(given, this.tokens.allowedEnv);
    const token = given ?? oldToken;
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
        await lockLedger(trx);
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
    this.changes?.publish(AGENT_TOPIC, id);
    this.onChange();
  }

  /** Forgets the cached `/capabilities` of one agent, or of every agent (another replica changed it). */
  forgetCapabilities(id: string | null): void {
    if (id === null) this.caps.clear();
    else this.caps.delete(id);
  }

  /**
   * §6.2: a preview that writes nothing. 502 when the agent cannot be reached or refuses.
   * With `agent_id` and no token, that agent's stored token is used, and only when
   * `base_url` is the agent's own (400 `agent_token_misdirected` otherwise). A token given here
   * that names `${NAME}` (seed §6.2, §13.3) is expanded only for a caller who may register agents
   * (`metal:agent:write`, an admin's, `ctx.mayWriteAgents`): anyone else would have ironlens send
   * its own secret to whatever base_url they name (issue 29, finding 1), and is refused (403
   * `permission_denied`) before anything is sent. An admin could send it there anyway, by
   * registering an agent at that URL with the placeholder: the probe gives no admin more.
   */
  async probe(input: AgentProbeRequest, ctx: { mayWriteAgents: boolean }): Promise<AgentProbe> {
    const base_url = normalizeBaseUrl(input.base_url);
    const given = typeof input.token === 'string' && input.token !== '' ? input.token : null;
    let token: string | null;
    if (given !== null || !input.agent_id) {
      if (!ctx.mayWriteAgents) refuseRequestPlaceholders(given);
      token = this.expand(given, 'the token');
    } else {
      const stored = await this.require(input.agent_id);
      if (stored.base_url !== base_url) {
        throw new AppError('agent_token_misdirected', `the stored token of agent ${stored.id} is only sent to its own base_url; give a token to probe ${redactUrlCredentials(base_url)}`, { code: 'agent_token_misdirected' });
      }
      token = this.expand(stored.token, `the token of agent ${stored.id}`);
    }
    const agent = this.agents.connect({ id: input.agent_id ?? 'probe', base_url, token });
    let caps: Capabilities;
    try {
      await agent.health();
      caps = await agent.capabilities();
    } catch (err) {
      if (isAgentFailure(err)) throw new AppError('agent_bad_gateway', `agent probe failed: ${err.message}`);
      throw err;
    }
    const backend = caps.backend === 'lio' ? 'lio' : 'stgt';
    return {
      base_url: redactUrlCredentials(base_url),
      role: { disk: true, cd: caps.cd === true },
      tags: ['storage', backend],
      iscsi_server: iscsiServerOf({ iscsi_server: null, base_url }),
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
      const caps = await this.client(a).capabilities();
      this.caps.set(a.id, { at: now, caps });
      return caps;
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
}
