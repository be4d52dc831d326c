import { type Static, Type } from '@sinclair/typebox';

/** One source for every shape of the bootstrap API: validation, OpenAPI and the route types. */
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

export const HostKeysResponse = Type.Object({
  items: Type.Array(
    Type.Object({
      host: Type.String(),
      port: Type.Integer(),
      algorithm: Type.Optional(Type.String()),
      fingerprint: Type.Optional(Type.String()),
      error: Type.Optional(Type.String()),
      workerId: Type.Optional(Type.String()),
    }),
  ),
});

const NodeInput = Type.Object({
  host: HostSpec,
  port: Type.Optional(NodePort),
  roles: Type.Array(Type.Union([Type.Literal('control-plane'), Type.Literal('worker')]), { minItems: 1, maxItems: 2 }),
  username: Type.Optional(Type.String({ maxLength: 32, description: 'default root' })),
  privateKey: Type.Optional(Type.String({ maxLength: 65536, description: 'never stored, never returned' })),
  password: Type.Optional(Type.String({ maxLength: 1024, description: 'never stored, never returned' })),
});

/** `{workerId, roles, username?}`: a booted worker, at its reported address, pinned to its reported host key, logged in with ironlens' own key. */
const WorkerNodeInput = Type.Object({
  workerId: WorkerId,
  roles: Type.Array(Type.Union([Type.Literal('control-plane'), Type.Literal('worker')]), { minItems: 1, maxItems: 2 }),
  username: Type.Optional(Type.String({ maxLength: 32 })),
});
const AnyNode = Type.Union([NodeInput, WorkerNodeInput]);

const Pin = Type.Object({ host: Type.String({ minLength: 1, maxLength: 253 }), port: Type.Optional(Port), fingerprint: Fingerprint });

export const PreflightRequest = Type.Object({ nodes: Type.Array(AnyNode, { minItems: 1, maxItems: 64 }), hostKeys: Type.Array(Pin, { maxItems: 256 }) });
export type PreflightRequest = Static<typeof PreflightRequest>;

const Check = Type.Object({
  id: Type.String(),
  label: Type.String(),
  status: Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('skipped')]),
  detail: Type.Optional(Type.String()),
});

export const PreflightResponse = Type.Object({
  items: Type.Array(
    Type.Object({
      host: Type.String(),
      workerId: Type.Optional(Type.String()),
      roles: Type.Array(Type.String()),
      state: Type.Union([Type.Literal('passed'), Type.Literal('failed')]),
      error: Type.Optional(Type.String()),
      checks: Type.Array(Check),
    }),
  ),
  allPassed: Type.Boolean(),
});

const ProxyConfig = Type.Object({
  mode: Type.Union([Type.Literal('auto'), Type.Literal('none'), Type.Literal('custom')]),
  httpProxy: Type.Optional(Type.String({ maxLength: 2048 })),
  httpsProxy: Type.Optional(Type.String({ maxLength: 2048 })),
  noProxy: Type.Optional(Type.String({ maxLength: 4096 })),
});

export const StartRequest = Type.Object({
  nodes: Type.Array(AnyNode, { minItems: 1, maxItems: 64 }),
  hostKeys: Type.Array(Pin, { maxItems: 256 }),
  proxy: Type.Optional(ProxyConfig),
  register: Type.Optional(Type.Object({ name: Type.String({ maxLength: 253 }), description: Type.Optional(Type.String({ maxLength: 4096 })) })),
});
export type StartRequest = Static<typeof StartRequest>;

export const StartResponse = Type.Object({ bootstrapId: Type.String({ pattern: '^bootstrap-[0-9a-f]{12}$' }) });

const Phase = Type.Union(['queued', 'preflight', 'provisioning', 'running', 'kubeconfig_ready', 'succeeded', 'failed', 'cancelled'].map((p) => Type.Literal(p)));

export const StatusResponse = Type.Object({
  id: Type.String(),
  phase: Phase,
  logTail: Type.String({ description: 'the last 32 KiB of the log, passwords, keys and tokens redacted' }),
  error: Type.Union([Type.String(), Type.Null()]),
  kubeconfig: Type.Union([Type.String(), Type.Null()], { description: 'returned once, on the first read that sees succeeded; null with register' }),
  clusterId: Type.Union([Type.String(), Type.Null()], { description: 'the registered cluster, when register was given' }),
});

export const ListResponse = Type.Object({
  items: Type.Array(
    Type.Object({
      id: Type.String(),
      phase: Phase,
      error: Type.Union([Type.String(), Type.Null()]),
      nodes: Type.Array(Type.Object({ host: Type.String(), port: Type.Integer(), roles: Type.Array(Type.String()), username: Type.String(), workerId: Type.Optional(Type.String()) })),
      register: Type.Union([Type.Object({ name: Type.String(), description: Type.Optional(Type.String()) }), Type.Null()]),
      clusterId: Type.Union([Type.String(), Type.Null()]),
      kubeconfigDelivered: Type.Boolean(),
      createdAt: Type.String(),
      finishedAt: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});

export const PublicKeyResponse = Type.Object({ publicKey: Type.String() });

export const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
export type IdParams = Static<typeof IdParams>;

export const Problem = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  code: Type.String(),
});
