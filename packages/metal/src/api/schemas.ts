/**
 * Metal's API shapes (seed 004), in TypeBox and in one place: each schema gives its route's
 * validation, the answer's serialization and its part of the OpenAPI document, and (`Static<>`)
 * the TypeScript type the services take, so a request shape is written once. `@ironlens/metal/api`
 * is this module: a client (the console) imports the types from here with `import type`.
 *
 * The JSON they produce is the JSON Schema these routes have always had (`type: ['string',
 * 'null']` for a nullable value), so the validation errors and the document stay as seed 004
 * clients know them. An answer's schema is exact: `required` lists what the service always
 * answers, `Type.Optional` what it answers only sometimes, and it lists every field, because
 * fastify serializes with fast-json-stringify, which drops a field its schema does not list
 * (`metal/src/routes/answers.routes.test.ts` compares, route by route, what fastify sent with
 * what the service returned). What the storage agent answers and metal passes through is described
 * by the agent's own schemas (`@ironlens/agent/api`, TypeBox alone). This module imports TypeBox,
 * core's TypeBox helpers (`@ironlens/core/typebox`, TypeBox alone) and the agent's schemas, and
 * nothing else. Property order is the answer's key order.
 */
import {
  AgentCapabilities as AgentCapabilitiesAnswer,
  AgentMaster as AgentMasterAnswer,
  AgentTarget as AgentTargetAnswer,
  CreateCdBody as AgentCreateCdBody,
  CreateDiskBody as AgentCreateDiskBody,
  DeleteLunQuery as AgentDeleteLunQuery,
  DiskCreated as AgentDiskCreated,
  LunDeleted as AgentLunDeleted,
  ScannedTarget as AgentScannedTarget,
  SkippedFile as AgentSkippedFile,
} from '@ironlens/agent/api';
import { AnyObject, OrNull, SAFE_TEXT_PATTERN, StringEnum } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';
import type { Os } from '../domain/identifiers';
import { driftItemSchema, imageHistoryEntrySchema } from './rollout.schemas';

export * from './rollout.schemas';

export const nullableString = OrNull(Type.String());

/** A worker's boot settings (`menu.ipxe`). */
export const bootSchema = OrNull(
  Type.Object({
    menu_default: Type.Optional(OrNull(Type.String({ description: 'menu.ipxe item id' }))),
    menu_timeout: Type.Optional(OrNull(Type.Integer({ description: 'milliseconds; 0 waits forever' }))),
  }),
);
export type BootSettings = Static<typeof bootSchema>;

/** How a system disk was made (`source` of a disk): from a master, or empty of a size. */
export const diskSourceSchema = Type.Object({
  type: StringEnum(['master', 'empty'] as const),
  name: Type.Optional(Type.String({ description: 'the master image (type master)' })),
  size: Type.Optional(Type.String({ description: 'the size asked for (type empty)' })),
});
export type DiskSource = Static<typeof diskSourceSchema>;

/** A worker's system disk in the ledger. */
export const diskSchema = Type.Object({
  agent: Type.String(),
  iqn: Type.String(),
  filename: Type.String(),
  backing: Type.String(),
  os: Type.Unsafe<Os>({ type: 'string', description: 'the OS the disk boots (menu item)' }),
  source: diskSourceSchema,
});
export type Disk = Static<typeof diskSchema>;

/**
 * A system disk as the worker views show it: the record, and `os_tag`, the key the seed control
 * plane's current WebUI names a disk by (`DELETE …/luns/disk/{os_tag}`, `default-disk {disk}`).
 * Seed 004 keys a worker's disks by `os` (one per OS), so here it is the disk's `os`.
 */
export const diskViewSchema = Type.Composite([diskSchema, Type.Object({ os_tag: Type.String({ description: "the disk's key in the WebUI's routes: its os (one disk per os, seed 004)" }) })]);
export type DiskView = Static<typeof diskViewSchema>;

/** A worker's install CD (`cd`), or null. */
export const cdSchema = Type.Object({ agent: Type.String(), iqn: Type.String(), iso: Type.String(), backing: Type.String() });
export type Cd = Static<typeof cdSchema>;


// ---- host reports (issue 24) ----------------------------------------------------------------

/** Printable text as a host reports it: no control or bidirectional formatting characters (core's one definition), capped. */
const HostText = (maxLength = 200) => Type.String({ maxLength, pattern: SAFE_TEXT_PATTERN });
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

