/**
 * Metal's API shapes (seed 004), in TypeBox and in one place: each schema gives its route's
 * validation, the answer's serialization and its part of the OpenAPI document, and (`Static<>`)
 * the TypeScript type the services take, so a request shape is written once. `@ironlens/metal/api`
 * is this module: a client (the console) imports the types from here with `import type`.
 *
 * The JSON they produce is the JSON Schema these routes have always had (`type: ['string',
 * 'null']` for a nullable value, no `required` in answers), so the validation errors, the answers
 * and the document stay as seed 004 clients know them. This module imports TypeBox and nothing
 * else. Property order is the answer's key order.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/** `T` or `null` as a JSON Schema type list (`type: ['string', 'null']`). */
const OrNull = <T extends TSchema>(schema: T) => {
  const json = JSON.parse(JSON.stringify(schema)) as { type: string };
  return Type.Unsafe<Static<T> | null>({ ...json, type: [json.type, 'null'] });
};

/** An object whose keys are not described (`{type: 'object', additionalProperties: true}`). */
const AnyObject = () => Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });

/** A string restricted to `values` as a plain JSON Schema `enum` (not TypeBox's `anyOf` of literals). */
const StringEnum = <const T extends readonly string[]>(values: T, options: { default?: T[number] } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

export const nullableString = OrNull(Type.String());

/** A worker's boot settings (`menu.ipxe`). */
export const bootSchema = OrNull(
  Type.Object({
    menu_default: Type.Optional(OrNull(Type.String({ description: 'menu.ipxe item id' }))),
    menu_timeout: Type.Optional(OrNull(Type.Integer({ description: 'milliseconds; 0 waits forever' }))),
  }),
);
export type BootSettings = Static<typeof bootSchema>;

export const diskSchema = Type.Object({
  agent: Type.Optional(Type.String()),
  iqn: Type.Optional(Type.String()),
  filename: Type.Optional(Type.String()),
  backing: Type.Optional(Type.String()),
  os: Type.Optional(Type.String()),
  source: Type.Optional(AnyObject()),
});
export type DiskView = Static<typeof diskSchema>;


// ---- host reports (issue 24) ----------------------------------------------------------------

/** Printable text as a host reports it: no control characters, capped. */
const HostText = (maxLength = 200) => Type.String({ maxLength, pattern: '^[^\\u0000-\\u001f\\u007f]*$' });
const Count = (maximum: number) => Type.Integer({ minimum: 0, maximum });
const MacText = Type.String({ pattern: '^[0-9a-fA-F]{2}([:-]?[0-9a-fA-F]{2}){5}$|^$', maxLength: 17 });
const IfName = Type.String({ pattern: '^[A-Za-z0-9_.:@-]{1,15}$' });
const IpText = Type.String({ pattern: '^[0-9a-fA-F:.]{2,45}$', description: 'an IPv4 or IPv6 address, without prefix length' });
const REPORT_ITEMS = 64;

export const hostAddressSchema = Type.Object({
  interface: IfName,
  mac: MacText,
  ipv4: Type.Array(IpText, { maxItems: REPORT_ITEMS }),
  ipv6: Type.Array(IpText, { maxItems: REPORT_ITEMS }),
});
export const sshHostKeySchema = Type.Object({
  algorithm: Type.String({ pattern: '^[a-z0-9][a-z0-9@.-]{0,63}$' }),
  fingerprint: Type.String({ pattern: '^SHA256:[A-Za-z0-9+/]{43}$', description: 'as `ssh-keygen -lf` prints it' }),
});
export const hostOsSchema = Type.Object({ id: HostText(64), version_id: HostText(64), pretty_name: HostText() });
export const hostDiskSchema = Type.Object({ name: Type.String({ pattern: '^[A-Za-z0-9_.:!-]{1,32}$' }), size_bytes: Count(2 ** 53), model: Type.Optional(HostText()) });
export const hostNicSchema = Type.Object({
  name: IfName,
  mac: MacText,
  speed_mbps: Type.Optional(Type.Union([Count(10_000_000), Type.Null()])),
  driver: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{0,64}$' })),
});
export const acceleratorSchema = Type.Object({
  vendor: HostText(),
  model: HostText(),
  pci_id: Type.Optional(Type.String({ pattern: '^[0-9a-f]{4}:[0-9a-f]{4}$' })),
  count: Count(4096),
  memory_bytes: Type.Optional(Type.Union([Count(2 ** 53), Type.Null()])),
});
export const hardwareSchema = Type.Object({
  cpu_model: HostText(),
  cpus: Count(65536),
  memory_bytes: Count(2 ** 53),
  disks: Type.Array(hostDiskSchema, { maxItems: REPORT_ITEMS }),
  nics: Type.Array(hostNicSchema, { maxItems: REPORT_ITEMS }),
  accelerators: Type.Array(acceleratorSchema, { maxItems: REPORT_ITEMS }),
});

/** `POST /hosts/report`: what the host reporter in the master image sends (docs/metal.md). */
export const hostReportBody = Type.Object({
  mac: Type.String({ maxLength: 64 }),
  hostname: Type.String({ maxLength: 64 }),
  addresses: Type.Array(hostAddressSchema, { maxItems: REPORT_ITEMS }),
  ssh_host_keys: Type.Array(sshHostKeySchema, { maxItems: 16 }),
  os: hostOsSchema,
  kernel: Type.String({ pattern: '^[A-Za-z0-9._+~-]{1,128}$' }),
  hardware: hardwareSchema,
});
export type HostReportBody = Static<typeof hostReportBody>;

/** What ironlens knows about a booted worker (`host` in the worker view), or null before its first report. */
export const hostSchema = Type.Object({
  addresses: Type.Array(hostAddressSchema),
  ssh_host_keys: Type.Array(sshHostKeySchema),
  os: hostOsSchema,
  kernel: Type.String(),
  hardware: hardwareSchema,
  reported_at: Type.String({ description: 'ISO time the control plane accepted the report' }),
});
export type HostView = Static<typeof hostSchema>;

/** The last boot's timeline (`boot_timeline` in the worker view); `seconds` from the first to the last event known. */
export const bootTimelineSchema = Type.Object({
  report_at: OrNull(Type.String({ description: "iPXE's device report (the device's last_seen)" })),
  boot_vars_at: OrNull(Type.String({ description: 'the bound /boot-vars answer (this replica)' })),
  iscsi_login_at: OrNull(Type.String({ description: "the first iSCSI login seen by the agent, when it can tell (not yet: null)" })),
  host_report_at: OrNull(Type.String()),
  seconds: OrNull(Type.Number()),
});
export type BootTimeline = Static<typeof bootTimelineSchema>;

export const hostReportAnswer = Type.Object({ worker_id: Type.String(), accepted: Type.Boolean(), changed: Type.Boolean() });
// ---- power (issue 21) -----------------------------------------------------------------------

/** One of `values`, or `null` (`enum` lists `null` too, or a validator refuses it). */
const EnumOrNull = <const T extends readonly string[]>(values: T) => Type.Unsafe<T[number] | null>({ type: ['string', 'null'], enum: [...values, null] });

/** A device's last power action and its proof of boot. */
export const lastPowerSchema = Type.Object({
  action: Type.Optional(StringEnum(['on', 'off', 'cycle', 'soft-off'] as const)),
  boot: Type.Optional(EnumOrNull(['network'] as const)),
  requested_at: Type.Optional(Type.String()),
  bmc_ok: Type.Optional(Type.Boolean()),
  network_boot_seen_at: Type.Optional(OrNull(Type.String())),
  result: Type.Optional(EnumOrNull(['pending', 'booted', 'no_network_boot'] as const)),
  detail: Type.Optional(OrNull(Type.String())),
});

/** `PUT /devices/{mac}/bmc`, and `bmc` in `POST /devices` and the import: checked by the service (`bmc_invalid`). */
export const bmcBody = Type.Object(
  {
    driver: StringEnum(['redfish', 'ipmi'] as const),
    url: Type.Optional(Type.String({ description: 'redfish: the system, https://bmc/redfish/v1/Systems/<id>' })),
    verify_tls: Type.Optional(Type.Boolean({ description: 'redfish: verify the BMC certificate. Default is true.' })),
    host: Type.Optional(Type.String({ description: 'ipmi: host name or address' })),
    port: Type.Optional(Type.Integer({ description: 'ipmi: UDP port. Default is 623.' })),
    cipher_suite: Type.Optional(Type.Integer({ description: 'ipmi: RMCP+ cipher suite (ipmitool -C). Default is 3.' })),
    username: Type.String(),
    password: Type.Optional(OrNull(Type.String({ description: 'write-only; omitted on an update: the stored one is kept' }))),
  },
  { additionalProperties: false },
);
export type BmcRequest = Static<typeof bmcBody>;

/** A BMC as the API shows it: never the password. */
export const bmcSchema = Type.Object({
  driver: Type.Optional(StringEnum(['redfish', 'ipmi'] as const)),
  url: Type.Optional(Type.String()),
  verify_tls: Type.Optional(Type.Boolean()),
  host: Type.Optional(Type.String()),
  port: Type.Optional(Type.Integer()),
  cipher_suite: Type.Optional(Type.Integer()),
  username: Type.Optional(Type.String()),
  password_set: Type.Optional(Type.Boolean()),
  updated_at: Type.Optional(Type.String()),
});

export const bmcDeletedSchema = Type.Object({ mac: Type.Optional(Type.String()), deleted: Type.Optional(Type.Boolean()) });

export const powerStateSchema = Type.Object({
  state: Type.Optional(StringEnum(['on', 'off', 'unknown'] as const)),
  checked_at: Type.Optional(Type.String()),
});

export const powerActionBody = Type.Object(
  {
    action: StringEnum(['on', 'off', 'cycle', 'soft-off'] as const),
    boot: Type.Optional(EnumOrNull(['network'] as const)),
  },
  { additionalProperties: false },
);
export type PowerActionRequest = Static<typeof powerActionBody>;

export const powerAnswerSchema = Type.Object({
  mac: Type.Optional(Type.String()),
  action: Type.Optional(Type.String()),
  boot: Type.Optional(OrNull(Type.String())),
  state: Type.Optional(StringEnum(['on', 'off', 'unknown'] as const)),
  checked_at: Type.Optional(Type.String()),
  last_power: Type.Optional(lastPowerSchema),
});

export const powerBatchBody = Type.Object(
  {
    macs: Type.Array(Type.Unknown(), { maxItems: 1000 }),
    action: StringEnum(['on', 'off', 'cycle', 'soft-off'] as const),
    boot: Type.Optional(EnumOrNull(['network'] as const)),
  },
  { additionalProperties: false },
);
export type PowerBatchRequest = Static<typeof powerBatchBody>;

export const powerBatchSchema = Type.Object({
  succeeded: Type.Optional(Type.Array(powerAnswerSchema)),
  failed: Type.Optional(Type.Array(Type.Object({ mac: Type.Optional(Type.Unknown()), status: Type.Optional(Type.Integer()), code: Type.Optional(Type.String()), detail: Type.Optional(Type.String()) }))),
});

export const workerSchema = Type.Object({
  hostname: Type.Optional(Type.String()),
  arch: Type.Optional(Type.String()),
  state: Type.Optional(StringEnum(['registered', 'ready', 'installing'] as const)),
  disks: Type.Optional(Type.Array(diskSchema)),
  cd: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], additionalProperties: true })),
  worker_id: Type.Optional(Type.String()),
  mac: Type.Optional(OrNull(Type.String())),
  bound_device: Type.Optional(OrNull(Type.String())),
  readiness: Type.Optional(StringEnum(['ready', 'partial', 'idle'] as const)),
  default_os: Type.Optional(Type.String()),
  boot: Type.Optional(AnyObject()),
  changed: Type.Optional(Type.Boolean()),
  // issue 24: what the worker reported at its last boot, and that boot's timeline (additive).
  host: Type.Optional(OrNull(hostSchema)),
  boot_timeline: Type.Optional(OrNull(bootTimelineSchema)),
  address: Type.Optional(OrNull(Type.String({ description: "the reported address ironlens uses for SSH: the boot NIC's first IPv4, else the first reported" }))),
  fixed_address: Type.Optional(OrNull(Type.String({ description: 'the IPv4 address the hosts file gives this worker, when the operator set one' }))),
  cluster_id: Type.Optional(OrNull(Type.String({ description: 'the Kubernetes cluster a bootstrap by worker registered this worker into' }))),
  last_power: Type.Optional(lastPowerSchema),
});
export type WorkerView = Static<typeof workerSchema>;

