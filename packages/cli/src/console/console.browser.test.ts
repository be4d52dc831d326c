/**
 * The web console in a real Chromium (Debian's, through playwright-core) against a real
 * `ironlens serve` (real store, both listeners), a real storage agent driving a real tgtd,
 * and the web assets built by Vite into a temporary directory. Screenshots and axe-core
 * reports go to `<repo>/.artifacts/console-<run>/`.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunningAgent, startAgent } from '@ironlens/agent';
import { freeTcpPort, type RunningTgtd, startTgtd, unusedControlPort } from '@ironlens/agent/testing';
import { exec } from '@ironlens/core';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { axeViolations } from '../testing/axe';

const CHROMIUM = '/usr/bin/chromium';
const CONSOLE_TOKEN = 'console-browser-token';
const CP_TOKEN = 'cp-browser-token';
const AGENT_TOKEN = 'agent-browser-token';
const BASE_IQN = 'iqn.2026-07.com.console';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);

let tmp: string;
let tgtd: RunningTgtd;
let agent: RunningAgent;
let cp: Running;
let consoleUrl: string;
let bootUrl: string;
let context: BrowserContext;
let page: Page;

// biome-ignore lint/suspicious/noExplicitAny: JSON answers of several shapes, read by the assertions
async function metal(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(bootUrl + path, {
    method,
    headers: { authorization: `Bearer ${CP_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** What iPXE sends: the machine reports itself, unauthenticated, on the provisioning listener. */
async function report(mac: string, fp: Record<string, string>): Promise<void> {
  const q = new URLSearchParams({ mac, ...fp });
  const res = await fetch(`${bootUrl}/devices/report?${q}`);
  expect(res.status).toBe(200);
}

const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

/** axe-core's serious and critical violations on the page now (the full report goes beside the screenshots). */
const axe = (name: string) => axeViolations(page, join(artifacts, `axe-${name}.json`));

const macKey = (m: string) => m.replace(/:/g, '');

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), 'ironlens-console-browser-'));
  const dist = await buildWebAssets(join(tmp, 'dist'));
  const diskDir = join(tmp, 'images');
  mkdirSync(diskDir);
  writeFileSync(join(diskDir, '_tpl_ubuntu_2204.img'), Buffer.alloc(4 * 1024 * 1024, 7));
  writeFileSync(join(diskDir, 'Win11_24H2.iso'), Buffer.alloc(1024 * 1024, 1));
  const iscsiPort = await freeTcpPort();
  tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `127.0.0.1:${iscsiPort}` });
  agent = await startAgent({
    IPXE_AGENT_TOKEN: AGENT_TOKEN,
    DISK_DIR: diskDir,
    IPXE_AGENT_BACKEND: 'stgt',
    IPXE_AGENT_BASE_IQN: BASE_IQN,
    IPXE_AGENT_TGT_CONTROL_PORT: String(tgtd.controlPort),
    IRONLENS_AGENT_LISTEN: '127.0.0.1:0',
    IRONLENS_LOG_LEVEL: 'silent',
  });
  cp = await serve({
    IRONLENS_DATA_DIR: join(tmp, 'data'),
    IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: CONSOLE_TOKEN,
    IRONLENS_WEB_DIST: dist,
    IPXE_CP_TOKEN: CP_TOKEN,
    IPXE_CP_DNSMASQ_RELOAD: 'false',
    IPXE_CP_AGENT_TIMEOUT: '5',
  });
  consoleUrl = cp.urls.console;
  bootUrl = cp.urls.boot;
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1280, height: 800 },
  });
  page = context.pages()[0] ?? (await context.newPage());
}, 300_000);

