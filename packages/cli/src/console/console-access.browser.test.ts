/**
 * Issue 20 in a real Chromium against a real `ironlens serve`: signing in with a named token,
 * "signed in as NAME (role)", a viewer offered no bind button and told clearly why a forced bind
 * is refused, an admin creating (shown once, copy) and revoking a token on the Tokens page.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { tokenCommand } from '../token';
import { sleep } from '@ironlens/core/testing';

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
    await sleep(600);
    expect((await fetch(`${cp.urls.boot}/api/auth/whoami`, { headers: { authorization: `Bearer ${made}` } })).status).toBe(401);
    await shot('admin-token-revoked');
    // The operations log page shows who did it.
    await page.goto(`${cp.urls.console}/machines/operations`);
    await expect.poll(async () => (await page.getByTestId('ops-actor').allTextContents()).includes('lab-admin'), { timeout: 10_000 }).toBe(true);
    await page.getByTestId('forget-token').click();
    await expect.poll(() => page.getByTestId('token-prompt').isVisible(), { timeout: 10_000 }).toBe(true);
  });
});
