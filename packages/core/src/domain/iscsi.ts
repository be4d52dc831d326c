/**
 * iSCSI names (RFC 3720 `iqn.` form), as every ironlens package reads them: the storage agent
 * checks what a request asks it to create, the control plane what an agent answers before it
 * is stored or reaches iPXE's `/boot-vars`. One grammar, so the two can never disagree.
 *
 * `iqn.YYYY-MM.reverse.domain` is a base; a full IQN is a base, optionally `:` and a suffix of
 * lower-case letters, digits, `.`, `:` and `-` (not starting or ending in `.`, `:`, `-`). No
 * upper case, space, `$`, `;` or line break is ever accepted.
 */

const BASE_IQN = /^iqn\.\d{4}-(0[1-9]|1[0-2])\.[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
const IQN_SUFFIX = /^[a-z0-9]([a-z0-9.:-]*[a-z0-9])?$/;

/** RFC 3720: an iSCSI name is at most 223 bytes. */
export const IQN_MAX_LENGTH = 223;

/** True for `iqn.YYYY-MM.reverse.domain` without a suffix (what a base IQN setting must be). */
export function isBaseIqn(value: unknown): value is string {
  return typeof value === 'string' && value.length <= IQN_MAX_LENGTH && BASE_IQN.test(value);
}

/** True for `iqn.YYYY-MM.reverse.domain[:suffix]`, lower-case, `[a-z0-9.:-]` only. */
export function isIqn(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > IQN_MAX_LENGTH) return false;
  const colon = value.indexOf(':');
  if (colon === -1) return BASE_IQN.test(value);
  return BASE_IQN.test(value.slice(0, colon)) && IQN_SUFFIX.test(value.slice(colon + 1));
}