/**
 * The image a booted worker runs (issue 31): what `ironlens master build` wrote into
 * `/etc/ironlens-master` (the master's file name on the agent, and a hash of that build).
 */
export const hostImageSchema = Type.Object({
  master: Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$' }),
  build: Type.String({ pattern: '^[0-9a-f]{16,64}$' }),
});
export type HostImage = Static<typeof hostImageSchema>;

/** The iSCSI target the worker booted from, as iPXE left it in the iBFT (`target0/target-name`). */
export const hostBootDiskSchema = Type.Object({ iqn: Type.String({ maxLength: 223, pattern: '^iqn\\.[a-z0-9.:-]{1,219}$' }) });
export type HostBootDisk = Static<typeof hostBootDiskSchema>;

/** `POST /hosts/report`: what the host reporter in the master image sends (docs/metal.md). */
export const hostReportBody = Type.Object({
  mac: Type.String({ maxLength: 64 }),
  hostname: Type.String({ maxLength: 64 }),
  addresses: Type.Array(hostAddressSchema, { maxItems: REPORT_ITEMS }),
  ssh_host_keys: Type.Array(sshHostKeySchema, { maxItems: 16 }),
  os: hostOsSchema,
  kernel: Type.String({ pattern: '^[A-Za-z0-9._+~-]{1,128}$' }),
  hardware: hardwareSchema,
  // issue 31 (optional: reporters of older masters send neither)
  image: Type.Optional(OrNull(hostImageSchema)),
  boot_disk: Type.Optional(OrNull(hostBootDiskSchema)),
});
export type HostReportBody = Static<typeof hostReportBody>;

/** What ironlens knows about a booted worker (`host` in the worker view), or null before its first report. */
export const hostSchema = Type.Object({
  addresses: Type.Array(hostAddressSchema),
  ssh_host_keys: Type.Array(sshHostKeySchema),
  os: hostOsSchema,
  kernel: Type.String(),
  hardware: hardwareSchema,
  image: Type.Optional(OrNull(hostImageSchema)),
  boot_disk: Type.Optional(OrNull(hostBootDiskSchema)),
  reported_at: Type.String({ description: 'ISO time the control plane accepted the report' }),
});
export type HostView = Static<typeof hostSchema>;

/** The last boot's timeline (`boot_timeline` in the worker view); `seconds` from the first to the last event known. */
export const bootTimelineSchema = Type.Object({
  report_at: OrNull(Type.String({ description: "iPXE's device report (the device's last_seen)" })),
  boot_vars_at: OrNull(Type.String({ description: 'the bound /boot-vars answer (this replica)' })),
  iscsi_login_at: OrNull(Type.String({ description: "the first iSCSI login to the worker's targets at or after boot_vars_at, as its storage agent saw it (the sessions of GET /luns, to within its 3 s poll); null when the agent cannot tell (lio, an older agent) or does not answer within 2 s" })),
  host_report_at: OrNull(Type.String()),
  seconds: OrNull(Type.Number()),
});
export type BootTimeline = Static<typeof bootTimelineSchema>;

export const hostReportAnswer = Type.Object({ worker_id: Type.String(), accepted: Type.Boolean(), changed: Type.Boolean() });
export type HostReportAnswer = Static<typeof hostReportAnswer>;
// ---- power (issue 21) -----------------------------------------------------------------------

/** One of `values`, or `null` (`enum` lists `null` too, or a validator refuses it). */
const EnumOrNull = <const T extends readonly string[]>(values: T, options: { description?: string } = {}) =>
  Type.Unsafe<T[number] | null>({ type: ['string', 'null'], enum: [...values, null], ...options });
const POWER_ACTION_VALUES = ['on', 'off', 'cycle', 'soft-off'] as const;
export type PowerAction = (typeof POWER_ACTION_VALUES)[number];
const POWER_STATE_VALUES = ['on', 'off', 'unknown'] as const;
export type PowerState = (typeof POWER_STATE_VALUES)[number];

/** A device's last power action and its proof of boot. */
export const lastPowerSchema = Type.Object({
  action: StringEnum(POWER_ACTION_VALUES),
  boot: EnumOrNull(['network'] as const),
  requested_at: Type.String(),
  bmc_ok: Type.Boolean(),
  network_boot_seen_at: OrNull(Type.String()),
  result: EnumOrNull(['pending', 'booted', 'no_network_boot'] as const, { description: 'null for an action that asked for no network boot (nothing to prove)' }),
  detail: OrNull(Type.String()),
});
export type LastPower = Static<typeof lastPowerSchema>;

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

