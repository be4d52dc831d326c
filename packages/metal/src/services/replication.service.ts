import { AdvisoryLeader, type ChangeFeed, isAppError, Periodic } from '@ironlens/core';
import type { AgentService } from './agent.service';
import { AGENT_TOPIC } from './agent.service';
import { BOOT_VARS_TOPICS, type BootVarsService } from './boot-vars.service';
import { DHCP_TOPIC, type DhcpHostsService } from './dhcp-hosts.service';
import { SETTINGS_TOPIC, type SettingsService } from './settings.service';

/**
 * Tells the replicas that anything of the boot control plane may have changed (after an
 * `ironlens import` into the shared database): they clear every cache and the hosts-file
 * writers render.
 */
export function announceEverythingChanged(changes: Pick<ChangeFeed, 'publish'>): void {
  changes.publish(BOOT_VARS_TOPICS.ledger);
  changes.publish(SETTINGS_TOPIC);
  changes.publish(AGENT_TOPIC);
  changes.publish(DHCP_TOPIC);
}

export interface MetalReplicationOptions {
  /** The database the replicas share, for the writer election's own connection. */
  connectionString: string;
  /** Replicas that give the same group elect one hosts-file writer (`IRONLENS_DHCP_WRITER_GROUP`). */
  dhcpWriterGroup: string;
  /** How often a follower tries to become the writer (`IRONLENS_DHCP_WRITER_RETRY_MS`). Default is `2000` ms. */
  retryMs?: number;
  /**
   * The backstop for a lost notice (`IRONLENS_REPLICA_RESYNC_MS`): this often every cache is
   * cleared and the writer re-renders a file that differs from the store. `0`: never. Default is `30000` ms.
   */
  resyncMs?: number;
  log?: (msg: string) => void;
}

/** What the replication follows and drives: the metal services with a per-process cache or file. */
export interface ReplicatedMetal {
  bootVars: BootVarsService;
  settings: SettingsService;
  agents: AgentService;
  dhcp: DhcpHostsService;
}

/**
 * The boot control plane as one of several replicas on one PostgreSQL database:
 * - the other replicas' changes (change feed) clear what this process caches: the boot-vars
 *   lookups (`metal.ledger`, `metal.device:<mac>`), the auto-register setting
 *   (`metal.settings`), an agent's cached capabilities (`metal.agent:<id>`); after the feed
 *   lost its connection, everything is cleared (notifications sent meanwhile were lost);
 * - the hosts file has one writer per `dhcpWriterGroup`, elected by a session advisory lock
 *   ({@link AdvisoryLeader}); the writer renders at election, on every `metal.dhcp` notice
 *   and after a resync; the others never write it. A writer that loses its lock's
 *   connection stops writing at once.
 */
export class MetalReplication {
  private readonly unsubscribe: Array<() => void> = [];
  private readonly leader: AdvisoryLeader;
  private closed = false;
  private retry?: NodeJS.Timeout;
  private backstop?: Periodic<void>;

  private constructor(
    private readonly metal: ReplicatedMetal,
    private readonly changes: ChangeFeed,
    private readonly opts: MetalReplicationOptions,
  ) {
    const log = opts.log ?? (() => {});
    this.leader = new AdvisoryLeader(opts.connectionString, {
      name: `ironlens.dhcp-writer:${opts.dhcpWriterGroup}`,
      retryMs: opts.retryMs ?? 2000,
      log,
      onElected: () => {
        metal.dhcp.setWriter(true);
        this.render();
      },
      onLost: () => metal.dhcp.setWriter(false),
    });
  }

  /** Subscribes to the feed and runs the first election (awaited: the writer has rendered its file when this resolves). */
  static async start(metal: ReplicatedMetal, changes: ChangeFeed, opts: MetalReplicationOptions): Promise<MetalReplication> {
    const r = new MetalReplication(metal, changes, opts);
    r.follow();
    r.startBackstop();
    metal.dhcp.setWriter(false);
    await r.leader.start();
    if (r.leader.leader) await metal.dhcp.render().catch(() => {});
    return r;
  }

  /** True while this process writes the hosts file of its group. */
  get dhcpWriter(): boolean {
    return this.leader.leader;
  }

  private follow(): void {
    const { bootVars, settings, agents } = this.metal;
    this.unsubscribe.push(
      this.changes.subscribe(BOOT_VARS_TOPICS.ledger, (c) => bootVars.applyChange(c.topic, c.key)),
      this.changes.subscribe(BOOT_VARS_TOPICS.device, (c) => bootVars.applyChange(c.topic, c.key)),
      this.changes.subscribe(SETTINGS_TOPIC, () => settings.invalidate()),
      this.changes.subscribe(AGENT_TOPIC, (c) => {
        agents.forgetCapabilities(c.key);
        bootVars.clear();
      }),
      this.changes.subscribe(DHCP_TOPIC, () => this.render({ ifStale: true })),
      this.changes.onResync(() => {
        this.clearCaches();
        this.render();
      }),
    );
  }

  /** Forgets everything this process caches from the store: the next lookups read it again. */
  private clearCaches(): void {
    this.metal.bootVars.clear();
    this.metal.settings.invalidate();
    this.metal.agents.forgetCapabilities(null);
  }

  /**
   * A notice is sent after its writer's commit: a replica killed in between leaves the others
   * with a stale cache that no notice will clear. Every `resyncMs` the caches are cleared (the
   * next lookups read the store) and the writer renders a file that differs from the store.
   */
  private startBackstop(): void {
    const every = this.opts.resyncMs ?? 30_000;
    if (every <= 0) return;
    // A check still running when the next is due is not doubled (a slow database).
    this.backstop = new Periodic(
      async () => {
        this.clearCaches();
        await this.metal.dhcp.renderIfStale();
      },
      every,
      (err) => this.opts.log?.(`warning: ${err.message}`),
    ).start();
  }

  /**
   * Renders the file (when this process is the writer). A render that could not read the
   * store or write the file (a connection the database dropped a moment ago) is tried again
   * every `retryMs` while this process stays the writer; a failed dnsmasq reload is reported
   * and not retried (the file is written).
   */
  private render(opts: { ifStale?: boolean } = {}): void {
    this.metal.dhcp.render(opts).catch((err: Error) => {
      this.opts.log?.(`warning: ${err.message}`);
      if (isAppError(err) && err.code === 'dnsmasq_reload_failed') return;
      if (this.closed || this.retry) return;
      this.retry = setTimeout(() => {
        this.retry = undefined;
        if (!this.closed && this.metal.dhcp.writer) this.render();
      }, this.opts.retryMs ?? 2000);
      this.retry.unref();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.backstop?.stop();
    for (const u of this.unsubscribe.splice(0)) u();
    await this.leader.close();
  }
}
