import { httpLimitsFromEnv, Metrics } from '@ironlens/core';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { DiskImages } from './adapters/disk-images.adapter';
import type { IscsiTargets } from './adapters/iscsi-targets';
import { TargetcliTargets } from './adapters/targetcli.adapter';
import { TgtadmTargets } from './adapters/tgtadm.adapter';
import { buildAgentApp, wireAgent } from './app';
import { type AgentConfig, readAgentConfig } from './config/agent.config';
import { MasterCatalog } from './services/master.service';

/** How often the agent looks at its targets' sessions (their `first_seen_at`). */
const SESSION_POLL_MS = 3_000;

export interface RunningAgent {
  app: FastifyInstance;
  config: AgentConfig;
  /** `http://host:port` the agent listens on (the real port when 0 was asked for). */
  url: string;
  /** Stops the master rescan and closes the listener. */
  close(): Promise<void>;
}

export function targetsFor(config: AgentConfig): IscsiTargets {
  return config.backend === 'lio' ? new TargetcliTargets() : new TgtadmTargets({ controlPort: config.tgtControlPort });
}

/**
 * `ironlens agent`: reads the configuration from `env` (throws on an invalid value),
 * wires the real adapters, rebuilds missing targets from DISK_DIR (a scan, as tgtd keeps
 * nothing across restarts), fills the master cache and rescans it on a timer, and listens
 * on `IRONLENS_AGENT_LISTEN`. `/metrics` serves its Prometheus metrics, behind `IPXE_AGENT_TOKEN`
 * when that is set (docs/metrics.md).
 */
export async function startAgent(env: NodeJS.ProcessEnv): Promise<RunningAgent> {
  const config = readAgentConfig(env);
  const targets = targetsFor(config);
  const deps = { diskDir: config.diskDir, baseIqn: config.baseIqn, cd: config.cd, token: config.token, scanOpen: config.scanOpen, targets };
  const images = new DiskImages(config.diskDir);
  let log: FastifyBaseLogger | undefined;
  const masters = new MasterCatalog(images, (err) => log?.error({ err }, 'master rescan failed'));
  const wired = wireAgent({ ...deps, images, masters });
  const metrics = { metrics: new Metrics(), listener: 'agent', token: config.token };
  const app = await buildAgentApp({ ...deps, ...wired, logger: { level: env.IRONLENS_LOG_LEVEL || 'info' }, metrics, limits: httpLimitsFromEnv(env) });
  log = app.log;

  try {
    const scan = await wired.luns.scan();
    app.log.info({ created: scan.created.length, skipped: scan.skipped.length }, 'startup scan of %s', config.diskDir);
    // Worth an operator's eye: a backend failure, a file not exported because nobody was
    // recorded as its initiator (IRONLENS_AGENT_SCAN_OPEN), a link leading out of DISK_DIR.
    const notable = /^(backend failed|no recorded initiator|no CHAP credential|leads outside|is a link to a master)/;
    for (const s of scan.skipped) if (notable.test(s.reason)) app.log.warn({ file: s.filename, iqn: s.iqn }, s.reason);
  } catch (err) {
    // The agent still starts (healthz answers, POST /luns/scan can be retried): the backend may come up later.
    app.log.error({ err }, 'startup scan failed');
  }
  await masters.refresh().catch((err) => app.log.error({ err }, 'master scan failed'));
  masters.start(config.masterRescanSeconds * 1000);
  // The sessions' first_seen_at: a login is noticed within a few seconds even when nobody reads /luns.
  let polling = false;
  const sessionPoll = setInterval(() => {
    if (polling) return;
    polling = true;
    wired.luns
      .pollSessions()
      .catch(() => {})
      .finally(() => {
        polling = false;
      });
  }, SESSION_POLL_MS);
  sessionPoll.unref();

  try {
    await app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    masters.stop();
    clearInterval(sessionPoll);
    await app.close();
    throw err;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.listen.port;
  const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;
  return {
    app,
    config,
    url: `http://${host}:${port}`,
    async close() {
      masters.stop();
      clearInterval(sessionPoll);
      await app.close();
    },
  };
}