export const deviceSchema = Type.Object({
  mac: Type.Optional(Type.String()),
  uuid: Type.Optional(OrNull(Type.String())),
  state: Type.Optional(StringEnum(['pooled', 'bound', 'revoked'] as const)),
  bound_worker_id: Type.Optional(OrNull(Type.String())),
  key_hash: Type.Optional(OrNull(Type.String())),
  source: Type.Optional(StringEnum(['ipxe', 'manual'] as const)),
  fingerprint: Type.Optional(AnyObject()),
  first_seen: Type.Optional(OrNull(Type.String())),
  last_seen: Type.Optional(OrNull(Type.String())),
  last_power: Type.Optional(lastPowerSchema),
});
export type DeviceView = Static<typeof deviceSchema>;

/** FastAPI's error shape, `{"detail": ...}` (an agent's error passes through as `{"agent", "error"}`). */
export const detailSchema = Type.Object({ detail: Type.Optional(Type.Unknown()) }, { additionalProperties: true });
export type DetailError = Static<typeof detailSchema>;

export const errorResponses = {
  400: detailSchema,
  401: detailSchema,
  404: detailSchema,
  409: detailSchema,
  422: detailSchema,
  500: detailSchema,
} as const;

/** What a BMC error answers: the seed's `detail`, and the catalog's code. */
export const bmcErrorResponses = { 502: detailSchema, 504: detailSchema } as const;

