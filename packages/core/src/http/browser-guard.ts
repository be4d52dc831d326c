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
  /**
   * Origins (`https://console.lab.example`) under which browsers reach the listener through a
   * reverse proxy that rewrites `Host` to its upstream (`IRONLENS_CONSOLE_ORIGINS`): a write with
   * one of them as its `Origin` is same-origin, and their host names are served. Default: none.
   */
  origins?: readonly string[];
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** What an HTML form can send without script (and a `fetch` without a CORS preflight). */
const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

/** A comma-separated list of host names (`IRONLENS_CONSOLE_HOSTS`) or origins (`IRONLENS_CONSOLE_ORIGINS`), empty entries dropped. */
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

/** `scheme://host[:port]` of an http(s) URL, as a browser writes it in `Origin` (lower case, default port dropped), or null. */
function originOf(value: string): string | null {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : null;
  } catch {
    return null;
  }
}

/**
 * `IRONLENS_CONSOLE_ORIGINS`: comma-separated origins (`https://console.lab.example`,
 * `http://10.0.0.5:8443`), each `http(s)://host[:port]` with no path, normalised as browsers send
 * them. Throws on anything else, so a typo is said at start instead of refusing every upload.
 */
export function originList(value: string | undefined, setting = 'IRONLENS_CONSOLE_ORIGINS'): string[] {
  return hostList(value).map((entry) => {
    const origin = originOf(entry);
    const u = origin ? new URL(entry) : null;
    if (!origin || !u || u.pathname !== '/' || u.search || u.hash || u.username || u.password) throw new Error(`${setting}: ${JSON.stringify(entry.slice(0, 100))} is not an origin (http(s)://host[:port], no path)`);
    return origin;
  });
}

/** Where a trusted reverse proxy says the browser sent the request: its `X-Forwarded-Host`, and `X-Forwarded-Proto` when it sent one. */
interface ForwardedTarget {
  host: string;
  protocol: string | null;
}

/**
 * The host (and scheme) the browser used, as a reverse proxy the listener trusts tells it in
 * `X-Forwarded-Host` / `X-Forwarded-Proto`, or null. Whom to believe is the listener's
 * `trustProxy` (`IRONLENS_TRUSTED_PROXIES`, shared with `X-Forwarded-For`): Fastify's
 * `request.host` and `request.protocol` read those headers only when the peer is a trusted
 * proxy. The one place this guard learns about proxies.
 */
function forwardedTarget(req: FastifyRequest): ForwardedTarget | null {
  if (req.headers['x-forwarded-host'] === undefined) return null;
  const host = req.host;
  // Not believed (the peer is not a trusted proxy): Fastify answered the Host header.
  if (!host || host === req.headers.host) return null;
  return { host: host.trim().toLowerCase(), protocol: req.headers['x-forwarded-proto'] === undefined ? null : req.protocol };
}

/**
 * True when `origin` is the listener's own for this request: its host is the request's `Host`
 * (the scheme is not compared: a TLS proxy in front), or the host and scheme a trusted proxy
 * forwarded, or it is one of the configured origins.
 */
function isOwnOrigin(origin: string, host: string | undefined, forwarded: ForwardedTarget | null, configured: ReadonlySet<string>): boolean {
  const own = originOf(origin);
  if (!own) return false;
  if (configured.has(own)) return true;
  const u = new URL(own);
  if (host !== undefined && u.host === host.trim().toLowerCase()) return true;
  if (!forwarded) return false;
  return originOf(`${forwarded.protocol ?? u.protocol.slice(0, -1)}://${forwarded.host}`) === own;
}

/**
 * Guards a listener that browsers reach (the console, the kind panel) against other web pages
 * (issue 18, finding 2; issue 33), for every route registered after it:
 * - DNS rebinding: a request whose `Host` (or the host a trusted proxy forwarded) is not one of
 *   the listener's names is refused (421 `host_not_allowed`), so a page of
 *   `rebind.attacker.example` that resolves to 127.0.0.1 reads nothing.
 * - Cross-site writes: a POST/PUT/PATCH/DELETE whose `Origin` is not the listener's own
 *   ({@link isOwnOrigin}), or whose `Sec-Fetch-Site` is neither `same-origin` nor `none`, is
 *   refused (403 `cross_site_request_refused`); requests with neither header (curl, scripts) pass.
 * - A write proven same-origin (its `Origin` is the listener's own, or `Sec-Fetch-Site:
 *   same-origin`) passes: a page served by the listener posts a multipart form as any client of
 *   the seeds does (Lens' create-cluster wizard), with no header of ours.
 * - Any other browser write (`Sec-Fetch-Site: none`, a navigation without `Origin`) with a body an
 *   HTML form can send (urlencoded, multipart, text/plain) needs the {@link REQUEST_HEADER} header
 *   (403 `request_header_required`).
 * Errors are thrown, so each API renders them in its own shape.
 */
export function installBrowserGuard(app: FastifyInstance, opts: BrowserGuardOptions = {}): void {
  const origins = new Set((opts.origins ?? []).map((o) => originOf(o)).filter((o): o is string => o !== null));
  const extra = new Set([...(opts.hosts ?? []).map((h) => hostName(h)), ...[...origins].map((o) => hostName(new URL(o).host))].filter(Boolean));
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
    if (host !== undefined && !allowed(hostName(host))) throw new AppError('host_not_allowed');
    const forwarded = forwardedTarget(req);
    if (forwarded && !allowed(hostName(forwarded.host))) throw new AppError('host_not_allowed');
    if (!UNSAFE.has(req.method)) return;
    const site = req.headers['sec-fetch-site'];
    if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') throw new AppError('cross_site_request_refused');
    const origin = req.headers.origin;
    if (typeof origin === 'string' && !isOwnOrigin(origin, host, forwarded, origins)) throw new AppError('cross_site_request_refused');
    // Proven same-origin: the Origin checked above, or the browser's own word.
    if (typeof origin === 'string' || site === 'same-origin') return;
    const mode = req.headers['sec-fetch-mode'];
    const fromBrowser = typeof site === 'string' || mode === 'navigate' || mode === 'nested-navigate';
    if (!fromBrowser || req.headers[REQUEST_HEADER] !== undefined) return;
    const type = String(req.headers['content-type'] ?? '').toLowerCase();
    if (mode === 'navigate' || mode === 'nested-navigate' || FORM_TYPES.some((t) => type.startsWith(t))) throw new AppError('request_header_required');
  });
}
