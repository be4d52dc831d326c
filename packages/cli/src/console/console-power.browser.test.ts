/**
 * The console's power controls (issue 21) in headless Chromium, against `ironlens serve` and the
 * real Redfish emulator (`sushy-emulator --fake`): a BMC set through the form (whose password
 * is never shown again), power on, a confirmed power off, batch power from the device list, and
 * axe-core on the power dialog.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@ironlens/core/testing';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeSystems, type RunningSushy, startSushy } from '../../../metal/test/bmc.harness';
import { type Running, serve } from '../serve';
import { axeViolations } from '../testing/axe';

const CHROMIUM = '/usr/bin/chromium';
const CONSOLE_TOKEN = 'console-power-token';
const CP_TOKEN = 'cp-power-token';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-power-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
const SYSTEMS = fakeSystems(2);
const macKey = (m: string) => m.replace(/:/g, '');

let tmp: string;
let emu: RunningSushy;
let cp: Running;
let context: BrowserContext;
let page: Page;

async function metal(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(cp.urls.boot + path, {
    method,
    headers: { authorization: `Bearer ${CP_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** axe-core's serious and critical violations on the page now (the full report goes beside the screenshots). */
const axe = (name: string) => axeViolations(page, join(artifacts, `axe-${name}.json`));

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), `ironlens-console-power-${process.pid}-`));
  emu = await startSushy(join(tmp, 'emulator'), SYSTEMS);
  const dist = await buildWebAssets(join(tmp, 'dist'));
  cp = await serve({
    IRONLENS_DATA_DIR: join(tmp, 'data'),
    IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: CONSOLE_TOKEN,
    IRONLENS_WEB_DIST: dist,
    IPXE_CP_TOKEN: CP_TOKEN,
    IPXE_CP_DNSMASQ_RELOAD: 'false',
  });
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1400, height: 900 },
  });
  await context.addInitScript((t) => sessionStorage.setItem('ironlens.console.token', t), CONSOLE_TOKEN);
  page = context.pages()[0] ?? (await context.newPage());
}, 120_000);

afterAll(async () => {
  await context?.close();
  await cp?.close();
  await emu?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('console power controls in Chromium', () => {
  it('sets a BMC through the form, never shows its password, powers on, and asks before powering off', async () => {
    const [s1, s2] = SYSTEMS;
    expect((await metal('POST', '/devices', { mac: s1.mac })).status).toBe(201);
    expect(
      (await metal('POST', '/devices', { mac: s2.mac, bmc: { driver: 'redfish', url: `${emu.base}/redfish/v1/Systems/${s2.uuid}`, username: emu.username, password: emu.password } })).status,
    ).toBe(201);
    await page.goto(`${cp.urls.console}/machines/devices`);
    await page.getByTestId(`power-${macKey(s1.mac)}`).click();
    const dialog = page.getByTestId('power-dialog');
    await expect.poll(() => dialog.getByTestId('bmc-edit').textContent(), { timeout: 10_000 }).toBe('Configure BMC');
    // No BMC is a normal state (GET …/bmc answers 404 bmc_not_found): said as such, not shown as an error.
    expect(await dialog.textContent()).toContain('No BMC configured for this device.');
    expect(await dialog.textContent()).not.toContain('bmc_not_found');
    expect(await dialog.textContent()).not.toContain('has no BMC');
    await dialog.getByTestId('bmc-edit').click();
    await dialog.getByTestId('bmc-url').fill(`${emu.base}/redfish/v1/Systems/${s1.uuid}`);
    await dialog.getByTestId('bmc-username').fill(emu.username);
    await dialog.getByTestId('bmc-password').fill(emu.password);
    await dialog.getByTestId('bmc-save').click();
    await expect.poll(() => dialog.getByTestId('bmc-summary').textContent(), { timeout: 10_000 }).toContain('password set');
    // Editing again: the password field is empty, and the page holds the password nowhere.
    await dialog.getByTestId('bmc-edit').click();
    expect(await dialog.getByTestId('bmc-password').inputValue()).toBe('');
    expect(await page.content()).not.toContain(emu.password);
    await page.getByRole('button', { name: 'Cancel' }).first().click();
    expect(await axe('power-dialog')).toEqual([]);
    await page.screenshot({ path: join(artifacts, 'power-dialog.png'), fullPage: true });

    await dialog.getByTestId('power-network').uncheck();
    await dialog.getByTestId('power-on').click();
    await expect.poll(async () => ((await dialog.getByTestId('last-power').count()) ? dialog.getByTestId('last-power').textContent() : dialog.textContent()), { timeout: 10_000 }).toContain('on at');
    await waitFor('PowerState On in the emulator', async () => (await emu.system(s1.uuid)).PowerState, (s) => s === 'On', 20_000, 250);
    await dialog.getByTestId('power-off').click();
    const confirm = page.getByTestId('power-confirm');
    await expect.poll(() => confirm.isVisible()).toBe(true);
    expect(await confirm.textContent()).toContain('without a shutdown');
    await confirm.getByTestId('power-confirm-ok').click();
    await waitFor('PowerState Off in the emulator', async () => (await emu.system(s1.uuid)).PowerState, (s) => s === 'Off', 20_000, 250);
    await page.keyboard.press('Escape');
  }, 90_000);

  it('powers the selected devices from the list, one result each', async () => {
    await page.goto(`${cp.urls.console}/machines/devices`);
    // One device ticked, then the rest through select-all (the pool's shared table).
    await page.getByRole('checkbox', { name: `Select ${SYSTEMS[0].mac} for a power action` }).check();
    expect(await page.getByTestId('batch-power').getByRole('heading').textContent()).toBe('Power 1 selected device');
    await page.getByRole('checkbox', { name: 'Select all shown devices for a power action' }).check();
    for (const s of SYSTEMS) expect(await page.getByTestId(`pick-${macKey(s.mac)}`).isChecked()).toBe(true);
    const batch = page.getByTestId('batch-power');
    await expect.poll(() => batch.isVisible()).toBe(true);
    await batch.getByTestId('batch-power-action').selectOption('cycle');
    await batch.getByTestId('batch-power-run').click();
    await page.getByTestId('batch-power-confirm').getByTestId('batch-power-confirm-ok').click();
    const result = batch.getByTestId('batch-power-result');
    await expect.poll(() => result.locator('tbody tr').count(), { timeout: 20_000 }).toBe(2);
    expect(await result.textContent()).toContain('pending');
    for (const s of SYSTEMS) expect(await page.getByRole('table', { name: 'Power results' }).getByRole('row').filter({ hasText: s.mac }).textContent()).toMatch(/cycle \(network boot\).*pending/);
    await expect.poll(() => page.getByTestId(`last-power-${macKey(SYSTEMS[1].mac)}`).textContent(), { timeout: 10_000 }).toContain('cycle (network boot)');
    expect(await axe('batch-power')).toEqual([]);
    await page.screenshot({ path: join(artifacts, 'batch-power.png'), fullPage: true });
    for (const s of SYSTEMS) expect((await emu.system(s.uuid)).Boot).toMatchObject({ BootSourceOverrideTarget: 'Pxe' });
  }, 60_000);
});
