import { AppError } from '@ironlens/core';

/** Most hosts one request may name after expansion (host-keys, preflight, start). */
export const MAX_EXPANDED_HOSTS = 256;

/** One exact target after expansion. */
export interface HostPort {
  host: string;
  port: number;
}

const OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);
/** RFC 1123 host name: labels of letters, digits and inner hyphens, at most 253 characters. */
const HOSTNAME = /^(?=.{1,253}$)[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

export function isIpv4(text: string): boolean {
  return IPV4.test(text);
}

/** True for a literal host name (RFC 1123) that is not a dotted quad. */
export function isHostname(text: string): boolean {
  return HOSTNAME.test(text) && !/^[\d.]+$/.test(text);
}

/** True for one exact, allowed host: an IPv4 address or a host name that the checks of `expandHostSpec` accept. Used again wherever a host is rendered. */
export function isExactHost(text: string): boolean {
  return (isIpv4(text) && ipv4Problem(text) === null) || (isHostname(text) && !isNumericLookingName(text));
}

/**
 * Why an IPv4 address is no host to bootstrap, or null: unspecified (0.0.0.0/8), broadcast
 * (255.255.255.255), multicast (224.0.0.0/4, and the reserved 240.0.0.0/4 above it) or
 * link-local (169.254.0.0/16, where cloud metadata services answer). Loopback stays allowed.
 */
export function ipv4Problem(ip: string): string | null {
  const [a, b] = ip.split('.').map(Number);
  if (a === 0) return 'an unspecified address (0.0.0.0/8)';
  if (ip === '255.255.255.255') return 'the broadcast address';
  if (a >= 224 && a <= 239) return 'a multicast address (224.0.0.0/4)';
  if (a >= 240) return 'a reserved address (240.0.0.0/4)';
  if (a === 169 && b === 254) return 'a link-local address (169.254.0.0/16, cloud metadata)';
  return null;
}

/**
 * A host name that resolvers may read as a number (`0x7f000001`, `2130706433`, `017700000001`,
 * a last label of digits): refused, because it names an address the address checks never saw.
 */
export function isNumericLookingName(name: string): boolean {
  const labels = name.toLowerCase().split('.');
  const numeric = (l: string) => /^(0x[0-9a-f]*|[0-9]+)$/.test(l);
  return labels.every(numeric) || numeric(labels[labels.length - 1]);
}

function notAllowed(spec: string, why: string): AppError {
  return new AppError('bootstrap_host_not_allowed', `host ${JSON.stringify(spec)} is not allowed: ${why}`);
}

function toInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

function toIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function invalid(spec: string, why: string): AppError {
  return new AppError('bootstrap_host_invalid', `invalid host ${JSON.stringify(spec)}: ${why}`);
}

/**
 * Expands one host spec: `10.0.0.5`; a comma list of specs; `10.0.0.10-12` (the last octet
 * varies); a full range `10.0.0.250-10.0.1.5`; a literal host name. Returns hosts in order.
 * Throws `bootstrap_host_invalid` (422) for anything else, `bootstrap_host_not_allowed` (422) for
 * an unspecified, broadcast, multicast or link-local address or a numeric-looking name (see
 * `ipv4Problem`, `isNumericLookingName`), `bootstrap_too_many_hosts` when one
 * spec alone exceeds the limit (so a `0.0.0.0-255.255.255.255` is refused before it is built).
 */
export function expandHostSpec(spec: string, limit = MAX_EXPANDED_HOSTS): string[] {
  const out: string[] = [];
  for (const raw of spec.split(',')) {
    const part = raw.trim();
    if (part === '') throw invalid(spec, 'empty entry');
    const dash = part.indexOf('-');
    if (isIpv4(part)) {
      const problem = ipv4Problem(part);
      if (problem) throw notAllowed(part, problem);
      out.push(part);
    } else if (dash > 0 && isIpv4(part.slice(0, dash))) {
      const start = part.slice(0, dash);
      const end = part.slice(dash + 1);
      let from: number;
      let to: number;
      if (/^\d{1,3}$/.test(end)) {
        const last = Number(end);
        if (last > 255) throw invalid(spec, 'range end is not an octet');
        from = toInt(start);
        to = from - (from & 255) + last;
      } else if (isIpv4(end)) {
        from = toInt(start);
        to = toInt(end);
      } else {
        throw invalid(spec, 'range end must be an octet or an IPv4 address');
      }
      if (to < from) throw invalid(spec, 'range end comes before its start');
      if (to - from + 1 > limit) throw new AppError('bootstrap_too_many_hosts', `${part} names ${to - from + 1} hosts; at most ${limit} in all`);
      for (let n = from; n <= to; n++) {
        const ip = toIp(n);
        const problem = ipv4Problem(ip);
        if (problem) throw notAllowed(part, `${ip} is ${problem}`);
        out.push(ip);
      }
    } else if (isHostname(part)) {
      if (isNumericLookingName(part)) throw notAllowed(part, 'a numeric-looking host name (a resolver may read it as an address)');
      out.push(part.toLowerCase());
    } else {
      throw invalid(spec, 'not an IPv4 address, a range or a host name');
    }
    if (out.length > limit) throw new AppError('bootstrap_too_many_hosts', `more than ${limit} hosts in all`);
  }
  return out;
}

/**
 * Expands a list of `{host, port}` specs into exact targets, in input order, duplicates
 * (same host and port) removed. More than `limit` targets in all → `bootstrap_too_many_hosts`.
 */
export function expandTargets<T extends { host: string; port?: number }>(nodes: readonly T[], limit = MAX_EXPANDED_HOSTS): Array<HostPort & { node: T }> {
  const seen = new Set<string>();
  const out: Array<HostPort & { node: T }> = [];
  for (const node of nodes) {
    const port = node.port ?? 22;
    for (const host of expandHostSpec(node.host, limit)) {
      const key = `${host}:${port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ host, port, node });
      if (out.length > limit) throw new AppError('bootstrap_too_many_hosts', `more than ${limit} hosts in all`);
    }
  }
  return out;
}
