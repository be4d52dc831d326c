import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, type OperationEntry, type OperationsLog, type SecretBox, writeFileAtomic } from '@ironlens/core';
import YAML from 'yaml';
import { parseDhcpHosts } from '../adapters/dnsmasq.adapter';
import { refuseReservedEnv } from '../domain/agent-token';
import { isValidId, normalizeMac } from '../domain/identifiers';
import type { Agent, Device, WorkerRecord } from '../domain/types';
import type { AgentRepository } from '../repositories/agent.repository';
import type { BmcRepository, PowerRepository } from '../repositories/bmc.repository';
import { type BmcCredentials, checkBmcInput } from '../domain/power';
import type { DeviceRepository } from '../repositories/device.repository';
import type { SettingsRepository } from '../repositories/settings.repository';
import { lockLedger, type MetalDb, type MetalStore } from '../repositories/tables';
import type { WorkerRepository } from '../repositories/worker.repository';
import { LAYOUT, type LayoutTexts, validateImportLayout } from './import-validation';


export interface ImportSummary {
  agents: number;
  workers: number;
  devices: number;
  bindings_from_dhcp_hosts: number;
  operations: number;
  settings: string[];
}

/**
 * `ironlens import` / `ironlens export`: the seed's YAML/JSON file layout to and from the
 * store, for migration and backup. Import is one transaction into an empty ledger (or a
 * replacement with `replace`); export writes each file atomically. Agent tokens are
 * exported as stored (often `${ENV}` placeholders) in a file of mode 0600.
 */
export class LayoutService {
  constructor(
    private readonly store: MetalStore,
    private readonly workers: WorkerRepository,
    private readonly devices: DeviceRepository,
    private readonly agents: AgentRepository,
    private readonly settings: SettingsRepository,
    private readonly ops: OperationsLog,
    /** Devices' BMCs (issue 21): exported without passwords, unless asked (then sealed). */
    private readonly power?: { bmcs: BmcRepository; records: PowerRepository; secrets: SecretBox },
    /** Settings no agent token may name beside the reserved prefixes ({@link refuseReservedEnv}). Default: none. */
    private readonly reservedEnv: readonly string[] = [],
  ) {}

