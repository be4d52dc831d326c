/**
 * Issue 24 in the web console, in a real Chromium (Debian's, through playwright-core) against a
 * real `ironlens serve`: a booted worker's host report, accelerators and boot timeline on its
 * page; address and "booted N s ago" in the workers list; selecting workers opens the bootstrap
 * wizard for them with role pickers only, whose preflight runs against a real sshd the worker
 * reported (port 22 of its own 127.x address). Screenshots go to `<repo>/.artifacts/`.
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newKey, randomLoopbackPrefix, TestSshd } from '@ironlens/clusters/bootstrap-testing';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { axeViolations } from '../testing/axe';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'console-workers-token';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-workers-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
const MAC_A = '52:54:00:24:0c:01';
const MAC_B = '52:54:00:24:0c:02';

let tmp: string;
let cp: Running;
let sshd: TestSshd;
let context: BrowserContext;
let page: Page;

async function metal(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(cp.urls.boot + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** axe-core's serious and critical violations on the page now (the full report goes beside the screenshots). */
const axe = (name: string) => axeViolations(page, join(artifacts, `axe-${name}.json`));

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), `ironlens-console-workers-${process.pid}-`));
  const dist = await buildWebAssets(join(tmp, 'dist'));
  const authorized = join(tmp, 'authorized_keys');
  writeFileSync(authorized, '');
  sshd = await TestSshd.start({ dir: join(tmp, 'sshd'), address: `${randomLoopbackPrefix()}2`, port: 22, hostKey: newKey(join(tmp, 'host')), authorizedKeys: authorized });
  cp = await serve(
    {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/root',
      IRONLENS_DATA_DIR: join(tmp, 'data'),
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_TOKEN: TOKEN,
      IPXE_CP_TOKEN: TOKEN,
      IRONLENS_WEB_DIST: dist,
      IPXE_CP_DNSMASQ_RELOAD: 'false',
    },
    () => {},
  );
  const pub = await fetch(`${cp.urls.console}/api/cluster/bootstrap/ssh-public-key`, { headers: { authorization: `Bearer ${TOKEN}` } });
  appendFileSync(authorized, `${((await pub.json()) as { publicKey: string }).publicKey}\n`);
  for (const [id, mac] of [
    ['gpu-01', MAC_A],
    ['gpu-02', MAC_B],
  ]) {
    await metal('POST', '/devices', { mac });
    await metal('POST', '/workers', { worker_id: id, mac });
  }
  // What iPXE and the host reporter do for gpu-01: device report, bound /boot-vars, host report.
  await fetch(`${cp.urls.boot}/devices/report?mac=${MAC_A}`);
  await fetch(`${cp.urls.boot}/boot-vars?mac=${MAC_A}&hostname=gpu-01`);
  const report = {
    mac: MAC_A,
    hostname: 'gpu-01',
    addresses: [{ interface: 'eth0', mac: MAC_A, ipv4: [sshd.address], ipv6: [] }],
    ssh_host_keys: [{ algorithm: 'ssh-ed25519', fingerprint: sshd.fingerprint }],
    os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' },
    kernel: '6.1.0-28-amd64',
    hardware: {
      cpu_model: 'Intel(R) Xeon(R) Platinum 8480+',
      cpus: 2,
      memory_bytes: 1700 * 1048576,
      disks: [{ name: 'sda', size_bytes: 4 * 1024 ** 3, model: 'LIO-ORG disk' }],
      nics: [{ name: 'eth0', mac: MAC_A, speed_mbps: 25000, driver: 'virtio_net' }],
      accelerators: [{ vendor: 'NVIDIA Corporation', model: 'NVIDIA H100 80GB HBM3', pci_id: '10de:2330', count: 8, memory_bytes: 81559 * 1048576 }],
    },
  };
  const res = await fetch(`${cp.urls.boot}/hosts/report`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(Math.floor(Date.now() / 1000)) },
    body: JSON.stringify(report),
  });
  expect(res.status).toBe(200);
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1280, height: 900 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${cp.urls.console}/machines/workers`);
  await page.getByTestId('token-input').fill(TOKEN);
  await page.getByTestId('token-submit').click();
}, 300_000);

afterAll(async () => {
  await context?.close();
  await cp?.close();
  await sshd?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('console: booted workers (issue 24)', () => {
  it('lists the address and "booted N s ago"; a worker that has not reported shows neither', async () => {
    await expect.poll(() => page.getByTestId('address-gpu-01').textContent(), { timeout: 15_000 }).toBe(sshd.address);
    expect(await page.getByTestId('booted-gpu-01').textContent()).toMatch(/^booted \d+ s ago$/);
    expect(await page.getByTestId('address-gpu-02').textContent()).toBe('—');
    expect(await page.getByTestId('booted-gpu-02').textContent()).toBe('—');
    await page.screenshot({ path: join(artifacts, 'workers-list.png'), fullPage: true });
  });

  it("shows the worker's host report, accelerators and boot timeline", async () => {
    await page.goto(`${cp.urls.console}/machines/workers/gpu-01`);
    await expect.poll(() => page.getByTestId('worker-address').textContent(), { timeout: 15_000 }).toBe(sshd.address);
    expect(await page.getByTestId('worker-os').textContent()).toBe('Debian GNU/Linux 12 (bookworm)');
    expect(await page.getByTestId('worker-host-keys').textContent()).toContain(sshd.fingerprint);
    expect(await page.getByTestId('worker-accelerators').textContent()).toContain('8 × NVIDIA H100 80GB HBM3');
    expect(await page.getByTestId('worker-boot-timeline').textContent()).toContain('/boot-vars answered');
    expect(await page.getByTestId('worker-boot-seconds').textContent()).toMatch(/^\d+(\.\d+)? s from the first event/);
    await page.screenshot({ path: join(artifacts, 'worker-page.png'), fullPage: true });
    expect(await axe('worker-page')).toEqual([]);
    // A fixed address: validated by the server (the error is shown), then saved and shown.
    await page.getByTestId('worker-fixed-address').fill('224.0.0.1');
    await page.getByTestId('worker-fixed-address-save').click();
    await expect.poll(() => page.getByTestId('worker-fixed-address-error').textContent(), { timeout: 10_000 }).toContain('unicast IPv4');
    await page.getByTestId('worker-fixed-address').fill('192.0.2.31');
    await page.getByTestId('worker-fixed-address-save').click();
    await expect.poll(() => page.getByTestId('worker-address').textContent(), { timeout: 10_000 }).toBe(`${sshd.address} (fixed 192.0.2.31)`);
  });

  it('opens the bootstrap wizard for the selected workers: role pickers, no address or fingerprint to type, preflight passes', async () => {
    await page.goto(`${cp.urls.console}/machines/workers`);
    await expect.poll(() => page.getByTestId('select-gpu-01').count(), { timeout: 15_000 }).toBe(1);
    await page.getByTestId('select-gpu-01').check();
    await page.getByTestId('workers-create-cluster').click();
    await expect.poll(() => page.getByTestId('worker-wizard').isVisible(), { timeout: 15_000 }).toBe(true);
    expect(new URL(page.url()).search).toBe('?workers=gpu-01');
    const row = page.getByTestId('wizard-worker-gpu-01');
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain(sshd.address);
    expect(await row.textContent()).toContain(sshd.fingerprint);
    // Nothing to type: the only inputs are the role pickers and the user name.
    expect(await page.getByTestId('worker-wizard').locator('input:not([type=checkbox])').count()).toBe(1);
    expect(await page.getByTestId('wizard-cp-gpu-01').isChecked()).toBe(true);
    await page.getByTestId('worker-wizard-preflight').click();
    await expect.poll(() => page.getByTestId('worker-preflight-gpu-01').textContent(), { timeout: 60_000 }).toContain('passed');
    await page.screenshot({ path: join(artifacts, 'worker-wizard.png'), fullPage: true });
    expect(await axe('worker-wizard')).toEqual([]);
  }, 90_000);
});
