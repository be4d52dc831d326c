import { AppError, type ChangeFeed, echo, isoSeconds, isUniqueViolation, type OperationsLog, redactUrlCredentials } from '@ironlens/core';
import { type AgentCapabilities, type AgentEndpoint, AgentFailedError, AgentAnswerInvalidError, AgentTokenRejectedError, AgentUnreachableError, type StorageAgent, type StorageAgents } from '../adapters/storage-agent';
import type { AgentInput, AgentProbe, AgentProbeRequest, AgentView, MasterTagRequest, MasterTagView } from '../api/schemas';
import { checkTokenEnv, expandToken, refuseRequestPlaceholders, type TokenEnvPolicy, tokenEnvNames } from '../domain/agent-token';
import { isFileName, isValidId } from '../domain/identifiers';
import type { Agent } from '../domain/types';
import type { AgentRepository } from '../repositories/agent.repository';
import type { MasterTag, MasterTagRepository } from '../repositories/master-tag.repository';
import { lockLedger, type MetalDb, type MetalStore } from '../repositories/tables';
import { type DataPlaneLookup, LIO_SEP, STGT_SEP } from './boot-vars.service';
import type { RequestContext } from './settings.service';

export type { AgentInput };

export type Capabilities = AgentCapabilities;

/** An agent as the API shows it: never its token, nor credentials in its URL. */
export type { AgentView };

