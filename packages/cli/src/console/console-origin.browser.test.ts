/**
 * The console without a token (the default) against another web page, in a real Chromium
 * (Debian's, through playwright-core), issue 18 findings 2 and 11: a page on another origin
 * posts a multipart form and a no-cors fetch to the console's APIs and frames the console; a
 * page of `rebind.attacker.example` resolved to 127.0.0.1 (DNS rebinding, by Chromium's host
 * resolver rules) reads the console. None of it gets through, while the console's own pages, its
 * multipart upload, Swagger UI, ReDoc and the kind dashboard work under the CSP (no violation
 * reported). A page on the console's own origin uploads a kubeconfig as llm-d Lens' wizard does (a
 * multipart `fetch` with no header of ours, issue 33), directly and through a real nginx in front:
 * one that keeps `Host` and `Origin`, one that rewrites `Host` to its upstream with its origin in
 * `IRONLENS_CONSOLE_ORIGINS`, and one that rewrites it without (refused). Screenshots go to
 * `<repo>/.artifacts/console-origin-<run>/`.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeTcpPort } from '@ironlens/core/testing';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { lensRegister, lensRequest } from '../testing/lens-client';
import { type Balancer, reverseProxyConf, startNginx } from '../testing/replicas';

const CHROMIUM = '/usr/bin/chromium';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-origin-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: abc}
`;

let tmp: string;
let cp: Running;
let consoleUrl: string;
let attacker: Server;
let attackerUrl: string;
let context: BrowserContext;
let page: Page;
const violations: string[] = [];
/** nginx in front of the console: keeps Host; rewrites it (its origin configured); rewrites it (not configured). */
const proxies: Record<'keeps' | 'configured' | 'unknown', Balancer | undefined> = { keeps: undefined, configured: undefined, unknown: undefined };

/** The attacker's pages, on another origin (another port of 127.0.0.1). */
function attackerPages(target: string): (path: string) => string {
  const kubeconfig = KUBECONFIG.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return (path) => {
    if (path === '/form')
      return `<!doctype html><html><body><form id="f" method="POST" enctype="multipart/form-data" action="${target}/api/cluster/clusters">
<input name="name" value="pwned-by-form"><input name="draft" value="true"><textarea name="file">${kubeconfig}</textarea></form>
<script>document.getElementById('f').submit()</script></body></html>`;
    if (path === '/urlencoded')
      return `<!doctype html><html><body><form id="f" method="POST" action="${target}/api/metal/workers"><input name="worker_id" value="pwned"></form>
<script>document.getElementById('f').submit()</script></body></html>`;
    if (path === '/fetch')
      return `<!doctype html><html><body><script>
window.done = Promise.allSettled([
  fetch('${target}/api/metal/workers', {method: 'POST', mode: 'no-cors', headers: {'content-type': 'text/plain'}, body: '{"worker_id":"pwned-fetch"}'}),
  fetch('${target}/kind/api/v1/clusters', {method: 'POST', mode: 'no-cors', headers: {'content-type': 'text/plain'}, body: '{"name":"pwned"}'}),
  fetch('${target}/api/cluster/clusters/x', {method: 'DELETE', mode: 'no-cors'}),
]).then(() => 'sent');
</script></body></html>`;
    if (path === '/frame') return `<!doctype html><html><body><iframe id="console" src="${target}/" width="800" height="400"></iframe></body></html>`;
    return '<!doctype html><title>attacker</title>';
  };
}

