import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { runAsActor } from '../actor';
import { type Env, envInt } from '../config/env';
import { AppError } from '../errors';
import { sleep } from '../timing/sleep';
import type { Metrics } from '../metrics/metrics';
import { PUBLIC, type Role, roleAllows } from './permissions';
import { ANONYMOUS_ACTOR, isReservedActorName, TOKEN_PREFIX, type TokensRepository } from './tokens';

/** Who a request acts as: a named token, an environment token (`env:IPXE_CP_TOKEN`), or nobody when no token is configured. */
export interface Principal {
  name: string;
  role: Role;
}

/** With no token configured anywhere, every request acts as this (everything open, as before issue 20). */
export const ANONYMOUS: Principal = { name: ANONYMOUS_ACTOR, role: 'admin' };

const digest = (s: string) => createHash('sha256').update(s).digest();

function bearerOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
  return m ? m[1] : undefined;
}

/**
 * The named tokens of one store, cached for `cacheMs` (default 500 ms): a token revoked on one
 * replica is refused by every other one within that time, without a notice to lose.
 */
export class NamedTokens {
  private readonly cache = new Map<string, { at: number; principal: Principal | undefined; expiresAt: number | null }>();
  private countAt = -Infinity;
  private countValue = 0;
  private readonly touched = new Map<string, number>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    readonly repo: TokensRepository,
    private readonly opts: { cacheMs?: number; now?: () => number } = {},
  ) {}

  private now(): number {
    return this.opts.now ? this.opts.now() : Date.now();
  }

  private get ttl(): number {
    return this.opts.cacheMs ?? 500;
  }

  /** Forgets what was cached (after a change made by this process). */
  invalidate(): void {
    this.cache.clear();
    this.countAt = -Infinity;
  }

  /** True when at least one named token exists. */
  async any(): Promise<boolean> {
    const now = this.now();
    if (now - this.countAt > this.ttl) {
      this.countValue = await this.repo.count();
      this.countAt = now;
    }
    return this.countValue > 0;
  }

  async lookup(token: string): Promise<Principal | undefined> {
    if (!token.startsWith(TOKEN_PREFIX)) return undefined;
    const now = this.now();
    let hit = this.cache.get(token);
    if (!hit || now - hit.at > this.ttl) {
      const info = await this.repo.findByToken(token);
      // A token under a reserved actor name (made before those names were refused) acts as nobody.
      const usable = info && !isReservedActorName(info.name);
      hit = { at: now, principal: usable ? { name: info.name, role: info.role } : undefined, expiresAt: info?.expires_at ? Date.parse(info.expires_at) : null };
      if (this.cache.size > 10_000) this.cache.clear();
      // Misses are not kept: a bad token costs a query, and the failed-auth limiter bounds those.
      if (hit.principal) this.cache.set(token, hit);
    }
    if (!hit.principal) return undefined;
    if (hit.expiresAt !== null && now >= hit.expiresAt) return undefined;
    this.touch(hit.principal.name, now);
    return hit.principal;
  }

  /** `last_used_at`, written at most once a minute per token, never in the request's way. */
  private touch(name: string, now: number): void {
    const last = this.touched.get(name) ?? -Infinity;
    if (now - last < 60_000) return;
    this.touched.set(name, now);
    const write: Promise<void> = this.repo
      .touch(name, new Date(now))
      .catch(() => {})
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  /**
   * The tokens, without secrets. This process's `last_used_at` writes still in flight are waited
   * for first, so a token used just before the list reads as used.
   */
  async list(): ReturnType<TokensRepository['list']> {
    await Promise.all([...this.pending]);
    return this.repo.list();
  }
}

/**
 * One listener's authentication: its environment tokens (each an admin named `env:<VAR>`)
 * and the store's named tokens. When neither exists, no token is required.
 */
export class Authenticator {
  private readonly env: Array<{ principal: Principal; digest: Buffer }>;

  constructor(
    envTokens: Array<{ variable: string; token: string | undefined }>,
    readonly named?: NamedTokens,
  ) {
    this.env = envTokens.filter((e) => e.token).map((e) => ({ principal: { name: `env:${e.variable}`, role: 'admin' as Role }, digest: digest(e.token as string) }));
  }

  /** True when an environment token is set for this listener. */
  get hasEnvToken(): boolean {
    return this.env.length > 0;
  }

  /** True when requests need a token: an environment token is set, or any named token exists. */
  async required(): Promise<boolean> {
    if (this.env.length) return true;
    return this.named ? this.named.any() : false;
  }

  /** The principal of an `Authorization` header, or undefined (missing, unknown, revoked, expired). */
  async authenticate(header: string | undefined): Promise<Principal | undefined> {
    const token = bearerOf(header);
    if (!token) return undefined;
    const d = digest(token);
    let found: Principal | undefined;
    // Every environment token is compared (constant time), whichever matches.
    for (const e of this.env) if (timingSafeEqual(d, e.digest)) found = e.principal;
    if (found) return found;
    return this.named?.lookup(token);
  }
}