  /**
   * `bmcPasswords`: also write each BMC's password, sealed with this store's secret key (purpose
   * `export:<mac>:bmc`): only a store with the same `IRONLENS_SECRET_KEY` can import it. Without
   * it, BMCs are exported without a password (imported with `password_set: false`).
   */
  async export(root: string, opts: { bmcPasswords?: boolean } = {}): Promise<Record<string, number>> {
    const db = this.store.db;
    const [agents, workers, devices, settings, hosts, bmcs] = await Promise.all([
      this.agents.list(db),
      this.workers.list(db),
      this.devices.list(db),
      this.settings.all(db),
      this.devices.dhcpHosts(db),
      this.power ? this.power.bmcs.all(db) : Promise.resolve(new Map()),
    ]);
    const agentsDoc = {
      agents: Object.fromEntries(agents.map((a) => [a.id, { base_url: a.base_url, ...(a.token ? { token: a.token } : {}), ...(a.iscsi_server ? { iscsi_server: a.iscsi_server } : {}), role: a.role, tags: a.tags, enabled: a.enabled }])),
    };
    const workersDoc = {
      workers: Object.fromEntries(
        workers.map((w) => [
          w.worker_id,
          {
            hostname: w.hostname,
            arch: w.arch,
            state: w.state,
            disks: w.disks,
            cd: w.cd,
            ...(w.default_os ? { default_os: w.default_os } : {}),
            ...(w.boot.menu_default != null || w.boot.menu_timeout != null ? { boot: { ...(w.boot.menu_default != null ? { menu_default: w.boot.menu_default } : {}), ...(w.boot.menu_timeout != null ? { menu_timeout: w.boot.menu_timeout } : {}) } } : {}),
          },
        ]),
      ),
    };
    const bmcOf = (mac: string) => {
      const b = bmcs.get(mac)?.credentials as BmcCredentials | undefined;
      if (!b) return {};
      const where = b.driver === 'redfish' ? { url: b.url, verify_tls: b.verifyTls } : { host: b.host, port: b.port, cipher_suite: b.cipherSuite };
      const sealed = opts.bmcPasswords && b.password && this.power ? { password_sealed: this.power.secrets.seal(b.password, `export:${mac}:bmc`) } : {};
      return { bmc: { driver: b.driver, ...where, username: b.username, ...sealed } };
    };
    const devicesDoc = { devices: Object.fromEntries(devices.map((d) => [d.mac, { ...d, ...bmcOf(d.mac) }])) };
    await writeFileAtomic(join(root, LAYOUT.agents), YAML.stringify(agentsDoc), 0o600);
    await writeFileAtomic(join(root, LAYOUT.workers), YAML.stringify(workersDoc));
    await writeFileAtomic(join(root, LAYOUT.devices), YAML.stringify(devicesDoc), opts.bmcPasswords ? 0o600 : undefined);
    await writeFileAtomic(join(root, LAYOUT.settings), `${JSON.stringify(settings, null, 2)}\n`);
    let ops = 0;
    const lines: string[] = [];
    for (let since = 0; ; ) {
      const page = await this.ops.list({ since, limit: 5000 });
      if (page.entries.length === 0) break;
      for (const e of page.entries) lines.push(JSON.stringify(e));
      ops += page.entries.length;
      since = page.next_cursor;
    }
    await writeFileAtomic(join(root, LAYOUT.operations), lines.length ? `${lines.join('\n')}\n` : '');
    await writeFileAtomic(join(root, LAYOUT.dhcpHosts), hosts.map((h) => `${h.mac},${h.hostname}\n`).join(''));
    mkdirSync(root, { recursive: true });
    return { agents: agents.length, workers: workers.length, devices: devices.length, operations: ops, bindings: hosts.length, bmcs: bmcs.size };
  }

  private read(root: string, rel: string): string | null {
    const p = join(root, rel);
    return existsSync(p) ? readFileSync(p, 'utf8') : null;
  }

  async import(root: string, opts: { replace?: boolean } = {}): Promise<ImportSummary> {
    const layout = this.readLayout(root);
    let fromHosts = 0;
    await this.store.transaction(async (db) => {
      await lockLedger(db);
      const existing = (await this.workers.list(db)).length + (await this.devices.list(db)).length + (await this.agents.list(db)).length;
      if (existing > 0 && !opts.replace) throw new AppError('store_not_empty', 'the store already holds a ledger; import into an empty data directory, or pass --replace');
      if (opts.replace) await this.clear(db);
      const { devices, fromHosts: added } = withBindingsFromHosts(layout.devices, layout.hosts, layout.workers);
      fromHosts = added;
      for (const a of layout.agents) await this.agents.insert(db, a);
      for (const w of layout.workers) await this.workers.insert(db, w);
      for (const d of devices) await this.devices.insert(db, d);
      for (const [mac, b] of layout.bmcs) await this.power?.bmcs.put(db, mac, b);
      for (const [k, v] of Object.entries(layout.settings)) await this.settings.set(db, k, v);
      await this.ops.importRaw(layout.operations, db);
    });
    return {
      agents: layout.agents.length,
      workers: layout.workers.length,
      devices: layout.devices.length + fromHosts,
      bindings_from_dhcp_hosts: fromHosts,
      operations: layout.operations.length,
      settings: Object.keys(layout.settings),
    };
  }

