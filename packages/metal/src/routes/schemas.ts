/** JSON schemas shared by the metal routes (OpenAPI comes from these). */
export const nullableString = { type: ['string', 'null'] } as const;

export const bootSchema = {
  type: ['object', 'null'],
  properties: {
    menu_default: { type: ['string', 'null'], description: 'menu.ipxe item id' },
    menu_timeout: { type: ['integer', 'null'], description: 'milliseconds; 0 waits forever' },
  },
} as const;

export const diskSchema = {
  type: 'object',
  properties: {
    agent: { type: 'string' },
    iqn: { type: 'string' },
    filename: { type: 'string' },
    backing: { type: 'string' },
    os: { type: 'string' },
    source: { type: 'object', additionalProperties: true },
  },
} as const;

export const workerSchema = {
  type: 'object',
  properties: {
    hostname: { type: 'string' },
    arch: { type: 'string' },
    state: { type: 'string', enum: ['registered', 'ready', 'installing'] },
    disks: { type: 'array', items: diskSchema },
    cd: { type: ['object', 'null'], additionalProperties: true },
    worker_id: { type: 'string' },
    mac: { type: ['string', 'null'] },
    bound_device: { type: ['string', 'null'] },
    readiness: { type: 'string', enum: ['ready', 'partial', 'idle'] },
    default_os: { type: 'string' },
    boot: { type: 'object', additionalProperties: true },
    changed: { type: 'boolean' },
  },
} as const;

export const deviceSchema = {
  type: 'object',
  properties: {
    mac: { type: 'string' },
    uuid: { type: ['string', 'null'] },
    state: { type: 'string', enum: ['pooled', 'bound', 'revoked'] },
    bound_worker_id: { type: ['string', 'null'] },
    key_hash: { type: ['string', 'null'] },
    source: { type: 'string', enum: ['ipxe', 'manual'] },
    fingerprint: { type: 'object', additionalProperties: true },
    first_seen: { type: ['string', 'null'] },
    last_seen: { type: ['string', 'null'] },
  },
} as const;

export const detailSchema = { type: 'object', properties: { detail: {} }, additionalProperties: true } as const;

export const errorResponses = {
  400: detailSchema,
  401: detailSchema,
  404: detailSchema,
  409: detailSchema,
  422: detailSchema,
  500: detailSchema,
} as const;

export const security = [{ bearer: [] }];
