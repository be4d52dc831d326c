import { AppError, type ChapCredential } from '@ironlens/core';
import type { CreateCdBody as AgentCreateCdBody, CreateDiskBody as AgentCreateDiskBody, ScanBody as AgentScanBody } from '@ironlens/agent/api';
import type { AgentCapabilities, AgentLunTarget, AgentMaster, CreatedLun, ScanResult } from '../api/schemas';

/** The answers as metal's client checked them: the agent's own schemas (`@ironlens/agent/api`), each field that may be missing optional. */
export type { AgentCapabilities, AgentMaster, CreatedLun, ScanResult };
export type AgentTarget = AgentLunTarget;

/** What `scan` sends: the CHAP accounts of targets bound to one (the agent keeps no secret). */
export type ScanRequest = { chap?: ChapCredential[] } & NonNullable<AgentScanBody>;

/** The agent's `POST /luns/disk` body (`@ironlens/agent/api`), with `timeoutMs`: overrides the client's deadline (a copy of a whole master is slow). */
export type CreateDiskRequest = AgentCreateDiskBody & { chap?: ChapCredential; timeoutMs?: number };

/** The agent's `POST /luns/cd` body, with `timeoutMs`. */
export type CreateCdRequest = AgentCreateCdBody & { chap?: ChapCredential; timeoutMs?: number };

/**
 * The storage agent (packages/agent) as the control plane uses it: one typed method per
 * capability, typed answers that have already been checked against the control plane's own
 * grammars (an IQN with a newline never gets past the adapter), and typed errors. The real
 * one speaks HTTP (`HttpStorageAgents`); tests speak the same protocol to `FakeAgent`.
 */
export interface StorageAgent {
  readonly id: string;
  /** `/healthz` (no token). Resolves when the agent answers 200. */
  health(): Promise<void>;
  capabilities(): Promise<AgentCapabilities>;
  listLuns(): Promise<AgentTarget[]>;
  /** Clones `master` or makes a blank disk of `size`. The answer's IQN is the one asked for. */
  createDisk(req: CreateDiskRequest): Promise<CreatedLun>;
  createCd(req: CreateCdRequest): Promise<CreatedLun>;
  /** Removes a target (and its file when asked); `missing` when it was not there and `ignoreMissing` was set. */
  deleteTarget(req: DeleteTargetRequest): Promise<'deleted' | 'missing'>;
  /** Rebuilds missing targets from the agent's files; `chap` re-sends the accounts of targets bound to one (the agent keeps no secret). */
  scan(req?: ScanRequest): Promise<ScanResult>;
  masters(): Promise<AgentMaster[]>;
}

/** What the control plane needs to reach one agent. */
export interface AgentEndpoint {
  id: string;
  base_url: string;
  /** Already expanded (`${ENV}` resolved); never logged. */
  token: string | null;
}

/** Hands out a client per agent. */
export interface StorageAgents {
  connect(endpoint: AgentEndpoint): StorageAgent;
}

export interface DeleteTargetRequest {
  iqn: string;
  deleteFile: boolean;
  ignoreMissing: boolean;
}

// ---- errors: each is an AppError, rendered `{"agent": id, "error": text}` by the API ----

/** The agent could not be reached (connection refused, DNS, reset): 503. */
export class AgentUnreachableError extends AppError {
  constructor(
    readonly agentId: string,
    why: string,
  ) {
    super('agent_unreachable', `agent ${agentId} unreachable: ${why}`, { agent: agentId, error: `unreachable: ${why}` });
  }
}

/** The agent did not answer within the deadline: 503 like an unreachable one. */
export class AgentTimeoutError extends AgentUnreachableError {
  constructor(agentId: string, timeoutMs: number) {
    super(agentId, `no answer within ${timeoutMs} ms`);
  }
}

/** The agent refused the token ironlens holds for it (401/403): 502, never the caller's 401. */
export class AgentTokenRejectedError extends AppError {
  constructor(readonly agentId: string) {
    const text = `agent ${agentId} rejected ironlens' token`;
    super('agent_token_rejected', text, { agent: agentId, error: text });
  }
}

/** The agent answered with an error of its own: passed through with its status and text. */
export class AgentFailedError extends AppError {
  constructor(
    readonly agentId: string,
    readonly agentStatus: number,
    readonly body: unknown,
  ) {
    const text = agentErrorText(body);
    super('agent_error', text, { agent: agentId, error: text }, agentStatus >= 400 && agentStatus < 600 ? agentStatus : 502);
  }
}

/** The agent answered something that is not JSON, or outside the control plane's grammars: 502. */
export class AgentAnswerInvalidError extends AppError {
  constructor(
    readonly agentId: string,
    why: string,
  ) {
    super('agent_bad_gateway', `agent ${agentId} answered ${why}`, { agent: agentId, error: `invalid answer: ${why}` });
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