async function workers(): Promise<string[]> {
  return ((await (await fetch(`${consoleUrl}/api/metal/workers`)).json()) as Array<{ worker_id: string }>).map((w) => w.worker_id);
}
async function clusters(): Promise<string[]> {
  return ((await (await fetch(`${consoleUrl}/api/cluster/clusters?includeDrafts=true`)).json()) as { items: Array<{ name: string }> }).items.map((c) => c.name);
}
const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), 'ironlens-console-origin-'));
  const dist = await buildWebAssets(join(tmp, 'dist'));
  const configuredPort = await freeTcpPort();
  cp = await serve(
    {
      IRONLENS_DATA_DIR: join(tmp, 'data'),
      IRONLENS_BOOT_LISTEN: '127.0.0.1:0',
      IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
      IRONLENS_WEB_DIST: dist,
      IPXE_CP_DNSMASQ_RELOAD: 'false',
      // The origin browsers use through the proxy that sets Host to its upstream.
      IRONLENS_CONSOLE_ORIGINS: `http://127.0.0.1:${configuredPort}`,
    },
    () => {},
  );
  consoleUrl = cp.urls.console;
  const nginxAt = (name: string) => join(tmp, `nginx-${name}`);
  proxies.keeps = await startNginx(nginxAt('keeps'), (port) => reverseProxyConf(nginxAt('keeps'), port, consoleUrl, { host: '$http_host' }));
  proxies.configured = await startNginx(nginxAt('configured'), (port) => reverseProxyConf(nginxAt('configured'), port, consoleUrl, { host: '$proxy_host' }), configuredPort);
  proxies.unknown = await startNginx(nginxAt('unknown'), (port) => reverseProxyConf(nginxAt('unknown'), port, consoleUrl, { host: '$proxy_host' }));
  const pages = attackerPages(consoleUrl);
  attacker = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(pages(req.url ?? '/')));
  await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', () => r()));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      // DNS rebinding: the attacker's name answers with the console's address.
      '--host-resolver-rules=MAP rebind.attacker.example 127.0.0.1',
    ],
    viewport: { width: 1280, height: 800 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(`${page.url()}: ${m.text()}`);
  });
}, 300_000);

