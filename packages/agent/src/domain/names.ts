import { AppError, type ChapCredential, echo, isChapSecret, isChapUser, isIqn } from '@ironlens/core';

/**
 * The naming rules of the agent: IQNs, sizes, backing file names. Everything a request
 * carries passes through here before it can reach a command line.
 */

/** The IQN grammar is the one the control plane reads agents' answers with (`@ironlens/core`). */
export { IQN_MAX_LENGTH, isBaseIqn, isIqn } from '@ironlens/core';

/** Refuses a malformed IQN (400 `iqn_invalid`) or one outside `baseIqn` (400 `iqn_base_mismatch`). Returns the suffix. */
export function checkIqn(iqn: unknown, baseIqn: string): string {
  if (!isIqn(iqn)) {
    throw new AppError('iqn_invalid', `invalid iqn ${echo(iqn)}: expected iqn.YYYY-MM.reverse.domain:suffix, lowercase letters, digits, '.', ':' and '-'`);
  }
  const prefix = `${baseIqn}:`;
  if (!iqn.startsWith(prefix) || iqn.length === prefix.length) {
    throw new AppError('iqn_base_mismatch', `iqn base mismatch: ${iqn} does not start with ${prefix}`);
  }
  return iqn.slice(prefix.length);
}

/**
 * The optional initiator of a new target: absent (`undefined`) means every initiator may
 * log in; otherwise it must be an IQN (lowercase, same rule as {@link isIqn}, any base),
 * or 400 `iqn_invalid`. An empty string is refused rather than read as "open".
 */
export function checkInitiator(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (!isIqn(value)) {
    throw new AppError('iqn_invalid', `invalid initiator ${echo(value)}: expected an IQN iqn.YYYY-MM.reverse.domain[:suffix], lowercase letters, digits, '.', ':' and '-'`);
  }
  return value;
}

/**
 * The optional CHAP account of a new target (`{"user": …, "password": …}`): only with an
 * initiator (a CHAP target open to every initiator would be a shared password), a user name
 * (`isChapUser`) and a secret of 12-16 letters and digits, or 400 `chap_invalid`. The error
 * names the user, never the secret.
 */
export function checkChap(value: unknown, initiator: string | undefined): ChapCredential | undefined {
  if (value === undefined || value === null) return undefined;
  const c = value as Record<string, unknown>;
  if (typeof value !== 'object' || Array.isArray(value) || !isChapUser(c.user) || !isChapSecret(c.password)) {
    const user = typeof value === 'object' && value !== null ? echo((value as Record<string, unknown>).user) : 'missing';
    throw new AppError('chap_invalid', `invalid chap (user ${user}): a user name (lowercase letters, digits, '.', '_', ':', '-') and a password of 12-16 letters and digits`);
  }
  if (initiator === undefined) throw new AppError('chap_invalid', 'chap needs an initiator: a CHAP target admits one initiator name');
  return { user: c.user, password: c.password };
}

/** The CHAP accounts a scan may bind again, by user (`POST /luns/scan {"chap": [{user, password}, …]}`). */
export function checkChapList(value: unknown): Map<string, ChapCredential> {
  const out = new Map<string, ChapCredential>();
  if (value === undefined || value === null) return out;
  if (!Array.isArray(value)) throw new AppError('chap_invalid', 'chap must be a list of {user, password}');
  for (const item of value) {
    const c = checkChap(item, '');
    if (c) out.set(c.user, c);
  }
  return out;
}

/** A backing file name: one path component, `[A-Za-z0-9._-]`, not hidden. */
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const FILE_NAME_MAX_LENGTH = 200;

/** The mark that makes a file in DISK_DIR a master image (seed 004 §15). */
export const MASTER_MARK = '_tpl_';

export function isMasterName(name: string): boolean {
  return name.includes(MASTER_MARK);
}

export function isPlainFileName(name: string): boolean {
  return FILE_NAME.test(name) && name.length <= FILE_NAME_MAX_LENGTH;
}

/** Disk images end in `.img`, CD images in `.iso` (either case): only those are exported by a scan. */
export function isDiskFileName(name: string): boolean {
  return /\.img$/i.test(name);
}

export function isIsoFileName(name: string): boolean {
  return /\.iso$/i.test(name);
}

/**
 * Checks a backing file name for a new disk: a plain name ending in `.img` that is not a
 * master. 400 `filename_invalid` otherwise.
 */
export function checkDiskFileName(name: unknown): string {
  if (typeof name !== 'string' || !isPlainFileName(name) || !isDiskFileName(name) || isMasterName(name)) {
    throw new AppError(
      'filename_invalid',
      `invalid filename ${echo(name)}: one path component of letters, digits, '.', '_' and '-', ending in .img, without '${MASTER_MARK}'`,
    );
  }
  return name;
}

/** The default backing file of a disk target: the IQN suffix plus `.img` (`base:worker-01.ubuntu` → `worker-01.ubuntu.img`). */
export function defaultDiskFileName(suffix: string): string {
  return `${suffix.replaceAll(':', '-')}.img`;
}

/** Lowercases a file name and replaces what an IQN cannot hold, so it can be an IQN suffix. */
export function iqnSuffixFromName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/-*\.[.-]*/g, '.')
    .replace(/-{2,}/g, '-')
    .replace(/^[.-]+|[.-]+$/g, '');
}

/** The IQN a scan gives a disk file that has no recorded IQN: the inverse of {@link defaultDiskFileName}. */
export function derivedDiskIqn(baseIqn: string, fileName: string): string {
  return `${baseIqn}:${iqnSuffixFromName(fileName.replace(/\.img$/i, ''))}`;
}

/** The IQN of a CD target when none is given: `base:<iso name lowercased, invalid characters replaced>`. */
export function derivedCdIqn(baseIqn: string, isoName: string): string {
  return `${baseIqn}:${iqnSuffixFromName(isoName)}`;
}

const UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
/** Smallest blank disk: 1 MiB. */
export const MIN_DISK_SIZE = 1024 ** 2;
/** Largest blank disk: 64 TiB. */
export const MAX_DISK_SIZE = 64 * 1024 ** 4;

/**
 * Parses a disk size: plain bytes, or a number with `K`, `M`, `G` or `T` (binary units,
 * as `truncate` reads them; `KiB`… are accepted too). Between 1 MiB and 64 TiB and a multiple
 * of 512 bytes, or 400 `size_invalid`.
 */
export function parseSize(value: unknown): number {
  let bytes: number;
  if (typeof value === 'number') {
    bytes = value;
  } else if (typeof value === 'string') {
    const m = /^(\d{1,16})\s*([KMGT]?)(iB)?$/i.exec(value.trim());
    if (!m || (m[3] && !m[2])) throw new AppError('size_invalid', `invalid size ${echo(value)}: expected bytes or a number with K, M, G or T, like 40G`);
    bytes = Number(m[1]) * UNITS[m[2].toUpperCase()];
  } else {
    throw new AppError('size_invalid', `invalid size ${echo(value)}`);
  }
  if (!Number.isSafeInteger(bytes) || bytes < MIN_DISK_SIZE || bytes > MAX_DISK_SIZE) {
    throw new AppError('size_invalid', `invalid size ${echo(value)}: must be between 1M and 64T`);
  }
  if (bytes % 512 !== 0) throw new AppError('size_invalid', `invalid size ${echo(value)}: must be a multiple of 512 bytes`);
  return bytes;
}
