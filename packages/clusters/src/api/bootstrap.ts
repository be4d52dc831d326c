import { Nullable } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';
import { PHASES } from './phases';

/**
 * One source for every shape of the Kubespray bootstrap API (`/api/cluster/bootstrap…`):
 * validation, response serialization, the OpenAPI document and (through `Static<>`) the types
 * the bootstrap service returns and the console reads (issue 19). TypeBox only (and the phase
 * list, which imports nothing).
 */
const HostSpec = Type.String({ minLength: 1, maxLength: 4096, description: '`10.0.0.5`, a comma list, `10.0.0.10-12`, `10.0.0.250-10.0.1.5` or a host name' });
const Port = Type.Integer({ minimum: 1, maximum: 65535, default: 22 });
/** The same port, for a node inside a union of node forms (issue 24): ajv applies no default under anyOf (the service reads a missing port as 22). */
const NodePort = Type.Integer({ minimum: 1, maximum: 65535, description: 'default 22' });
const Fingerprint = Type.String({ pattern: '^SHA256:[A-Za-z0-9+/]{43}$', description: 'as `ssh-keygen -lf` prints it' });

/** A worker of the boot control plane (issue 24): ironlens uses its reported address and host keys. */
const WorkerId = Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,62}$', description: 'a worker id of the boot control plane (`GET /workers`)' });

export const HostKeysRequest = Type.Object({
  nodes: Type.Array(Type.Union([Type.Object({ host: HostSpec, port: Type.Optional(NodePort) }), Type.Object({ workerId: WorkerId })]), { minItems: 1, maxItems: 64 }),
});
export type HostKeysRequest = Static<typeof HostKeysRequest>;

/** One expanded `host:port`: its host key, or why it could not be read; `workerId` when the node was given as a worker. */
export const HostKeyItemSchema = Type.Union([
  Type.Object({ host: Type.String(), port: Type.Integer(), algorithm: Type.String(), fingerprint: Type.String(), workerId: Type.Optional(Type.String()) }),
  Type.Object({ host: Type.String(), port: Type.Integer(), error: Type.String(), workerId: Type.Optional(Type.String()) }),
]);
export type HostKeyItem = Static<typeof HostKeyItemSchema>;

export const HostKeysResponse = Type.Object({ items: Type.Array(HostKeyItemSchema) });
export type HostKeysResponse = Static<typeof HostKeysResponse>;

const Role = Type.Union([Type.Literal('control-plane'), Type.Literal('worker')]);
export type NodeRole = Static<typeof Role>;

/** A row of the request: a host spec with SSH and role information (Lens' BootstrapNodeInput). */
export const NodeInput = Type.Object({
  host: HostSpec,
  port: Type.Optional(NodePort),
  roles: Type.Array(Role, { minItems: 1, maxItems: 2 }),
  username: Type.Optional(Type.String({ maxLength: 32, description: 'default root' })),
  privateKey: Type.Optional(Type.String({ maxLength: 65536, description: 'never stored, never returned' })),
  password: Type.Optional(Type.String({ maxLength: 1024, description: 'never stored, never returned' })),
});

/** `{workerId, roles, username?}`: a booted worker, at its reported address, pinned to its reported host key, logged in with ironlens' own key. */
export const WorkerNodeInput = Type.Object({
  workerId: WorkerId,
  roles: Type.Array(Role, { minItems: 1, maxItems: 2 }),
  username: Type.Optional(Type.String({ maxLength: 32 })),
});
const AnyNode = Type.Union([NodeInput, WorkerNodeInput]);
export type BootstrapNodeInput = Static<typeof NodeInput>;
export type WorkerNodeInput = Static<typeof WorkerNodeInput>;

/** The confirmed fingerprint of one expanded `host:port` (Lens' BootstrapHostKeyPin). */
export const Pin = Type.Object({ host: Type.String({ minLength: 1, maxLength: 253 }), port: Type.Optional(Port), fingerprint: Fingerprint });

/**
 * `hostKeys` pins the host-form nodes; a request whose nodes are all workers (ironlens pins the keys
 * they reported) may leave it out. A host-form node without its pin is 422 `bootstrap_host_keys_mismatch`.
 */
const HostKeys = Type.Optional(Type.Array(Pin, { maxItems: 256, description: 'one pin per host-form node; may be left out when every node is a worker' }));

