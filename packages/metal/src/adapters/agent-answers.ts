import { isIP } from 'node:net';
import { isChapUser, isSafeText } from '@ironlens/core';
import { isBackingPathOf, isBaseIqn, isFileName, isIqn } from '../domain/identifiers';
import { type AgentCapabilities, AgentAnswerInvalidError, type AgentMaster, type AgentTarget, type CreatedLun, type ScanResult } from './storage-agent';

/**
 * Everything a storage agent answers is checked here, with the grammars the API applies to
 * its own input, before any of it is stored, logged or rendered: a rogue or broken agent
 * cannot put a line into `/boot-vars` or a path into the ledger. Each parser returns a
 * fresh object holding only the fields it checked.
 */

type Json = Record<string, unknown>;

/** Printable text without control or bidirectional formatting characters (core's one definition): no newline or escape can reach a script, a log line or a terminal. */
function isPlainText(v: unknown): v is string {
  return typeof v === 'string' && v.length <= 512 && isSafeText(v);
}

/** An ISO 8601 UTC time as the agent writes it (`toISOString`). */
function isTimestamp(v: unknown): v is string {
  return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/.test(v) && Number.isFinite(Date.parse(v));
}

function invalid(agentId: string, why: string): AgentAnswerInvalidError {
  return new AgentAnswerInvalidError(agentId, why);
}

function object(agentId: string, body: unknown, what: string): Json {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalid(agentId, `${what} that is not a JSON object`);
  return body as Json;
}

function optionalText(agentId: string, o: Json, field: string, what: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (!isPlainText(v)) throw invalid(agentId, `${what} with an invalid ${field}`);
  return v;
}

export function parseCapabilities(agentId: string, body: unknown): AgentCapabilities {
  const o = object(agentId, body, '/capabilities');
  const caps: AgentCapabilities = {};
  if (o.backend !== undefined && o.backend !== null) {
    if (o.backend !== 'stgt' && o.backend !== 'lio') throw invalid(agentId, `/capabilities with an unknown backend ${JSON.stringify(o.backend)}`);
    caps.backend = o.backend;
  }
  if (o.base_iqn !== undefined && o.base_iqn !== null) {
    if (!isBaseIqn(o.base_iqn)) throw invalid(agentId, `/capabilities with an invalid base_iqn ${JSON.stringify(o.base_iqn)}`);
    caps.base_iqn = o.base_iqn;
  }
  if (o.cd !== undefined && o.cd !== null) caps.cd = o.cd === true;
  for (const field of ['fs_type', 'persistent', 'clone', 'empty_disk'] as const) {
    const v = optionalText(agentId, o, field, '/capabilities');
    if (v !== undefined) caps[field] = v;
  }
  return caps;
}

/** A created disk or CD: its IQN is the one asked for (when one was), its backing the path of its file. */
export function parseCreatedLun(agentId: string, body: unknown, requestedIqn: string | undefined): CreatedLun {
  const o = object(agentId, body, 'a created LUN');
  if (!isIqn(o.iqn)) throw invalid(agentId, `a created LUN with an invalid iqn ${JSON.stringify(o.iqn)}`);
  if (requestedIqn !== undefined && o.iqn !== requestedIqn) throw invalid(agentId, `a created LUN under ${JSON.stringify(o.iqn)}, not the ${requestedIqn} asked for`);
  if (!isFileName(o.filename)) throw invalid(agentId, `a created LUN with an invalid filename ${JSON.stringify(o.filename)}`);
  if (!isBackingPathOf(o.backing, o.filename)) throw invalid(agentId, `a created LUN with backing ${JSON.stringify(o.backing)}, which is not the path of ${o.filename}`);
  const lun: CreatedLun = { iqn: o.iqn, backing: o.backing, filename: o.filename };
  if (o.clone !== undefined) {
    if (o.clone !== null && o.clone !== 'reflink' && o.clone !== 'copy') throw invalid(agentId, `a created LUN with clone ${JSON.stringify(o.clone)}`);
    lun.clone = o.clone;
  }
  if (typeof o.size === 'number' && Number.isFinite(o.size)) lun.size = o.size;
  if (o.initiator !== undefined) {
    if (!isIqn(o.initiator)) throw invalid(agentId, `a created LUN with an invalid initiator ${JSON.stringify(o.initiator)}`);
    lun.initiator = o.initiator;
  }
  if (o.chap_user !== undefined) {
    if (!isChapUser(o.chap_user)) throw invalid(agentId, `a created LUN with an invalid chap_user ${JSON.stringify(o.chap_user)}`);
    lun.chap_user = o.chap_user;
  }
  return lun;
}

