import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { type Env, envBool, envInt, envNumber, envOptional, envString } from '@ironlens/core';
import { checkBootUrl } from './services/boot-script.service';

export type ReloadMethod =
  | { kind: 'docker'; container: string }
  | { kind: 'pid'; file: string }
  | { kind: 'command'; argv: string[] }
  /** Nothing configured: find the seed's container, a pid file or a running dnsmasq at start. */
  | { kind: 'detect'; container: string }
  | { kind: 'none' };

/** The boot control plane's configuration; environment names are the old deployment's. */
export interface MetalConfig {
  /** `IRONLENS_DATA_DIR`: the store, rendered files, and the secret key file when `IRONLENS_SECRET_KEY` is not set. */
  dataDir: string;
  /** `IPXE_CP_TOKEN`: bearer token; empty turns auth off. */
  token: string | undefined;
  /** `IPXE_CP_AUTO_REGISTER`: start-up default of auto-register. Default is `true`. */
  autoRegisterDefault: boolean;
  /** `IPXE_CP_BOOT_MENU_TIMEOUT` (ms). Default is `5000`. */
  bootMenuTimeout: number;
  /** `IPXE_CP_AUTO_BOOT_TIMEOUT` (ms), the reboot loop's timeout. Default is `1`. */
  autoBootTimeout: number;
  /** `IPXE_CP_DEFAULT_ARCH`. Default is `x86_64`. */
  defaultArch: string;
  /** `IPXE_CP_AGENT_TIMEOUT` (seconds in the env, ms here). Default is 10 s. */
  agentTimeoutMs: number;
  /** `IRONLENS_AGENT_DISK_TIMEOUT` (seconds): deadline of disk and CD creation, which may copy a whole master where reflink is not available. Default is 1800 s. */
  agentDiskTimeoutMs: number;
  /**
   * `IPXE_CP_AGENT_TOKEN_ENV`: the environment variables an agent token may name as `${NAME}`,
   * comma-separated, a trailing `*` matching any rest. Default is `IPXE_AGENT_*`.
   */
  agentTokenEnv: string[];
  /** `IPXE_CP_AGENT_ALLOW_LINK_LOCAL`: let agent calls reach link-local and cloud metadata addresses. Default is `false`. */
  agentAllowLinkLocal: boolean;
  /** `IPXE_CP_DNSMASQ_HOSTS_FILE`. Default is `<data dir>/dnsmasq/dhcp-hosts.conf`. */
  dnsmasqHostsFile: string;
  /**
   * `IRONLENS_DHCP_WRITER_GROUP`: replicas on PostgreSQL that give the same group elect one
   * writer of the hosts file among them (an advisory lock keyed by the group); give the same
   * value to the replicas that serve one dnsmasq. Default is `<hostname>:<hosts file path>`:
   * one writer per machine and file.
   */
  dhcpWriterGroup: string;
  /** `IRONLENS_DHCP_WRITER_RETRY_MS`: how often a replica that is not the writer tries to become it, and the writer checks its lock's connection. Default is `2000`. */
  dhcpWriterRetryMs: number;
  /**
   * `IRONLENS_REPLICA_RESYNC_MS`: replicas on PostgreSQL clear their boot-vars, settings and
   * agent caches this often, and the hosts-file writer checks its file against the store, in
   * case a change notice was lost (a replica killed between its commit and its notice).
   * Default is `30000`; `0` turns the backstop off.
   */
  replicaResyncMs: number;
  reload: ReloadMethod;
  /**
   * `IRONLENS_REPORT_REGISTER_PER_MINUTE`: new devices one source address may register
   * through `/devices/report` per minute (a token bucket of that size); `0` turns it off.
   * Reports of known devices are never limited. Default is `120`.
   */
  reportRegisterPerMinute: number;
  /** `IRONLENS_REPORT_MAX_POOLED`: no auto-registration while this many devices are pooled; `0` turns the cap off. Default is `1000`. */
  reportMaxPooled: number;
  /**
   * `IRONLENS_REPORT_LAST_SEEN_SECONDS`: a report of a known device whose fingerprint and UUID
   * did not change writes the store only when its `last_seen` is at least this old; otherwise
   * it costs one read (a boot storm of re-booting machines writes nothing). `last_seen` is
   * therefore up to this late. `0`: every report writes. Default is `60`.
   */
  reportLastSeenSeconds: number;
  /**
   * `IRONLENS_AUTO_REGISTER_WINDOW_MINUTES`: when set, auto-register closes by itself this
   * many minutes after it was turned on (or after start, when it is on at start); `0` keeps
   * it open until turned off. Default is `0`.
   */
  autoRegisterWindowMinutes: number;
  /**
   * `IRONLENS_ISCSI_CHAP`: give each worker an iSCSI CHAP account (a random secret made and
   * kept sealed by ironlens) and bind it to every disk and install CD made for the worker
   * from then on; `/boot-vars` hands it to the worker's bound MAC only. Default is `false`.
   */
  iscsiChap: boolean;
  /** `IRONLENS_DHCP_LEASE` (issue 24): `infinite` (default) gives bound workers a lease that never runs out; `range` keeps the seed's `mac,hostname` lines. */
  dhcpLease: 'infinite' | 'range';
  /**
   * `IRONLENS_ISCSI_CHAP_RECONCILE_MS`: with CHAP on, how often agents are checked for
   * CHAP-bound targets they lost (a tgtd restart) and re-scanned with the accounts. Default is
   * `30000`; `0` turns it off (then `POST /agents/<id>/luns/scan` brings them back).
   */
  iscsiChapReconcileMs: number;
  /** `IRONLENS_BMC_CONCURRENCY`: BMC calls in flight at once, over every BMC (calls to one BMC host always go one at a time). Default is `8`. */
  bmcConcurrency: number;
  /** `IRONLENS_BMC_STAGGER_MS`: least time between two power-ons (on, cycle) sent by this process, so a rack does not draw its inrush current at once. Default is `0`. */
  bmcStaggerMs: number;
  /** `IRONLENS_BMC_TIMEOUT_MS`: deadline of one BMC call (an HTTPS request, an `ipmitool` run). Default is `20000`. */
  bmcTimeoutMs: number;
  /** `IRONLENS_BMC_STATE_CACHE_MS`: how long `GET /devices/{mac}/power` answers the state last read from the BMC. Default is `5000`. */
  bmcStateCacheMs: number;
  /** `IRONLENS_BMC_ALLOW_LINK_LOCAL`: accept BMCs at link-local and cloud metadata addresses (a Redfish host interface). Default is `false`. */
  bmcAllowLinkLocal: boolean;
  /** `IRONLENS_BMC_FAILURE_CACHE_MS`: how long a failed state read of a device is answered again without calling its BMC. Default is `2000`. */
  bmcFailureCacheMs: number;
  /** `IRONLENS_BMC_READ_QUEUE_PER_HOST`: state reads that may wait for one BMC host; more are refused with 503 `bmc_busy`. Default is `4`. */
  bmcReadQueuePerHost: number;
  /** `IRONLENS_BMC_READ_QUEUE`: state reads that may wait over every BMC host; more are refused with 503 `bmc_busy`. Default is `64`. */
  bmcReadQueue: number;
  /**
   * `IRONLENS_BOOT_URL`: the provisioning listener as machines reach it (`http://10.0.0.5:4839`),
   * filled into the `boot.ipxe` served at `GET /boot.ipxe`. Default: unset, or with boot services
   * on, the provisioning interface's address and the listener's port.
   */
  bootUrl: string | undefined;
  /** `IRONLENS_BOOT_CONFIRM_TIMEOUT_MS`: after a power action with `boot: "network"`, how long to wait for the device report and `/boot-vars` before `no_network_boot`. Default is `300000` (5 minutes). */
  bootConfirmTimeoutMs: number;
}

