import { randomInt } from 'node:crypto';

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

/**
 * iSCSI CHAP credentials (issue 13), as ironlens makes them: one account per worker, the user
 * `il-<worker id>`, the secret 16 random letters and digits (many initiators, Windows' among
 * them, take only 12–16 characters; iPXE and tgtd take them all). Both grammars keep every
 * character a shell, an iPXE `set` line or a targetcli `key=value` argument could read as
 * syntax out: no space, `$`, `=`, `;`, quote or line break.
 */
const CHAP_USER = /^[a-z0-9]([a-z0-9._:-]{0,126}[a-z0-9])?$/;
const CHAP_SECRET = /^[A-Za-z0-9]{12,16}$/;
const CHAP_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** True for a CHAP user name: lower-case letters, digits, `.`, `_`, `:`, `-`; at most 128. */
export function isChapUser(value: unknown): value is string {
  return typeof value === 'string' && CHAP_USER.test(value);
}

/** True for a CHAP secret: 12 to 16 letters and digits. */
export function isChapSecret(value: unknown): value is string {
  return typeof value === 'string' && CHAP_SECRET.test(value);
}

/** A new CHAP secret: 16 characters drawn uniformly from letters and digits (about 95 bits). */
export function newChapSecret(): string {
  let out = '';
  for (let i = 0; i < 16; i++) out += CHAP_ALPHABET[randomInt(CHAP_ALPHABET.length)];
  return out;
}

/** One CHAP account: who logs in, and the secret that proves it. */
export interface ChapCredential {
  user: string;
  password: string;
}
