import type { BodyPermission } from '@ironlens/core';

/**
 * The permission of each route of the provisioning API (seed 004), by `METHOD /path` as the
 * route declares it (issue 20, docs/access.md). A route added later declares its own in its
 * options (`config: { permission }`); a route in neither place is refused.
 */
export const METAL_ROUTE_PERMISSIONS: Readonly<Record<string, string>> = {
  // Called by iPXE and the machines without a token, by design (seed §1.3, §5, §16.6).
  'GET /healthz': 'public',
  'GET /boot-vars': 'public',
  'GET /devices/report': 'public',
  // The boot script iPXE chains over HTTP with the control plane's URL filled in (issue 30).
  'GET /boot.ipxe': 'public',
  'GET /settings/auto-register': 'metal:setting:read',
  'PUT /settings/auto-register': 'metal:setting:write',
  'GET /operations': 'metal:operation:read',
  // devices
  'GET /devices': 'metal:device:read',
  'GET /devices/:mac': 'metal:device:read',
  'POST /devices': 'metal:device:write',
  'POST /devices/import': 'metal:device:import',
  'DELETE /devices/:mac': 'metal:device:revoke',
  'POST /devices/:mac/bind': 'metal:device:bind',
  'DELETE /devices/:mac/bind': 'metal:device:unbind',
  'POST /devices/bind/batch/preview': 'metal:device:preview',
  'POST /devices/bind/batch': 'metal:device:bind',
  // workers
  'POST /workers': 'metal:worker:write',
  'POST /workers/batch': 'metal:worker:write',
  'GET /workers': 'metal:worker:read',
  'GET /workers/:worker_id': 'metal:worker:read',
  'PUT /workers/:worker_id/mac': 'metal:worker:write',
  'PUT /workers/:worker_id/default-os': 'metal:worker:write',
  'DELETE /workers/:worker_id': 'metal:worker:delete',
  'POST /workers/delete/batch': 'metal:worker:delete',
  'GET /workers/:worker_id/status': 'metal:worker:read',
  // disks
  'POST /workers/:worker_id/luns/disk': 'metal:disk:write',
  'POST /workers/luns/disk/batch': 'metal:disk:write',
  'DELETE /workers/:worker_id/luns/disk/:os': 'metal:disk:delete',
  // storage agents (their tokens are secrets: admin), their LUNs and the master images
  'GET /agents': 'metal:agent:read',
  'POST /agents': 'metal:agent:write',
  'POST /agents/probe': 'metal:agent:probe',
  'PUT /agents/:agent_id': 'metal:agent:write',
  'GET /agents/:agent_id/luns': 'metal:lun:read',
  'POST /agents/:agent_id/luns/disk': 'metal:lun:write',
  'POST /agents/:agent_id/luns/cd': 'metal:lun:write',
  'DELETE /agents/:agent_id/luns': 'metal:lun:delete',
  'POST /agents/:agent_id/luns/scan': 'metal:lun:write',
  'GET /masters': 'metal:master:read',
};

const hasBmc = (entry: unknown): boolean => typeof entry === 'object' && entry !== null && (entry as { bmc?: unknown }).bmc !== undefined && (entry as { bmc?: unknown }).bmc !== null;

/**
 * BMC credentials enter only with `metal:bmc:write` (issue 29, finding 3), whichever route they
 * come through: `PUT /devices/{mac}/bmc` declares it, `POST /devices` and `POST /devices/import`
 * require it too when their body carries a `bmc` object.
 */
export const BMC_IN_BODY: BodyPermission = { permission: 'metal:bmc:write', when: 'a bmc object', carries: hasBmc };
export const BMC_IN_IMPORT: BodyPermission = {
  permission: 'metal:bmc:write',
  when: 'an entry with a bmc object',
  carries: (body) => {
    const entries = typeof body === 'object' && body !== null ? (body as { entries?: unknown }).entries : undefined;
    return Array.isArray(entries) && entries.some(hasBmc);
  },
};
