import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTcpPort } from '@ironlens/core/testing';
import { type RunningAgent, startAgent } from '../main';
import { type RunningTgtd, startTgtd, unusedControlPort } from './tgtd';

export interface AgentOnTgtdOptions {
  /** The agent's bearer token (`IPXE_AGENT_TOKEN`). */
  token: string;
  /** `IPXE_AGENT_BASE_IQN`. Default is `iqn.2026-07.com.controller`. */
  baseIqn?: string;
  /** Files written into the image directory before the agent starts (its first scan sees them): name → content. */
  files?: Record<string, Buffer>;
  /** More agent settings, applied last. */
  env?: NodeJS.ProcessEnv;
  /** Prefix of the temp directory's name. Default is `ironlens-agent-`. */
  tmpPrefix?: string;
}

export interface AgentOnTgtd {
  /** `http://127.0.0.1:<port>` of the agent. */
  url: string;
  token: string;
  baseIqn: string;
  /** The temp directory; removed by `stop()`. A test may keep its own files here too. */
  dir: string;
  /** The agent's `DISK_DIR` (`<dir>/images`). */
  diskDir: string;
  tgtd: RunningTgtd;
  agent: RunningAgent;
  /** Closes the agent, stops tgtd (every target deleted) and removes `dir`. */
  stop(): Promise<void>;
}

/**
 * The real storage agent (`startAgent`, stgt backend) over a real tgtd on loopback: a free
 * control port, a free iSCSI portal on 127.0.0.1, an image directory in a fresh temp dir.
 * Throws when tgtd cannot start (tgt not installed, not root); leaves nothing behind then.
 */
export async function startAgentOnTgtd(opts: AgentOnTgtdOptions): Promise<AgentOnTgtd> {
  const baseIqn = opts.baseIqn ?? 'iqn.2026-07.com.controller';
  const dir = mkdtempSync(join(tmpdir(), opts.tmpPrefix ?? 'ironlens-agent-'));
  const diskDir = join(dir, 'images');
  let tgtd: RunningTgtd | undefined;
  try {
    mkdirSync(diskDir);
    for (const [name, content] of Object.entries(opts.files ?? {})) writeFileSync(join(diskDir, name), content);
    tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `127.0.0.1:${await freeTcpPort()}` });
    const agent = await startAgent({
      IPXE_AGENT_TOKEN: opts.token,
      DISK_DIR: diskDir,
      IPXE_AGENT_BACKEND: 'stgt',
      IPXE_AGENT_BASE_IQN: baseIqn,
      IPXE_AGENT_TGT_CONTROL_PORT: String(tgtd.controlPort),
      IRONLENS_AGENT_LISTEN: '127.0.0.1:0',
      IRONLENS_LOG_LEVEL: 'silent',
      ...opts.env,
    });
    const running = tgtd;
    return {
      url: agent.url,
      token: opts.token,
      baseIqn,
      dir,
      diskDir,
      tgtd: running,
      agent,
      async stop() {
        try {
          await agent.close();
        } finally {
          await running.stop();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    await tgtd?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