export const security = [{ bearer: [] }];

const flag = () => Type.Optional(Type.Boolean({ default: false }));

// ---- health, boot (§1.3, §5) ----------------------------------------------------------------

export const healthSchema = Type.Object({ status: Type.Optional(Type.String()) });

export const bootVarsQuery = Type.Object({
  mac: Type.Optional(Type.String({ description: 'MAC, with or without separators' })),
  hostname: Type.Optional(Type.String()),
  format: Type.Optional(StringEnum(['ipxe', 'json'] as const, { default: 'ipxe' })),
});
export type BootVarsQuery = Static<typeof bootVarsQuery>;

/** iPXE's device report: the 11 fingerprint fields, as iPXE sends them (strings). */
export const deviceReportQuery = Type.Object({
  mac: Type.String(),
  uuid: Type.Optional(Type.String()),
  manufacturer: Type.Optional(Type.String()),
  product: Type.Optional(Type.String()),
  serial: Type.Optional(Type.String()),
  cpumodel: Type.Optional(Type.String()),
  'mem-total': Type.Optional(Type.String({ description: 'decimal or 0x hex' })),
  'mem-type': Type.Optional(Type.String()),
  'mem-speed': Type.Optional(Type.String({ description: 'decimal or 0x hex' })),
  chip: Type.Optional(Type.String()),
  busid: Type.Optional(Type.String()),
});
export type DeviceReportQuery = Static<typeof deviceReportQuery>;

