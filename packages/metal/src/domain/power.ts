import { AppError, echo, forbiddenHostReason } from '@ironlens/core';
import type { BmcView, LastPower, PowerAction, PowerState } from '../api/schemas';

/** Power control of a device through its BMC (issue 21). */
export type BmcDriver = 'redfish' | 'ipmi';
export type { BmcView, LastPower, PowerAction, PowerState };
export type BootResult = NonNullable<LastPower['result']>;

export const POWER_ACTIONS: readonly PowerAction[] = ['on', 'off', 'cycle', 'soft-off'];

/** What a power-on is: an action after which the machine runs (the stagger spaces these). */
export const powersOn = (a: PowerAction): boolean => a === 'on' || a === 'cycle';

/** A BMC as ironlens keeps it (the password opened from its seal only to make a call). */
export type BmcCredentials =
  | { driver: 'redfish'; url: string; username: string; password: string; verifyTls: boolean }
  | { driver: 'ipmi'; host: string; port: number; username: string; password: string; cipherSuite: number };

/** The BMC fields of a request (`PUT /devices/{mac}/bmc`, `POST /devices`, the import). */
export interface BmcInput {
  driver?: unknown;
  url?: unknown;
  verify_tls?: unknown;
  host?: unknown;
  port?: unknown;
  cipher_suite?: unknown;
  username?: unknown;
  password?: unknown;
}

const invalid = (why: string) => new AppError('bmc_invalid', `invalid BMC settings: ${why}`, { code: 'bmc_invalid' });

/** Printable ASCII without spaces at the ends; what reaches a command line or a header. */
const PRINTABLE = /^[\x20-\x7e]+$/;
/** A host name or an IPv4/IPv6 address; never starting with `-` (it is an argument of ipmitool). */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?|[0-9a-fA-F:]*:[0-9a-fA-F:.]+)$/;

export function checkBmcHost(host: unknown): string {
  if (typeof host !== 'string' || host.length === 0 || host.length > 253 || !HOST.test(host)) throw invalid(`host must be a host name or an IP address, not ${echo(host)}`);
  return host;
}

function checkUsername(v: unknown, max: number): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > max || !PRINTABLE.test(v) || v.trim() !== v) throw invalid(`username must be 1-${max} printable characters`);
  return v;
}

function checkPassword(v: unknown, max: number): string {
  // Never echoed: the message names the rule, not the value.
  if (typeof v !== 'string' || v.length === 0 || v.length > max || !PRINTABLE.test(v)) throw invalid(`password must be 1-${max} printable ASCII characters`);
  return v;
}