/** A BMC as the API shows it: never the password (`password_set`); redfish has url and verify_tls, ipmi host, port and cipher_suite. */
export const bmcSchema = Type.Object({
  driver: StringEnum(['redfish', 'ipmi'] as const),
  url: Type.Optional(Type.String()),
  verify_tls: Type.Optional(Type.Boolean()),
  host: Type.Optional(Type.String()),
  port: Type.Optional(Type.Integer()),
  cipher_suite: Type.Optional(Type.Integer()),
  username: Type.String(),
  password_set: Type.Boolean(),
  updated_at: Type.String(),
});
export type BmcView = Static<typeof bmcSchema>;

export const bmcDeletedSchema = Type.Object({ mac: Type.String(), deleted: Type.Boolean() });
export type BmcDeleted = Static<typeof bmcDeletedSchema>;

export const powerStateSchema = Type.Object({
  state: StringEnum(POWER_STATE_VALUES),
  checked_at: Type.String(),
});
export type PowerStateView = Static<typeof powerStateSchema>;

export const powerActionBody = Type.Object(
  {
    action: StringEnum(['on', 'off', 'cycle', 'soft-off'] as const),
    boot: Type.Optional(EnumOrNull(['network'] as const)),
  },
  { additionalProperties: false },
);
export type PowerActionRequest = Static<typeof powerActionBody>;

export const powerAnswerSchema = Type.Object({
  mac: Type.String(),
  action: StringEnum(POWER_ACTION_VALUES),
  boot: EnumOrNull(['network'] as const),
  state: StringEnum(POWER_STATE_VALUES),
  checked_at: Type.String(),
  last_power: lastPowerSchema,
});
export type PowerAnswer = Static<typeof powerAnswerSchema>;

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
  succeeded: Type.Array(powerAnswerSchema),
  failed: Type.Array(Type.Object({ mac: Type.Unknown({ description: 'the MAC as given' }), status: Type.Integer(), code: Type.String(), detail: Type.String() })),
});
export type BatchPowerResult = Static<typeof powerBatchSchema>;

/** A worker's boot settings as the worker view shows them: only those set. */
export const bootViewSchema = Type.Object({
  menu_default: Type.Optional(Type.String({ description: 'menu.ipxe item id' })),
  menu_timeout: Type.Optional(Type.Integer({ description: 'milliseconds; 0 waits forever' })),
});

/**
 * A worker as the API shows it: the ledger plus the projected binding. `host`, `boot_timeline`,
 * `address`, `fixed_address` and `cluster_id` (issue 24) are on the views of the worker routes,
 * not on the worker a disk route answers; `changed` only on `PUT /workers/{id}/mac`; `last_power`
 * only after a `reboot`.
 */
export const workerSchema = Type.Object({
  hostname: Type.String(),
  arch: Type.String(),
  state: StringEnum(['registered', 'ready', 'installing'] as const),
  disks: Type.Array(diskViewSchema),
  cd: OrNull(cdSchema),
  worker_id: Type.String(),
  mac: OrNull(Type.String()),
  bound_device: OrNull(Type.String()),
  readiness: StringEnum(['ready', 'partial', 'idle'] as const),
  default_os: Type.Optional(Type.Unsafe<Os>({ type: 'string' })),
  boot: Type.Optional(bootViewSchema),
  changed: Type.Optional(Type.Boolean()),
  // issue 24: what the worker reported at its last boot, and that boot's timeline (additive).
  host: Type.Optional(OrNull(hostSchema)),
  boot_timeline: Type.Optional(OrNull(bootTimelineSchema)),
  address: Type.Optional(OrNull(Type.String({ description: "the reported address ironlens uses for SSH: the boot NIC's first IPv4, else the first reported" }))),
  fixed_address: Type.Optional(OrNull(Type.String({ description: 'the IPv4 address the hosts file gives this worker, when the operator set one' }))),
  cluster_id: Type.Optional(OrNull(Type.String({ description: 'the Kubernetes cluster a bootstrap by worker registered this worker into' }))),
  last_power: Type.Optional(lastPowerSchema),
  // issue 31: which masters its system disks came from (GET /workers/{id} only), newest first
  image_history: Type.Optional(Type.Array(imageHistoryEntrySchema)),
});
export type WorkerView = Static<typeof workerSchema>;
export type WorkerState = WorkerView['state'];