// ---- settings, operations (§12, §16.5) ------------------------------------------------------

export const autoRegisterSchema = Type.Object({
  enabled: Type.Optional(Type.Boolean()),
  closes_at: Type.Optional(Type.String({ description: 'when a registration window (IRONLENS_AUTO_REGISTER_WINDOW_MINUTES) runs: the moment auto-register closes by itself' })),
});
export type AutoRegisterView = Static<typeof autoRegisterSchema>;

export const autoRegisterBody = Type.Object({ enabled: Type.Boolean() });
export type AutoRegisterRequest = Static<typeof autoRegisterBody>;

export const operationsQuery = Type.Object({
  since: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, default: 1000 })),
  mac: Type.Optional(Type.String()),
});
export type OperationsQuery = Static<typeof operationsQuery>;

// ---- devices (§5, §8) -----------------------------------------------------------------------

const declarationFields = { mac: Type.String(), uuid: Type.Optional(nullableString), manufacturer: Type.Optional(nullableString), product: Type.Optional(nullableString), serial: Type.Optional(nullableString) };

/** `POST /devices`: a device declared by hand (with its BMC, issue 21). */
export const deviceDeclaration = Type.Object({ ...declarationFields, bmc: Type.Optional(OrNull(bmcBody)) });
export type DeviceDeclaration = Static<typeof deviceDeclaration>;

