import { AppError, isAppError } from '@ironlens/core';
import type { Bmc, BmcConnector } from '../adapters/bmc';
import type { BmcCredentials } from './power';

/** Controls no BMC text keeps: C0, DEL, C1, the line and paragraph separators, bidi overrides and marks. */
const CONTROLS = /[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;
/** An IPv4 address, with a port: whatever name the BMC was given, ipmitool and Node may print the address it resolved to. */
const IPV4 = /(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?![\d.])/g;
/** What stands for the BMC's address or user in a text. */
export const BMC_MASK = '[bmc]';

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `word` where it stands alone (not inside a longer name or number), in any case. */
function standalone(word: string): RegExp {
  return new RegExp(`(?<![A-Za-z0-9_.-])${escapeRegex(word)}(?![A-Za-z0-9_-]|\\.[A-Za-z0-9])`, 'gi');
}

/** The host (without IPv6 brackets) of a BMC's credentials. */
function hostOf(c: BmcCredentials): string {
  if (c.driver === 'ipmi') return c.host;
  try {
    return new URL(c.url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return '';
  }
}

/**
 * A BMC's text (an error ipmitool printed, a Redfish message, a socket error) as ironlens may
 * store or show it: error texts reach viewers (`last_power.detail`, `GET …/power`, the
 * operations log), who may not read a BMC's address or user (secrets' metadata). The password,
 * the user name, the host (with its port, bracketed or not, any IPv4 address) become `[bmc]`;
 * C0/C1 controls, line separators and bidi overrides become spaces; the result is clipped.
 */
export function cleanBmcText(text: string, c: BmcCredentials, max = 300): string {
  let t = String(text);
  if (c.password) t = t.split(c.password).join('***');
  const host = hostOf(c);
  if (host) {
    const h = escapeRegex(host);
    t = t.replace(new RegExp(`\\[${h}\\]|(?<![A-Za-z0-9_.:-])${h}(?![A-Za-z0-9_-]|\\.[A-Za-z0-9])`, 'gi'), BMC_MASK);
  }
  // With the port the address was written with, whichever it is.
  t = t.replace(IPV4, BMC_MASK).replace(/\[bmc\]:\d{1,5}(?!\d)/g, BMC_MASK);
  if (c.username) t = t.replace(standalone(c.username), BMC_MASK);
  t = t.replace(CONTROLS, ' ').replace(/ {2,}/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max)}…` : t;
}

/** `err` with its message cleaned ({@link cleanBmcText}); anything but a catalog error becomes `bmc_action_failed`. */
export function cleanBmcError(err: unknown, c: BmcCredentials): AppError {
  if (isAppError(err)) return new AppError(err.code, cleanBmcText(err.message, c), err.extra, err.status);
  return new AppError('bmc_action_failed', `the BMC call failed: ${cleanBmcText((err as Error)?.message ?? String(err), c)}`, { code: 'bmc_action_failed' });
}

/**
 * The one place BMC texts are cleaned: every BMC `connect` opens answers its errors through
 * {@link cleanBmcError}, whatever its driver (wired around the connector, real or fake).
 */
export function cleaningBmcErrors(connect: BmcConnector): BmcConnector {
  return (c) => {
    const bmc = connect(c);
    const cleaned = async <T>(call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (err) {
        throw cleanBmcError(err, c);
      }
    };
    const out: Bmc = {
      powerState: (signal) => cleaned(() => bmc.powerState(signal)),
      power: (action, signal) => cleaned(() => bmc.power(action, signal)),
      setOneTimeNetworkBoot: (signal) => cleaned(() => bmc.setOneTimeNetworkBoot(signal)),
    };
    return out;
  };
}