afterAll(async () => {
  await context?.close();
  await cp?.close();
  await agent?.close();
  await tgtd?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('web console in Chromium', () => {
  it('asks for the console token once on 401, keeps it in sessionStorage only, refuses a wrong one', async () => {
    await page.goto(`${consoleUrl}/machines/devices`);
    await expect.poll(() => page.getByTestId('token-prompt').isVisible(), { timeout: 10_000 }).toBe(true);
    await shot('token-prompt');
    await page.getByTestId('token-input').fill('wrong-token');
    await page.getByTestId('token-submit').click();
    await expect.poll(() => page.getByTestId('token-rejected').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.getByTestId('token-input').fill(CONSOLE_TOKEN);
    await page.getByTestId('token-submit').click();
    await expect.poll(() => page.getByTestId('devices-table').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.evaluate(() => sessionStorage.getItem('ironlens.console.token'))).toBe(CONSOLE_TOKEN);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    // A reload in the same tab keeps it: no second prompt.
    await page.reload();
    await expect.poll(() => page.getByTestId('devices-table').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.getByTestId('token-prompt').count()).toBe(0);
  });

  it('shows a device reported by /devices/report without a reload, with its fingerprint', async () => {
    await page.goto(`${consoleUrl}/machines/devices`);
    await expect.poll(() => page.getByTestId('device-count').textContent(), { timeout: 10_000 }).toBe('0 of 0');
    await report('00:0c:29:aa:bb:01', { manufacturer: 'Supermicro', product: 'SYS-1029U', serial: 'SN-0001', cpumodel: 'Xeon Gold 6230', 'mem-total': '65536', chip: 'e1000', platform: 'efi' });
    const row = page.getByTestId(`device-row-${macKey('00:0c:29:aa:bb:01')}`);
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    const text = await row.textContent();
    expect(text).toContain('pooled');
    expect(text).toContain('Supermicro');
    expect(text).toContain('SYS-1029U');
    expect(text).toContain('SN-0001');
    expect(text).toContain('64 GiB');
    // The firmware it booted with, and where its boot stopped (issue 30).
    expect(await page.getByTestId(`firmware-${macKey('00:0c:29:aa:bb:01')}`).textContent()).toBe('UEFI');
    expect(await page.getByTestId(`last-boot-${macKey('00:0c:29:aa:bb:01')}`).textContent()).toMatch(/^iPXE report; in the pool: reboots until bound to a worker/);
    // Search by serial and by a MAC written another way.
    await report('00:0c:29:aa:bb:02', { serial: 'SN-0002' });
    await expect.poll(() => page.getByTestId('device-count').textContent(), { timeout: 10_000 }).toBe('2 of 2');
    await page.getByTestId('device-search').fill('sn-0002');
    await expect.poll(() => page.getByTestId('device-count').textContent()).toBe('1 of 2');
    await page.getByTestId('device-search').fill('000C29AABB01');
    await expect.poll(() => page.getByTestId('device-count').textContent()).toBe('1 of 2');
    await page.getByTestId('device-search').fill('');
    await shot('devices');
  });

  it('creates a worker and binds a device to it; a re-bind spells out its consequence and needs force', async () => {
    await page.goto(`${consoleUrl}/machines/workers`);
    await page.getByTestId('worker-create-open').click();
    await page.getByTestId('worker-id').fill('worker-01');
    await page.getByTestId('worker-create-submit').click();
    await expect.poll(() => page.getByTestId('worker-row-worker-01').count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => page.getByTestId('readiness-worker-01').textContent()).toBe('idle');

    await page.goto(`${consoleUrl}/machines/devices`);
    await page.getByTestId(`bind-${macKey('00:0c:29:aa:bb:01')}`).click();
    await page.getByTestId('bind-worker').selectOption('worker-01');
    expect(await page.getByTestId('force-consequence').count()).toBe(0);
    await page.getByTestId('bind-submit').click();
    const row1 = page.getByTestId(`device-row-${macKey('00:0c:29:aa:bb:01')}`);
    await expect.poll(() => row1.textContent(), { timeout: 10_000 }).toContain('worker-01');
    expect(await row1.textContent()).toContain('bound');

    // The second device onto the same worker: a re-bind.
    await page.getByTestId(`bind-${macKey('00:0c:29:aa:bb:02')}`).click();
    await page.getByTestId('bind-worker').selectOption('worker-01');
    const consequence = page.getByTestId('force-consequence');
    await expect.poll(() => consequence.isVisible()).toBe(true);
    expect(await consequence.textContent()).toContain('00:0c:29:aa:bb:01');
    expect(await consequence.textContent()).toContain('goes back to the pool');
    expect(await page.getByTestId('bind-submit').isDisabled()).toBe(true);
    await shot('force-rebind');
    await page.getByTestId('bind-force').check();
    await page.getByTestId('bind-submit').click();
    const row2 = page.getByTestId(`device-row-${macKey('00:0c:29:aa:bb:02')}`);
    await expect.poll(() => row2.textContent(), { timeout: 10_000 }).toContain('worker-01');
    await expect.poll(() => row1.textContent(), { timeout: 10_000 }).toContain('pooled');
    const devices = await metal('GET', '/devices');
    expect(devices.map((d: { mac: string; state: string; bound_worker_id: string | null }) => [d.mac, d.state, d.bound_worker_id])).toEqual([
      ['00:0c:29:aa:bb:01', 'pooled', null],
      ['00:0c:29:aa:bb:02', 'bound', 'worker-01'],
    ]);
  });

  it('shows an API error with its message', async () => {
    await page.goto(`${consoleUrl}/machines/workers`);
    await page.getByTestId('worker-create-open').click();
    await page.getByTestId('worker-id').fill('worker-01');
    await page.getByTestId('worker-create-submit').click();
    await expect.poll(() => page.getByTestId('worker-create-error').textContent(), { timeout: 10_000 }).toContain('worker-01');
    await page.keyboard.press('Escape');
  });

  it('previews a batch bind with a conflict, a missing device and a fingerprint mismatch highlighted, then binds and shows each row', async () => {
    await report('00:0c:29:aa:bb:03', { serial: 'SN-0003', manufacturer: 'Dell' });
    await report('00:0c:29:aa:bb:04', { serial: 'SN-0004' });
    await metal('POST', '/workers', { worker_id: 'worker-03' });
    await metal('POST', '/workers', { worker_id: 'worker-04' });
    await metal('POST', '/workers', { worker_id: 'worker-05' });
    await page.goto(`${consoleUrl}/machines/devices`);
    await page.getByTestId('batch-toggle').click();
    const manifest = [
      'mac,worker_id,serial',
      '00:0c:29:aa:bb:03,worker-03,SN-0003',
      '00:0c:29:aa:bb:04,worker-04,SN-WRONG',
      '00:0c:29:aa:bb:02,worker-05,', // bound to worker-01 already: a conflict
      '00:0c:29:aa:bb:99,worker-06,', // never reported: not found
    ].join('\n');
    // Uploaded as a file (pasting fills the same text area).
    await page.getByTestId('batch-file').setInputFiles({ name: 'pairs.csv', mimeType: 'text/csv', buffer: Buffer.from(manifest) });
    await expect.poll(() => page.getByTestId('batch-text').inputValue()).toBe(manifest);
    await page.getByTestId('batch-preview').click();
    await expect.poll(() => page.getByTestId('batch-summary').textContent(), { timeout: 10_000 }).toContain('4 pairs: 2 can be bound, 1 in conflict, 1 not found');
    const conflict = page.getByTestId('preview-row-conflict');
    expect(await conflict.textContent()).toContain('already bound to worker-01');
    expect(await conflict.evaluate((el) => getComputedStyle(el.querySelector('td')!).backgroundColor)).toBe('rgb(253, 230, 227)');
    expect(await page.getByTestId('preview-row-not_found').textContent()).toContain('not in pool');
    expect(await page.getByTestId('preview-row-mismatch').textContent()).toContain('serial');
    expect(await page.getByTestId('preview-row-ok').textContent()).toContain('worker-03');
    // Nothing written by the preview.
    expect((await metal('GET', '/devices?state=bound')).length).toBe(1);
    await shot('batch-preview');
    await page.getByTestId('batch-execute').click();
    await expect.poll(() => page.getByTestId('batch-result-summary').textContent(), { timeout: 10_000 }).toBe('2 bound, 1 skipped, 1 failed.');
    expect(await page.getByTestId('result-row-skipped').textContent()).toContain('already bound to worker-01');
    expect(await page.getByTestId('result-row-failed').textContent()).toContain('00:0c:29:aa:bb:99');
    await shot('batch-result');
    await expect.poll(() => page.getByTestId(`device-row-${macKey('00:0c:29:aa:bb:04')}`).textContent(), { timeout: 10_000 }).toContain('worker-04');
  });

  it('probes a storage agent before registering it and shows its live health; the token is never shown', async () => {
    await page.goto(`${consoleUrl}/machines/storage`);
    await page.getByTestId('agent-url').fill(agent.url);
    await page.getByTestId('agent-token').fill('wrong');
    await page.getByTestId('agent-probe').click();
    await expect.poll(() => page.getByTestId('agent-register-error').textContent(), { timeout: 10_000 }).toContain('agent probe failed');
    await page.getByTestId('agent-token').fill(AGENT_TOKEN);
    await page.getByTestId('agent-probe').click();
    const probe = page.getByTestId('agent-probe-result');
    await expect.poll(() => probe.isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await probe.textContent()).toContain(BASE_IQN);
    await page.getByTestId('agent-id').fill('storage-01');
    await page.getByTestId('agent-register-submit').click();
    await expect.poll(() => page.getByTestId('agent-health-storage-01').textContent(), { timeout: 15_000 }).toBe('ok');
    expect(await page.getByTestId('agent-row-storage-01').textContent()).toContain('backend: stgt');
    expect(await page.content()).not.toContain(AGENT_TOKEN);
    await page.getByTestId('agent-edit-storage-01').click();
    expect(await page.getByTestId('agent-edit-token').inputValue()).toBe('');
    await page.getByTestId('agent-edit-save').click();
    await expect.poll(() => page.getByTestId('agent-edit').isVisible()).toBe(false);
    await page.getByTestId('agent-luns-storage-01').click();
    await expect.poll(() => page.getByTestId('luns-table').textContent(), { timeout: 10_000 }).toContain('No targets');
    await page.getByTestId('cd-iso').fill('Win11_24H2.iso');
    await page.getByTestId('cd-create').click();
    await expect.poll(() => page.getByTestId('luns-table').textContent(), { timeout: 15_000 }).toContain('Win11_24H2.iso');
    const cdIqn = (await metal('GET', '/agents/storage-01/luns'))[0].iqn;
    await page.getByRole('button', { name: `Delete target ${cdIqn}` }).click();
    await expect.poll(() => page.getByTestId('luns-table').textContent(), { timeout: 10_000 }).toContain('No targets');
    // An ISO the agent does not have: the agent's own message.
    await page.getByTestId('cd-iso').fill('missing.iso');
    await page.getByTestId('cd-create').click();
    await expect.poll(() => page.getByTestId('luns-error').textContent(), { timeout: 15_000 }).toContain('storage-01');
    await shot('storage');
  });

  it('gives the selected workers system disks from a master, assigned to the agent, and shows them ready', async () => {
    await page.goto(`${consoleUrl}/machines/workers`);
    await expect.poll(() => page.getByTestId('worker-row-worker-03').count(), { timeout: 10_000 }).toBe(1);
    await page.getByTestId('select-worker-01').check();
    await page.getByTestId('select-worker-03').check();
    await expect.poll(() => page.getByTestId('take-over-storage-01').isEnabled(), { timeout: 10_000 }).toBe(true);
    // Drag one worker onto the agent…
    await page.getByTestId('chip-worker-01').dragTo(page.getByTestId('lane-storage-01'));
    await expect.poll(() => page.getByTestId('lane-storage-01').textContent()).toContain('worker-01');
    expect(await page.getByTestId('lane-unassigned').textContent()).toContain('worker-03');
    // …and let the agent take over the rest of the selection.
    await page.getByTestId('take-over-storage-01').click();
    await expect.poll(() => page.getByTestId('lane-storage-01').textContent()).toContain('worker-03');
    await expect.poll(() => page.getByTestId('disk-master').locator('option').allTextContents(), { timeout: 10_000 }).toContain('_tpl_ubuntu_2204.img');
    await page.getByTestId('disk-master').selectOption('_tpl_ubuntu_2204.img');
    await shot('batch-disks');
    await page.getByTestId('disks-create').click();
    const result = page.getByTestId('disks-result');
    await expect.poll(() => result.isVisible(), { timeout: 60_000 }).toBe(true);
    expect(await result.textContent()).toContain(`${BASE_IQN}:worker-01.ubuntu`);
    expect(await result.textContent()).toContain(`${BASE_IQN}:worker-03.ubuntu`);
    await expect.poll(() => page.getByTestId('readiness-worker-01').textContent(), { timeout: 10_000 }).toBe('ready');
    // The targets exist in tgtd.
    const show = (await exec(['tgtadm', '-C', String(tgtd.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show'])).stdout;
    expect(show).toContain(`${BASE_IQN}:worker-01.ubuntu`);

    await page.goto(`${consoleUrl}/machines/workers/worker-01`);
    await expect.poll(() => page.getByTestId('disk-ubuntu').textContent(), { timeout: 10_000 }).toContain('master _tpl_ubuntu_2204.img');
    await expect.poll(() => page.getByTestId('worker-status').textContent(), { timeout: 10_000 }).toContain('target present');
    await expect.poll(() => page.getByTestId('worker-default-os').textContent()).toBe('ubuntu');
    await page.getByTestId('boot-menu-default').selectOption('menu-diag');
    await page.getByTestId('boot-menu-timeout').fill('3000');
    await page.getByTestId('boot-save').click();
    await expect.poll(async () => (await metal('GET', '/workers/worker-01')).boot, { timeout: 10_000 }).toEqual({ menu_default: 'menu-diag', menu_timeout: 3000 });
    await shot('worker');
  });

  it('pages the operations log and filters it by MAC', async () => {
    await page.goto(`${consoleUrl}/machines/operations`);
    await page.getByTestId('ops-mac').fill('00:0c:29:aa:bb:02');
    await page.getByTestId('ops-filter').click();
    const table = page.getByTestId('ops-table');
    await expect.poll(() => table.textContent(), { timeout: 10_000 }).toContain('device.bind');
    expect(await table.textContent()).not.toContain('00:0c:29:aa:bb:03');
    await shot('operations');
  });

  it('toggles auto-register', async () => {
    await page.goto(`${consoleUrl}/machines/devices`);
    await expect.poll(() => page.getByTestId('auto-register-state').textContent(), { timeout: 10_000 }).toBe('on');
    await page.getByTestId('auto-register').click();
    await expect.poll(() => page.getByTestId('auto-register-state').textContent(), { timeout: 10_000 }).toBe('off');
    expect(await metal('GET', '/settings/auto-register')).toEqual({ enabled: false });
    await page.getByTestId('auto-register').click();
    await expect.poll(() => page.getByTestId('auto-register-state').textContent(), { timeout: 10_000 }).toBe('on');
  });

  it('frames the kind panel in the same navigation, with the same token', async () => {
    await page.goto(`${consoleUrl}/local-clusters`);
    const frame = page.frameLocator('[data-testid="kind-frame"]');
    await expect.poll(() => frame.getByTestId('environment').isVisible(), { timeout: 15_000 }).toBe(true);
    expect(await frame.getByTestId('token-prompt').count()).toBe(0);
    expect(await page.getByTestId('nav-kind-panel').getAttribute('href')).toBe('/kind/');
  });

  const PAGES = [
    ['devices', '/machines/devices', 'devices-table'],
    ['workers', '/machines/workers', 'workers-table'],
    ['worker', '/machines/workers/worker-01', 'worker-disks'],
    ['storage', '/machines/storage', 'agents-table'],
    ['operations', '/machines/operations', 'ops-table'],
    ['clusters', '/clusters', null],
    ['cluster-new', '/clusters/new', null],
    ['cluster', '/clusters/nope', null],
    ['bootstrap', '/bootstrap', null],
    ['bootstrap-run', '/bootstrap/nope', null],
    ['local-clusters', '/local-clusters', 'kind-frame'],
  ] as const;

  it('has no serious or critical axe-core violation on any page, at 1280×800', async () => {
    const found: Record<string, unknown> = {};
    for (const [name, path, ready] of PAGES) {
      await page.goto(consoleUrl + path);
      if (ready) await expect.poll(() => page.getByTestId(ready).isVisible(), { timeout: 10_000 }).toBe(true);
      await page.waitForTimeout(300);
      await shot(`page-${name}`);
      const v = await axe(name);
      if (v.length) found[name] = v;
    }
    expect(found).toEqual({});
  });

  it('is usable at 390 px: the navigation opens from the menu button, every page reachable, no axe violation', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${consoleUrl}/machines/devices`);
      await expect.poll(() => page.getByTestId('devices-table').isVisible(), { timeout: 10_000 }).toBe(true);
      expect(await page.getByRole('navigation', { name: 'Console' }).isVisible()).toBe(false);
      // Keyboard only: Tab to the menu button, open it, follow a link.
      await page.getByTestId('menu-toggle').focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => page.getByRole('navigation', { name: 'Console' }).isVisible()).toBe(true);
      await shot('narrow-menu');
      await page.getByTestId('nav-machines-workers').focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => page.url()).toBe(`${consoleUrl}/machines/workers`);
      await expect.poll(() => page.getByTestId('workers-table').isVisible(), { timeout: 10_000 }).toBe(true);
      // No page scrolls sideways as a whole (wide tables scroll inside their own box).
      const found: Record<string, unknown> = {};
      for (const [name, path, ready] of PAGES) {
        await page.goto(consoleUrl + path);
        if (ready) await expect.poll(() => page.getByTestId(ready).isVisible(), { timeout: 10_000 }).toBe(true);
        await page.waitForTimeout(300);
        expect(await page.evaluate(() => document.documentElement.scrollWidth), name).toBeLessThanOrEqual(390);
        await shot(`narrow-${name}`);
        const v = await axe(`narrow-${name}`);
        if (v.length) found[name] = v;
      }
      expect(found).toEqual({});
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('forgets the token on request: the next call asks again', async () => {
    await page.goto(`${consoleUrl}/machines/devices`);
    await expect.poll(() => page.getByTestId('devices-table').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.getByTestId('forget-token').click();
    expect(await page.evaluate(() => sessionStorage.getItem('ironlens.console.token'))).toBeNull();
    await expect.poll(() => page.getByTestId('token-prompt').isVisible(), { timeout: 10_000 }).toBe(true);
    await page.getByTestId('token-input').fill(CONSOLE_TOKEN);
    await page.getByTestId('token-submit').click();
    await expect.poll(() => page.getByTestId('devices-table').isVisible(), { timeout: 10_000 }).toBe(true);
  });
});
