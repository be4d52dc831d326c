import { isIP } from 'node:net';
import type { Env } from '../config/env';

/**
 * Which hops of `X-Forwarded-For` a listener believes (issue 29, finding 5): the proxies' own
 * addresses and CIDRs (Fastify's `trustProxy` list: the client is the first address, from the
 * right, that is not one of them), or a number of hops in front of the listener. `false`: the
 * header is ignored, the client is the socket's peer.
 */
export type TrustProxy = false | string[] | number;

/** Names proxy-addr (Fastify's) knows for address ranges. */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address or CIDR a proxy may have, or one of {@link RANGE_NAMES}; else why not. */
function entryProblem(entry: string): string | null {
  if (RANGE_NAMES.has(entry)) return null;
  const [address, prefix, ...more] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || more.length) return 'not an IP address, a CIDR, or loopback / linklocal / uniquelocal';
  if (prefix === undefined) return null;
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return `the prefix length must be 0-${max}`;
  return null;
}

export interface TrustedProxies {
  trustProxy: TrustProxy;
  /** What to tell the operator at start (a deprecated setting), or null. */
  note: string | null;
}

/**
 * `IRONLENS_TRUSTED_PROXIES`: the addresses (or CIDRs, or `loopback`, `linklocal`,
 * `uniquelocal`) of the reverse proxies in front of the listeners, comma-separated, or a number
 * of hops (`1`: the one proxy in front; whoever it is). Only `X-Forwarded-For` entries those
 * proxies added are believed, so a client that writes its own header (a new address per
 * request, or an admin's address) is still itself to the failed-auth limiter, the registration
 * limiter, the host-report refusal tally and the operations log.
 *
 * `IRONLENS_TRUST_PROXY=1` (deprecated; it used to trust every hop, so any client could choose its
 * address) now means `loopback`: a proxy on the same machine, the one deployment where every hop
 * that reaches the listener is that proxy. Default: none (the header is ignored).
 */
export function trustedProxiesFromEnv(env: Env): TrustedProxies {
  const list = env.IRONLENS_TRUSTED_PROXIES?.trim();
  const legacy = env.IRONLENS_TRUST_PROXY?.trim();
  if (list) {
    if (/^\d+$/.test(list)) {
      const hops = Number(list);
      if (hops < 1 || hops > 16) throw new Error(`IRONLENS_TRUSTED_PROXIES: a number of hops must be 1-16, not ${list}`);
      return { trustProxy: hops, note: legacy ? 'IRONLENS_TRUST_PROXY is ignored: IRONLENS_TRUSTED_PROXIES is set' : null };
    }
    const entries = list
      .split(',')
      .map((e) => e.trim().toLowerCase())
      .filter(Boolean);
    for (const e of entries) {
      const problem = entryProblem(e);
      if (problem) throw new Error(`IRONLENS_TRUSTED_PROXIES: ${JSON.stringify(e.slice(0, 60))}: ${problem}`);
    }
    return { trustProxy: entries, note: legacy ? 'IRONLENS_TRUST_PROXY is ignored: IRONLENS_TRUSTED_PROXIES is set' : null };
  }
  if (legacy === '1' || legacy === 'true') {
    return { trustProxy: ['loopback'], note: 'IRONLENS_TRUST_PROXY=1 is deprecated and now trusts X-Forwarded-For from a proxy on this machine only (loopback); name your proxies in IRONLENS_TRUSTED_PROXIES' };
  }
  return { trustProxy: false, note: null };
}