  /** Reads and checks every file of the layout under `root`; writes nothing. */
  private readLayout(root: string): ParsedLayout {
    if (!existsSync(root)) throw new AppError('request_invalid', `no such directory: ${root}`);
    // Every record passes the API's own grammars before anything is written (issue 13).
    const texts: LayoutTexts = {
      agents: this.read(root, LAYOUT.agents),
      workers: this.read(root, LAYOUT.workers),
      devices: this.read(root, LAYOUT.devices),
      settings: this.read(root, LAYOUT.settings),
      operations: this.read(root, LAYOUT.operations),
      dhcpHosts: this.read(root, LAYOUT.dhcpHosts),
    };
    validateImportLayout(texts);
    const doc = <K extends string>(rel: string) => (YAML.parse(this.read(root, rel) ?? '') ?? {}) as Partial<Record<K, Record<string, Record<string, unknown>>>>;
    const settingsText = this.read(root, LAYOUT.settings);
    const agents = Object.entries(doc<'agents'>(LAYOUT.agents).agents ?? {}).map(([id, a]) => agentFromLayout(id, a));
    for (const a of agents) refuseReservedEnv(a.token, this.reservedEnv, `${LAYOUT.agents}: agent ${JSON.stringify(a.id)}: token`);
    return {
      agents,
      workers: Object.entries(doc<'workers'>(LAYOUT.workers).workers ?? {}).map(([id, w]) => workerFromLayout(id, w)),
      devices: Object.entries(doc<'devices'>(LAYOUT.devices).devices ?? {}).map(([key, d]) => deviceFromLayout(key, d)),
      bmcs: this.bmcsOf(doc<'devices'>(LAYOUT.devices).devices ?? {}),
      settings: settingsText ? (JSON.parse(settingsText) as Record<string, unknown>) : {},
      hosts: parseDhcpHosts(this.read(root, LAYOUT.dhcpHosts) ?? ''),
      operations: operationsFromJsonl(this.read(root, LAYOUT.operations) ?? ''),
    };
  }

  /** The devices' BMCs of `state/devices.yml` (shapes checked by the import validation already). */
  private bmcsOf(devices: Record<string, Record<string, unknown>>): Map<string, BmcCredentials> {
    const out = new Map<string, BmcCredentials>();
    for (const [key, d] of Object.entries(devices)) {
      const b = d.bmc as Record<string, unknown> | undefined;
      if (!b) continue;
      const mac = normalizeMac(d.mac ?? key) as string;
      const { password_sealed, ...plain } = b;
      let password = plain.password;
      if (typeof password_sealed === 'string') {
        if (!this.power) throw new AppError('import_invalid', `${LAYOUT.devices}: device ${mac}: bmc.password_sealed: no secret key to open it`);
        try {
          password = this.power.secrets.openText(password_sealed, `export:${mac}:bmc`);
        } catch {
          throw new AppError('import_invalid', `${LAYOUT.devices}: device ${mac}: bmc.password_sealed: cannot be opened with this store's secret key (IRONLENS_SECRET_KEY of the exporting store)`, { field: 'bmc.password_sealed' });
        }
      }
      out.set(mac, checkBmcInput({ ...plain, password }, null, { allowNoPassword: true }));
    }
    return out;
  }

  /** `--replace`: empties every table the import fills. */
  private async clear(db: MetalDb): Promise<void> {
    await this.power?.bmcs.deleteAll(db);
    await this.power?.records.deleteAll(db);
    await this.devices.deleteAll(db);
    await this.workers.deleteAll(db);
    await this.agents.deleteAll(db);
    await this.settings.deleteAll(db);
    await this.ops.deleteAll(db);
  }
}

/** The layout's records, checked and in the store's shapes. */
interface ParsedLayout {
  agents: Agent[];
  workers: WorkerRecord[];
  devices: Device[];
  bmcs: Map<string, BmcCredentials>;
  settings: Record<string, unknown>;
  hosts: ReturnType<typeof parseDhcpHosts>;
  operations: OperationEntry[];
}