export const deviceListQuery = Type.Object({ state: Type.Optional(StringEnum(['all', 'pooled', 'bound', 'revoked'] as const, { default: 'all' })) });
export type DeviceListQuery = Static<typeof deviceListQuery>;

/** `POST /devices/import`: entries are checked one by one by the service, so each may be anything. */
export const deviceImportBody = Type.Object({ entries: Type.Array(AnyObject()) });
export type DeviceImportRequest = { entries: DeviceDeclaration[] };

export const deviceBindQuery = Type.Object({ worker_id: Type.String(), force: flag(), reboot: Type.Optional(Type.Boolean({ default: false, description: 'power-cycle the device into a one-time network boot after the bind (issue 21)' })) });
export type DeviceBindQuery = Static<typeof deviceBindQuery>;

export const batchBindBody = Type.Object({
  mode: Type.Optional(StringEnum(['manifest', 'sequential'] as const, { default: 'manifest' })),
  pairs: Type.Optional(Type.Array(Type.Object({ ...declarationFields, worker_id: Type.String() }))),
  macs: Type.Optional(Type.Array(Type.String())),
  worker_ids: Type.Optional(Type.Array(Type.String())),
});
export type BatchBindRequest = Static<typeof batchBindBody>;
export type BatchMode = NonNullable<BatchBindRequest['mode']>;

// ---- agents, LUNs (§6, §14, §15) ------------------------------------------------------------

const agentRole = Type.Object({ disk: Type.Optional(Type.Boolean()), cd: Type.Optional(Type.Boolean()) });
const agentFields = {
  base_url: Type.String(),
  token: Type.Optional(nullableString),
  iscsi_server: Type.Optional(nullableString),
  role: Type.Optional(OrNull(agentRole)),
  tags: Type.Optional(OrNull(Type.Array(Type.String()))),
  enabled: Type.Optional(OrNull(Type.Boolean())),
};

/** `PUT /agents/<id>`: the agent's settings (`id` is ignored: the path names it). */
export const agentBody = Type.Object({ id: Type.Optional(Type.String()), ...agentFields });
/** `POST /agents`: the same, with the id required. */
export const agentCreateBody = Type.Object({ id: Type.String(), ...agentFields });
export type AgentInput = Static<typeof agentBody>;

/** An agent as the API shows it (never its token). */
export const agentViewSchema = Type.Object({
  id: Type.Optional(Type.String()),
  base_url: Type.Optional(Type.String()),
  iscsi_server: Type.Optional(OrNull(Type.String())),
  role: Type.Optional(agentRole),
  enabled: Type.Optional(Type.Boolean()),
  tags: Type.Optional(Type.Array(Type.String())),
  health: Type.Optional(Type.String()),
  capabilities: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], additionalProperties: true })),
  error: Type.Optional(Type.String()),
});

export const agentListQuery = Type.Object({ live: Type.Optional(Type.Boolean({ default: true })) });
export type AgentListQuery = Static<typeof agentListQuery>;

export const agentProbeBody = Type.Object({ base_url: Type.String(), token: Type.Optional(nullableString), agent_id: Type.Optional(nullableString) });
export type AgentProbeRequest = Static<typeof agentProbeBody>;

/** `POST /agents/<id>/luns/disk` (§14): the agent's own request, passed on. */
export const lunDiskBody = Type.Object({
  iqn: Type.String(),
  filename: Type.Optional(Type.String()),
  master: Type.Optional(Type.String()),
  size: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
  initiator: Type.Optional(Type.String()),
});
export type DirectDiskRequest = Static<typeof lunDiskBody>;

/** `POST /agents/<id>/luns/cd` (§14). */
export const lunCdBody = Type.Object({ iso: Type.String(), iqn: Type.Optional(Type.String()), initiator: Type.Optional(Type.String()) });
export type DirectCdRequest = Static<typeof lunCdBody>;

export const lunDeleteQuery = Type.Object({ iqn: Type.String(), delete_file: flag(), ignore_missing: flag() });
export type LunDeleteQuery = Static<typeof lunDeleteQuery>;

// ---- workers' disks (§7.1–7.4, §10) ---------------------------------------------------------

