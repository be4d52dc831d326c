/**
 * Issue 20 in a real Chromium against a real `ironlens serve`: signing in with a named token,
 * "signed in as NAME (role)", a viewer offered no bind button and told clearly why a forced bind
 * is refused, an admin creating (shown once, copy) and revoking a token on the Tokens page; on the
 * cluster, bootstrap and machines pages every control whose route the role lacks is disabled with
 * the reason (the route's permission, docs/access.md) as its title, and enabled for an admin.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HostileApiServer } from '@ironlens/clusters/testing';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { tokenCommand } from '../token';

const CHROMIUM = '/usr/bin/chromium';
const MAC = '02:00:00:00:20:01';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-access-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);

let tmp: string;
let cp: Running;
let context: BrowserContext;
let page: Page;
const tokens: Record<string, string> = {};
let env: Record<string, string>;
/** A stand-in API server on loopback answering the overview's lists (empty), for the cluster page. */
let apiServer: HostileApiServer;

async function token(name: string, role: string): Promise<string> {
  let out = '';
  const code = await tokenCommand(['create', '--name', name, '--role', role], env, { out: (s) => (out += s), err: () => {} });
  expect(code).toBe(0);
  return out.trim();
}

const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

async function signIn(t: string): Promise<void> {
  await page.evaluate(() => sessionStorage.clear());
  await page.goto(`${cp.urls.console}/machines/devices`);
  await expect.poll(() => page.getByTestId('token-prompt').isVisible(), { timeout: 15_000 }).toBe(true);
  await page.getByTestId('token-input').fill(t);
  await page.getByTestId('token-submit').click();
  await expect.poll(() => page.getByTestId('devices-table').isVisible(), { timeout: 15_000 }).toBe(true);
}

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), `ironlens-console-access-${process.pid}-`));
  const dist = await buildWebAssets(join(tmp, 'dist'));
  env = { IRONLENS_DATA_DIR: join(tmp, 'data'), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0', IRONLENS_WEB_DIST: dist, IPXE_CP_DNSMASQ_RELOAD: 'false' };
  tokens.viewer = await token('lab-viewer', 'viewer');
  tokens.admin = await token('lab-admin', 'admin');
  apiServer = new HostileApiServer();
  await apiServer.start();
  cp = await serve(env, () => {});
  const r = await fetch(`${cp.urls.boot}/devices/report?mac=${MAC}&serial=SN-20`);
  expect(r.status).toBe(200);
  const w = await fetch(`${cp.urls.boot}/workers`, { method: 'POST', headers: { authorization: `Bearer ${tokens.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ worker_id: 'w20' }) });
  expect(w.status).toBe(200);
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1280, height: 800 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${cp.urls.console}/machines/devices`);
}, 300_000);

afterAll(async () => {
  await context?.close();
  await cp?.close();
  await apiServer?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('console access in Chromium', () => {
  it('a viewer signs in, sees who it is, is offered no bind button, and a forced bind says why it is refused', async () => {
    await signIn(tokens.viewer);
    await expect.poll(() => page.getByTestId('signed-in').textContent(), { timeout: 10_000 }).toBe('Signed in as lab-viewer (viewer)');
    await expect.poll(() => page.getByText(MAC).count(), { timeout: 10_000 }).toBeGreaterThan(0);
    const key = MAC.replace(/:/g, '');
    expect(await page.getByTestId(`bind-${key}`).count()).toBe(0);
    expect(await page.getByTestId('batch-toggle').count()).toBe(0);
    expect(await page.getByTestId('bind-unavailable').textContent()).toContain('your token (lab-viewer, viewer) may not metal:device:bind');
    await shot('viewer-devices');

    // Forcing the call: the page is told (falsely) that the token may bind; the server still refuses.
    await page.route('**/api/auth/whoami', async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      await route.fulfill({ response: res, json: { ...body, permissions: [...body.permissions, 'metal:device:bind'] } });
    });
    await page.reload();
    await expect.poll(() => page.getByTestId(`bind-${key}`).isVisible(), { timeout: 15_000 }).toBe(true);
    await page.getByTestId(`bind-${key}`).click();
    await page.getByTestId('bind-worker').selectOption('w20');
    await page.getByTestId('bind-submit').click();
    await expect.poll(() => page.getByTestId('bind-error').textContent(), { timeout: 10_000 }).toBe('your token (lab-viewer, viewer) may not metal:device:bind');
    await shot('viewer-forced-bind');
    await page.unroute('**/api/auth/whoami');
    // Nothing was bound.
    const dev = await (await fetch(`${cp.urls.boot}/devices/${MAC}`, { headers: { authorization: `Bearer ${tokens.admin}` } })).json();
    expect(dev.state).toBe('pooled');
    // Elsewhere, what the role lacks is disabled with the reason.
    expect(await page.getByTestId('auto-register').isDisabled()).toBe(true);
    expect(await page.getByTestId('auto-register').getAttribute('title')).toBe('your token (lab-viewer, viewer) may not metal:setting:write');
    await page.goto(`${cp.urls.console}/machines/workers`);
    await expect.poll(() => page.getByTestId('worker-create-open').isDisabled(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByTestId('worker-create-open').getAttribute('title')).toBe('your token (lab-viewer, viewer) may not metal:worker:write');
    await shot('viewer-workers');
    // A viewer's Tokens page says only admins manage tokens.
    await page.goto(`${cp.urls.console}/access`);
    await expect.poll(() => page.getByTestId('access-denied').textContent(), { timeout: 10_000 }).toContain('may not auth:token:admin');
  });

  it('an admin creates a token (shown once, copied) and revokes it; sign out asks again', async () => {
    await signIn(tokens.admin);
    await expect.poll(() => page.getByTestId('signed-in').textContent(), { timeout: 10_000 }).toBe('Signed in as lab-admin (admin)');
    await page.getByTestId('nav-access').click();
    await expect.poll(() => page.getByTestId('token-row-lab-viewer').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.getByTestId('new-token-name').fill('ci-pipeline');
    await page.getByTestId('new-token-role').selectOption('operator');
    await page.getByTestId('new-token-expires').fill('12h');
    await page.getByTestId('new-token-submit').click();
    await expect.poll(() => page.getByTestId('created-token').inputValue(), { timeout: 10_000 }).toMatch(/^ilt_[A-Za-z0-9_-]{43}$/);
    const made = await page.getByTestId('created-token').inputValue();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: cp.urls.console });
    await page.getByTestId('copy-token').click();
    await expect.poll(() => page.getByTestId('copy-token').textContent(), { timeout: 5000 }).toBe('Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(made);
    await shot('admin-token-created');
    // The new token works, as an operator, on the provisioning listener.
    const who = await (await fetch(`${cp.urls.boot}/api/auth/whoami`, { headers: { authorization: `Bearer ${made}` } })).json();
    expect(who).toMatchObject({ name: 'ci-pipeline', role: 'operator' });
    // Shown once: after "Done" (or a reload) it is nowhere on the page.
    await page.getByTestId('dismiss-token').click();
    expect(await page.content()).not.toContain(made);
    await expect.poll(() => page.getByTestId('token-row-ci-pipeline').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.getByTestId('revoke-ci-pipeline').click();
    await page.getByTestId('revoke-confirm').click();
    await expect.poll(() => page.getByTestId('token-row-ci-pipeline').textContent(), { timeout: 10_000 }).toContain('revoked');
    await new Promise((r) => setTimeout(r, 600));
    expect((await fetch(`${cp.urls.boot}/api/auth/whoami`, { headers: { authorization: `Bearer ${made}` } })).status).toBe(401);
    await shot('admin-token-revoked');
    // The operations log page shows who did it.
    await page.goto(`${cp.urls.console}/machines/operations`);
    await expect.poll(async () => (await page.getByTestId('ops-actor').allTextContents()).includes('lab-admin'), { timeout: 10_000 }).toBe(true);
    await page.getByTestId('forget-token').click();
    await expect.poll(() => page.getByTestId('token-prompt').isVisible(), { timeout: 10_000 }).toBe(true);
  });

  it('on the cluster, bootstrap and machines pages a viewer finds every control it may not use disabled with the reason; an admin finds them usable', async () => {
    const admin = { authorization: `Bearer ${tokens.admin}` };
    // By the admin API: a (draft) cluster on the stand-in API server; w20 bound to the device, with a BMC.
    const form = new FormData();
    form.append('name', 'gated-lab');
    form.append('draft', 'true');
    form.append('file', new Blob([apiServer.kubeconfig()]), 'kubeconfig.yaml');
    const reg = await fetch(`${cp.urls.console}/api/cluster/clusters`, { method: 'POST', body: form, headers: { ...admin, 'x-ironlens-request': 'test' } });
    expect(reg.status, await reg.clone().text()).toBe(201);
    const clusterId = ((await reg.json()) as { cluster: { id: string } }).cluster.id;
    const json = { ...admin, 'content-type': 'application/json' };
    const bound = await fetch(`${cp.urls.boot}/devices/${MAC}/bind?worker_id=w20`, { method: 'POST', headers: admin });
    expect(bound.status, await bound.clone().text()).toBe(200);
    const bmc = { driver: 'redfish', url: 'https://127.0.0.1:9/redfish/v1/Systems/1', username: 'admin', password: 'secret', verify_tls: false };
    const put = await fetch(`${cp.urls.boot}/devices/${MAC}/bmc`, { method: 'PUT', headers: json, body: JSON.stringify(bmc) });
    expect(put.status, await put.clone().text()).toBe(200);
    // A storage agent (nothing listens on its port: its LUN list fails, its controls are there).
    const agent = await fetch(`${cp.urls.boot}/agents`, { method: 'POST', headers: json, body: JSON.stringify({ id: 'st-01', base_url: 'http://127.0.0.1:9', role: { disk: true } }) });
    expect(agent.status, await agent.clone().text()).toBe(201);
    const key = MAC.replace(/:/g, '');

    /** [test id, the permission its route needs (null: the viewer has it), usable by an admin right now]. */
    type Control = [string, string | null, boolean];
    const pages: Array<{ path: string; ready: string; prepare?: () => Promise<void>; controls: Control[] }> = [
      {
        path: `/clusters/${clusterId}`,
        ready: 'cluster-gateway',
        controls: [
          ['cluster-edit', 'cluster:cluster:update', true],
          ['nodes-cordon', 'cluster:node:operate', false],
          ['nodes-uncordon', 'cluster:node:operate', false],
          ['crds-apply', 'cluster:crd:install', true],
          ['gateway-reconcile', 'cluster:gateway:update', false],
          ['gateway-key-create', 'cluster:gateway-key:create', false],
          ['rotate-submit', 'cluster:hf-token:update', false],
        ],
      },
      {
        path: '/bootstrap',
        ready: 'bootstrap-wizard',
        prepare: () => page.getByTestId('node-host-0').fill('127.0.0.1'),
        controls: [['fetch-host-keys', 'cluster:bootstrap:preflight', true]],
      },
      { path: '/bootstrap?workers=w20', ready: 'worker-wizard', controls: [['worker-wizard-preflight', 'cluster:bootstrap:preflight', false]] },
      // A running bootstrap job's page (the job's answer stubbed in the page: a real one needs SSH nodes).
      { path: '/bootstrap/bs-gated', ready: 'bootstrap-phase', controls: [['bootstrap-cancel', 'cluster:bootstrap:cancel', true]] },
      {
        path: '/machines/devices',
        ready: 'devices-table',
        prepare: () => page.getByTestId(`pick-${key}`).check(),
        controls: [['batch-power-run', 'metal:power:operate', true]],
      },
      {
        path: '/machines/workers',
        ready: 'select-w20',
        prepare: () => page.getByTestId('select-w20').check(),
        controls: [
          ['workers-create-cluster', 'cluster:bootstrap:preflight', true],
          ['disks-create', 'metal:disk:write', false],
        ],
      },
      {
        path: '/machines/storage',
        ready: 'agent-luns-st-01',
        prepare: () => page.getByTestId('agent-luns-st-01').click(),
        controls: [
          ['luns-rescan', 'metal:lun:write', true],
          ['cd-create', 'metal:lun:write', false],
        ],
      },
      {
        path: '/machines/workers/w20',
        ready: 'power-panel',
        controls: [
          ['worker-set-mac-submit', 'metal:worker:write', false],
          ['worker-fixed-address-save', 'metal:worker:write', false],
          ['power-read', null, true],
          ['power-on', 'metal:power:operate', true],
          ['power-off', 'metal:power:operate', true],
          ['bmc-edit', 'metal:bmc:write', true],
          ['add-disk-submit', 'metal:disk:write', true],
          ['boot-save', 'metal:worker:write', true],
          ['worker-delete-arm', 'metal:worker:delete', true],
        ],
      },
    ];
    const visit = async (role: 'viewer' | 'admin') => {
      for (const p of pages) {
        await page.goto(`${cp.urls.console}${p.path}`);
        // whoami answered for this load (before it does, every control is offered: the server decides).
        await expect.poll(() => page.getByTestId('signed-in').textContent(), { timeout: 10_000 }).toBe(`Signed in as lab-${role} (${role})`);
        await expect.poll(() => page.getByTestId(p.ready).first().isVisible(), { timeout: 15_000 }).toBe(true);
        await p.prepare?.();
        for (const [testId, permission, usable] of p.controls) {
          const el = page.getByTestId(testId).first();
          await expect.poll(() => el.isVisible(), { timeout: 10_000, message: `${p.path} ${testId}` }).toBe(true);
          if (role === 'viewer' && permission) {
            await expect.poll(() => el.getAttribute('title'), { timeout: 10_000, message: `${p.path} ${testId}` }).toBe(`your token (lab-viewer, viewer) may not ${permission}`);
            expect(await el.isDisabled(), `${p.path} ${testId}`).toBe(true);
          } else {
            expect(await el.getAttribute('title'), `${p.path} ${testId}`).toBeNull();
            if (usable) expect(await el.isDisabled(), `${p.path} ${testId}`).toBe(false);
          }
        }
        if (p.path.startsWith('/clusters/')) {
          // Gateway keys are an admin's read: a viewer is told so instead of seeing a 403.
          if (role === 'viewer') expect(await page.getByTestId('gateway-keys-unavailable').textContent()).toContain('your token (lab-viewer, viewer) may not cluster:gateway-key:read');
          else expect(await page.getByTestId('gateway-keys-unavailable').count()).toBe(0);
        }
        await shot(`${role}-gated-${p.path.replace(/[^a-z0-9]+/gi, '-')}`);
      }
    };
    const running = { id: 'bs-gated', phase: 'running', logTail: 'TASK [kubernetes]', error: null, kubeconfig: null, clusterId: null, createdAt: new Date().toISOString() };
    await page.route('**/api/cluster/bootstrap/bs-gated', (route) => route.fulfill({ json: running }));
    await signIn(tokens.viewer);
    await expect.poll(() => page.getByTestId('signed-in').textContent(), { timeout: 10_000 }).toBe('Signed in as lab-viewer (viewer)');
    await visit('viewer');
    await signIn(tokens.admin);
    await expect.poll(() => page.getByTestId('signed-in').textContent(), { timeout: 10_000 }).toBe('Signed in as lab-admin (admin)');
    await visit('admin');
    await page.unroute('**/api/cluster/bootstrap/bs-gated');
  });
});
