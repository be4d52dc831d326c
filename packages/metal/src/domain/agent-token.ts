import { AppError } from '@ironlens/core';

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The environment variables a token names as `${NAME}`. */
export function tokenEnvNames(token: string): string[] {
  return [...token.matchAll(PLACEHOLDER)].map((m) => m[1]);
}

/** True when `name` matches one of `patterns` (`IPXE_AGENT_TOKEN`, or `IPXE_AGENT_*`). */
export function envNameAllowed(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));
}

/**
 * Prefixes of ironlens' own settings and secrets (`IPXE_CP_TOKEN`, `IRONLENS_SECRET_KEY`,
 * `IRONLENS_CONSOLE_TOKEN`, `IRONLENS_DATABASE_URL`, `KIND_K8S_TOKEN`, …): no agent token may
 * name one, whatever `IPXE_CP_AGENT_TOKEN_ENV` allows.
 */
export const RESERVED_ENV_PREFIXES: readonly string[] = ['IRONLENS_', 'IPXE_CP_', 'KIND_'];

/** Which `${NAME}`s an agent token may name. */
export interface TokenEnvPolicy {
  /** Patterns of allowed names (`IPXE_CP_AGENT_TOKEN_ENV`). */
  allowedEnv: readonly string[];
  /**
   * Names refused beside {@link RESERVED_ENV_PREFIXES} even where `allowedEnv` matches them:
   * the settings ironlens' processes read (the CLI passes its settings table). Default: none.
   */
  reservedEnv?: readonly string[];
}

/** True when `name` is one of ironlens' own settings or secrets: a prefix of {@link RESERVED_ENV_PREFIXES}, or one of `reserved` (either in any case). */
export function envNameReserved(name: string, reserved: readonly string[] = []): boolean {
  const upper = name.toUpperCase();
  return RESERVED_ENV_PREFIXES.some((p) => upper.startsWith(p)) || reserved.some((r) => r.toUpperCase() === upper);
}

/**
 * Refuses a token that names one of ironlens' own settings or secrets (400
 * `agent_token_env_reserved`), on every path a token takes: a probe, a registration, an
 * update, an import and each use of a stored one. Only the variable's name is told.
 */
export function refuseReservedEnv(token: string | null, reserved: readonly string[] = [], whose = 'the token'): void {
  if (!token) return;
  const bad = tokenEnvNames(token).find((n) => envNameReserved(n, reserved));
  if (bad !== undefined) {
    throw new AppError('agent_token_env_reserved', `${whose} names \${${bad}}, one of ironlens' own settings: an agent token may name no IRONLENS_*, IPXE_CP_* or KIND_* variable nor any other of ironlens' settings (docs/metal.md)`, { code: 'agent_token_env_reserved', variable: bad });
  }
}

/**
 * Refuses a token that names one of ironlens' own settings ({@link refuseReservedEnv}), or a
 * variable outside the allowed patterns (400 `agent_token_env_forbidden`): with the
 * control-plane token alone, `${IRONLENS_CONSOLE_TOKEN}` would otherwise send that secret to
 * whatever URL the caller gives.
 */
export function checkTokenEnv(token: string | null, policy: TokenEnvPolicy, whose = 'the token'): void {
  if (!token) return;
  refuseReservedEnv(token, policy.reservedEnv, whose);
  const patterns = policy.allowedEnv;
  const bad = tokenEnvNames(token).filter((n) => !envNameAllowed(n, patterns));
  if (bad.length > 0) {
    throw new AppError('agent_token_env_forbidden', `${whose} names \${${bad[0]}}, which IPXE_CP_AGENT_TOKEN_ENV (${patterns.join(',') || 'empty'}) does not allow`);
  }
}

/**
 * A stored or given token with its `${NAME}` placeholders expanded from `env`, after
 * {@link checkTokenEnv}; an unset variable expands to nothing.
 */
export function expandToken(token: string | null | undefined, env: NodeJS.ProcessEnv, policy: TokenEnvPolicy, whose?: string): string | null {
  if (!token) return null;
  checkTokenEnv(token, policy, whose);
  return token.replace(PLACEHOLDER, (_m, name: string) => env[name] ?? '');
}

/**
 * Refuses a request's token that names `${NAME}` when the caller may not register agents (403
 * `permission_denied`, naming `metal:agent:write`): expanding it would send ironlens' own secret
 * to whatever URL the request names (issue 29, finding 1). Checked by what the request carries,
 * beside the route's own permission.
 */
export function refuseRequestPlaceholders(token: string | null): void {
  if (token && tokenEnvNames(token).length > 0) {
    throw new AppError('permission_denied', `a token that names \${${tokenEnvNames(token)[0]}} is expanded from ironlens' environment only for a token that may register agents (metal:agent:write); give the token itself, or probe a registered agent with agent_id`, { permission: 'metal:agent:write' });
  }
}