/** What iPXE reported of a device (`fingerprint`): the fields it sent, normalised. */
export const fingerprintSchema = Type.Object({
  manufacturer: Type.Optional(OrNull(Type.String())),
  product: Type.Optional(OrNull(Type.String())),
  serial: Type.Optional(OrNull(Type.String())),
  cpumodel: Type.Optional(OrNull(Type.String())),
  mem_total: Type.Optional(OrNull(Type.Integer())),
  mem_type: Type.Optional(OrNull(Type.String())),
  mem_speed: Type.Optional(OrNull(Type.Integer())),
  chip: Type.Optional(OrNull(Type.String())),
  busid: Type.Optional(OrNull(Type.String())),
  platform: Type.Optional(OrNull(Type.String({ description: "the firmware iPXE ran under at the device's last report (the platform setting of iPXE): pcbios (BIOS) or efi (UEFI)" }))),
});
export type Fingerprint = Static<typeof fingerprintSchema>;

/** A device record, in the seed's shape (§16); `last_power` only on devices that had a power action (issue 21). */
export const deviceSchema = Type.Object({
  mac: Type.String(),
  uuid: OrNull(Type.String()),
  state: StringEnum(['pooled', 'bound', 'revoked'] as const),
  bound_worker_id: OrNull(Type.String()),
  key_hash: OrNull(Type.String()),
  source: StringEnum(['ipxe', 'manual'] as const),
  fingerprint: fingerprintSchema,
  first_seen: OrNull(Type.String()),
  last_seen: OrNull(Type.String()),
  last_power: Type.Optional(lastPowerSchema),
});
export type Device = Static<typeof deviceSchema>;
export type DeviceView = Device;
export type DeviceState = Device['state'];

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
export const bmcErrorResponses = { 502: detailSchema, 503: detailSchema, 504: detailSchema } as const;

export const security = [{ bearer: [] }];

/** Path parameters (text, checked by the services' own grammars). */
export const macParams = Type.Object({ mac: Type.String({ description: 'MAC, with or without separators' }) });
export const agentParams = Type.Object({ agent_id: Type.String() });
export const workerParams = Type.Object({ worker_id: Type.String() });
export const workerDiskParams = Type.Object({ worker_id: Type.String(), os: Type.String() });

const flag = () => Type.Optional(Type.Boolean({ default: false }));

// ---- health, boot (§1.3, §5) ----------------------------------------------------------------

/** ironlens' own dnsmasq (issue 30), on `/healthz` when `IRONLENS_BOOT_SERVICES` is on. */
export const bootServicesHealthSchema = Type.Object({
  mode: StringEnum(['proxy', 'dhcp'] as const),
  interface: Type.String(),
  url: OrNull(Type.String({ description: 'where iPXE chains boot.ipxe from' })),
  state: StringEnum(['stopped', 'standby', 'starting', 'running', 'restarting'] as const, {
    description: 'standby: another replica (the hosts-file writer) runs the dnsmasq; restarting: it ended and is started again after a back-off',
  }),
  pid: OrNull(Type.Integer()),
  restarts: Type.Integer({ description: 'unexpected ends since ironlens started' }),
  since: Type.String({ description: 'when the state began' }),
  last_exit: OrNull(Type.String({ description: 'how the last run ended, with its last log line' })),
});

export const healthSchema = Type.Object({ status: Type.String(), boot_services: Type.Optional(bootServicesHealthSchema) });

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
  platform: Type.Optional(Type.String({ description: "the platform setting of iPXE: pcbios or efi (other values are ignored); kept as fingerprint.platform" })),
});
export type DeviceReportQuery = Static<typeof deviceReportQuery>;

// ---- settings, operations (§12, §16.5) ------------------------------------------------------

export const autoRegisterSchema = Type.Object({
  enabled: Type.Boolean(),
  closes_at: Type.Optional(Type.String({ description: 'when a registration window (IRONLENS_AUTO_REGISTER_WINDOW_MINUTES, or POST /settings/registration-window) runs: the moment auto-register closes by itself' })),
});
export type AutoRegisterView = Static<typeof autoRegisterSchema>;

export const autoRegisterBody = Type.Object({ enabled: Type.Boolean() });
export type AutoRegisterRequest = Static<typeof autoRegisterBody>;

