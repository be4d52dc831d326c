/**
 * Who the console's token is (issue 20): `GET /api/auth/whoami` on the console listener, the
 * token admin API beside it, and what the role may do, so that pages hide or disable what the
 * role lacks and say why.
 */
import { createContext, useContext, useEffect, useState } from 'react';
import type { Http } from '../shared/http';

export interface Whoami {
  name: string;
  role: 'viewer' | 'operator' | 'admin';
  permissions: string[];
}

export interface TokenInfo {
  name: string;
  role: Whoami['role'];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface AuthApi {
  whoami(): Promise<Whoami>;
  listTokens(): Promise<{ tokens: TokenInfo[] }>;
  createToken(body: { name: string; role: string; expires?: string }): Promise<TokenInfo & { token: string }>;
  revokeToken(name: string): Promise<{ revoked: string }>;
}

/** The access API at `<base>/api/auth` (the console listener's root). */
export function createAuthApi(http: Http): AuthApi {
  return {
    whoami: () => http.call('GET', '/api/auth/whoami'),
    listTokens: () => http.call('GET', '/api/auth/tokens'),
    createToken: (body) => http.call('POST', '/api/auth/tokens', body),
    revokeToken: (name) => http.call('DELETE', `/api/auth/tokens/${encodeURIComponent(name)}`),
  };
}

export interface Access {
  /** Null until whoami answered (or when it failed). */
  who: Whoami | null;
  /** True when the token holds `permission` (true while unknown: the server decides). */
  can(permission: string): boolean;
  /** Why an action is unavailable: "your token (NAME, viewer) may not metal:device:bind". */
  reason(permission: string): string;
}

export function deniedText(name: string, role: string, permission: string): string {
  return `your token (${name}, ${role}) may not ${permission}`;
}

export function accessOf(who: Whoami | null): Access {
  return {
    who,
    can: (p) => !who || who.permissions.includes(p),
    reason: (p) => (who ? deniedText(who.name, who.role, p) : ''),
  };
}

export const AccessContext = createContext<Access>(accessOf(null));

export function useAccess(): Access {
  return useContext(AccessContext);
}

/** whoami for the current token (fetched again whenever it changes). */
export function useWhoami(api: AuthApi, token: string | null): Whoami | null {
  const [who, setWho] = useState<Whoami | null>(null);
  useEffect(() => {
    let live = true;
    setWho(null);
    api.whoami().then(
      (w) => live && setWho(w),
      () => live && setWho(null),
    );
    return () => {
      live = false;
    };
  }, [api, token]);
  return who;
}

/** What a control that calls a route gets from {@link gate}: spread onto the button. */
export interface Gated {
  disabled: boolean;
  /** The reason (its accessible description) when the token lacks a permission; absent otherwise. */
  title: string | undefined;
}

/**
 * A control that calls routes needing `permissions` (every one of them, the names of
 * docs/access.md): disabled when the token lacks one, with "your token (NAME, role) may not …"
 * as its title, so the reason is on the control itself; also disabled while `busy` (pending,
 * nothing selected…), without a title then. While whoami is unknown the server decides.
 */
export function gate(access: Access, permissions: string | readonly string[], busy = false): Gated {
  const missing = (typeof permissions === 'string' ? [permissions] : permissions).find((p) => !access.can(p));
  return { disabled: busy || missing !== undefined, title: missing === undefined ? undefined : access.reason(missing) };
}