/** How the agent service reads tokens: which `${NAME}`s it may expand, from which environment. */
export interface AgentTokenPolicy extends TokenEnvPolicy {
  /** Default is `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** The change-feed topic of agent records (key: the agent id). */
export const AGENT_TOPIC = 'metal.agent';

const CAPS_TTL_MS = 60_000;
const CAPS_FAILURE_TTL_MS = 10_000;

/** Controls, line separators and bidirectional formatting: not text (core's definition once it has one). */
// biome-ignore lint/complexity/useRegexLiterals: a literal would hold control characters (noControlCharactersInRegex)
const UNSAFE_TEXT = new RegExp('[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]', 'u');
const hasUnsafeText = (text: string) => UNSAFE_TEXT.test(text);
const TAG_OS = /^[a-z0-9][a-z0-9._-]{0,31}$/;
const TAG_OS_VERSION = /^[A-Za-z0-9._+-]{0,32}$/;
const REMARK_MAX = 200;

function checkMasterName(input: unknown): string {
  const name = typeof input === 'string' ? input.trim() : '';
  if (!isFileName(name)) throw new AppError('master_tag_invalid', `invalid master name: ${echo(input)} (a file name of A-Za-z0-9 . _ -)`);
  return name;
}

/** A tag as it enters: each field checked, `os` lower-cased; a remark is printable text. */
function checkMasterTag(agent: string, nameInput: unknown, input: MasterTagRequest): MasterTag {
  const name = checkMasterName(nameInput);
  const os = typeof input.os === 'string' ? input.os.trim().toLowerCase() : '';
  if (!TAG_OS.test(os)) throw new AppError('master_tag_invalid', `invalid os: ${echo(input.os)} (1-32 of a-z 0-9 . _ -)`);
  const osVersion = (input.os_version ?? '').trim();
  if (!TAG_OS_VERSION.test(osVersion)) throw new AppError('master_tag_invalid', `invalid os_version: ${echo(input.os_version)} (at most 32 of A-Za-z0-9 . _ + -)`);
  const remark = (input.remark ?? '').trim();
  if (remark.length > REMARK_MAX || hasUnsafeText(remark)) throw new AppError('master_tag_invalid', `invalid remark: printable text of at most ${REMARK_MAX} characters`);
  return { agent_id: agent, name, os, os_version: osVersion, remark };
}

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
    private readonly tags: MasterTagRepository,
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
    return { ...rest, base_url: redactUrlCredentials(a.base_url), storager_ip: a.iscsi_server };
  }

  private expand(token: string | null, whose: string): string | null {
    return expandToken(token, this.tokens.env ?? process.env, this.tokens, whose);
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
    // `storager_ip`: the seed control plane's current WebUI's name for it, taken when iscsi_server is not given.
    const address = input.iscsi_server ?? input.storager_ip;
    const iscsi = typeof address === 'string' && address.trim() !== '' ? address.trim() : null;
    if (iscsi && !/^[A-Za-z0-9.:[\]-]{1,253}$/.test(iscsi)) throw new AppError('request_invalid', `invalid iscsi_server: ${JSON.stringify(address)}`);
    const tags = (input.tags ?? []).map((t) => String(t).trim()).filter(Boolean);
    const given = typeof input.token === 'string' && input.token !== '' ? input.token : null;
    checkTokenEnv(given, this.tokens);
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

  /**
   * `DELETE /agents/{agent_id}` (the seed control plane's current WebUI): the agent, its sealed
   * token and its master tags. Refused (409 `agent_in_use`) while a worker's system disk or
   * install CD is on it: `/boot-vars` gives those machines the agent's `iscsi_server`, and
   * deleting the worker's disk needs the agent. The source project does not check; ironlens does.
   */
  async delete(idInput: string, ctx: RequestContext): Promise<{ deleted: string; master_tags_removed: boolean }> {
    const id = String(idInput).trim().toLowerCase();
    const removed = await this.store.transaction(async (trx) => {
      await lockLedger(trx);
      if (!(await this.repo.get(trx, id))) throw new AppError('agent_not_found', `agent not found: ${id}`);
      const used = await this.repo.usedBy(trx, id);
      if (used.disks.length || used.cds.length) {
        const what = [used.disks.length ? `system disks of ${used.disks.join(', ')}` : '', used.cds.length ? `install CDs of ${used.cds.join(', ')}` : ''].filter(Boolean).join('; ');
        throw new AppError('agent_in_use', `agent ${id} holds ${what}: delete them (or the workers) first`, { disks: used.disks, cds: used.cds });
      }
      const tagCount = await this.tags.removeAgent(trx, id);
      await this.repo.delete(trx, id);
      await this.ops.append({ op: 'agent.delete', agent: id, master_tags_removed: tagCount, client: ctx.client }, trx);
      return tagCount > 0;
    });
    this.changed(id);
    return { deleted: id, master_tags_removed: removed };
  }

  /** Every master tag, for `GET /masters`. */
  masterTags(): Promise<MasterTag[]> {
    return this.tags.list(this.db);
  }

  /**
   * `PUT /agents/{agent_id}/masters/{master_name}/tag`: annotates a master image (`os` lower-cased,
   * `os_version`, `remark`). The agent must exist (404); the image need not be listed (the agent may
   * be down). The annotation changes nothing a disk is made from: `POST /workers/{id}/luns/disk`
   * keeps seed 004's `os` list.
   */
  async setMasterTag(agentInput: string, nameInput: string, input: MasterTagRequest, ctx: RequestContext): Promise<MasterTagView> {
    const id = String(agentInput).trim().toLowerCase();
    const tag = checkMasterTag(id, nameInput, input);
    await this.store.transaction(async (trx) => {
      if (!(await this.repo.get(trx, id))) throw new AppError('agent_not_found', `agent not found: ${id}`);
      await this.tags.set(trx, tag, isoSeconds());
      await this.ops.append({ op: 'master.tag', agent: id, name: tag.name, os: tag.os, os_version: tag.os_version, client: ctx.client }, trx);
    });
    return { agent: id, name: tag.name, os: tag.os, os_version: tag.os_version, remark: tag.remark };
  }

  /** `DELETE /agents/{agent_id}/masters/{master_name}/tag`: `removed` false when there was none. */
  async clearMasterTag(agentInput: string, nameInput: string, ctx: RequestContext): Promise<{ agent: string; name: string; removed: boolean }> {
    const id = String(agentInput).trim().toLowerCase();
    const name = checkMasterName(nameInput);
    const removed = await this.store.transaction(async (trx) => {
      if (!(await this.repo.get(trx, id))) throw new AppError('agent_not_found', `agent not found: ${id}`);
      const r = await this.tags.remove(trx, id, name);
      await this.ops.append({ op: 'master.tag.clear', agent: id, name, removed: r, client: ctx.client }, trx);
      return r;
    });
    return { agent: id, name, removed };
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
   * registering an agent at that URL with the placeholder: the probe gives no admin more, and
   * such a probe is written to the operations log (`agent.probe`: who, the URL, the variables'
   * names) before anything is sent, as a registration would be. No token names one of ironlens'
   * own settings (400 `agent_token_env_reserved`, {@link checkTokenEnv}).
   */
  async probe(input: AgentProbeRequest, ctx: RequestContext & { mayWriteAgents: boolean }): Promise<AgentProbe> {
    const base_url = normalizeBaseUrl(input.base_url);
    const given = typeof input.token === 'string' && input.token !== '' ? input.token : null;
    let token: string | null;
    if (given !== null || !input.agent_id) {
      if (!ctx.mayWriteAgents) refuseRequestPlaceholders(given);
      token = this.expand(given, 'the token');
      const names = given === null ? [] : tokenEnvNames(given);
      if (names.length > 0) await this.ops.append({ op: 'agent.probe', base_url: redactUrlCredentials(base_url), env: [...new Set(names)], client: ctx.client });
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
      storager_ip: iscsiServerOf({ iscsi_server: null, base_url }),
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
