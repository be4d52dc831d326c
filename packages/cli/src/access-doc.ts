import { minimumRole, PERMISSION_ROLES, PUBLIC, type RegisteredRoute, ROLES, registeredRoutes, roleAllows } from '@ironlens/core';
import type { FastifyInstance } from 'fastify';

const INTRO = `# Access: named tokens, roles, permissions

<!-- Generated from the code by \`node --import tsx scripts/gen-access-doc.ts\`; a test (packages/cli/src/access.test.ts) keeps it in step. -->

Every route of every listener declares exactly one permission (\`area:object:verb\`, Lens' names
where Lens has the route), or \`public\` for what machines and browsers reach without a token:
\`/boot-vars\`, \`/devices/report\`, the health checks, the console's pages and assets, the API
documentation. A route without a permission is refused (403 \`permission_denied\`, naming
\`undeclared\`) to everyone, admins included, and \`packages/cli/src/access.test.ts\` fails.
New routes declare theirs in their options: \`config: { permission: 'metal:power:operate' }\`;
the seeds' routes take theirs from their package's table (\`METAL_ROUTE_PERMISSIONS\`,
\`CLUSTERS_ROUTE_PERMISSIONS\`, \`KIND_ROUTE_PERMISSIONS\`).

## Tokens

- \`ironlens token create --name NAME --role viewer|operator|admin [--expires 10s|5m|12h|30d]\`
  prints the token once (stdout). \`ironlens token list [--json]\`, \`ironlens token revoke NAME\`.
  They work on the store of \`IRONLENS_DATA_DIR\` / \`IRONLENS_DATABASE_URL\`, no server needed.
- The same for admins over HTTP, under \`/api/auth\` on **both** listeners of \`ironlens serve\`
  (seed 004's \`{"detail"}\` error shape): \`POST /api/auth/tokens\` \`{"name","role","expires"?}\` →
  201 with \`token\` (this once); \`GET /api/auth/tokens\` → \`{"tokens": [...]}\` without secrets, with
  \`last_used_at\` (written at most once a minute; a use just made on the same replica included) and \`revoked_at\`; \`DELETE /api/auth/tokens/{name}\`.
  \`GET /api/auth/whoami\` → \`{name, role, permissions}\` for any token.
- An expiry is at most ten years (\`3650d\`; longer: 400 \`token_expiry_out_of_range\`). The
  names \`ironlens\`, \`anonymous\` (in any case) and \`env:…\` are the actors ironlens writes
  under itself: a token may not take one (400 \`token_name_reserved\`), and a token of such a
  name made by an older version authenticates no one.
- A token is \`ilt_\` + 32 random bytes (base64url). The store keeps only its SHA-256, looked up
  by hash and compared in constant time; it never appears in logs, responses (but the one
  \`create\`) or the operations log.
- A token works on both listeners (\`Authorization: Bearer\`). Once any named token exists, both
  listeners require a token, environment tokens set or not. A revoked token's row stays
  (marked \`revoked_at\`, its name may be given again), so revoking the last token never reopens
  the listeners.
- Revocation and expiry take effect on every replica within \`IRONLENS_AUTH_CACHE_MS\` (500 ms):
  each replica caches a token's lookup that long, no notice to lose.
- \`IPXE_CP_TOKEN\` (provisioning listener) and \`IRONLENS_CONSOLE_TOKEN\` (console listener) still
  work, each on its own listener, as admin tokens named \`env:IPXE_CP_TOKEN\` /
  \`env:IRONLENS_CONSOLE_TOKEN\`. With no token at all everything stays open as before (the
  start-up warning stays) and requests act as \`anonymous\`.
- The console's \`/api/metal\` proxy forwards the caller's token to the provisioning API behind
  it: the caller's role applies, never the proxy's. While \`IPXE_CP_TOKEN\` is set and the console
  requires no token, the proxy refuses (403 \`console_token_required\`).
- The storage agent keeps its own token (\`IPXE_AGENT_TOKEN\`, an admin named \`env:IPXE_AGENT_TOKEN\`; its routes' permissions are \`AGENT_ROUTE_PERMISSIONS\`), the standalone \`ironlens kind\`
  panel its \`KIND_K8S_TOKEN\`; both enforce the same route permissions table where they apply.

## Who did it

Every operations-log entry written by a request records \`actor\`: the token's name
(\`ops-alice\`, \`env:IPXE_CP_TOKEN\`), \`anonymous\` for requests without a token (no token
configured, or a public route such as \`/devices/report\`), \`ironlens\` for what ironlens writes
by itself (and the \`ironlens token\` command). \`GET /operations\` shows it (an added field). Jobs
(bootstrap, kind, downloads) record the actor that started them in their row; the kind panel's job
views and the bootstrap list show it as \`actor\`.

## Failed authentication

Per source address (the client address; \`X-Forwarded-For\` only with \`IRONLENS_TRUST_PROXY=1\`),
counting only tokens presented and refused (a request without any token, such as the console
before sign-in, is told 401 and never counted):
after \`IRONLENS_AUTH_FAIL_SLOW_AFTER\` (5) failures within \`IRONLENS_AUTH_FAIL_WINDOW_MS\` (60 s)
each further 401 waits \`IRONLENS_AUTH_FAIL_DELAY_MS\` (250 ms); after
\`IRONLENS_AUTH_FAIL_BLOCK_AFTER\` (20) the source is answered 429 \`auth_rate_limited\` (with
\`Retry-After\`) for \`IRONLENS_AUTH_FAIL_BLOCK_MS\` (5 min) on every route that needs a token.
Public routes and other sources are not affected. Counted in
\`ironlens_auth_failures_total{listener,outcome="invalid"|"limited"}\`.

## Errors

401 \`auth_required\` (with \`WWW-Authenticate: Bearer\`), 403 \`permission_denied\` naming the
permission (\`{"detail": "token NAME (viewer) may not metal:device:bind", "code": "permission_denied",
"permission": …, "actor": …, "role": …}\` on seed 004 and 001 routes and \`/api/auth\`;
problem+json with \`code\` and \`permission\` on seed 000's), 429 \`auth_rate_limited\`, each in
its API's own shape.
`;