const diskFields = {
  /** Checked by the service (`master` or `empty`), so the error is the seed's, not a schema error. */
  type: Type.Unsafe<'master' | 'empty'>({ type: 'string' }),
  os: Type.String(),
  name: Type.Optional(nullableString),
  size: Type.Optional(nullableString),
  disk_agent: Type.Optional(nullableString),
};

/** `POST /workers/<id>/luns/disk`: a system disk from a master, or empty (`reboot`: power-cycle the bound device into it, issue 21). */
export const diskBody = Type.Object({ ...diskFields, reboot: Type.Optional(Type.Boolean({ default: false })) });
export type DiskRequest = Static<typeof diskBody>;

export const diskBatchBody = Type.Object({
  ...diskFields,
  targets: Type.Array(Type.Object({ worker_id: Type.String(), agent: Type.String() })),
});
export type DiskBatchRequest = Static<typeof diskBatchBody>;

export const diskDeleteQuery = Type.Object({ delete_file: flag(), ignore_missing_target: flag() });
export type DiskDeleteQuery = Static<typeof diskDeleteQuery>;

// ---- workers (§4, §7, §11) ------------------------------------------------------------------

/** `POST /workers`: a worker identity (`mac` binds a pooled device). */
export const createWorkerBody = Type.Object({
  worker_id: Type.String(),
  mac: Type.Optional(nullableString),
  hostname: Type.Optional(nullableString),
  arch: Type.Optional(nullableString),
  windows_iso: Type.Optional(nullableString),
  boot: Type.Optional(bootSchema),
});
export type CreateWorkerInput = Static<typeof createWorkerBody>;

/** `POST /workers/batch`. */
export const batchCreateBody = Type.Object({
  count: Type.Integer({ minimum: 1, maximum: 100 }),
  name_prefix: Type.Optional(Type.String({ default: 'worker-' })),
  macs: Type.Optional(OrNull(Type.Array(Type.String()))),
  arch: Type.Optional(nullableString),
  boot: Type.Optional(bootSchema),
});
export type BatchCreateInput = Static<typeof batchCreateBody>;

export const workerMacBody = Type.Object({ mac: Type.String() });
export type WorkerMacRequest = Static<typeof workerMacBody>;

/** `PUT /workers/<id>/default-os`: each value is checked by the service (a timeout may come as a string). */
export const defaultOsBody = Type.Object({
  os: Type.Optional(nullableString),
  menu_default: Type.Optional(nullableString),
  menu_timeout: Type.Optional(Type.Unsafe<number | string | null>({ type: ['integer', 'null', 'string'] })),
});
export type DefaultOsRequest = Static<typeof defaultOsBody>;

export const workerDeleteQuery = Type.Object({ delete_disk: flag(), ignore_missing_target: flag() });
export type WorkerDeleteQuery = Static<typeof workerDeleteQuery>;

export const workerDeletedSchema = Type.Object({ deleted: Type.Optional(Type.String()), delete_disk: Type.Optional(Type.Boolean()), dnsmasq_removed: Type.Optional(Type.Boolean()) });
export type WorkerDeletedView = Static<typeof workerDeletedSchema>;

export const workerDeleteBatchBody = Type.Object({ worker_ids: Type.Array(Type.String()), delete_disk: flag(), ignore_missing_target: flag() });
export type WorkerDeleteBatchRequest = Static<typeof workerDeleteBatchBody>;


// ---- answers the services build (types only: `import type` erases them) ----------------------

export type { Agent, Boot, Cd, Device, DeviceState, Disk, Fingerprint, WorkerState, WorkerView as Worker } from '../domain/types';
export type { Os } from '../domain/identifiers';
export type { AgentView, Capabilities } from '../services/agent.service';

/** `PUT /workers/{worker_id}/address` (issue 24): the worker's fixed IPv4 address, or null to remove it. */
export const workerAddressBody = Type.Object({ fixed_address: OrNull(Type.String({ maxLength: 15, description: 'a unicast IPv4 address' })) });
export type WorkerAddressRequest = Static<typeof workerAddressBody>;
export type { BmcView, LastPower, PowerAction, PowerState } from '../domain/power';
export type { BatchPowerResult, PowerAnswer, PowerStateView } from '../services/power.service';
