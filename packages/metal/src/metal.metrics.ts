import type { Counter, Gauge, Histogram, Metrics } from '@ironlens/core';
import type { DeviceState, WorkerState } from './domain/types';
import type { DhcpHostsObserver } from './services/dhcp-hosts.service';
import type { HostReportObserver } from './services/host-report.service';
import type { InventoryService } from './services/inventory.service';
import type { BootProofObserver } from './services/boot-proof.service';
import type { BmcCallObserver } from './services/power.service';

const DEVICE_STATES: readonly DeviceState[] = ['pooled', 'bound', 'revoked'];
const WORKER_STATES: readonly WorkerState[] = ['registered', 'ready', 'installing'];

/**
 * The boot control plane's metrics, in the process' registry: `/boot-vars` cache hits and
 * misses, dnsmasq hosts-file renders and reload failures (counters, moved by the services),
 * and devices, workers and agents (gauges read at scrape time through `InventoryService`).
 * Labels are states and agent ids (validated at registration); never a MAC or a hostname.
 */
export class MetalMetrics {
  private readonly cacheHits: Counter<string>;
  private readonly cacheMisses: Counter<string>;
  /** `/boot-vars` answers since the last scrape, by cache outcome. */
  private readonly lookups = { hits: 0, misses: 0 };
  private readonly renders: Counter<string>;
  private readonly writeFailures: Counter<string>;
  private readonly entries: Gauge<string>;
  private readonly reloads: Counter<string>;
  private readonly reloadFailures: Counter<string>;
  private readonly hostReportsTotal: Counter<string>;
  private readonly bootDurations: Histogram<string>;
  private readonly bmcDuration: Histogram<string>;
  private readonly bmcFailures: Counter<string>;
  private readonly boots: Counter<string>;

  constructor(private readonly metrics: Metrics) {
    // Counted in two numbers per answer, handed to the counters at scrape time (no prom-client call per request).
    const lookups = this.lookups;
    const tallied = (name: string, help: string, outcome: keyof MetalMetrics['lookups']) =>
      metrics.counter({
        name,
        help,
        collect() {
          this.inc(lookups[outcome]);
          lookups[outcome] = 0;
        },
      });
    this.cacheHits = tallied('ironlens_boot_vars_cache_hits_total', '/boot-vars answers given from the cache, without reading the store or an agent.', 'hits');
    this.cacheMisses = tallied('ironlens_boot_vars_cache_misses_total', '/boot-vars answers that read the store (or asked an agent for its data plane) first.', 'misses');
    this.renders = metrics.counter({ name: 'ironlens_dnsmasq_hosts_renders_total', help: 'Times dhcp-hosts.conf was rendered from the store and written.' });
    this.writeFailures = metrics.counter({ name: 'ironlens_dnsmasq_hosts_write_failures_total', help: 'Times writing dhcp-hosts.conf failed (dnsmasq_write_failed).' });
    this.entries = metrics.gauge({ name: 'ironlens_dnsmasq_hosts_entries', help: 'Lines (bound devices) in the dhcp-hosts.conf this process wrote last.' });
    this.reloads = metrics.counter({ name: 'ironlens_dnsmasq_reloads_total', help: 'dnsmasq reloads that succeeded (the configured IPXE_CP_DNSMASQ_* method; a no-op when reload is off).' });
    this.reloadFailures = metrics.counter({ name: 'ironlens_dnsmasq_reload_failures_total', help: 'dnsmasq reloads that failed (dnsmasq_reload_failed; the file was written).' });
    this.hostReportsTotal = metrics.counter({
      name: 'ironlens_host_reports_total',
      help: 'Host reports (POST /hosts/report), by outcome: accepted, or refused_<reason> (invalid, unknown, signature, replay).',
      labelNames: ['outcome'],
    });
    this.bootDurations = metrics.histogram({
      name: 'ironlens_boot_duration_seconds',
      help: "A worker's boot, from the first event the control plane saw (iPXE's device report or /boot-vars) to its host report.",
      buckets: [10, 20, 30, 45, 60, 90, 120, 180, 240, 300, 600, 1200],
    });
    this.bmcDuration = metrics.histogram({
      name: 'ironlens_bmc_call_duration_seconds',
      help: 'BMC calls (Redfish requests, ipmitool runs), by driver, operation (status, on, off, cycle, soft-off, boot_network) and outcome (ok or the error code).',
      labelNames: ['driver', 'op', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 60],
    });
    this.bmcFailures = metrics.counter({ name: 'ironlens_bmc_failures_total', help: 'BMC calls that failed, by driver and error code (bmc_unreachable, bmc_auth_failed, bmc_action_failed, bmc_timeout).', labelNames: ['driver', 'code'] });
    this.boots = metrics.counter({ name: 'ironlens_power_boots_total', help: 'Proofs of boot after a power action with boot: network, by result (booted, no_network_boot).', labelNames: ['result'] });
    for (const result of ['booted', 'no_network_boot']) this.boots.inc({ result }, 0);
  }

