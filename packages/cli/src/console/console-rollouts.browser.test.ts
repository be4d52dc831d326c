/**
 * The console's rollouts (issue 31) in headless Chromium, against `ironlens serve` and the storage
 * agent's stand-in (FakeAgent: it lists the masters, and refuses the new disk, so the worker is
 * rolled back before anything reboots): a rollout started from the form, its batch and worker
 * shown with the phase and the reason it paused, resume and abort from its page, the worker's
 * image history and its drift with the reconcile button; axe-core on both pages.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeAgent } from '@ironlens/metal/testing';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { axeViolations } from '../testing/axe';

const CHROMIUM = '/usr/bin/chromium';
const CONSOLE_TOKEN = 'console-rollouts-token';
const CP_TOKEN = 'cp-rollouts-token';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-rollouts-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
const A = '_tpl_a.img';
const B = '_tpl_b.img';

let tmp: string;
let agent: FakeAgent;
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

const axe = (name: string) => axeViolations(page, join(artifacts, `axe-${name}.json`));

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), `ironlens-console-rollouts-${process.pid}-`));
  agent = await new FakeAgent({ masters: [A, B] }).start();
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
  expect((await metal('POST', '/agents', { id: 'ag1', base_url: agent.url, role: { disk: true, cd: false } })).status).toBe(201);
  for (const [i, id] of ['gpu-01', 'gpu-02'].entries()) {
    const mac = `52:54:00:31:b0:0${i + 1}`;
    expect((await metal('POST', '/devices', { mac })).status).toBe(201);
    expect((await metal('POST', '/workers', { worker_id: id, mac })).status).toBe(200);
    expect((await metal('POST', `/workers/${id}/luns/disk`, { type: 'master', os: 'debian', name: A })).status).toBe(200);
    expect((await metal('PUT', `/workers/${id}/default-os`, { os: 'debian' })).status).toBe(200);
  }
  // The new disk is refused: the worker is rolled back before any reboot, and the rollout pauses.
  agent.handlers.set('POST /luns/disk', (_call, res) => {
    res.writeHead(507, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ detail: 'no space left on the storage node' }));
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
  await agent?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('console rollouts in Chromium', () => {
  it('starts a rollout from the form, shows its batches and why it paused, resumes and aborts it', async () => {
    await page.goto(`${cp.urls.console}/machines/rollouts`);
    await page.getByTestId('rollout-workers').fill('gpu-01 gpu-02');
    await page.getByTestId('rollout-master').selectOption(B);
    await page.getByTestId('rollout-max-unavailable').fill('50%');
    await page.getByTestId('rollout-create').click();
    await page.waitForURL(/\/machines\/rollouts\/ro-[0-9a-f]{12}$/);
    await page.getByTestId('rollout-state').filter({ hasText: 'paused' }).waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('rollout-reason').textContent()).toMatch(/^batch 1: gpu-01 was rolled back: /);
    expect(await page.getByTestId('rollout-worker-gpu-01').getAttribute('data-phase')).toBe('rolled_back');
    expect(await page.getByTestId('rollout-worker-gpu-02').getAttribute('data-phase')).toBe('queued');
    expect(await page.getByTestId('rollout-batch-1').textContent()).toContain('gpu-02');
    expect(await axe('rollout')).toEqual([]);
    writeFileSync(join(artifacts, 'rollout.png'), await page.screenshot({ fullPage: true }));

    // Resume retries gpu-01 (refused again: paused again); abort ends it, gpu-02 never touched.
    await page.getByTestId('rollout-resume').click();
    await page.getByTestId('rollout-state').filter({ hasText: 'paused' }).waitFor({ timeout: 30_000 });
    await page.getByTestId('rollout-abort').click();
    await page.getByTestId('rollout-state').filter({ hasText: 'aborted' }).waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('rollout-worker-gpu-02').getAttribute('data-phase')).toBe('queued');

    await page.goto(`${cp.urls.console}/machines/rollouts`);
    const row = page.locator('[data-testid^="rollout-ro-"]');
    await row.first().waitFor();
    expect(await row.first().getAttribute('data-state')).toBe('aborted');
    expect(await axe('rollouts')).toEqual([]);
  });

  it("shows a worker's image history, and its drift with a reconcile that fixes it", async () => {
    agent.dropTarget('iqn.2026-07.com.controller:gpu-02.debian');
    await page.goto(`${cp.urls.console}/machines/workers/gpu-02`);
    await page.getByTestId('worker-drift').waitFor({ timeout: 30_000 });
    expect(await page.locator('[data-testid="worker-drift"] li').getAttribute('data-kind')).toBe('target_missing');
    await page.getByTestId('worker-reconcile').click();
    await page.getByTestId('worker-drift-none').waitFor({ timeout: 30_000 });
    expect(agent.targets.has('iqn.2026-07.com.controller:gpu-02.debian')).toBe(true);
    const history = page.getByTestId('worker-image-history').locator('tbody tr');
    expect(await history.count()).toBe(1);
    expect(await history.first().getAttribute('data-outcome')).toBe('created');
    await page.goto(`${cp.urls.console}/machines/workers/gpu-01`);
    const h1 = page.getByTestId('worker-image-history').locator('tbody tr');
    await h1.nth(2).waitFor();
    expect(await h1.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-outcome')))).toEqual(['rolled_back', 'rolled_back', 'created']);
    expect(await axe('worker-history')).toEqual([]);
  });
});