/** A Redfish system URL: http(s), no credentials in it, a path under `/redfish/v1/`. */
export function checkRedfishUrl(v: unknown): string {
  if (typeof v !== 'string' || v.length > 2048 || !PRINTABLE.test(v) || /\s/.test(v)) throw invalid(`url must be the system's Redfish URL, not ${echo(v)}`);
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalid(`url is not a URL: ${echo(v)}`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw invalid('url must start with https:// (or http://)');
  if (u.username || u.password) throw invalid('url must not carry credentials (give username and password)');
  if (u.search || u.hash) throw invalid('url must not have a query or a fragment');
  if (!/^\/redfish\/v1\/Systems\/[^/]+\/?$/.test(u.pathname)) throw invalid(`url must name one system, /redfish/v1/Systems/<id>, not ${echo(u.pathname)}`);
  checkBmcHost(u.hostname.replace(/^\[|\]$/g, ''));
  return `${u.origin}${u.pathname.replace(/\/$/, '')}`;
}

/** The host a BMC is reached at: the Redfish URL's host, or the IPMI host. */
export function bmcHostOf(c: BmcCredentials): string {
  return c.driver === 'redfish' ? new URL(c.url).hostname.replace(/^\[|\]$/g, '') : c.host;
}

/**
 * The address policy of BMCs (issue 29, finding 3), the agents' own: a BMC at a link-local or
 * cloud-metadata address (169.254.169.254, fe80::/10, `metadata.google.internal`, …) is refused
 * with 400 `bmc_address_forbidden` unless `IRONLENS_BMC_ALLOW_LINK_LOCAL` allows it (a Redfish
 * host interface on 169.254.0.0/16 is one). A name is judged here by itself; what it resolves
 * to is checked at each connection (the adapters' guarded lookup).
 */
export function checkBmcAddress(c: BmcCredentials, allowLinkLocal: boolean): BmcCredentials {
  if (allowLinkLocal) return c;
  const host = bmcHostOf(c);
  const why = forbiddenHostReason(host);
  if (why) throw bmcAddressForbidden(host, why);
  return c;
}

export const bmcAddressForbidden = (host: string, why: string) =>
  new AppError('bmc_address_forbidden', `BMC address ${echo(host)} is ${why}; set IRONLENS_BMC_ALLOW_LINK_LOCAL=true to allow it`, { code: 'bmc_address_forbidden' });

/**
 * Checks a BMC as it enters (the API, the import) and returns what to keep. `keepPassword`:
 * the password stored before, used when the request gives none (a form that never shows it).
 * `allowLinkLocal`: `IRONLENS_BMC_ALLOW_LINK_LOCAL` ({@link checkBmcAddress}); default is `false`.
 */
export function checkBmcInput(input: BmcInput | null | undefined, keepPassword?: { driver: BmcDriver; password: string } | null, opts: { allowNoPassword?: boolean; allowLinkLocal?: boolean } = {}): BmcCredentials {
  return checkBmcAddress(checkBmcFields(input, keepPassword, opts), opts.allowLinkLocal === true);
}

function checkBmcFields(input: BmcInput | null | undefined, keepPassword: { driver: BmcDriver; password: string } | null | undefined, opts: { allowNoPassword?: boolean }): BmcCredentials {
  if (!input || typeof input !== 'object' || Array.isArray(input)) throw invalid('an object with driver, username and password expected');
  const driver = input.driver;
  if (driver !== 'redfish' && driver !== 'ipmi') throw invalid(`driver must be redfish or ipmi, not ${echo(driver ?? null)}`);
  const max = driver === 'ipmi' ? 20 : 256;
  const kept = keepPassword && keepPassword.driver === driver ? keepPassword.password : undefined;
  const password = input.password === undefined || input.password === null ? kept : input.password;
  if (password === undefined && !opts.allowNoPassword) throw invalid('password is required');
  // An import without passwords keeps the BMC with none (password_set: false) until a PUT gives one.
  const pw = (password === undefined ? '' : password) as unknown;
  const checkPw = (v: unknown, n: number) => (v === '' && opts.allowNoPassword ? '' : checkPassword(v, n));
  if (driver === 'redfish') {
    for (const k of ['host', 'port', 'cipher_suite'] as const) if (input[k] !== undefined && input[k] !== null) throw invalid(`${k} is an ipmi setting; redfish takes url`);
    if (input.verify_tls !== undefined && input.verify_tls !== null && typeof input.verify_tls !== 'boolean') throw invalid('verify_tls must be true or false');
    return { driver, url: checkRedfishUrl(input.url), username: checkUsername(input.username, 256), password: checkPw(pw, max), verifyTls: input.verify_tls !== false };
  }
  for (const k of ['url', 'verify_tls'] as const) if (input[k] !== undefined && input[k] !== null) throw invalid(`${k} is a redfish setting; ipmi takes host and port`);
  const port = input.port ?? 623;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) throw invalid(`port must be 1-65535, not ${echo(port)}`);
  const cipher = input.cipher_suite ?? 3;
  if (typeof cipher !== 'number' || !Number.isInteger(cipher) || cipher < 0 || cipher > 17) throw invalid(`cipher_suite must be an IPMI cipher suite id (0-17), not ${echo(cipher)}`);
  return { driver, host: checkBmcHost(input.host), port, cipherSuite: cipher, username: checkUsername(input.username, 16), password: checkPw(pw, max) };
}

/** The serialisation key of a BMC: its host (and port), so calls to one BMC go one at a time. */
export function bmcHostKey(c: BmcCredentials): string {
  if (c.driver === 'ipmi') return `ipmi:${c.host.toLowerCase()}:${c.port}`;
  return `redfish:${new URL(c.url).host.toLowerCase()}`;
}

export function bmcView(c: BmcCredentials, updatedAt: string): BmcView {
  if (c.driver === 'redfish') return { driver: 'redfish', url: c.url, verify_tls: c.verifyTls, username: c.username, password_set: c.password.length > 0, updated_at: updatedAt };
  return { driver: 'ipmi', host: c.host, port: c.port, cipher_suite: c.cipherSuite, username: c.username, password_set: c.password.length > 0, updated_at: updatedAt };
}
