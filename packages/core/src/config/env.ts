/** Small, strict readers for environment variables. Each states its default. */
export type Env = Record<string, string | undefined>;

export function envString(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === '' ? fallback : v;
}

export function envOptional(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

export function envBool(env: Env, name: string, fallback: boolean): boolean {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const s = v.trim().toLowerCase();
  if (TRUE.has(s)) return true;
  if (FALSE.has(s)) return false;
  throw new Error(`${name} must be true or false, got ${JSON.stringify(v)}`);
}

export function envInt(env: Env, name: string, fallback: number, min = 0): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}

export function envNumber(env: Env, name: string, fallback: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(v)}`);
  return n;
}

/** A listener address: `host:port`, `:port`, `port`, or `off`. */
export interface Listen {
  host: string;
  port: number;
}

export function parseListen(value: string, name = 'listen'): Listen | null {
  const v = value.trim();
  if (v === 'off' || v === 'false' || v === 'none') return null;
  let host = '0.0.0.0';
  let portText = v;
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(v) ?? /^([^:]*):(\d+)$/.exec(v);
  if (m) {
    host = m[1] || '0.0.0.0';
    portText = m[2];
  }
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 0 || port > 65535) {
    throw new Error(`${name} must be host:port, :port, port or off, got ${JSON.stringify(value)}`);
  }
  return { host, port };
}

export function envListen(env: Env, name: string, fallback: string): Listen | null {
  return parseListen(envString(env, name, fallback), name);
}

/**
 * `IRONLENS_GITHUB_MIRROR`: the one base URL for everything ironlens fetches from GitHub (CRD
 * bundles, git clones of llm-d, llm-d-benchmark, Kubespray): `<mirror>/<owner>/<repo>…`.
 * Air-gapped sites point it at their mirror; tests at a local server. Default is
 * `https://github.com`. Must be http(s); a trailing slash is dropped.
 */
export function githubMirrorFrom(env: Env): string {
  const v = envString(env, 'IRONLENS_GITHUB_MIRROR', 'https://github.com').trim().replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new Error(`IRONLENS_GITHUB_MIRROR must be an http(s) URL, got ${JSON.stringify(v)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`IRONLENS_GITHUB_MIRROR must be an http(s) URL, got ${JSON.stringify(v)}`);
  return v;
}
