import { AppError, echo } from '@ironlens/core';
import { MENU_ITEMS, type Os, OS_VALUES } from './constants';

/** The canonical form every stored MAC has: six lower-case hex pairs joined by colons. */
const CANONICAL_MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/**
 * True for a MAC with the group bit set (the low bit of the first octet): broadcast
 * `ff:ff:ff:ff:ff:ff` and every multicast address (`01:00:5e:…`, `33:33:…`). No network card
 * has one as its own address, so none may identify a machine.
 */
export function isGroupMac(mac: string): boolean {
  return (Number.parseInt(mac.slice(0, 2), 16) & 1) === 1;
}

/**
 * Normalises a MAC in any of the forms iPXE and operators use (`00:0c:29:b9:8b:2d`,
 * `00-0c-29-b9-8b-2d`, `000c29b98b2d`, `000c.29b9.8b2d`) to lower-case colon form.
 * Returns null when it is not a MAC, or not a machine's own (broadcast, multicast).
 */
export function normalizeMac(input: unknown): string | null {
  if (typeof input !== 'string' || input.length > 64) return null;
  const hex = input.trim().replace(/[:.-]/g, '').toLowerCase();
  if (!/^[0-9a-f]{12}$/.test(hex)) return null;
  const mac = hex.match(/../g)!.join(':');
  return isGroupMac(mac) ? null : mac;
}

/** True for a MAC as stored and rendered: canonical form, a machine's own (unicast). */
export function isValidMac(value: unknown): value is string {
  return typeof value === 'string' && CANONICAL_MAC.test(value) && !isGroupMac(value);
}

export function requireMac(input: unknown): string {
  const mac = normalizeMac(input);
  if (!mac) {
    const group = typeof input === 'string' && input.length <= 64 && /^[0-9a-f]{12}$/i.test(input.trim().replace(/[:.-]/g, ''));
    throw new AppError('mac_invalid', `invalid MAC address: ${echo(input)}${group ? ' (a broadcast or multicast address cannot identify a machine)' : ''}`);
  }
  return mac;
}

/** Worker ids and agent ids: letters, digits, dot, underscore, hyphen; lower-cased. */
const ID = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export function isValidId(id: unknown): id is string {
  return typeof id === 'string' && ID.test(id) && !id.includes('..');
}

/** Hostnames: the worker-id grammar (stored lower-case). */
export const isValidHostname = isValidId;

/** A worker's architecture (`x86_64`, `arm64`…): what iPXE's `${buildarch}` and the menu use. */
const ARCH = /^[a-z0-9_-]{1,32}$/;

export function isValidArch(value: unknown): value is string {
  return typeof value === 'string' && ARCH.test(value);
}

/**
 * An iSCSI portal address as the API takes it (`iscsi_server`) or derives it from an agent's
 * URL: a host name, IPv4 or IPv6 literal, optional port. No space, `$` or line break can
 * reach iPXE's `set iscsi-server` line.
 */
const ISCSI_SERVER = /^[A-Za-z0-9._:[\]-]{1,253}$/;

export function isIscsiServer(value: unknown): value is string {
  return typeof value === 'string' && ISCSI_SERVER.test(value);
}

/** The root-path separators iPXE composes for stgt (`:::1:`) and LIO (`::::`). */
export function isIscsiSep(value: unknown): value is string {
  return value === ':::1:' || value === '::::';
}

export function isMenuItem(value: unknown): value is string {
  return typeof value === 'string' && (MENU_ITEMS as readonly string[]).includes(value);
}

export function isMenuTimeout(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 86_400_000;
}

export function requireWorkerId(input: unknown): string {
  const id = typeof input === 'string' ? input.trim().toLowerCase() : '';
  if (!isValidId(id)) {
    throw new AppError('worker_id_invalid', `invalid worker_id: ${echo(input)} (letters, digits, dot, underscore, hyphen; at most 63)`);
  }
  return id;
}

/** Hostnames follow the same rule as worker ids (they default to the worker id). */
export function requireHostname(input: unknown): string {
  const h = typeof input === 'string' ? input.trim().toLowerCase() : '';
  if (!isValidId(h)) {
    throw new AppError('hostname_invalid', `invalid hostname: ${echo(input)} (letters, digits, dot, underscore, hyphen; at most 63)`);
  }
  return h;
}

export { MENU_ITEMS, type Os, OS_VALUES } from './constants';

export function requireOs(input: unknown): Os {
  const os = typeof input === 'string' ? input.trim().toLowerCase() : '';
  if (!(OS_VALUES as readonly string[]).includes(os)) {
    throw new AppError('os_invalid', `invalid os: ${echo(input)}; allowed: ${OS_VALUES.join(', ')}`);
  }
  return os as Os;
}

export function requireMenuItem(input: unknown): string {
  const item = typeof input === 'string' ? input.trim().toLowerCase() : '';
  if (!(MENU_ITEMS as readonly string[]).includes(item)) {
    throw new AppError('menu_item_invalid', `invalid menu_default: ${echo(input)}; allowed: ${MENU_ITEMS.join(', ')}`);
  }
  return item;
}

export function requireMenuTimeout(input: unknown): number {
  if (!isMenuTimeout(input)) {
    throw new AppError('menu_timeout_invalid', `invalid menu_timeout: ${echo(input)} (a non-negative integer of milliseconds)`);
  }
  return input;
}

/** The firmware kinds iPXE names in `${platform}` that ironlens boots: BIOS (`pcbios`) and UEFI (`efi`). */
export const PLATFORMS = ['pcbios', 'efi'] as const;
export type Platform = (typeof PLATFORMS)[number];

export function isPlatform(value: unknown): value is Platform {
  return value === 'pcbios' || value === 'efi';
}

/** Parses iPXE's memory figures: `0x8000` hex or decimal; null when absent or garbage. */
export function parseIntLoose(input: unknown): number | null {
  if (input === undefined || input === null) return null;
  const s = String(input).trim();
  if (s === '') return null;
  if (/^0x[0-9a-f]+$/i.test(s)) return Number.parseInt(s.slice(2), 16);
  if (/^\d+$/.test(s)) return Number.parseInt(s, 10);
  return null;
}

/**
 * iSCSI names: the storage agent's own grammar, shared through `@ironlens/core`. Every IQN an
 * agent answers passes through it before it is stored or reaches `/boot-vars`.
 */
export { IQN_MAX_LENGTH, isBaseIqn, isIqn } from '@ironlens/core';

/**
 * A file in an agent's image directory: one path component of `[A-Za-z0-9._-]`, not hidden
 * (masters start with `_tpl_`).
 */
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;

export function isFileName(value: unknown): value is string {
  return typeof value === 'string' && FILE_NAME.test(value);
}

/**
 * The absolute path of `fileName` on an agent: `/` then components of `[A-Za-z0-9._-]`
 * (none `.` or `..`), ending in `fileName` itself.
 */
export function isBackingPathOf(value: unknown, fileName: string): value is string {
  if (typeof value !== 'string' || value.length > 4096 || !value.startsWith('/')) return false;
  const parts = value.slice(1).split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..' || !/^[A-Za-z0-9._-]+$/.test(p))) return false;
  return parts[parts.length - 1] === fileName;
}