/** `GET /settings/registration-window` (and the POST's 201): auto-register open for a bounded time (the seed control plane's current WebUI). */
export const registrationWindowSchema = Type.Object({
  open: Type.Boolean(),
  opened_at: OrNull(Type.String({ description: 'ISO 8601; null when closed' })),
  ttl_minutes: OrNull(Type.Integer({ description: 'the minutes it was opened for; null when closed' })),
  closes_at: OrNull(Type.String({ description: 'ISO 8601; null when closed' })),
  remaining_seconds: Type.Integer({ description: '0 when closed' }),
});
export type RegistrationWindowView = Static<typeof registrationWindowSchema>;

/** `POST /settings/registration-window`: the integer is the schema's (422 otherwise), its range 1–60 the service's (400). */
export const registrationWindowBody = Type.Object({ ttl_minutes: Type.Integer() });
export type RegistrationWindowRequest = Static<typeof registrationWindowBody>;

/** `DELETE /settings/registration-window`. */
export const registrationWindowClosedSchema = Type.Object({ open: Type.Literal(false) });

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
  storager_ip: Type.Optional(nullableString),
  role: Type.Optional(OrNull(agentRole)),
  tags: Type.Optional(OrNull(Type.Array(Type.String()))),
  enabled: Type.Optional(OrNull(Type.Boolean())),
};

/** `PUT /agents/<id>`: the agent's settings (`id` is ignored: the path names it). */
export const agentBody = Type.Object({ id: Type.Optional(Type.String()), ...agentFields });
/** `POST /agents`: the same, with the id required. */
export const agentCreateBody = Type.Object({ id: Type.String(), ...agentFields });
export type AgentInput = Static<typeof agentBody>;

/** An agent's `/capabilities` as metal's client checked them: the agent's schema, each field only when the agent gave it. */
export const capabilitiesSchema = Type.Partial(AgentCapabilitiesAnswer);
export type AgentCapabilities = Static<typeof capabilitiesSchema>;

/** `PUT /agents/{agent_id}/masters/{master_name}/tag` (the seed control plane's current WebUI): each field checked by the service (400 `master_tag_invalid`). */
export const masterTagBody = Type.Object({
  os: Type.String({ description: 'an annotation, lower-cased: 1-32 of a-z 0-9 . _ - (disks keep seed 004’s os list)' }),
  os_version: Type.Optional(Type.String({ default: '', description: "at most 32 of A-Za-z0-9 . _ + -; '' for none" })),
  remark: Type.Optional(Type.String({ default: '', description: 'printable text, at most 200 characters' })),
});
export type MasterTagRequest = Static<typeof masterTagBody>;

export const masterTagSchema = Type.Object({ agent: Type.String(), name: Type.String(), os: Type.String(), os_version: Type.String(), remark: Type.String() });
export type MasterTagView = Static<typeof masterTagSchema>;

export const masterTagClearedSchema = Type.Object({ agent: Type.String(), name: Type.String(), removed: Type.Boolean() });

export const masterTagParams = Type.Object({ agent_id: Type.String(), master_name: Type.String() });

/** `DELETE /agents/{agent_id}`. */
export const agentDeletedSchema = Type.Object({ deleted: Type.String(), master_tags_removed: Type.Boolean() });

/** An agent as the API shows it (never its token); `health`, `capabilities`, `error` from a live probe. */
export const agentViewSchema = Type.Object({
  id: Type.String(),
  base_url: Type.String(),
  iscsi_server: OrNull(Type.String()),
  storager_ip: OrNull(Type.String({ description: "iscsi_server under the name the seed control plane's current WebUI reads" })),
  role: Type.Object({ disk: Type.Boolean(), cd: Type.Boolean() }),
  enabled: Type.Boolean(),
  tags: Type.Array(Type.String()),
  health: Type.Optional(StringEnum(['ok', 'error', 'unreachable', 'disabled'] as const)),
  capabilities: Type.Optional(OrNull(capabilitiesSchema)),
  error: Type.Optional(Type.String()),
});
/** The type is the schema's (issue 19: one source for the answer and its type). */
export type AgentView = Static<typeof agentViewSchema>;

export const agentListQuery = Type.Object({ live: Type.Optional(Type.Boolean({ default: true })) });
export type AgentListQuery = Static<typeof agentListQuery>;