const ROLE_TEXT = { viewer: 'every read except secrets’ metadata and token lists', operator: 'viewer + the day-to-day writes, and the POSTs that reach outside ironlens (probe, preview, preflight, host-key scan)', admin: 'everything: tokens, agents and their tokens, settings, cluster register/delete, HF token secrets' };

function mark(ok: boolean): string {
  return ok ? '✓' : '—';
}

/** docs/access.md from the apps of `serve` (their registered routes) and the permission table. */
export function renderAccessDoc(apps: Record<string, FastifyInstance>): string {
  const out: string[] = [INTRO, '## Roles', '', '| role | may |', '| --- | --- |', ...ROLES.map((r) => `| \`${r}\` | ${ROLE_TEXT[r]} |`), ''];
  const sections: Array<[string, string]> = [
    ['boot', 'Provisioning listener (`IRONLENS_BOOT_LISTEN`, :4839)'],
    ['console', 'Console listener (`IRONLENS_CONSOLE_LISTEN`, :8080)'],
    ['consoleMetal', 'The console’s `/api/metal/…` (the provisioning API behind the proxy; paths without the prefix)'],
  ];
  const used = new Set<string>();
  for (const [key, title] of sections) {
    const app = apps[key];
    if (!app) continue;
    const rows = new Map<string, RegisteredRoute[]>();
    for (const r of registeredRoutes(app)) {
      if (r.hidden && r.permission === PUBLIC) continue;
      if (['HEAD', 'OPTIONS', 'TRACE', 'QUERY'].includes(r.method)) continue;
      const k = `${r.url} ${r.method}`;
      rows.set(k, [...(rows.get(k) ?? []), r]);
    }
    out.push(`## ${title}`, '', 'Pages, assets and documentation (`public`, hidden from OpenAPI) are left out.', '', '| method | path | permission | viewer | operator | admin |', '| --- | --- | --- | :-: | :-: | :-: |');
    for (const [, [r]] of [...rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const p = r.permission ?? 'undeclared';
      if (p !== PUBLIC) used.add(p);
      out.push(`| ${r.method} | \`${r.url}\` | \`${p}\` | ${ROLES.map((role) => mark(r.permission !== undefined && roleAllows(role, p))).join(' | ')} |`);
    }
    out.push('');
  }
  out.push('## Permissions', '', 'Every permission ironlens knows and the least role that holds it. A permission not listed is a viewer’s when it ends in `:read`, an admin’s otherwise.', '', '| permission | least role | used by a route of `serve` |', '| --- | --- | :-: |');
  for (const p of [...new Set([...Object.keys(PERMISSION_ROLES), ...used])].sort()) out.push(`| \`${p}\` | ${minimumRole(p)} | ${mark(used.has(p))} |`);
  out.push('');
  return out.join('\n');
}