export function parseTargets(agentId: string, body: unknown): AgentTarget[] {
  if (!Array.isArray(body)) throw invalid(agentId, '/luns that is not a JSON array');
  return body.map((item) => {
    const o = object(agentId, item, 'a /luns entry');
    if (!isIqn(o.iqn)) throw invalid(agentId, `a target with an invalid iqn ${JSON.stringify(o.iqn)}`);
    const luns = Array.isArray(o.luns) ? o.luns : [];
    const target: AgentTarget = {
      iqn: o.iqn,
      luns: luns.map((l) => {
        const backing = optionalText(agentId, object(agentId, l, 'a LUN'), 'backing', `target ${o.iqn}`);
        return { backing: backing ?? '' };
      }),
    };
    if (typeof o.tid === 'number' && Number.isInteger(o.tid)) target.tid = o.tid;
    if (Array.isArray(o.acl)) {
      if (!o.acl.every((a) => isPlainText(a))) throw invalid(agentId, `target ${o.iqn} with an invalid acl`);
      target.acl = o.acl as string[];
    }
    if (Array.isArray(o.accounts)) {
      if (!o.accounts.every((a) => isChapUser(a))) throw invalid(agentId, `target ${o.iqn} with an invalid accounts list`);
      target.accounts = o.accounts as string[];
    }
    if (o.sessions !== undefined) {
      if (!Array.isArray(o.sessions)) throw invalid(agentId, `target ${o.iqn} with sessions that are not a list`);
      target.sessions = o.sessions.map((item) => {
        const s = object(agentId, item, `a session of target ${o.iqn}`);
        // Any initiator may log in to an open target: its name is plain text, compared, never rendered.
        if (!isPlainText(s.initiator) || s.initiator === '') throw invalid(agentId, `target ${o.iqn} with a session of an invalid initiator`);
        if (s.address !== null && (typeof s.address !== 'string' || isIP(s.address) === 0)) throw invalid(agentId, `target ${o.iqn} with a session of an invalid address`);
        if (!isTimestamp(s.first_seen_at)) throw invalid(agentId, `target ${o.iqn} with a session of an invalid first_seen_at`);
        if (s.ended_at !== null && s.ended_at !== undefined && !isTimestamp(s.ended_at)) throw invalid(agentId, `target ${o.iqn} with a session of an invalid ended_at`);
        return { initiator: s.initiator, address: s.address, first_seen_at: s.first_seen_at, ended_at: (s.ended_at as string | null | undefined) ?? null };
      });
    }
    return target;
  });
}

/** `/masters`: `{"masters": [...]}` (or a bare list, as older agents answer); names are file names. */
export function parseMasters(agentId: string, body: unknown): AgentMaster[] {
  const list = Array.isArray(body) ? body : (object(agentId, body, '/masters').masters ?? []);
  if (!Array.isArray(list)) throw invalid(agentId, '/masters without a list');
  return list.map((item) => {
    const o = typeof item === 'string' ? { name: item } : object(agentId, item, 'a master');
    if (!isFileName(o.name)) throw invalid(agentId, `a master with an invalid name ${JSON.stringify(o.name)}`);
    const m: AgentMaster = { name: o.name };
    if (typeof o.size === 'number') m.size = o.size;
    if (typeof o.mtime === 'number') m.mtime = o.mtime;
    return m;
  });
}

export function parseScan(agentId: string, body: unknown): ScanResult {
  const o = object(agentId, body, '/luns/scan');
  const created = (Array.isArray(o.created) ? o.created : []).map((item) => {
    const c = object(agentId, item, 'a scanned target');
    if (!isIqn(c.iqn)) throw invalid(agentId, `a scanned target with an invalid iqn ${JSON.stringify(c.iqn)}`);
    if (!isFileName(c.filename)) throw invalid(agentId, `a scanned target with an invalid filename ${JSON.stringify(c.filename)}`);
    return { iqn: c.iqn, filename: c.filename, ...(typeof c.cd === 'boolean' ? { cd: c.cd } : {}) };
  });
  const skipped = (Array.isArray(o.skipped) ? o.skipped : []).map((item) => {
    const s = object(agentId, item, 'a skipped file');
    return {
      iqn: isIqn(s.iqn) ? s.iqn : null,
      filename: optionalText(agentId, s, 'filename', 'a skipped file') ?? '',
      reason: optionalText(agentId, s, 'reason', 'a skipped file') ?? '',
    };
  });
  return { created, skipped };
}