export interface AuthLimiterOptions {
  /** Failures of one source within `windowMs` before its failed attempts are slowed. Default 5. */
  slowAfter?: number;
  /** How long a slowed failure waits before its 401. Default 250 ms. */
  delayMs?: number;
  /** Failures of one source within `windowMs` before it is answered 429. Default 20. */
  blockAfter?: number;
  /** Default 60 s. */
  windowMs?: number;
  /** How long a source over `blockAfter` is answered 429. Default 5 min. */
  blockMs?: number;
  now?: () => number;
}

/** `IRONLENS_AUTH_FAIL_*` (docs/access.md). */
export function authLimiterOptionsFromEnv(env: Env): AuthLimiterOptions {
  return {
    slowAfter: envInt(env, 'IRONLENS_AUTH_FAIL_SLOW_AFTER', 5),
    delayMs: envInt(env, 'IRONLENS_AUTH_FAIL_DELAY_MS', 250),
    blockAfter: envInt(env, 'IRONLENS_AUTH_FAIL_BLOCK_AFTER', 20, 1),
    windowMs: envInt(env, 'IRONLENS_AUTH_FAIL_WINDOW_MS', 60_000, 1),
    blockMs: envInt(env, 'IRONLENS_AUTH_FAIL_BLOCK_MS', 300_000),
  };
}

/**
 * Failed authentication per source address: after `slowAfter` failures in the window each
 * further failure is slowed, after `blockAfter` the source is answered 429 for `blockMs`.
 * Other sources are never affected. Bounded: at most 10 000 sources are remembered.
 */
export class AuthLimiter {
  private readonly sources = new Map<string, { failures: number[]; blockedUntil: number }>();
  private readonly o: Required<Omit<AuthLimiterOptions, 'now'>> & { now: () => number };

  constructor(opts: AuthLimiterOptions = {}) {
    this.o = { slowAfter: 5, delayMs: 250, blockAfter: 20, windowMs: 60_000, blockMs: 300_000, now: Date.now, ...opts };
  }

  /** Milliseconds `source` stays blocked; 0 when it is not. */
  blockedFor(source: string): number {
    const s = this.sources.get(source);
    if (!s) return 0;
    return Math.max(0, s.blockedUntil - this.o.now());
  }

  /** Records a failure; answers how long to wait before the 401. */
  fail(source: string): number {
    const now = this.o.now();
    let s = this.sources.get(source);
    if (!s) {
      if (this.sources.size >= 10_000) this.prune(now);
      s = { failures: [], blockedUntil: 0 };
      this.sources.set(source, s);
    }
    s.failures = s.failures.filter((t) => now - t < this.o.windowMs);
    s.failures.push(now);
    if (s.failures.length >= this.o.blockAfter) s.blockedUntil = now + this.o.blockMs;
    return s.failures.length > this.o.slowAfter ? this.o.delayMs : 0;
  }

  private prune(now: number): void {
    for (const [k, s] of this.sources) if (s.blockedUntil <= now && s.failures.every((t) => now - t >= this.o.windowMs)) this.sources.delete(k);
    if (this.sources.size >= 10_000) this.sources.clear();
  }
}

export interface AccessControl {
  authenticator: Authenticator;
  limiter?: AuthLimiter;
  /** Counts refusals in `ironlens_auth_failures_total{listener}`. */
  metrics?: Metrics;
  listener?: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request acts as (set by the access hook; undefined on public routes). */
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** The route's one permission (`area:object:verb`, or `public`). */
    permission?: string;
    /** Permissions the route also requires when its body carries something ({@link BodyPermission}). */
    bodyPermissions?: readonly BodyPermission[];
  }
}

/**
 * A permission a route also requires when its request body carries something (issue 29,
 * finding 3): `POST /devices` is an operator's, but a body with a `bmc` object sets BMC
 * credentials, which `PUT /devices/{mac}/bmc` gives to admins only. A permission is checked by
 * what a request carries, not only by its route. Checked once the body is parsed, before it is
 * validated or handled: 403 `permission_denied` naming the permission.
 */
export interface BodyPermission {
  permission: string;
  /** What in the body needs it, as docs/access.md and the refusal say it: `a bmc object`. */
  when: string;
  /** True when `body` (parsed, not yet validated: any shape) carries it. */
  carries(body: unknown): boolean;
}

/** The body permissions a route declares (`config.bodyPermissions`). */
export function routeBodyPermissions(config: unknown): readonly BodyPermission[] {
  const b = (config as { bodyPermissions?: unknown } | undefined)?.bodyPermissions;
  return Array.isArray(b) ? (b as BodyPermission[]) : [];
}

