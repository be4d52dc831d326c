import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors';

/**
 * The header a page of ours sends with every write (the console, the kind dashboard): a
 * cross-origin HTML form cannot set it, and a cross-origin `fetch` that sets it needs a CORS
 * preflight nobody answers.
 */
export const REQUEST_HEADER = 'x-ironlens-request';

export interface BrowserGuardOptions {
  /**
   * Host names served besides the loopback names (`localhost`, `*.localhost`, `127.0.0.0/8`,
   * `::1`) and the listener's own addresses (every interface's when it listens on all): the
   * names a browser uses to reach the listener (`IRONLENS_CONSOLE_HOSTS`, `KIND_K8S_HOSTS`).
   * `*` serves any name (behind a proxy that checks `Host` itself). Default: none.
   */
  hosts?: readonly string[];
}

/**
 * Host names one route serves besides the listener's (`config.extraHosts`): a route that
 * machines behind another name call, such as the gateway's authorization hook (issue 29, finding
 * 13), whose callers send the names their own configuration gives them. Judged per request (the
 * route's parameters are known), with the host name lowercased, without port or trailing dot.
 */
export type ExtraHosts = (name: string, req: FastifyRequest) => boolean | Promise<boolean>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Host names this route serves besides the listener's ({@link ExtraHosts}). */
    extraHosts?: ExtraHosts;
  }
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** What an HTML form can send without script (and a `fetch` without a CORS preflight). */
const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

/** A comma-separated list of host names (`IRONLENS_CONSOLE_HOSTS`), empty entries dropped. */
export function hostList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
}

/** The host name of a `Host` header (`name:port`, `[v6]:port`), lowercased, without a trailing dot. */
export function hostName(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end === -1 ? h : h.slice(1, end);
  } else {
    const colon = h.lastIndexOf(':');
    if (colon !== -1 && h.indexOf(':') === colon) h = h.slice(0, colon);
  }
  return h.replace(/\.$/, '');
}

function isLoopbackName(h: string): boolean {
  return h === 'localhost' || h.endsWith('.localhost') || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::1' || h === '::ffff:127.0.0.1';
}

/** The listener's own addresses: the one it is bound to, or every interface's when it listens on all. */
function ownAddresses(app: FastifyInstance): Set<string> {
  const out = new Set<string>();
  const a = app.server.address() as AddressInfo | null;
  if (!a || typeof a !== 'object') return out;
  const bound = a.address.toLowerCase().replace(/^::ffff:/, '');
  if (bound === '0.0.0.0' || bound === '::') {
    for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) out.add(i.address.toLowerCase().replace(/%.*$/, ''));
  } else out.add(bound);
  return out;
}

/**
 * Guards a listener that browsers reach (the console, the kind panel) against other web pages
 * (issue 18, finding 2), for every route registered after it:
 * - DNS rebinding: a request whose `Host` is not one of the listener's names is refused (421
 *   `host_not_allowed`), so a page of `rebind.attacker.example` that resolves to 127.0.0.1 reads nothing.
 * - Cross-site writes: a POST/PUT/PATCH/DELETE whose `Origin` is not the listener's own, or whose
 *   `Sec-Fetch-Site` is neither `same-origin` nor `none`, is refused (403 `cross_site_request_refused`);
 *   requests with neither header (curl, scripts) pass.
 * - A browser write (one that carries `Origin`, `Sec-Fetch-Site` or is a navigation) with a body an
 *   HTML form can send (urlencoded, multipart, text/plain) needs the {@link REQUEST_HEADER} header
 *   (403 `request_header_required`): our pages send it, a form cannot.
 * Errors are thrown, so each API renders them in its own shape.
 */
export function installBrowserGuard(app: FastifyInstance, opts: BrowserGuardOptions = {}): void {
  const extra = new Set((opts.hosts ?? []).map((h) => hostName(h)).filter(Boolean));
  const anyHost = extra.has('*');
  let own: Set<string> | undefined;
  const allowed = (name: string): boolean => {
    if (anyHost || isLoopbackName(name) || extra.has(name)) return true;
    own ??= ownAddresses(app);
    return own.has(name);
  };
  app.addHook('onRequest', async (req: FastifyRequest) => {
    const host = req.headers.host;
    // HTTP/1.0 without Host: nothing a browser sends.
    if (host !== undefined && !allowed(hostName(host))) {
      const extra = req.is404 ? undefined : (req.routeOptions.config as { extraHosts?: ExtraHosts } | undefined)?.extraHosts;
      if (!extra || !(await extra(hostName(host), req))) throw new AppError('host_not_allowed');
    }
    if (!UNSAFE.has(req.method)) return;
    const site = req.headers['sec-fetch-site'];
    if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') throw new AppError('cross_site_request_refused');
    const origin = req.headers.origin;
    if (typeof origin === 'string') {
      let originHost: string | undefined;
      try {
        const u = new URL(origin);
        originHost = u.protocol === 'http:' || u.protocol === 'https:' ? u.host.toLowerCase() : undefined;
      } catch {
        originHost = undefined;
      }
      if (!originHost || !host || originHost !== host.trim().toLowerCase()) throw new AppError('cross_site_request_refused');
    }
    const mode = req.headers['sec-fetch-mode'];
    const fromBrowser = typeof origin === 'string' || typeof site === 'string' || mode === 'navigate' || mode === 'nested-navigate';
    if (!fromBrowser || req.headers[REQUEST_HEADER] !== undefined) return;
    const type = String(req.headers['content-type'] ?? '').toLowerCase();
    if (mode === 'navigate' || mode === 'nested-navigate' || FORM_TYPES.some((t) => type.startsWith(t))) throw new AppError('request_header_required');
  });
}