/** Splits a command line on whitespace; no shell, no quoting rules. */
export function splitCommand(text: string): string[] {
  const t = text.trim();
  if (t.startsWith('[')) {
    const argv = JSON.parse(t);
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string') || argv.length === 0) throw new Error('IPXE_CP_DNSMASQ_RELOAD_COMMAND: a JSON array of strings expected');
    return argv;
  }
  return t.split(/\s+/).filter(Boolean);
}

export function metalConfigFromEnv(env: Env, dataDir: string): MetalConfig {
  let reload: ReloadMethod;
  const pidFile = envOptional(env, 'IPXE_CP_DNSMASQ_PID_FILE');
  const command = envOptional(env, 'IPXE_CP_DNSMASQ_RELOAD_COMMAND');
  const container = envOptional(env, 'IPXE_CP_DNSMASQ_CONTAINER');
  // The seed's default (docker exec ipxe-dnsmasq) holds when reload is configured in any way;
  // with nothing configured, the dnsmasq to reload is detected at start.
  const configured = envOptional(env, 'IPXE_CP_DNSMASQ_RELOAD') !== undefined || container !== undefined;
  if (!envBool(env, 'IPXE_CP_DNSMASQ_RELOAD', true)) reload = { kind: 'none' };
  else if (pidFile) reload = { kind: 'pid', file: pidFile };
  else if (command) reload = { kind: 'command', argv: splitCommand(command) };
  else if (configured) reload = { kind: 'docker', container: container ?? 'ipxe-dnsmasq' };
  else reload = { kind: 'detect', container: 'ipxe-dnsmasq' };
  const agentTimeout = Number(envString(env, 'IPXE_CP_AGENT_TIMEOUT', '10'));
  if (!Number.isFinite(agentTimeout) || agentTimeout <= 0) throw new Error('IPXE_CP_AGENT_TIMEOUT must be a positive number of seconds');
  const dnsmasqHostsFile = envString(env, 'IPXE_CP_DNSMASQ_HOSTS_FILE', join(dataDir, 'dnsmasq', 'dhcp-hosts.conf'));
  const bootUrl = envOptional(env, 'IRONLENS_BOOT_URL');
  return {
    dataDir,
    token: envOptional(env, 'IPXE_CP_TOKEN'),
    autoRegisterDefault: envBool(env, 'IPXE_CP_AUTO_REGISTER', true),
    bootMenuTimeout: envInt(env, 'IPXE_CP_BOOT_MENU_TIMEOUT', 5000),
    autoBootTimeout: envInt(env, 'IPXE_CP_AUTO_BOOT_TIMEOUT', 1),
    defaultArch: envString(env, 'IPXE_CP_DEFAULT_ARCH', 'x86_64'),
    agentTimeoutMs: Math.round(agentTimeout * 1000),
    agentDiskTimeoutMs: Math.round(envNumber(env, 'IRONLENS_AGENT_DISK_TIMEOUT', 1800) * 1000),
    agentTokenEnv: envString(env, 'IPXE_CP_AGENT_TOKEN_ENV', 'IPXE_AGENT_*')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
    agentAllowLinkLocal: envBool(env, 'IPXE_CP_AGENT_ALLOW_LINK_LOCAL', false),
    dnsmasqHostsFile,
    dhcpWriterGroup: envString(env, 'IRONLENS_DHCP_WRITER_GROUP', `${hostname()}:${resolve(dnsmasqHostsFile)}`),
    dhcpWriterRetryMs: envInt(env, 'IRONLENS_DHCP_WRITER_RETRY_MS', 2000),
    replicaResyncMs: envInt(env, 'IRONLENS_REPLICA_RESYNC_MS', 30_000),
    reload,
    reportRegisterPerMinute: envInt(env, 'IRONLENS_REPORT_REGISTER_PER_MINUTE', 120),
    reportMaxPooled: envInt(env, 'IRONLENS_REPORT_MAX_POOLED', 1000),
    reportLastSeenSeconds: envInt(env, 'IRONLENS_REPORT_LAST_SEEN_SECONDS', 60),
    autoRegisterWindowMinutes: envInt(env, 'IRONLENS_AUTO_REGISTER_WINDOW_MINUTES', 0),
    iscsiChap: envBool(env, 'IRONLENS_ISCSI_CHAP', false),
    dhcpLease: dhcpLeaseFrom(envString(env, 'IRONLENS_DHCP_LEASE', 'infinite')),
    iscsiChapReconcileMs: envInt(env, 'IRONLENS_ISCSI_CHAP_RECONCILE_MS', 30_000),
    bmcConcurrency: Math.max(1, envInt(env, 'IRONLENS_BMC_CONCURRENCY', 8)),
    bmcStaggerMs: Math.max(0, envInt(env, 'IRONLENS_BMC_STAGGER_MS', 0)),
    bmcTimeoutMs: Math.max(1, envInt(env, 'IRONLENS_BMC_TIMEOUT_MS', 20_000)),
    bmcStateCacheMs: Math.max(0, envInt(env, 'IRONLENS_BMC_STATE_CACHE_MS', 5_000)),
    bmcAllowLinkLocal: envBool(env, 'IRONLENS_BMC_ALLOW_LINK_LOCAL', false),
    bmcFailureCacheMs: Math.max(0, envInt(env, 'IRONLENS_BMC_FAILURE_CACHE_MS', 2_000)),
    bmcReadQueuePerHost: Math.max(1, envInt(env, 'IRONLENS_BMC_READ_QUEUE_PER_HOST', 4)),
    bmcReadQueue: Math.max(1, envInt(env, 'IRONLENS_BMC_READ_QUEUE', 64)),
    bootConfirmTimeoutMs: Math.max(1, envInt(env, 'IRONLENS_BOOT_CONFIRM_TIMEOUT_MS', 300_000)),
    bootUrl: bootUrl === undefined ? undefined : checkBootUrl(bootUrl),
  };
}

function dhcpLeaseFrom(value: string): 'infinite' | 'range' {
  if (value === 'infinite' || value === 'range') return value;
  throw new Error(`IRONLENS_DHCP_LEASE must be infinite or range, got ${JSON.stringify(value.slice(0, 40))}`);
}