/** The permission a route declares (`config.permission`), if any. */
export function routePermission(req: FastifyRequest): string | undefined {
  const p = (req.routeOptions.config as { permission?: unknown } | undefined)?.permission;
  return typeof p === 'string' ? p : undefined;
}

/**
 * Enforces each route's permission on `app` and everything registered on it afterwards:
 * `public` routes are open; otherwise, when a token is required, a missing or bad one is a
 * 401 `auth_required` (counted per source by the limiter: slowed, then 429 `auth_rate_limited`),
 * and a principal whose role lacks the permission a 403 `permission_denied` naming it. A
 * route that declares no permission is refused (403) to everyone: never open by default.
 * Errors are thrown, so each API's own error handler renders them in its own shape.
 */
export function installAccessControl(app: FastifyInstance, access: AccessControl): void {
  const { authenticator, limiter, metrics } = access;
  const listener = access.listener ?? 'http';
  // Callback hooks, not async ones: a public route (the boot path's /boot-vars, /devices/report)
  // passes without a promise, a closure or a microtask per request (issue 32, item 9).
  app.addHook('onRequest', (req, reply, done) => {
    const permission = req.is404 ? undefined : routePermission(req);
    if (permission === PUBLIC) return done();
    authorize(req, reply, permission).then(() => done(), done);
  });
  const authorize = async (req: FastifyRequest, reply: FastifyReply, permission: string | undefined): Promise<void> => {
    const unmatched = req.is404;
    let principal: Principal;
    if (!(await authenticator.required())) principal = ANONYMOUS;
    else {
      const blocked = limiter?.blockedFor(req.ip) ?? 0;
      if (blocked > 0) {
        metrics?.authFailure(listener, 'limited');
        reply.header('retry-after', String(Math.ceil(blocked / 1000)));
        throw new AppError('auth_rate_limited');
      }
      const found = await authenticator.authenticate(req.headers.authorization);
      if (!found) {
        metrics?.authFailure(listener, 'invalid');
        // Only a token presented and refused counts as a failed authentication: a page that has
        // no token yet (the console before sign-in) is told 401, never slowed or locked out.
        const wait = req.headers.authorization ? (limiter?.fail(req.ip) ?? 0) : 0;
        if (wait > 0) await sleep(wait);
        reply.header('www-authenticate', 'Bearer');
        throw new AppError('auth_required', 'Unauthorized');
      }
      principal = found;
    }
    req.principal = principal;
    if (unmatched) return;
    if (!permission || !roleAllows(principal.role, permission)) {
      throw permissionDenied(principal, permission ?? 'undeclared');
    }
  };
  // Once the body is parsed: what it carries may need more than the route's permission.
  app.addHook('preValidation', (req, _reply, done) => {
    const extra = req.is404 ? [] : routeBodyPermissions(req.routeOptions.config);
    const principal = req.principal ?? ANONYMOUS;
    for (const b of extra) {
      if (roleAllows(principal.role, b.permission) || !b.carries(req.body)) continue;
      return done(new AppError('permission_denied', `token ${principal.name} (${principal.role}) may not ${b.permission}: the body carries ${b.when}`, { permission: b.permission, actor: principal.name, role: principal.role }));
    }
    done();
  });
  // After the body is parsed: the handler and everything it starts run as the request's actor.
  app.addHook('preHandler', (req, _reply, done) => {
    runAsActor(req.principal?.name ?? ANONYMOUS.name, done);
  });
}

/** 403 `permission_denied` naming the permission, the token and its role; `code` too, for the `{"detail"}` shape (issue 33). */
function permissionDenied(who: { name: string; role: string }, permission: string): AppError {
  return new AppError('permission_denied', `token ${who.name} (${who.role}) may not ${permission}`, { code: 'permission_denied', permission, actor: who.name, role: who.role });
}

/**
 * Gives the routes registered on `app` after this call their permission from `table`
 * (`'METHOD /path'`, the path relative to `app`'s prefix, as the route declares it; HEAD takes
 * GET's). A route's own `config.permission` wins. A route in neither has no permission: the
 * access hook refuses it and the permission test fails.
 */
export function declareRoutePermissions(app: FastifyInstance, table: Readonly<Record<string, string>>): void {
  const prefix = app.prefix;
  app.addHook('onRoute', (r) => {
    const config = r.config as { permission?: unknown } | undefined;
    if (typeof config?.permission === 'string') return;
    const rel = (prefix && r.url.startsWith(prefix) ? r.url.slice(prefix.length) : r.url) || '/';
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    const method = methods[0] === 'HEAD' ? 'GET' : methods.length > 1 ? 'ALL' : methods[0];
    const permission = table[`${method} ${rel}`];
    if (permission) r.config = { ...r.config, permission } as typeof r.config;
  });
}
