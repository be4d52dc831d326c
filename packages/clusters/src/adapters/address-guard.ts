import type { LookupFunction } from 'node:net';
import { AppError, guardedLookup as guarded, type HostResolver, systemResolver } from '@ironlens/core';

export { type HostResolver, isLinkLocalAddress, systemResolver } from '@ironlens/core';

/**
 * The connection-time half of the link-local / metadata refusal (issue 18, finding 7).
 *
 * The kubeconfig check (`kubeconfig.ts`) refuses a server written as a link-local or
 * metadata *literal* or a known metadata *name*; a host name that resolves to such an
 * address is only known when the connection is made, and may resolve differently then than
 * at any earlier check (DNS rebinding). So every connection ironlens opens to a cluster's API
 * server resolves through `guardedLookup`: all addresses of the name are resolved, and the
 * connection fails with 422 `cluster_address_forbidden` before any packet is sent when one of
 * them is link-local or a metadata address. The address connected to is one of those checked
 * (the socket uses the answer of this lookup, not a second resolution). A literal address is
 * never looked up by Node; those are refused by the kubeconfig check.
 */

/** The error a refused connection fails with (the request never leaves this host). */
export function addressForbidden(host: string, address: string): AppError {
  return new AppError(
    'cluster_address_forbidden',
    `the cluster's server ${host} resolves to ${address}, a link-local or metadata address; the connection was not made (IRONLENS_CLUSTER_ALLOW_LINK_LOCAL=1 allows it)`,
  );
}

/**
 * A `lookup` for `net.connect` / an HTTP(S) agent that resolves with `resolve` and refuses
 * every name with a link-local or metadata address among its answers (see the module comment).
 */
export function guardedLookup(resolve: HostResolver = systemResolver): LookupFunction {
  return guarded(resolve, addressForbidden);
}
