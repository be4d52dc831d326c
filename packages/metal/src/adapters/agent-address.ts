import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { AppError } from '@ironlens/core';

/** Cloud metadata services by name: never a storage agent. */
const METADATA_HOSTS = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal', 'metadata.azure.internal']);
/** Metadata services at addresses outside the link-local ranges (Alibaba, AWS over IPv6). */
const METADATA_ADDRESSES = new Set(['100.100.100.200', 'fd00:ec2::254']);

/** The IPv4 address inside an IPv4-mapped IPv6 one (`::ffff:169.254.0.1`, `::ffff:a9fe:1`), or null. */
function ipv4MappedOf(a: string): string | null {
  const dotted = a.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) return dotted[1];
  const hex = a.match(/^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/);
  if (!hex) return null;
  const hi = Number.parseInt(hex[1], 16);
  const lo = Number.parseInt(hex[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** 169.254.0.0/16 and fe80::/10 (also written as IPv4-mapped IPv6), or a metadata address. */
export function isLinkLocalOrMetadata(address: string): boolean {
  const a = address.toLowerCase().replace(/^\[|\]$/g, '');
  if (METADATA_ADDRESSES.has(a)) return true;
  const v4 = ipv4MappedOf(a) ?? a;
  if (isIP(v4) === 4) return v4.startsWith('169.254.') || METADATA_ADDRESSES.has(v4);
  if (isIP(a) === 6) return /^fe[89ab][0-9a-f]:/.test(a);
  return false;
}

export type Resolver = (host: string) => Promise<string[]>;

export const dnsResolver: Resolver = async (host) => (await lookup(host, { all: true })).map((r) => r.address);

const forbidden = (host: string, why: string) =>
  new AppError('agent_address_forbidden', `agent address ${host} is ${why}; set IPXE_CP_AGENT_ALLOW_LINK_LOCAL=true to allow it`);

/**
 * The `lookup` of every connection to an agent (issue 18, finding 7): the name is resolved with
 * `resolve`, and the connection fails with 400 `agent_address_forbidden`, before any packet, when
 * one of its addresses is link-local or a metadata address. The socket connects to an address of
 * that same answer, so a name that passed {@link checkAgentAddress} and then resolves elsewhere
 * (DNS rebinding) is still refused. Honours `family` and `all` as `dns.lookup` does.
 */
export function guardedAgentLookup(resolve: Resolver = dnsResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const bad = addresses.find(isLinkLocalOrMetadata);
        if (bad) return callback(forbidden(hostname, `resolves to ${bad}, link-local or a metadata service`), '', 0);
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
        const usable = addresses.map((address) => ({ address, family: isIP(address) })).filter((a) => a.family !== 0 && (family !== 4 && family !== 6 ? true : a.family === family));
        if (usable.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        if (options.all) return callback(null, usable);
        callback(null, usable[0].address, usable[0].family);
      },
      (e: NodeJS.ErrnoException) => callback(e, '', 0),
    );
  };
}

/**
 * Refuses a base URL whose host is link-local, a cloud metadata service, or a name that
 * resolves to one (400 `agent_address_forbidden`), unless `IPXE_CP_AGENT_ALLOW_LINK_LOCAL`
 * allows it. A name that does not resolve is left to the request, which then fails as
 * unreachable. Checked again at the connection itself ({@link guardedAgentLookup}).
 */
export async function checkAgentAddress(baseUrl: string, resolve: Resolver = dnsResolver): Promise<void> {
  const host = new URL(baseUrl).hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const refuse = (why: string) => forbidden(host, why);
  if (METADATA_HOSTS.has(host)) throw refuse('a cloud metadata service');
  if (isIP(host)) {
    if (isLinkLocalOrMetadata(host)) throw refuse('link-local or a metadata service');
    return;
  }
  const addresses = await resolve(host).catch(() => [] as string[]);
  const bad = addresses.find(isLinkLocalOrMetadata);
  if (bad) throw refuse(`resolves to ${bad}, link-local or a metadata service`);
}
