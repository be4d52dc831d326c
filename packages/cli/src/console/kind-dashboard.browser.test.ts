import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp } from '@ironlens/core';
import { artifactPath } from '@ironlens/core/testing';
import { buildKindApp, kindPlugin } from '@ironlens/kind';
import { newTestPanel, startTagsFixture, type TestPanel } from '@ironlens/kind/testing/panel';
import { buildWebAssets } from '@ironlens/web';
import type { FastifyInstance } from 'fastify';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from '../testing/axe';

// The kind dashboard in a real headless Chromium (Debian's), against the panel running over
// stand-in kind/kubectl/docker. The web assets are built by Vite into a temporary directory.
// It lives here, in the CLI package that depends on both `@ironlens/kind` and `@ironlens/web`,
// so that kind does not depend on web (web takes kind's API types).
const CHROMIUM = '/usr/bin/chromium';

let tmp: string;
let dist: string;
let panel: TestPanel;
let app: FastifyInstance;
let mounted: FastifyInstance;
let baseUrl: string;
let mountedUrl: string;
let guarded: FastifyInstance;
let guardedUrl: string;
const TOKEN = 'browser-console-token';
let context: BrowserContext;
let page: Page;
let tags: Awaited<ReturnType<typeof startTagsFixture>>;

/** axe-core's serious and critical violations on `on` (the full report goes to the artifacts). */
const axe = (on: Page, name: string) => axeViolations(on, artifactPath(`kind-axe-${name}`, '.json'));

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'ironlens-kind-browser-'));
  dist = await buildWebAssets(join(tmp, 'dist'));
  tags = await startTagsFixture([['v1.32.0', 'v1.31.0', 'latest', 'v1.30.4-rc.0', 'v1.30.4']]);
  panel = await newTestPanel({
    webDist: dist,
    env: {
      KIND_K8S_SKIP_VERSION_LIST: '0',
      KIND_K8S_TAGS_URL: tags.url,
      STANDIN_KIND_STEP_MS: '250',
      STANDIN_KIND_HANG_AT: 'Starting control-plane',
      STANDIN_KIND_HANG_NAME: 'stuck',
    },
  });
  // The standalone layout (ironlens kind): its own listener, app built like production.
  app = await buildKindApp({ services: panel.runtime.services, webDist: dist });
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  // The layout inside ironlens serve: mounted under /kind.
  mounted = await createHttpApp({ title: 'console' });
  await mounted.register(kindPlugin, { prefix: '/kind', services: panel.runtime.services, webDist: dist });
  mountedUrl = await mounted.listen({ host: '127.0.0.1', port: 0 });
  // The same layout with a console token (KIND_K8S_TOKEN / IRONLENS_CONSOLE_TOKEN).
  guarded = await buildKindApp({ services: panel.runtime.services, webDist: dist, token: TOKEN });
  guardedUrl = await guarded.listen({ host: '127.0.0.1', port: 0 });

  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1280, height: 900 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('dialog', (d) => void d.accept());
}, 240_000);

