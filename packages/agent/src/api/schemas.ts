/**
 * The storage agent's API shapes (seed 004 §6, §14, §15 as the control plane passes them
 * through), in TypeBox and in one place: each schema gives its route's validation, the answer's
 * serialization (fast-json-stringify: a field a schema does not list is dropped, so an answer's
 * schema lists every field the service answers) and its part of the OpenAPI document, and
 * (`Static<>`) the TypeScript type of the answer. `@ironlens/agent/api` is this module: the
 * control plane's agent client (packages/metal) takes the agent's answer types and schemas from
 * here. It imports TypeBox and core's TypeBox helpers (TypeBox alone) and nothing else, so a
 * client loads no agent server code.
 */
import { Nullable, NullableInput, StringEnum } from '@ironlens/core/typebox';
import { type Static, Type } from '@sinclair/typebox';

// ---- errors -----------------------------------------------------------------------------------

/** FastAPI's error shape, `{"detail": "..."}`. */
export const AgentDetail = Type.Object({ detail: Type.Optional(Type.Unknown()) });
export type AgentDetail = Static<typeof AgentDetail>;

export const agentErrors = { 400: AgentDetail, 401: AgentDetail, 404: AgentDetail, 409: AgentDetail, 500: AgentDetail } as const;

// ---- requests ---------------------------------------------------------------------------------

const initiatorField = Type.String({
  description: 'the only initiator name (IQN, lowercase) the target admits; leave it out for a target open to every initiator',
});

/** A CHAP account: the user and the secret (never answered, logged or written to a file by the agent). */
export const ChapAccount = Type.Object(
  {
    user: Type.String({ description: 'CHAP user name: lowercase letters, digits, ".", "_", ":", "-"' }),
    password: Type.String({ description: 'CHAP secret: 12-16 letters and digits; never answered, logged or written to a file by the agent' }),
  },
  { description: 'the CHAP account the initiator must log in with (needs initiator)' },
);
export type ChapAccount = Static<typeof ChapAccount>;

/** `POST /luns/disk`. */
export const CreateDiskBody = Type.Object({
  iqn: Type.String({ description: 'must start with base_iqn + ":"' }),
  filename: Type.Optional(Type.String({ description: 'backing file in DISK_DIR; default <iqn suffix>.img' })),
  master: Type.Optional(Type.String({ description: 'master image in DISK_DIR (exactly one of master, size)' })),
  size: Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: 'blank disk size: bytes or 40G, 512M, 1T, 100K' })),
  initiator: Type.Optional(initiatorField),
  chap: Type.Optional(ChapAccount),
});
export type CreateDiskBody = Static<typeof CreateDiskBody>;

/** `POST /luns/cd`. */
export const CreateCdBody = Type.Object({
  iso: Type.String({ description: 'ISO file name in DISK_DIR' }),
  iqn: Type.Optional(Type.String({ description: 'default base_iqn:<iso name lowercased>' })),
  initiator: Type.Optional(initiatorField),
  chap: Type.Optional(ChapAccount),
});
export type CreateCdBody = Static<typeof CreateCdBody>;

/** `DELETE /luns?iqn=…`. */
export const DeleteLunQuery = Type.Object({
  iqn: Type.String(),
  delete_file: Type.Optional(Type.Boolean({ default: false })),
  ignore_missing: Type.Optional(Type.Boolean({ default: false })),
});
export type DeleteLunQuery = Static<typeof DeleteLunQuery>;

/** `POST /luns/scan`: the body may be absent (or `null`). */
export const ScanBody = NullableInput(Type.Object({ chap: Type.Optional(Type.Array(ChapAccount)) }));
export type ScanBody = Static<typeof ScanBody>;

// ---- answers ----------------------------------------------------------------------------------

/** `GET /healthz`. */
export const AgentHealth = Type.Object({ status: Type.String() });
export type AgentHealth = Static<typeof AgentHealth>;

/** `GET /capabilities`. */
export const AgentCapabilities = Type.Object({
  backend: StringEnum(['stgt', 'lio'] as const),
  fs_type: Type.String(),
  cd: Type.Boolean(),
  persistent: Type.String(),
  base_iqn: Type.String(),
  clone: Type.String(),
  empty_disk: Type.String(),
});
export type AgentCapabilities = Static<typeof AgentCapabilities>;

