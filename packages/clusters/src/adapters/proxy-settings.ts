import type { Env } from '@ironlens/core';
import type { ProxyConfig } from '../api/clusters';

/**
 * The proxy URL to use for requests to `server` under a cluster's ProxyConfigDTO, or
 * `undefined` for a direct connection. `custom` uses the record's values, `auto` (Lens' name; a
 * record written before it says `system`) the ironlens process's own `HTTPS_PROXY`/`HTTP_PROXY`/
 * `NO_PROXY` (either case), `none` nothing.
 * An https server goes through `httpsProxy` (falling back to `httpProxy`), an http one through
 * `httpProxy`; a host matched by `noProxy` is reached directly.
 */
export function proxyUrlFor(server: string, proxy: ProxyConfig, env: Env = process.env): string | undefined {
  let http: string | null | undefined;
  let https: string | null | undefined;
  let noProxy: string | null | undefined;
  if (proxy.mode === 'custom') {
    ({ httpProxy: http, httpsProxy: https, noProxy } = proxy);
  } else if (proxy.mode === 'auto' || (proxy.mode as string) === 'system') {
    http = env.HTTP_PROXY || env.http_proxy;
    https = env.HTTPS_PROXY || env.https_proxy;
    noProxy = env.NO_PROXY || env.no_proxy;
  } else {
    return undefined;
  }
  const url = new URL(server);
  const chosen = url.protocol === 'https:' ? https || http : http;
  if (!chosen) return undefined;
  if (noProxy && matchesNoProxy(url, noProxy)) return undefined;
  return chosen;
}

/** `NO_PROXY` semantics: `*`, exact hosts, domain suffixes (`.svc`, `example.com`), IPv4 CIDRs, optional `:port`. */
export function matchesNoProxy(url: URL, noProxy: string): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  for (const raw of noProxy.split(',')) {
    let entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    const m = /^(.*):(\d+)$/.exec(entry);
    if (m && !entry.includes('/')) {
      if (m[2] !== port) continue;
      entry = m[1];
    }
    if (entry.includes('/')) {
      if (inCidr(host, entry)) return true;
      continue;
    }
    if (host === entry.replace(/^\*?\./, '') && !entry.startsWith('.')) return true;
    const suffix = entry.startsWith('.') ? entry : entry.startsWith('*.') ? entry.slice(1) : `.${entry}`;
    if (host === entry || host.endsWith(suffix)) return true;
  }
  return false;
}

function ipv4(v: string): number | null {
  const p = v.split('.');
  if (p.length !== 4 || p.some((x) => !/^\d{1,3}$/.test(x) || Number(x) > 255)) return null;
  return p.reduce((a, x) => a * 256 + Number(x), 0);
}

function inCidr(host: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const h = ipv4(host);
  const b = ipv4(base);
  const bits = Number(bitsText);
  if (h === null || b === null || !Number.isInteger(bits) || bits < 0 || bits > 32) return false;
  const size = 2 ** (32 - bits);
  return Math.floor(h / size) === Math.floor(b / size);
}

/** Checks a ProxyConfigDTO's URLs: http(s) URLs or empty. Returns an error text or null. */
export function proxyConfigProblem(p: ProxyConfig): string | null {
  for (const [k, v] of [
    ['httpProxy', p.httpProxy],
    ['httpsProxy', p.httpsProxy],
  ] as const) {
    if (!v) continue;
    try {
      const u = new URL(v);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return `${k} must be an http(s) URL`;
    } catch {
      return `${k} must be an http(s) URL`;
    }
  }
  // As Lens: custom needs one of the three; NO_PROXY alone is a direct connection to what it names (and to the rest).
  if (p.mode === 'custom' && !p.httpProxy && !p.httpsProxy && !p.noProxy) return 'mode custom needs httpProxy, httpsProxy or noProxy';
  return null;
}
