import { AppError, replaceUnsafeText } from '@ironlens/core';
import type { BmcCredentials, PowerAction, PowerState } from '../domain/power';

/**
 * A machine's baseboard management controller, whatever it speaks (issue 21). One interface
 * behind Redfish ({@link RedfishBmc}) and IPMI ({@link IpmitoolBmc}). Every method throws an
 * `AppError` of the catalog's power block: `bmc_unreachable`, `bmc_auth_failed`,
 * `bmc_action_failed` (with the BMC's own message, clipped) or `bmc_timeout`.
 */
export interface Bmc {
  /** The power state the BMC reports now. */
  powerState(signal?: AbortSignal): Promise<PowerState>;
  /** Does `action`; `cycle` powers an off machine on. Resolves when the BMC accepted it. */
  power(action: PowerAction, signal?: AbortSignal): Promise<void>;
  /** The next boot (once) from the network (PXE), whatever the persistent boot order says. */
  setOneTimeNetworkBoot(signal?: AbortSignal): Promise<void>;
}

/** Opens a {@link Bmc} for a device's stored credentials. */
export type BmcConnector = (c: BmcCredentials) => Bmc;

/** A BMC error of the catalog, with the code in the answer (`{"detail", "code"}`). */
export function bmcError(code: 'bmc_unreachable' | 'bmc_auth_failed' | 'bmc_action_failed' | 'bmc_timeout', message: string): AppError {
  return new AppError(code, message, { code });
}

/**
 * Text from a BMC is hostile: control and bidirectional formatting characters out (C0, C1,
 * U+2028/2029, U+202A–202E, U+2066–2069: core's one definition) before it reaches an error, the
 * operations log or a terminal; clipped, never echoed whole.
 */
export function bmcText(s: unknown, max = 200): string {
  const t = replaceUnsafeText(String(s ?? ''))
    .replace(/ {2,}/g, ' ')
    .trim();
  return t.length > max ? `${t.slice(0, max)}…` : t;
}
