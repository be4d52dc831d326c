import { promises as dns, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/**
 * Link-local and cloud-metadata addresses, and the connection-time guard against them (issue 18,
 * finding 7): a host name may resolve to such an address, and differently at connection time than
 * at any earlier check (DNS rebinding), so connections resolve through {@link guardedLookup}.
 * Used for the clusters' API servers (clusters) and the storage agents (metal), each with its own error.
 */

/** Resolves every address of a host name. Default: the system resolver (`dns.lookup`, all, verbatim). */
export type HostResolver = (host: string) => Promise<LookupAddress[]>;

export const systemResolver: HostResolver = (host) => dns.lookup(host, { all: true, verbatim: true });

/** Metadata services at addresses outside the link-local ranges (AWS over IPv6, Alibaba). */
const METADATA_V4 = new Set(['100.100.100.200']);

/** The eight 16-bit groups of an IPv6 address (an embedded dotted IPv4 tail allowed), or null. */
function ipv6Groups(a: string): number[] | null {
  let s = a;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    if (isIP(v4[1]) !== 4) return null;
    const [b0, b1, b2, b3] = v4[1].split('.').map(Number);
    s = `${s.slice(0, -v4[1].length)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const part = (x: string) => (x === '' ? [] : x.split(':').map((g) => Number.parseInt(g, 16)));
  const head = part(halves[0]);
  const tail = halves.length === 2 ? part(halves[1]) : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...new Array(Math.max(fill, 0)).fill(0), ...tail];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

const v4LinkLocal = (a: string) => a.startsWith('169.254.') || METADATA_V4.has(a);
const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * True for a link-local or cloud-metadata address: 169.254.0.0/16, fe80::/10,
 * `fd00:ec2::254`, `100.100.100.200`, and the IPv4 ones written inside IPv6 (IPv4-mapped
 * `::ffff:a9fe:a9fe`, IPv4-compatible `::169.254.169.254`, NAT64 `64:ff9b::169.254.169.254`).
 * A zone (`%eth0`) and brackets are ignored. Anything that is not an IP address is false.
 */
export function isLinkLocalAddress(address: string): boolean {
  const a = address.toLowerCase().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const kind = isIP(a);
  if (kind === 4) return v4LinkLocal(a);
  if (kind !== 6) return false;
  const g = ipv6Groups(a);
  if (!g) return false;
  if ((g[0] & 0xffc0) === 0xfe80) return true;
  if (g.join(':') === [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254].join(':')) return true;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return v4LinkLocal(v4Of(g[6], g[7]));
  if (zero(0, 6)) return v4LinkLocal(v4Of(g[6], g[7]));
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4LinkLocal(v4Of(g[6], g[7]));
  return false;
}

/** Cloud metadata services by name: never a storage agent, a cluster or a BMC. */
export const METADATA_HOSTS: ReadonlySet<string> = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal', 'metadata.azure.internal']);

/**
 * Why `host` (a name or an address, as a URL or a form gives it) may not be reached without
 * an explicit allowance, judged without resolving it: `a cloud metadata service` (by name),
 * `link-local or a metadata service` (by address), or null. A name that resolves to such an
 * address is refused at the connection ({@link guardedLookup}).
 */
export function forbiddenHostReason(host: string): string | null {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (METADATA_HOSTS.has(h)) return 'a cloud metadata service';
  if (isLinkLocalAddress(h)) return 'link-local or a metadata service';
  return null;
}

/**
 * A `lookup` for `net.connect` / an HTTP(S) agent that resolves with `resolve` and fails with
 * `refuse(host, address)` for every name with a link-local or metadata address among its answers,
 * before any packet is sent. The socket connects to an address of that same answer. Honours
 * `family` and `all` as `dns.lookup` does.
 */
export function guardedLookup(resolve: HostResolver, refuse: (host: string, address: string) => Error): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (answers) => {
        const bad = answers.find((a) => isLinkLocalAddress(a.address));
        if (bad) return callback(refuse(hostname, bad.address), '', 0);
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
        const usable = family === 4 || family === 6 ? answers.filter((a) => a.family === family) : answers;
        if (usable.length === 0) {
          const e = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
          return callback(e, '', 0);
        }
        if (options.all) return callback(null, usable);
        callback(null, usable[0].address, usable[0].family);
      },
      (e: NodeJS.ErrnoException) => callback(e, '', 0),
    );
  };
}