export const agentProbeBody = Type.Object({ base_url: Type.String(), token: Type.Optional(nullableString), agent_id: Type.Optional(nullableString) });
export type AgentProbeRequest = Static<typeof agentProbeBody>;

/** `POST /agents/<id>/luns/disk` (§14): the agent's own request (its schema), passed on; the CHAP account is metal's to give, not the caller's. */
export const lunDiskBody = Type.Omit(AgentCreateDiskBody, ['chap']);
export type DirectDiskRequest = Static<typeof lunDiskBody>;

/** `POST /agents/<id>/luns/cd` (§14): the agent's own request, likewise. */
export const lunCdBody = Type.Omit(AgentCreateCdBody, ['chap']);
export type DirectCdRequest = Static<typeof lunCdBody>;

/** `DELETE /agents/<id>/luns` (§14): the agent's own query. */
export const lunDeleteQuery = AgentDeleteLunQuery;
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

/** `PUT /workers/<id>/default-disk` (the seed control plane's current WebUI): `disk` is a disk's `os_tag`; checked by the service as `/default-os`. */
export const defaultDiskBody = Type.Object({
  disk: Type.Optional(nullableString),
  menu_default: Type.Optional(nullableString),
  menu_timeout: Type.Optional(Type.Unsafe<number | string | null>({ type: ['integer', 'null', 'string'] })),
});
export type DefaultDiskRequest = Static<typeof defaultDiskBody>;

export const workerDeleteQuery = Type.Object({ delete_disk: flag(), ignore_missing_target: flag() });
export type WorkerDeleteQuery = Static<typeof workerDeleteQuery>;

export const workerDeletedSchema = Type.Object({ deleted: Type.String(), delete_disk: Type.Boolean(), dnsmasq_removed: Type.Boolean() });
export type WorkerDeleted = Static<typeof workerDeletedSchema>;
export type WorkerDeletedView = WorkerDeleted;

export const workerDeleteBatchBody = Type.Object({ worker_ids: Type.Array(Type.String()), delete_disk: flag(), ignore_missing_target: flag() });
export type WorkerDeleteBatchRequest = Static<typeof workerDeleteBatchBody>;


// ---- answers (issue 19: every route declares one) --------------------------------------------

/** The `#!ipxe` scripts (`/boot-vars`, `/devices/report`): text, or with `format=json` the variables. */
export const bootVarsJsonSchema = Type.Object(
  {
    base_iqn: Type.Optional(Type.String()),
    iscsi_server: Type.Optional(Type.String()),
    iscsi_sep: Type.Optional(Type.String({ description: "the root-path separator of the disk agent's backend" })),
    menu_default: Type.Optional(Type.String()),
    menu_timeout: Type.Optional(Type.Integer()),
  },
  { description: 'the iPXE variables the script would set (`format=json`)' },
);
export type BootVars = Static<typeof bootVarsJsonSchema>;
export const ipxeScriptAnswer = {
  content: {
    'text/plain': { schema: Type.String({ description: 'An iPXE script' }) },
    'application/json': { schema: bootVarsJsonSchema },
  },
};

/** `POST /devices/import`: each entry created, skipped (it exists) or failed (why). */
export const deviceImportResultSchema = Type.Object({
  created: Type.Array(Type.String({ description: 'the MAC' })),
  skipped: Type.Array(Type.Object({ mac: Type.String(), reason: Type.String() })),
  failed: Type.Array(Type.Object({ mac: Type.Unknown({ description: 'the MAC as given' }), error: Type.String() })),
});
export type DeviceImportResult = Static<typeof deviceImportResultSchema>;

const fingerprintMismatchSchema = Type.Object({ fields: Type.Array(Type.String()) }, { description: 'declared fields (manufacturer, product, serial, uuid) that differ from the report' });

/** `POST /devices/bind/batch`: each pair independent. */
export const batchBindResultSchema = Type.Object({
  succeeded: Type.Array(Type.Object({ mac: Type.String(), worker_id: Type.String(), fingerprint_mismatch: Type.Optional(fingerprintMismatchSchema) })),
  skipped: Type.Array(Type.Object({ mac: Type.String(), worker_id: Type.String(), reason: Type.String() })),
  failed: Type.Array(Type.Object({ mac: Type.Unknown({ description: 'the MAC as given' }), worker_id: Type.String(), error: Type.String() })),
});
export type BatchBindResult = Static<typeof batchBindResultSchema>;

