import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { AppError, forbiddenHostReason, guardedLookup, isLinkLocalAddress } from '@ironlens/core';

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
  const answers = async (host: string) => (await resolve(host)).map((address) => ({ address, family: isIP(address) })).filter((a) => a.family !== 0);
  return guardedLookup(answers, (host, address) => forbidden(host, `resolves to ${address}, link-local or a metadata service`));
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
  const why = forbiddenHostReason(host);
  if (why) throw refuse(why);
  if (isIP(host)) return;
  const addresses = await resolve(host).catch(() => [] as string[]);
  const bad = addresses.find(isLinkLocalAddress);
  if (bad) throw refuse(`resolves to ${bad}, link-local or a metadata service`);
}
