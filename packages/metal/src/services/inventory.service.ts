import type { DeviceRepository } from '../repositories/device.repository';
import type { MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import type { AgentService } from './agent.service';

/** One enabled agent's liveness: its `/healthz` answered 200 within the probe budget. */
export interface AgentLiveness {
  agent: string;
  up: boolean;
}

/**
 * Longest wait for one agent's `/healthz` while a scrape waits: Prometheus' default scrape
 * timeout is 10 s, and one dead agent must not make every other metric miss it.
 * The agent timeout (`IPXE_CP_AGENT_TIMEOUT`) applies when it is shorter. Default is 3 s.
 */
export const AGENT_PROBE_BUDGET_MS = 3000;

/**
 * What the gauges of `/metrics` read at scrape time: devices and workers per state (from the
 * store, so every replica reports the same ledger), and the liveness of each enabled agent
 * (probed now; probes of scrapes that overlap are shared). Nothing here writes.
 */
export class InventoryService {
  private probing: Promise<AgentLiveness[]> | undefined;

  constructor(
    private readonly store: MetalStore,
    private readonly devices: DeviceRepository,
    private readonly workers: WorkerRepository,
    private readonly agents: AgentService,
    private readonly probeBudgetMs: number = AGENT_PROBE_BUDGET_MS,
  ) {}

  devicesByState(): Promise<Map<string, number>> {
    return this.devices.countByState(this.store.db);
  }

  workersByState(): Promise<Map<string, number>> {
    return this.workers.countByState(this.store.db);
  }

  /** Every enabled agent, up or down (a disabled agent is not probed and not listed). */
  agentLiveness(): Promise<AgentLiveness[]> {
    this.probing ??= this.probe().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async probe(): Promise<AgentLiveness[]> {
    const enabled = (await this.agents.list()).filter((a) => a.enabled);
    return Promise.all(
      enabled.map(async (a) => {
        let timer: NodeJS.Timeout | undefined;
        const budget = new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), this.probeBudgetMs);
        });
        try {
          const health = Promise.resolve()
            .then(() => this.agents.client(a).health())
            .then(
              () => true,
              () => false,
            );
          return { agent: a.id, up: await Promise.race([health, budget]) };
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }
}
