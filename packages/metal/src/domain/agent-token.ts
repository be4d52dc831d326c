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
 * Refuses a token that names a variable outside `patterns` (400 `agent_token_env_forbidden`):
 * with the control-plane token alone, `${IRONLENS_CONSOLE_TOKEN}` would otherwise send that
 * secret to whatever URL the caller gives.
 */
export function checkTokenEnv(token: string | null, patterns: readonly string[], whose = 'the token'): void {
  if (!token) return;
  const bad = tokenEnvNames(token).filter((n) => !envNameAllowed(n, patterns));
  if (bad.length > 0) {
    throw new AppError('agent_token_env_forbidden', `${whose} names \${${bad[0]}}, which IPXE_CP_AGENT_TOKEN_ENV (${patterns.join(',') || 'empty'}) does not allow`);
  }
}

/**
 * A stored or given token with its `${NAME}` placeholders expanded from `env`, after
 * {@link checkTokenEnv}; an unset variable expands to nothing.
 */
export function expandToken(token: string | null | undefined, env: NodeJS.ProcessEnv, patterns: readonly string[], whose?: string): string | null {
  if (!token) return null;
  checkTokenEnv(token, patterns, whose);
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