export const PreflightRequest = Type.Object({ nodes: Type.Array(AnyNode, { minItems: 1, maxItems: 64 }), hostKeys: HostKeys });
export type PreflightRequest = Static<typeof PreflightRequest>;
export type HostKeyPin = Static<typeof Pin>;

/** The preflight checks, in the order they run and are reported. */
export const CHECK_IDS = ['ssh', 'sudo', 'hostname', 'os', 'existing_k8s', 'memory'] as const;

export const PreflightCheckSchema = Type.Object({
  id: Type.Union(CHECK_IDS.map((c) => Type.Literal(c))),
  label: Type.String(),
  status: Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('skipped')]),
  detail: Type.Optional(Type.String()),
});

export type PreflightCheck = Static<typeof PreflightCheckSchema>;

/** One node's preflight; `workerId` when the node was given as a worker. */
export const PreflightItemSchema = Type.Object({
  host: Type.String(),
  workerId: Type.Optional(Type.String()),
  roles: Type.Array(Role),
  state: Type.Union([Type.Literal('passed'), Type.Literal('failed')]),
  error: Type.Optional(Type.String()),
  checks: Type.Array(PreflightCheckSchema),
});
export type PreflightItem = Static<typeof PreflightItemSchema>;

export const PreflightResponse = Type.Object({
  items: Type.Array(PreflightItemSchema),
  allPassed: Type.Boolean(),
});
export type PreflightResult = Static<typeof PreflightResponse>;

/** The target nodes' proxy (BootstrapProxyConfig). */
export const BootstrapProxySchema = Type.Object({
  mode: Type.Union([Type.Literal('auto'), Type.Literal('none'), Type.Literal('custom')]),
  httpProxy: Type.Optional(Type.String({ maxLength: 2048 })),
  httpsProxy: Type.Optional(Type.String({ maxLength: 2048 })),
  noProxy: Type.Optional(Type.String({ maxLength: 4096 })),
});

export const StartRequest = Type.Object({
  nodes: Type.Array(AnyNode, { minItems: 1, maxItems: 64 }),
  hostKeys: HostKeys,
  proxy: Type.Optional(BootstrapProxySchema),
  register: Type.Optional(Type.Object({ name: Type.String({ maxLength: 253 }), description: Type.Optional(Type.String({ maxLength: 4096 })) })),
});
export type StartRequest = Static<typeof StartRequest>;
export type BootstrapProxy = Static<typeof BootstrapProxySchema>;

export const StartResponse = Type.Object({ bootstrapId: Type.String({ pattern: '^bootstrap-[0-9a-f]{12}$' }) });
export type StartResponse = Static<typeof StartResponse>;

const Phase = Type.Union(PHASES.map((p) => Type.Literal(p)));

export const StatusResponse = Type.Object({
  id: Type.String(),
  phase: Phase,
  logTail: Type.String({ description: 'the last 32 KiB of the log, passwords, keys and tokens redacted' }),
  error: Nullable(Type.String()),
  kubeconfig: Type.Union([Type.String(), Type.Null()], { description: 'returned once, on the first read that sees succeeded; null with register' }),
  clusterId: Type.Union([Type.String(), Type.Null()], { description: 'the registered cluster, when register was given' }),
});
export type BootstrapStatus = Static<typeof StatusResponse>;

/** A bootstrap job in the list (no secrets). */
export const BootstrapSummarySchema = Type.Object({
  id: Type.String(),
  phase: Phase,
  error: Nullable(Type.String()),
  nodes: Type.Array(Type.Object({ host: Type.String(), port: Type.Integer(), roles: Type.Array(Type.String()), username: Type.String(), workerId: Type.Optional(Type.String()) })),
  register: Type.Union([Type.Object({ name: Type.String(), description: Type.Optional(Type.String()) }), Type.Null()]),
  clusterId: Nullable(Type.String()),
  kubeconfigDelivered: Type.Boolean(),
  createdAt: Type.String(),
  finishedAt: Nullable(Type.String()),
  /** Who started it (issue 20). */
  actor: Type.Optional(Nullable(Type.String())),
});
export type BootstrapSummary = Static<typeof BootstrapSummarySchema>;

export const ListResponse = Type.Object({ items: Type.Array(BootstrapSummarySchema) });
export type ListResponse = Static<typeof ListResponse>;

export const PublicKeyResponse = Type.Object({ publicKey: Type.String() });
export type PublicKeyResponse = Static<typeof PublicKeyResponse>;

export const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
export type IdParams = Static<typeof IdParams>;
