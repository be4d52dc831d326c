import { AppError } from '@ironlens/core';
import type { BootstrapNodeInput, HostKeyPin, NodeRole } from '../api/bootstrap';
import { expandHostSpec, expandTargets, isExactHost, MAX_EXPANDED_HOSTS } from './host-spec';

// The request shapes are the API schemas' types (issue 19).
export type { BootstrapNodeInput, HostKeyPin, NodeRole } from '../api/bootstrap';
export const NODE_ROLES: readonly NodeRole[] = ['control-plane', 'worker'];

/** One exact host to bootstrap, with its pin and credentials (credentials stay in memory only). */
export interface ResolvedNode {
  host: string;
  port: number;
  roles: NodeRole[];
  username: string;
  /** Inventory name: the address with dots as hyphens (`10.0.0.1` → `10-0-0-1`). */
  name: string;
  fingerprint: string;
  privateKey?: string;
  password?: string;
}

export const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;
/** A POSIX login name: what Ansible may put on an ssh command line. */
export const USERNAME = /^[a-z_][a-z0-9_.-]{0,31}$/;

/** The name of a host in the inventory; `10.0.0.1` → `10-0-0-1`, `Node1.lab` → `node1-lab`. */
export function inventoryName(host: string): string {
  if (!isExactHost(host)) throw new AppError('bootstrap_host_invalid', `invalid host ${JSON.stringify(host)}`);
  return host.toLowerCase().replace(/\./g, '-');
}

/**
 * Expands the nodes' host specs, merges the roles of a host named twice, checks the usernames,
 * requires a control-plane node, and requires the pins to cover exactly the expanded set.
 * Every failure is a 422 raised before anything connects.
 */
export function resolveNodes(nodes: readonly BootstrapNodeInput[], pins: readonly HostKeyPin[]): ResolvedNode[] {
  // Expanded (and limited) as the host-key scan expands them, so both see the same set.
  expandTargets(nodes, MAX_EXPANDED_HOSTS);
  const byKey = new Map<string, ResolvedNode>();
  for (const node of nodes) {
    const username = node.username ?? 'root';
    if (!USERNAME.test(username)) throw new AppError('bootstrap_node_invalid', `invalid username ${JSON.stringify(username)} for ${node.host}`);
    if (!node.roles?.length || node.roles.some((r) => !NODE_ROLES.includes(r))) {
      throw new AppError('bootstrap_node_invalid', `roles of ${node.host} must be a non-empty subset of control-plane, worker`);
    }
    const port = node.port ?? 22;
    for (const host of expandHostSpec(node.host, MAX_EXPANDED_HOSTS)) {
      const key = `${host}:${port}`;
      const seen = byKey.get(key);
      // A host named in several rows keeps the first row's login and gets every row's roles.
      if (seen) {
        for (const role of node.roles) if (!seen.roles.includes(role)) seen.roles.push(role);
        continue;
      }
      byKey.set(key, {
        host,
        port,
        roles: [...new Set(node.roles)],
        username,
        name: '',
        fingerprint: '',
        privateKey: node.privateKey || undefined,
        password: node.password || undefined,
      });
    }
  }
  const resolved = [...byKey.values()];
  for (const r of resolved) r.roles.sort((a, b) => NODE_ROLES.indexOf(a) - NODE_ROLES.indexOf(b));
  if (!resolved.some((r) => r.roles.includes('control-plane'))) {
    throw new AppError('bootstrap_control_plane_missing', 'at least one node must have the control-plane role');
  }

  const pinned = new Map<string, string>();
  for (const p of pins) {
    if (!FINGERPRINT.test(p.fingerprint)) throw new AppError('bootstrap_host_keys_mismatch', `pin for ${p.host} is not a SHA256:<43 base64> fingerprint`);
    const key = `${p.host.toLowerCase()}:${p.port ?? 22}`;
    const before = pinned.get(key);
    if (before !== undefined && before !== p.fingerprint) throw new AppError('bootstrap_host_keys_mismatch', `two different pins for ${key}`);
    pinned.set(key, p.fingerprint);
  }
  const missing = resolved.filter((r) => !pinned.has(`${r.host}:${r.port}`)).map((r) => `${r.host}:${r.port}`);
  const extra = [...pinned.keys()].filter((k) => !byKey.has(k));
  if (missing.length || extra.length) {
    const parts = [];
    if (missing.length) parts.push(`no pin for ${missing.join(', ')}`);
    if (extra.length) parts.push(`pins for hosts not in the nodes: ${extra.join(', ')}`);
    throw new AppError('bootstrap_host_keys_mismatch', parts.join('; '), { missing, extra });
  }

  const names = new Set<string>();
  for (const r of resolved) {
    r.fingerprint = pinned.get(`${r.host}:${r.port}`)!;
    let name = inventoryName(r.host);
    if (names.has(name)) name = `${name}-${r.port}`;
    names.add(name);
    r.name = name;
  }
  return resolved;
}