/** One target as `GET /luns` lists it. */
export const AgentTarget = Type.Object({
  iqn: Type.String(),
  tid: Type.Optional(Type.Integer({ description: 'stgt target id (absent on lio)' })),
  luns: Type.Array(Type.Object({ backing: Type.String() })),
  acl: Type.Array(Type.String(), {
    description: 'who may log in: ["ALL"] (every initiator), or initiator names (IQNs); stgt also lists address rules added by hand; [] nobody',
  }),
  accounts: Type.Optional(Type.Array(Type.String(), { description: 'CHAP users a login must prove (stgt); absent without CHAP, and on lio' })),
  sessions: Type.Optional(
    Type.Array(
      Type.Object({
        initiator: Type.String({ description: 'the initiator name (IQN) of the session' }),
        address: Nullable(Type.String({ description: "the address of the session's first connection; null when tgtd shows none" })),
        first_seen_at: Type.String({ description: 'when the agent first saw this session (ISO 8601, UTC): the login, to within the poll interval' }),
        ended_at: Nullable(Type.String({ description: 'when the agent saw it gone (ISO 8601, UTC); null while it is logged in' })),
      }),
      {
        description:
          'the sessions (stgt I_T nexus) logged in now and those ended in the last 10 minutes, oldest first, as the agent saw them: it looks at every GET /luns and every 3 s. Absent on lio and on a target nobody logged in to',
      },
    ),
  ),
});
export type AgentTarget = Static<typeof AgentTarget>;

/** `GET /luns`. */
export const AgentTargetList = Type.Array(AgentTarget);

const initiatorAnswer = Type.Optional(Type.String({ description: 'present when the target admits only this initiator' }));
const chapUserAnswer = Type.Optional(Type.String({ description: 'present when a login must prove this CHAP user' }));

/** `POST /luns/disk`. */
export const DiskCreated = Type.Object({
  iqn: Type.String(),
  backing: Type.String(),
  filename: Type.String(),
  clone: Nullable(StringEnum(['reflink', 'copy'] as const, { description: 'how a master was copied; null for a blank disk' })),
  size: Type.Integer({ description: 'size of the backing file in bytes' }),
  initiator: initiatorAnswer,
  chap_user: chapUserAnswer,
});
export type DiskCreated = Static<typeof DiskCreated>;

/** `POST /luns/cd`. */
export const CdCreated = Type.Object({
  iqn: Type.String(),
  backing: Type.String(),
  filename: Type.String(),
  initiator: initiatorAnswer,
  chap_user: chapUserAnswer,
});
export type CdCreated = Static<typeof CdCreated>;

/** `DELETE /luns`. */
export const LunDeleted = Type.Object({
  deleted: Type.String(),
  delete_file: Type.Boolean(),
  file_deleted: Type.Boolean({ description: 'whether a backing file was removed (never a master, nor a file another target still uses)' }),
  ignored_missing: Type.Optional(Type.Literal(true, { description: 'present when the target did not exist and ignore_missing was set' })),
});
export type LunDeleted = Static<typeof LunDeleted>;

/** `POST /luns/scan`. */
export const ScannedTarget = Type.Object({ iqn: Type.String(), cd: Type.Boolean(), filename: Type.String() });
export const SkippedFile = Type.Object({ iqn: Nullable(Type.String()), filename: Type.String(), reason: Type.String() });
export const ScanResult = Type.Object({ created: Type.Array(ScannedTarget), skipped: Type.Array(SkippedFile) });
export type ScanResult = Static<typeof ScanResult>;

/** A master image (a file with `_tpl_` in DISK_DIR). */
export const AgentMaster = Type.Object({
  name: Type.String(),
  size: Type.Integer({ description: 'bytes' }),
  mtime: Type.Integer({ description: 'modification time, integer seconds since the epoch' }),
});
export type AgentMaster = Static<typeof AgentMaster>;

/** `GET /masters`. */
export const MasterList = Type.Object({ masters: Type.Array(AgentMaster) });
export type MasterList = Static<typeof MasterList>;
