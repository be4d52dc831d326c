import { statSync } from 'node:fs';
import { type Env, envBool, envInt, envListen, envOptional, envString, type Listen } from '@ironlens/core';
import { isBaseIqn } from '../domain/names';

export interface AgentConfig {
  /** `IPXE_AGENT_TOKEN`: bearer token; empty turns auth off. `/healthz` is always open. */
  token: string | undefined;
  /** `DISK_DIR`: the image directory. Default is `/home/iscsi_img`. */
  diskDir: string;
  /** `IPXE_AGENT_BACKEND`: `stgt` or `lio`. Default is `stgt`. */
  backend: 'stgt' | 'lio';
  /** `IPXE_AGENT_BASE_IQN`. Default is `iqn.2026-07.com.controller`. */
  baseIqn: string;
  /** `IPXE_AGENT_CD`: serve CD (ISO) targets. Default is `true` for stgt, `false` for lio. */
  cd: boolean;
  /** `IPXE_AGENT_TGT_CONTROL_PORT`: tgtd's control port (`tgtadm -C`). Default is `0`, tgtd's own default. */
  tgtControlPort: number;
  /** `IRONLENS_AGENT_LISTEN`: `host:port`. Default is `0.0.0.0:4840`. */
  listen: Listen;
  /** `IRONLENS_AGENT_MASTER_RESCAN_SECONDS`: seconds between master rescans. Default is `30`. */
  masterRescanSeconds: number;
  /**
   * `IRONLENS_AGENT_SCAN_OPEN`: let a scan export a file whose index records no initiator
   * (or that the index does not know) open to every initiator. Default is `false`: such a
   * file is not exported until a target is made for it with an initiator.
   */
  scanOpen: boolean;
}

export const DEFAULT_DISK_DIR = '/home/iscsi_img';
export const DEFAULT_BASE_IQN = 'iqn.2026-07.com.controller';
export const DEFAULT_AGENT_LISTEN = '0.0.0.0:4840';

/**
 * Reads the agent's configuration from the environment. Every invalid value throws an
 * Error naming the variable, so `ironlens agent` stops at once with a clear message.
 */
export function readAgentConfig(env: Env): AgentConfig {
  const backendText = envString(env, 'IPXE_AGENT_BACKEND', 'stgt').trim().toLowerCase();
  if (backendText !== 'stgt' && backendText !== 'lio') {
    throw new Error(`IPXE_AGENT_BACKEND must be stgt or lio, got ${JSON.stringify(env.IPXE_AGENT_BACKEND)}`);
  }
  const backend = backendText;

  const baseIqn = envString(env, 'IPXE_AGENT_BASE_IQN', DEFAULT_BASE_IQN).trim();
  if (!isBaseIqn(baseIqn)) {
    throw new Error(`IPXE_AGENT_BASE_IQN must look like iqn.YYYY-MM.reverse.domain (lowercase, no ':suffix'), got ${JSON.stringify(baseIqn)}`);
  }

  const diskDir = envString(env, 'DISK_DIR', DEFAULT_DISK_DIR);
  if (!diskDir.startsWith('/')) throw new Error(`DISK_DIR must be an absolute path, got ${JSON.stringify(diskDir)}`);
  let isDir = false;
  try {
    isDir = statSync(diskDir).isDirectory();
  } catch {
    throw new Error(`DISK_DIR ${diskDir} does not exist (set DISK_DIR to the image directory)`);
  }
  if (!isDir) throw new Error(`DISK_DIR ${diskDir} is not a directory`);
  if (backend === 'lio' && /\s/.test(diskDir)) throw new Error(`DISK_DIR must not contain whitespace with the lio backend (targetcli re-splits its arguments), got ${JSON.stringify(diskDir)}`);

  const tgtControlPort = envInt(env, 'IPXE_AGENT_TGT_CONTROL_PORT', 0, 0);
  if (tgtControlPort > 32767) throw new Error(`IPXE_AGENT_TGT_CONTROL_PORT must be between 0 and 32767 (tgtd's limit), got ${tgtControlPort}`);

  const listen = envListen(env, 'IRONLENS_AGENT_LISTEN', DEFAULT_AGENT_LISTEN);
  if (!listen) throw new Error('IRONLENS_AGENT_LISTEN cannot be off: the agent has only this listener');

  const masterRescanSeconds = envInt(env, 'IRONLENS_AGENT_MASTER_RESCAN_SECONDS', 30, 1);

  return {
    token: envOptional(env, 'IPXE_AGENT_TOKEN'),
    diskDir,
    backend,
    baseIqn,
    cd: envBool(env, 'IPXE_AGENT_CD', backend === 'stgt'),
    tgtControlPort,
    listen,
    masterRescanSeconds,
    scanOpen: envBool(env, 'IRONLENS_AGENT_SCAN_OPEN', false),
  };
}
