import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import { AppError } from '../errors';
import { isUniqueViolation, type NamedMigration, type Store } from '../store';
import { SYSTEM_ACTOR } from '../actor';
import { isRole, type Role } from './permissions';

/**
 * Named API tokens (issue 20): `ilt_` + 43 base64url characters (32 random bytes). The
 * token is shown once, when it is created; the store keeps only its SHA-256 (a high-entropy
 * secret needs no slow hash), looked up by that hash and compared in constant time.
 */
export const TOKEN_PREFIX = 'ilt_';

export const TOKEN_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** What ironlens writes by itself records as its actor (the `ironlens token` command, jobs' own entries). */
export { SYSTEM_ACTOR };
/** What a request without a token records as its actor. */
export const ANONYMOUS_ACTOR = 'anonymous';

/**
 * True for a name that is already an actor of ironlens' own (issue 29, finding 11): `ironlens`,
 * `anonymous` (in any case) and the environment tokens' `env:…`. A token of that name would
 * make its holder's writes read as ironlens' own, or as nobody's.
 */
export function isReservedActorName(name: string): boolean {
  const n = name.toLowerCase();
  return n === SYSTEM_ACTOR || n === ANONYMOUS_ACTOR || n.startsWith('env:');
}

export interface TokenInfo {
  name: string;
  role: Role;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  /** When it was revoked; a revoked token is refused, and kept so that revoking the last token never reopens the listeners. */
  revoked_at: string | null;
}
/** The tables {@link TokensRepository} queries: a package's table interface adds them to its own. */
export interface AuthTokensTables {
  auth_tokens: AuthTokensTable;
}

export interface CreatedToken extends TokenInfo {
  /** The token itself: shown this once, never stored. */
  token: string;
}

/** The `auth_tokens` table as stored (`authTokensMigrations`). */
export interface AuthTokensTable {
  name: string;
  role: string;
  hash: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export const authTokensMigrations: NamedMigration[] = [
  {
    name: 'core-0010-auth-tokens',
    async up(db) {
      await db.schema
        .createTable('auth_tokens')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
    },
  },
];

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** The longest expiry taken: ten years (`3650d`). */
export const MAX_EXPIRY_MS = 3650 * UNIT_MS.d;

/**
 * `10s`, `5m`, `12h`, `30d` → milliseconds; anything else is a 400 `token_expiry_invalid`, and a
 * duration over ten years ({@link MAX_EXPIRY_MS}) a 400 `token_expiry_out_of_range` (a date
 * past year 275760 cannot be written at all: it was a 500).
 */
export function parseExpiry(v: string): number {
  const m = DURATION.exec(typeof v === 'string' ? v.trim() : '');
  if (!m || Number(m[1]) <= 0) throw new AppError('token_expiry_invalid', `expiry ${JSON.stringify(v).slice(0, 40)} is not a duration like 10s, 5m, 12h or 30d`);
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (!(ms <= MAX_EXPIRY_MS)) throw new AppError('token_expiry_out_of_range', `expiry ${JSON.stringify(v).slice(0, 40)} is longer than ten years (3650d)`, { code: 'token_expiry_out_of_range' });
  return ms;
}

function toInfo(r: AuthTokensTable): TokenInfo {
  return { name: r.name, role: r.role as Role, created_at: r.created_at, expires_at: r.expires_at, last_used_at: r.last_used_at, revoked_at: r.revoked_at ?? null };
}

/** The only SQL for tokens. */
export class TokensRepository {
  constructor(private readonly store: Store<AuthTokensTables>) {}

  private get db(): Store<AuthTokensTables>['db'] {
    return this.store.db;
  }

  async create(input: { name: string; role: string; expires?: string; now?: Date }): Promise<CreatedToken> {
    if (typeof input.name === 'string' && isReservedActorName(input.name)) {
      throw new AppError('token_name_reserved', `${JSON.stringify(input.name).slice(0, 70)} is an actor of ironlens' own (ironlens, anonymous, env:…): choose another name`, { code: 'token_name_reserved' });
    }
    if (typeof input.name !== 'string' || !TOKEN_NAME_PATTERN.test(input.name)) {
      throw new AppError('token_name_invalid', 'a token name is 1-64 letters, digits, ".", "_", "@" or "-", starting with a letter or digit');
    }
    if (!isRole(input.role)) throw new AppError('token_role_invalid', 'role must be viewer, operator or admin');
    const now = input.now ?? new Date();
    const expires_at = input.expires ? new Date(now.getTime() + parseExpiry(input.expires)).toISOString() : null;
    const token = generateToken();
    const row: AuthTokensTable = { name: input.name, role: input.role, hash: hashToken(token), created_at: now.toISOString(), expires_at, last_used_at: null, revoked_at: null };
    try {
      // A revoked token's name may be given again.
      await this.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('auth_tokens').where('name', '=', input.name).where('revoked_at', 'is not', null).execute();
        await trx.insertInto('auth_tokens').values(row).execute();
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('token_exists', `a token named ${input.name} exists`);
      throw err;
    }
    return { ...toInfo(row), token };
  }

  async list(): Promise<TokenInfo[]> {
    const rows = await this.db.selectFrom('auth_tokens').selectAll().orderBy('name').execute();
    return rows.map(toInfo);
  }

  /** Revokes the token (its row stays, marked); false when there was no live token of that name. */
  async revoke(name: string, at = new Date()): Promise<boolean> {
    const r = await this.db.updateTable('auth_tokens').set({ revoked_at: at.toISOString() }).where('name', '=', name).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Every token row, revoked ones included: once one was created, the listeners require a token. */
  async count(): Promise<number> {
    const r = await this.db.selectFrom('auth_tokens').select(sql<number>`count(*)`.as('n')).executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /** The token whose hash matches, compared in constant time; undefined otherwise. */
  async findByToken(token: string): Promise<TokenInfo | undefined> {
    const hash = hashToken(token);
    const row = await this.db.selectFrom('auth_tokens').selectAll().where('hash', '=', hash).executeTakeFirst();
    if (!row || row.revoked_at !== null) return undefined;
    if (!timingSafeEqual(Buffer.from(row.hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    return toInfo(row);
  }

  async touch(name: string, at: Date): Promise<void> {
    await this.db.updateTable('auth_tokens').set({ last_used_at: at.toISOString() }).where('name', '=', name).execute();
  }
}