const batchIssueSchema = Type.Object({ mac: Type.Unknown({ description: 'the MAC as given' }), worker_id: Type.String(), reason: Type.String() });
export type BatchPreviewIssue = Static<typeof batchIssueSchema>;
const batchMatchSchema = Type.Object({
  mac: Type.String(),
  worker_id: Type.String(),
  device_state: Type.String(),
  worker_state: Type.String(),
  fingerprint_mismatch: OrNull(fingerprintMismatchSchema),
});
export type BatchPreviewMatch = Static<typeof batchMatchSchema>;

/** `POST /devices/bind/batch/preview`: writes nothing. */
export const batchPreviewSchema = Type.Object({
  matched: Type.Array(batchMatchSchema),
  conflicts: Type.Array(batchIssueSchema),
  not_found: Type.Array(batchIssueSchema),
  summary: Type.Object({ total: Type.Integer(), ok: Type.Integer(), conflict: Type.Integer(), not_found: Type.Integer() }),
});
export type BatchPreview = Static<typeof batchPreviewSchema>;

/** `POST /workers/batch`. */
export const workerBatchResultSchema = Type.Object({
  succeeded: Type.Array(Type.Object({ worker_id: Type.String(), hostname: Type.String(), mac: Type.Optional(Type.String()) })),
  skipped: Type.Array(Type.Object({ worker_id: Type.String(), hostname: Type.String(), reason: Type.String() })),
  failed: Type.Array(Type.Object({ worker_id: Type.String(), hostname: Type.String(), mac: Type.Optional(Type.Unknown({ description: 'the MAC as given' })), error: Type.String() })),
});
export type WorkerBatchResult = Static<typeof workerBatchResultSchema>;

/** `POST /workers/delete/batch`. */
export const workerDeleteBatchResultSchema = Type.Object({
  succeeded: Type.Array(Type.Object({ worker_id: Type.String(), hostname: Type.String() })),
  failed: Type.Array(Type.Object({ worker_id: Type.Unknown({ description: 'the worker id as given' }), error: Type.String() })),
});
export type WorkerDeleteBatchResult = Static<typeof workerDeleteBatchResultSchema>;

/** `POST /workers/luns/disk/batch`. */
export const diskBatchResultSchema = Type.Object({
  succeeded: Type.Array(Type.Object({ worker_id: Type.String(), agent: Type.String(), iqn: Type.String() })),
  skipped: Type.Array(Type.Object({ worker_id: Type.String(), reason: Type.String() })),
  failed: Type.Array(Type.Object({ worker_id: OrNull(Type.String()), agent: Type.String(), error: Type.String() })),
});
export type DiskBatchResult = Static<typeof diskBatchResultSchema>;

/**
 * `GET /operations`. An entry's fields are its operation's own (`op`, `mac`, `worker_id`, counts,
 * `client`, …, one set per kind of operation): the one open object of metal's answers.
 */
export const operationEntrySchema = Type.Unsafe<{ id: number; ts: string; op: string; status: string; [field: string]: unknown }>(
  Type.Object(
    { id: Type.Integer(), ts: Type.String(), op: Type.String(), status: Type.String() },
    { additionalProperties: true, description: 'one operation; besides these four, the fields of its kind (open by design: each operation records its own)' },
  ),
);
export const operationsSchema = Type.Object({ next_cursor: Type.Integer({ description: 'the `since` of the next call' }), entries: Type.Array(operationEntrySchema) });
export type OperationsPage = Static<typeof operationsSchema>;

// ---- what metal passes through from a storage agent (the agent's own schemas) ----------------

/** A target on an agent (`GET /agents/{id}/luns`) as metal's client checked it: `tid`, `acl`, `accounts` and `sessions` only when the agent gave them. */
export const agentLunTargetSchema = Type.Composite([Type.Pick(AgentTargetAnswer, ['iqn', 'luns']), Type.Partial(Type.Pick(AgentTargetAnswer, ['tid', 'acl', 'accounts', 'sessions']))]);
export type AgentLunTarget = Static<typeof agentLunTargetSchema>;

/** A disk or CD target the agent made (`POST /agents/{id}/luns/disk|cd`): `clone` and `size` for a disk. */
export const createdLunSchema = Type.Composite([
  Type.Pick(AgentDiskCreated, ['iqn', 'backing', 'filename']),
  Type.Partial(Type.Pick(AgentDiskCreated, ['clone', 'size', 'initiator', 'chap_user'])),
]);
export type CreatedLun = Static<typeof createdLunSchema>;