/** One entry of `config/agents.yml`. */
function agentFromLayout(id: string, a: Record<string, unknown>): Agent {
  if (!isValidId(id.toLowerCase())) throw new AppError('agent_id_invalid', `config/agents.yml: invalid agent id ${JSON.stringify(id)}`);
  const role = (a.role ?? {}) as { disk?: boolean; cd?: boolean };
  return {
    id: id.toLowerCase(),
    base_url: String(a.base_url ?? '').replace(/\/+$/, ''),
    token: a.token ? String(a.token) : null,
    iscsi_server: a.iscsi_server ? String(a.iscsi_server) : null,
    role: { disk: role.disk === true, cd: role.cd === true },
    tags: Array.isArray(a.tags) ? a.tags.map(String) : [],
    enabled: a.enabled !== false,
  };
}

/** One entry of `state/workers.yml`. */
function workerFromLayout(id: string, w: Record<string, unknown>): WorkerRecord {
  const wid = id.toLowerCase();
  if (!isValidId(wid)) throw new AppError('worker_id_invalid', `state/workers.yml: invalid worker id ${JSON.stringify(id)}`);
  const boot = (w.boot ?? {}) as { menu_default?: string; menu_timeout?: number };
  return {
    worker_id: wid,
    hostname: String(w.hostname ?? wid).toLowerCase(),
    arch: String(w.arch ?? 'x86_64'),
    state: (w.state as WorkerRecord['state']) ?? 'registered',
    default_os: (w.default_os as WorkerRecord['default_os']) ?? null,
    boot: { menu_default: boot.menu_default ?? null, menu_timeout: boot.menu_timeout ?? null },
    disks: (Array.isArray(w.disks) ? w.disks : []) as WorkerRecord['disks'],
    cd: (w.cd as WorkerRecord['cd']) ?? null,
  };
}

/** One entry of `state/devices.yml` (keyed by MAC; a `mac` field wins). */
function deviceFromLayout(key: string, d: Record<string, unknown>): Device {
  const mac = normalizeMac(d.mac ?? key);
  if (!mac) throw new AppError('mac_invalid', `state/devices.yml: invalid MAC ${JSON.stringify(key)}`);
  return {
    mac,
    uuid: (d.uuid as string) ?? null,
    state: (d.state as Device['state']) ?? 'pooled',
    bound_worker_id: (d.bound_worker_id as string) ?? null,
    key_hash: (d.key_hash as string) ?? null,
    source: d.source === 'ipxe' ? 'ipxe' : 'manual',
    fingerprint: (d.fingerprint as Device['fingerprint']) ?? {},
    first_seen: d.first_seen != null ? String(d.first_seen) : null,
    last_seen: d.last_seen != null ? String(d.last_seen) : null,
  };
}

/** `state/operations.jsonl`: one JSON entry a line, blank lines skipped. */
function operationsFromJsonl(text: string): OperationEntry[] {
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      try {
        return JSON.parse(l) as OperationEntry;
      } catch {
        throw new AppError('request_invalid', `state/operations.jsonl line ${i + 1} is not JSON`);
      }
    });
}

/**
 * An older layout keeps bindings only in dhcp-hosts.conf: each `mac,hostname` line of a known
 * worker whose MAC `devices` does not hold becomes a bound device. Returns the devices to
 * insert, one a MAC, and how many came from dhcp-hosts.conf.
 */
function withBindingsFromHosts(devices: Device[], hosts: ReturnType<typeof parseDhcpHosts>, workers: WorkerRecord[]): { devices: Device[]; fromHosts: number } {
  const byMac = new Map(devices.map((d) => [d.mac, d]));
  let fromHosts = 0;
  for (const h of hosts) {
    const mac = normalizeMac(h.mac);
    const w = workers.find((x) => x.hostname === h.hostname.toLowerCase());
    if (!mac || !w || byMac.has(mac)) continue;
    byMac.set(mac, { mac, uuid: null, state: 'bound', bound_worker_id: w.worker_id, key_hash: null, source: 'manual', fingerprint: {}, first_seen: null, last_seen: null });
    fromHosts++;
  }
  return { devices: [...byMac.values()], fromHosts };
}
