/**
 * Roles and permissions (issue 20). Every route of every listener declares exactly one
 * permission in its route options (`config: { permission: 'area:object:verb' }`), or `public`
 * for the routes machines call without a token (`/boot-vars`, `/devices/report`), the health
 * checks, the console's pages and the API documentation.
 *
 * A role is a set of permissions. `viewer` reads (never secrets' metadata, never token lists),
 * `operator` adds the day-to-day writes and the POSTs that reach outside ironlens (probe,
 * preview, preflight, host-key scan), `admin` may do everything.
 */
export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** The permission of a route that needs no token. */
export const PUBLIC = 'public';

/** `area:object:verb`, each part lower-case letters, digits and `-`. */
export const PERMISSION_PATTERN = /^[a-z][a-z0-9-]*:[a-z][a-z0-9-]*:[a-z][a-z0-9-]*$/;

export function isRole(v: unknown): v is Role {
  return typeof v === 'string' && (ROLES as readonly string[]).includes(v);
}

/**
 * The least role of each permission ironlens knows. A permission not listed here is decided by
 * its verb ({@link minimumRole}): `read` is a viewer's, anything else an admin's — a new write
 * no one has classified yet is never given to operators by accident.
 */
export const PERMISSION_ROLES: Record<string, Role> = {
  // core
  'core:metrics:read': 'viewer',
  // access (this issue)
  'auth:whoami:read': 'viewer',
  'auth:token:admin': 'admin',
  // metal: the provisioning API (seed 004)
  'metal:device:read': 'viewer',
  'metal:device:write': 'operator',
  'metal:device:import': 'operator',
  'metal:device:revoke': 'operator',
  'metal:device:bind': 'operator',
  'metal:device:unbind': 'operator',
  'metal:device:preview': 'operator',
  'metal:worker:read': 'viewer',
  'metal:worker:write': 'operator',
  'metal:worker:delete': 'operator',
  'metal:disk:read': 'viewer',
  'metal:disk:write': 'operator',
  'metal:disk:delete': 'operator',
  'metal:agent:read': 'viewer',
  'metal:agent:probe': 'operator',
  'metal:agent:write': 'admin',
  'metal:agent:delete': 'admin',
  'metal:lun:read': 'viewer',
  'metal:lun:write': 'operator',
  'metal:lun:delete': 'operator',
  'metal:master:read': 'viewer',
  'metal:master:tag': 'operator',
  'metal:operation:read': 'viewer',
  'metal:setting:read': 'viewer',
  'metal:setting:write': 'admin',
  // issue 21 and friends (declared by their routes)
  'metal:power:read': 'viewer',
  'metal:power:operate': 'operator',
  // A BMC's URL and username are secrets' metadata (issue 29, finding 11): not a viewer's.
  'metal:bmc:read': 'operator',
  'metal:bmc:write': 'admin',
  'metal:host-report:submit': 'operator',
  // issue 31: rollouts of a new master, drift and its reconcile
  'metal:rollout:read': 'viewer',
  'metal:rollout:write': 'operator',
  'metal:drift:read': 'viewer',
  'metal:drift:reconcile': 'operator',
  // the cluster manager (seed 000, Lens' names)
  'cluster:cluster:read': 'viewer',
  'cluster:cluster:create': 'admin',
  'cluster:cluster:update': 'operator',
  'cluster:cluster:delete': 'admin',
  'cluster:hf-token:create': 'admin',
  'cluster:hf-token:update': 'admin',
  'cluster:model-secret:read': 'admin',
  'cluster:software:download': 'operator',
  'cluster:image:prepull': 'operator',
  'cluster:crd:install': 'operator',
  'cluster:node:operate': 'operator',
  'cluster:gateway:read': 'viewer',
  'cluster:gateway:check': 'operator',
  'cluster:gateway:update': 'operator',
  // The gateway's access keys are secrets: their metadata too is an admin's.
  'cluster:gateway-key:create': 'admin',
  'cluster:gateway-key:read': 'admin',
  'cluster:gateway-key:delete': 'admin',
  'cluster:session:read': 'viewer',
  'cluster:session:operate': 'operator',
  'cluster:bootstrap:read': 'viewer',
  'cluster:bootstrap:preflight': 'operator',
  'cluster:bootstrap:execute': 'operator',
  'cluster:bootstrap:cancel': 'operator',
  'cluster:ssh-key:read': 'viewer',
  // model deployments (issue 28): Lens' names where Lens has the route
  'cluster:accelerator:read': 'viewer',
  'deployment:run:create': 'operator',
  'deployment:run:read': 'viewer',
  'deployment:run:cancel': 'operator',
  'deployment:execution:update': 'operator',
  'deployment:execution:delete': 'operator',
  'deployment:placement:preview': 'operator',
  'model-service:model:read': 'viewer',
  // the kind panel (seed 001)
  'kind:environment:read': 'viewer',
  'kind:cluster:read': 'viewer',
  'kind:kubeconfig:read': 'operator',
  'kind:cluster:create': 'operator',
  'kind:cluster:delete': 'operator',
  'kind:job:read': 'viewer',
  'kind:job:cancel': 'operator',
};

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** The least role that holds `permission`. */
export function minimumRole(permission: string): Role {
  const known = PERMISSION_ROLES[permission];
  if (known) return known;
  return permission.endsWith(':read') ? 'viewer' : 'admin';
}

/** True when `role` holds `permission` (`public` is everyone's). */
export function roleAllows(role: Role, permission: string): boolean {
  if (permission === PUBLIC) return true;
  if (!PERMISSION_PATTERN.test(permission)) return false;
  return RANK[role] >= RANK[minimumRole(permission)];
}

/** The known permissions `role` holds, sorted (what `GET /api/auth/whoami` lists). */
export function permissionsOf(role: Role): string[] {
  return Object.keys(PERMISSION_ROLES)
    .filter((p) => roleAllows(role, p))
    .sort();
}