afterAll(async () => {
  await context?.close();
  for (const p of Object.values(proxies)) await p?.stop();
  await cp?.close();
  await new Promise<void>((r) => (attacker ? attacker.close(() => r()) : r()));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the console against another origin in Chromium', () => {
  it('a cross-origin multipart form, urlencoded form and no-cors fetches register and change nothing', async () => {
    await page.goto(`${attackerUrl}/form`);
    await page.waitForURL(`${consoleUrl}/api/cluster/clusters`, { timeout: 10_000 });
    // Before issue 18 this registered the cluster (201): the text field `file` was taken as the upload.
    expect(await clusters()).toEqual([]);
    expect(await page.content()).toContain('cross_site_request_refused');
    await shot('attacker-form-refused');
    await page.goto(`${attackerUrl}/urlencoded`);
    await page.waitForURL(`${consoleUrl}/api/metal/workers`, { timeout: 10_000 });
    await page.goto(`${attackerUrl}/fetch`);
    expect(await page.evaluate(() => (window as unknown as { done: Promise<string> }).done)).toBe('sent');
    expect(await clusters()).toEqual([]);
    expect(await workers()).toEqual([]);
    const kind = (await (await fetch(`${consoleUrl}/kind/api/v1/jobs?limit=10`)).json()) as { items?: unknown[] } | unknown[];
    expect(Array.isArray(kind) ? kind : (kind.items ?? [])).toEqual([]);
  });

  it('refuses a DNS-rebinding page: rebind.attacker.example resolved to the console gets a 421, reads nothing', async () => {
    const port = new URL(consoleUrl).port;
    const res = await page.goto(`http://rebind.attacker.example:${port}/api/cluster/clusters?includeDrafts=true`);
    expect(res?.status()).toBe(421);
    expect(await page.content()).toContain('host_not_allowed');
    const home = await page.goto(`http://rebind.attacker.example:${port}/`);
    expect(home?.status()).toBe(421);
    // From the rebinding origin's own script: same-origin for the browser, refused by Host.
    const read = await page.evaluate(async () => (await fetch('/kind/api/v1/clusters')).status);
    expect(read).toBe(421);
  });

  it('cannot be framed by another page', async () => {
    await page.goto(`${attackerUrl}/frame`);
    await page.waitForTimeout(1500);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    // Blocked by frame-ancestors 'self' / X-Frame-Options: SAMEORIGIN: Chromium shows its error page, not the console.
    const root = await frame?.evaluate(() => document.getElementById('root')?.childElementCount ?? -1).catch(() => -1);
    expect(root).toBe(-1);
    await shot('attacker-frame-blocked');
    violations.splice(0);
  });

  it('takes a multipart upload from a page on its own origin with or without its header (issue 33: Lens’ wizard sends none)', async () => {
    await page.goto(`${consoleUrl}/clusters`);
    const statuses = await page.evaluate(async (kubeconfig) => {
      const form = (name: string) => {
        const fd = new FormData();
        fd.set('name', name);
        fd.set('draft', 'true');
        fd.set('file', new Blob([kubeconfig]), 'kubeconfig.yaml');
        return fd;
      };
      const withHeader = await fetch('/api/cluster/clusters', { method: 'POST', headers: { 'x-ironlens-request': 'console' }, body: form('from-console') });
      const without = await fetch('/api/cluster/clusters', { method: 'POST', body: form('without-header') });
      return [withHeader.status, without.status];
    }, KUBECONFIG);
    expect(statuses).toEqual([201, 201]);
    expect((await clusters()).sort()).toEqual(['from-console', 'without-header']);
  });

  it('behind nginx: the wizard’s upload and its Cancel pass a proxy that keeps Host, or rewrites it to a configured origin; another origin is refused', async () => {
    /** What Lens' create-cluster wizard sends, from a page of the proxy's origin: its register form, then its Cancel (a DELETE that says JSON and has no body). */
    const lensUpload = async (base: string, name: string) => {
      await page.goto(`${base}/clusters`);
      const reg = await page.evaluate(lensRegister, { kubeconfig: KUBECONFIG, name });
      if (reg.status !== 201) return { status: reg.status, code: reg.body.code as string };
      const cancel = await page.evaluate(lensRequest, { path: `/api/cluster/clusters/${reg.body.cluster.id}`, method: 'DELETE' });
      return { status: reg.status, cancel: cancel.status };
    };
    const before = await clusters();
    expect(await lensUpload(proxies.keeps!.url, 'via-nginx')).toEqual({ status: 201, cancel: 204 });
    expect(await lensUpload(proxies.configured!.url, 'via-rewriting-nginx')).toEqual({ status: 201, cancel: 204 });
    expect(await lensUpload(proxies.unknown!.url, 'via-unknown-origin')).toEqual({ status: 403, code: 'cross_site_request_refused' });
    expect((await clusters()).sort()).toEqual(before.sort());
    await shot('lens-upload-behind-nginx');
  });

  it('renders the console, Swagger UI, ReDoc and the kind dashboard under the CSP, with no violation', async () => {
    violations.splice(0);
    await page.goto(`${consoleUrl}/clusters`);
    await expect.poll(() => page.evaluate(() => document.getElementById('root')?.childElementCount ?? 0), { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.getByText('from-console').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await shot('console-clusters');
    await page.goto(`${consoleUrl}/docs`);
    await expect.poll(() => page.locator('.swagger-ui .opblock').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await shot('swagger-ui');
    await page.goto(`${consoleUrl}/redoc`);
    await expect.poll(() => page.locator('.api-content').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.getByText('/api/cluster/clusters').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await shot('redoc');
    await page.goto(`${consoleUrl}/kind/`);
    await expect.poll(() => page.evaluate(() => document.body.innerText.length), { timeout: 15_000 }).toBeGreaterThan(20);
    await shot('kind-dashboard');
    // ReDoc's "powered by" logo is an image of cdn.redoc.ly: a third-party request the CSP is meant to block.
    expect(violations.filter((v) => !v.includes("Loading the image 'https://cdn.redoc.ly/"))).toEqual([]);
  });
});