  /** For `PowerService`: one BMC call. */
  readonly bmcCalls: BmcCallObserver = {
    call: (driver, op, seconds, code) => {
      this.bmcDuration.observe({ driver, op, outcome: code ?? 'ok' }, seconds);
      if (code) this.bmcFailures.inc({ driver, code });
    },
  };

  /** For `BootProofService`. */
  readonly bootProof: BootProofObserver = {
    confirmed: () => this.boots.inc({ result: 'booted' }),
    missed: () => this.boots.inc({ result: 'no_network_boot' }),
  };

  /** For `BootVarsService`: one `/boot-vars` answer, from the cache or not. */
  readonly bootVarsLookup = (hit: boolean): void => {
    if (hit) this.lookups.hits += 1;
    else this.lookups.misses += 1;
  };

  /** For `HostReportService` (issue 24). */
  readonly hostReports: HostReportObserver = {
    accepted: () => this.hostReportsTotal.inc({ outcome: 'accepted' }),
    refused: (reason) => this.hostReportsTotal.inc({ outcome: `refused_${reason}` }),
    bootDuration: (seconds) => this.bootDurations.observe(seconds),
  };

  /** For `DhcpHostsService`. */
  readonly dnsmasq: DhcpHostsObserver = {
    written: (lines) => {
      this.renders.inc();
      this.entries.set(lines);
    },
    writeFailed: () => this.writeFailures.inc(),
    reloaded: () => this.reloads.inc(),
    reloadFailed: () => this.reloadFailures.inc(),
  };

  /**
   * Registers the gauges read at scrape time. A store or agent that fails leaves its gauge
   * without samples for that scrape (Prometheus' `absent()` sees it); the scrape still answers.
   */
  collectFrom(inventory: InventoryService): void {
    this.metrics.gauge({
      name: 'ironlens_devices',
      help: 'Devices in the pool, by state (pooled, bound, revoked), read from the store.',
      labelNames: ['state'],
      async collect() {
        this.reset();
        const counts = await inventory.devicesByState().catch(() => null);
        if (counts) for (const state of new Set([...DEVICE_STATES, ...counts.keys()])) this.set({ state }, counts.get(state) ?? 0);
      },
    });
    this.metrics.gauge({
      name: 'ironlens_workers',
      help: 'Workers in the ledger, by state (registered, ready, installing), read from the store.',
      labelNames: ['state'],
      async collect() {
        this.reset();
        const counts = await inventory.workersByState().catch(() => null);
        if (counts) for (const state of new Set([...WORKER_STATES, ...counts.keys()])) this.set({ state }, counts.get(state) ?? 0);
      },
    });
    this.metrics.gauge({
      name: 'ironlens_agent_up',
      help: 'Whether each enabled storage agent answered /healthz at scrape time (1) or not (0), by agent id.',
      labelNames: ['agent'],
      async collect() {
        this.reset();
        const agents = await inventory.agentLiveness().catch(() => []);
        for (const a of agents) this.set({ agent: a.agent }, a.up ? 1 : 0);
      },
    });
  }
}