afterAll(async () => {
  await context?.close();
  await app?.close();
  await mounted?.close();
  await guarded?.close();
  await panel?.close();
  await tags?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('kind dashboard in Chromium', () => {
  it('shows the environment, stats and the registry’s versions', async () => {
    await page.goto(`${baseUrl}/`);
    const env = page.getByTestId('environment');
    await expect.poll(() => env.locator('.badge').first().textContent()).toBe('ok');
    await expect.poll(() => env.textContent()).toContain('kubectl on PATH');
    await expect.poll(() => page.getByTestId('create-version').locator('option').allTextContents()).toEqual(['kind default', 'v1.32.0', 'v1.31.0', 'v1.30.4']);
    await expect.poll(() => page.getByTestId('stats').textContent()).toContain('kind clusters0');
  });

  it('creates a cluster from the form and follows its progress to success', async () => {
    await page.goto(`${baseUrl}/`);
    await page.getByTestId('create-name').fill('web1');
    await expect.poll(() => page.getByTestId('create-version').locator('option').count()).toBe(4);
    await page.getByTestId('create-version').selectOption('v1.31.0');
    await page.getByTestId('create-workers').fill('2');
    await page.getByTestId('create-submit').click();

    const live = page.getByTestId('create-job');
    // Progress is visible while kind runs, stage by stage.
    await expect.poll(() => page.getByTestId('create-progress-stage').textContent(), { timeout: 15_000 }).toMatch(/^kind create cluster: /);
    const percent = Number((await page.getByTestId('create-progress-percent').textContent())?.replace('%', ''));
    expect(percent).toBeGreaterThan(0);
    expect(percent).toBeLessThan(100);
    await page.screenshot({ path: artifactPath('kind-dashboard-progress', '.png'), fullPage: true });

    await expect.poll(() => live.getAttribute('data-status'), { timeout: 20_000 }).toBe('success');
    await expect.poll(() => live.textContent()).toContain('Cluster created');
    const row = page.getByTestId('cluster-row-web1');
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => row.textContent()).toContain('v1.31.0');
    expect(await row.getByRole('link', { name: 'download' }).getAttribute('href')).toBe('/api/v1/clusters/web1/kubeconfig');
    await expect.poll(() => page.getByTestId('jobs-table').textContent(), { timeout: 10_000 }).toContain('web1');

    const kindCreate = panel.standins.calls('kind').find((c) => c.args[0] === 'create' && c.args.includes('web1'));
    expect(kindCreate?.args).toEqual(['create', 'cluster', '--name', 'web1', '--config', join(panel.clustersDir, 'web1', 'kind-config.yaml')]);
  });

  it('has no serious or critical axe-core violation (WCAG contrast included) on /kind/, standalone and mounted', async () => {
    for (const [name, url] of [
      ['standalone', `${baseUrl}/`],
      ['mounted', `${mountedUrl}/kind/`],
    ] as const) {
      await page.goto(url);
      // The states with the most colour: the status badge, the engine's warning banner, the job and cluster rows.
      await expect.poll(() => page.getByTestId('environment').locator('.badge').first().textContent()).toBe('ok');
      await expect.poll(() => page.getByTestId('cluster-row-web1').count(), { timeout: 10_000 }).toBe(1);
      await expect.poll(() => page.getByTestId('jobs-table').textContent(), { timeout: 10_000 }).toContain('web1');
      expect(await axe(page, name)).toEqual([]);
    }
    // The warning banner and the warning badge: the engine answers with a detail (as a stopped daemon does).
    await page.route('**/api/v1/health', async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      await route.fulfill({ response: res, json: { ...body, status: 'degraded', container_engine_ok: false, container_engine_detail: 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' } });
    });
    try {
      await page.goto(`${baseUrl}/`);
      await expect.poll(() => page.getByTestId('environment').locator('.env-detail').textContent()).toContain('Cannot connect');
      await expect.poll(() => page.getByTestId('environment').locator('.badge').first().textContent()).toBe('degraded');
      expect(await axe(page, 'degraded')).toEqual([]);
    } finally {
      await page.unroute('**/api/v1/health');
    }
  });

  it('opens the nodes and pods modal for a cluster', async () => {
    await page.goto(`${baseUrl}/`);
    await page.getByTestId('workloads-web1').click();
    const modal = page.getByTestId('workloads-modal');
    await expect.poll(() => modal.isVisible()).toBe(true);
    await expect.poll(() => page.getByTestId('workloads-nodes').textContent()).toContain('web1-worker2');
    await expect.poll(() => page.getByTestId('workloads-pods').textContent()).toContain('etcd-web1-control-plane');
    await page.screenshot({ path: artifactPath('kind-dashboard-modal', '.png'), fullPage: false });
    await page.keyboard.press('Escape');
    await expect.poll(() => modal.count()).toBe(0);
  });

  it('cancels a running creation with the cancel button', async () => {
    await page.goto(`${baseUrl}/`);
    await page.getByTestId('create-name').fill('stuck');
    await page.getByTestId('create-workers').fill('0');
    await page.getByTestId('create-submit').click();
    await expect.poll(() => page.getByTestId('create-progress-stage').textContent(), { timeout: 15_000 }).toBe('kind create cluster: Starting control-plane');
    await page.getByTestId('create-cancel').click();
    const live = page.getByTestId('create-job');
    await expect.poll(() => live.getAttribute('data-status'), { timeout: 15_000 }).toBe('cancelled');
    const jobs = await (await fetch(`${baseUrl}/api/v1/jobs`)).json();
    expect(jobs[0]).toMatchObject({ cluster_name: 'stuck', status: 'cancelled' });
    expect(panel.standins.calls('kind').map((c) => c.args)).toContainEqual(['delete', 'cluster', '--name', 'stuck']);
    expect(panel.standins.clusters()).toEqual(['web1']);
    await page.screenshot({ path: artifactPath('kind-dashboard', '.png'), fullPage: true });
  });

  it('opens Swagger, ReDoc and Health in their own named windows, reusing them on a second click', async () => {
    await page.goto(`${baseUrl}/`);
    for (const [button, name, path] of [
      ['nav-swagger', 'kind_swagger', '/docs'],
      ['nav-redoc', 'kind_redoc', '/redoc'],
      ['nav-health', 'kind_health', '/api/v1/health'],
    ] as const) {
      const [popup] = await Promise.all([context.waitForEvent('page'), page.getByTestId(button).click()]);
      await popup.waitForLoadState();
      expect(new URL(popup.url()).pathname.replace(/\/$/, '')).toBe(path);
      expect(await popup.evaluate(() => window.name)).toBe(name);
      const before = context.pages().length;
      await page.getByTestId(button).click();
      await page.waitForTimeout(300);
      expect(context.pages().length).toBe(before);
    }
    const health = context.pages().find((p) => p.url().endsWith('/api/v1/health'))!;
    expect(JSON.parse((await health.textContent('body')) ?? '{}')).toMatchObject({ status: 'ok' });
    for (const p of context.pages()) if (p !== page) await p.close();
  });

  it('works mounted under /kind with the API base taken from the page', async () => {
    await page.goto(`${mountedUrl}/kind/`);
    await expect.poll(() => page.evaluate(() => document.body.dataset.apiBase)).toBe('/kind/api/v1');
    await expect.poll(() => page.getByTestId('cluster-row-web1').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByTestId('cluster-row-web1').getByRole('link', { name: 'download' }).getAttribute('href')).toBe('/kind/api/v1/clusters/web1/kubeconfig');
  });

  it('asks for the console token when the API answers 401, then works with it, downloads the kubeconfig with it, and forgets it', async () => {
    const tab = await context.newPage();
    try {
      await tab.goto(`${guardedUrl}/`);
      const prompt = tab.getByTestId('token-prompt');
      await expect.poll(() => prompt.isVisible(), { timeout: 10_000 }).toBe(true);
      expect(await tab.getByTestId('clusters').count()).toBe(0);

      await tab.getByTestId('token-input').fill('not-the-token');
      await tab.getByTestId('token-submit').click();
      await expect.poll(() => tab.getByTestId('token-rejected').isVisible(), { timeout: 10_000 }).toBe(true);
      await tab.screenshot({ path: artifactPath('kind-dashboard-token', '.png'), fullPage: true });

      await tab.getByTestId('token-input').fill(TOKEN);
      await tab.getByTestId('token-submit').click();
      await expect.poll(() => tab.getByTestId('cluster-row-web1').count(), { timeout: 10_000 }).toBe(1);
      expect(await prompt.count()).toBe(0);
      await expect.poll(() => tab.getByTestId('stats').textContent()).toContain('kind clusters1');
      expect(await tab.evaluate(() => sessionStorage.getItem('ironlens.console.token'))).toBe(TOKEN);

      // The kubeconfig comes through fetch with the header, saved from a Blob.
      const [download] = await Promise.all([tab.waitForEvent('download'), tab.getByTestId('kubeconfig-web1').click()]);
      expect(download.suggestedFilename()).toBe('kubeconfig-web1.yaml');
      expect(download.url()).toMatch(/^blob:/);
      const saved = await download.path();
      expect(readFileSync(saved, 'utf8')).toBe(readFileSync(join(panel.clustersDir, 'web1', 'kubeconfig'), 'utf8'));

      // Health opens in its window from a fetch that carries the header.
      const [health] = await Promise.all([context.waitForEvent('page'), tab.getByTestId('nav-health').click()]);
      await expect.poll(() => health.url(), { timeout: 10_000 }).toMatch(/^blob:/);
      await expect.poll(async () => JSON.parse((await health.textContent('body')) || '{}').status, { timeout: 10_000 }).toBe('ok');
      expect(await health.evaluate(() => window.name)).toBe('kind_health');
      await health.close();

      // A reload keeps the token for this tab.
      await tab.reload();
      await expect.poll(() => tab.getByTestId('cluster-row-web1').count(), { timeout: 10_000 }).toBe(1);
      expect(await prompt.count()).toBe(0);

      await tab.getByTestId('nav-forget-token').click();
      await expect.poll(() => prompt.isVisible(), { timeout: 10_000 }).toBe(true);
      expect(await tab.evaluate(() => sessionStorage.getItem('ironlens.console.token'))).toBeNull();
    } finally {
      await tab.close();
    }
  });

  it('deletes a cluster from its row after confirmation', async () => {
    await page.goto(`${baseUrl}/`);
    await page.getByTestId('delete-web1').click();
    await expect.poll(() => page.getByTestId('cluster-row-web1').count(), { timeout: 10_000 }).toBe(0);
    expect(panel.standins.calls('kind').map((c) => c.args)).toContainEqual(['delete', 'cluster', '--name', 'web1']);
    expect(panel.standins.clusters()).toEqual([]);
    await expect.poll(() => page.getByTestId('clusters-table').textContent()).toContain('No clusters yet.');
  });
});