/** `DELETE /agents/{id}/luns`. */
export const lunDeletedSchema = Type.Pick(AgentLunDeleted, ['deleted', 'delete_file', 'ignored_missing']);
export type LunDeleted = Static<typeof lunDeletedSchema>;

/** `POST /agents/{id}/luns/scan`: what the agent rebuilt and what it skipped. */
export const scanResultSchema = Type.Object({
  created: Type.Array(Type.Composite([Type.Pick(AgentScannedTarget, ['iqn', 'filename']), Type.Partial(Type.Pick(AgentScannedTarget, ['cd']))])),
  skipped: Type.Array(AgentSkippedFile),
});
export type ScanResult = Static<typeof scanResultSchema>;

/** A master image on an agent: `size` and `mtime` when the agent gave them; `os`, `os_version`, `remark` when it is tagged. */
export const masterSchema = Type.Composite([
  Type.Pick(AgentMasterAnswer, ['name']),
  Type.Partial(Type.Pick(AgentMasterAnswer, ['size', 'mtime'])),
  Type.Partial(Type.Pick(masterTagSchema, ['os', 'os_version', 'remark'])),
]);
export type AgentMaster = Static<typeof masterSchema>;

/** `GET /masters`: every enabled disk agent's master images; an agent that failed has `error`. */
export const mastersListingSchema = Type.Object({
  agents: Type.Array(
    Type.Object({
      agent: Type.String(),
      iscsi_server: OrNull(Type.String()),
      storager_ip: OrNull(Type.String({ description: "iscsi_server under the name the seed control plane's current WebUI reads" })),
      masters: Type.Array(masterSchema),
      error: Type.Optional(Type.String()),
    }),
  ),
});
export type MastersListing = Static<typeof mastersListingSchema>;

/** `POST /agents/probe`: what a registration would hold, nothing written; the agent's capabilities it gave. */
export const agentProbeSchema = Type.Object({
  base_url: Type.String(),
  role: Type.Object({ disk: Type.Boolean(), cd: Type.Boolean() }),
  tags: Type.Array(Type.String()),
  iscsi_server: Type.String(),
  storager_ip: Type.String({ description: 'iscsi_server under the WebUI’s name' }),
  enabled: Type.Boolean(),
  backend: StringEnum(['stgt', 'lio'] as const),
  ...Type.Partial(Type.Pick(AgentCapabilitiesAnswer, ['fs_type', 'base_iqn', 'clone', 'empty_disk', 'persistent'])).properties,
});
export type AgentProbe = Static<typeof agentProbeSchema>;

/** A target check of `GET /workers/{id}/status`: `exists` null (and `error`) when the agent could not be asked. */
const targetCheckFields = {
  exists: OrNull(Type.Boolean()),
  target: OrNull(Type.Object({ iqn: Type.String(), luns: Type.Array(Type.Object({ backing: Type.String() })) })),
  error: Type.Optional(Type.String()),
};
export const targetCheckSchema = Type.Object(targetCheckFields);
export type TargetCheck = Static<typeof targetCheckSchema>;

/** `GET /workers/{id}/status` (§10): the ledger next to what dnsmasq and the agents hold. */
export const workerStatusSchema = Type.Object({
  worker: workerSchema,
  actual: Type.Object({
    dnsmasq: OrNull(Type.Object({ hostname: Type.String(), mac: Type.String() })),
    disks: Type.Array(Type.Object({ os: Type.Unsafe<Os>({ type: 'string' }), ...targetCheckFields })),
    cd: OrNull(targetCheckSchema),
    // issue 31: the disk and image the worker last reported it booted
    booted_from: Type.Optional(OrNull(Type.String({ description: 'the IQN of the last host report (iBFT), null when it reported none' }))),
    image: Type.Optional(OrNull(hostImageSchema)),
  }),
  drift: Type.Optional(Type.Array(driftItemSchema)),
});
export type WorkerStatus = Static<typeof workerStatusSchema>;

export type { Os } from '../domain/identifiers';

/** `PUT /workers/{worker_id}/address` (issue 24): the worker's fixed IPv4 address, or null to remove it. */
export const workerAddressBody = Type.Object({ fixed_address: OrNull(Type.String({ maxLength: 15, description: 'a unicast IPv4 address' })) });
export type WorkerAddressRequest = Static<typeof workerAddressBody>;

