/**
 * The console's gateway card (issue 22) in a real Chromium against a real `ironlens serve` and a
 * real control plane (`@ironlens/kube-harness`) holding the REAL Gateway API CRDs: the
 * conditions with their reasons, the public URL with a copyable curl line, access keys created
 * (shown once) and revoked, the reconcile button; axe on the page. The GitHub mirror answers
 * nothing here, so ironlens' own reconcile fails at its first stage; the GatewayClass and the
 * Gateway are created by the test and their status written by a stand-in of Envoy Gateway's
 * controller (the conditions and reasons the real one writes, as `gateway.kube.test.ts` sees
 * them). Screenshots and axe reports go to `<repo>/.artifacts/console-gateway-<run>/`.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { upstreamGatewayApiObjects } from '@ironlens/clusters/testing';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { buildWebAssets } from '@ironlens/web';
import { CustomObjectsApi, type KubernetesObject, KubernetesObjectApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { axeViolations } from '../testing/axe';
import { sleep } from '@ironlens/core/testing';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'console-gateway-token';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-gateway-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
const AUTH = { authorization: `Bearer ${TOKEN}` };

let tmp: string;
let kube: KubeHarness;
let cp: Running;
let base: string;
let context: BrowserContext;
let page: Page;
let id = '';

const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

/** axe-core's serious and critical violations on the page now (the full report goes beside the screenshots). */
const axe = (name: string) => axeViolations(page, join(artifacts, `axe-${name}.json`));

const api = (method: string, path: string, headers: Record<string, string> = AUTH) => fetch(`${base}${path}`, { method, headers });
const hook = (key: string) => fetch(`${base}/api/v1/internal/model-gateway/authorize/cluster/${id}/v1/models`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), `ironlens-console-gateway-${process.pid}-`));
  const dist = await buildWebAssets(join(tmp, 'dist'));
  kube = await startKubeCluster({ nodes: 'test', gpu: false });
  // The real Gateway API CRDs (and their admission policy), as ironlens' first stage would install them.
  const objects = kube.kubeConfig().makeApiClient(KubernetesObjectApi);
  for (const o of upstreamGatewayApiObjects()) await objects.create(o as KubernetesObject);
  cp = await serve({
    IRONLENS_DATA_DIR: join(tmp, 'data'),
    IRONLENS_BOOT_LISTEN: 'off',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: TOKEN,
    IRONLENS_WEB_DIST: dist,
    IRONLENS_GITHUB_MIRROR: 'http://127.0.0.1:9', // answers nothing: the reconcile fails at its CRD stage
    // The console listens on an ephemeral port here; the hook's EndpointSlice needs a real one.
    IRONLENS_GATEWAY_AUTHZ_PORT: '8080',
  });
  base = cp.urls.console;
  // The registration, by the API (the wizard has its own suite).
  const form = new FormData();
  for (const [k, v] of Object.entries({ name: 'gw-lab', gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30124', gatewayAuthzHost: '192.0.2.10' })) form.append(k, v);
  form.append('file', new Blob([kube.kubeconfig]), 'kubeconfig.yaml');
  const res = await fetch(`${base}/api/cluster/clusters`, { method: 'POST', body: form, headers: AUTH });
  expect(res.status, await res.clone().text()).toBe(201);
  id = ((await res.json()) as { cluster: { id: string } }).cluster.id;
  await until('the first reconcile to fail', async () => {
    const st = (await (await api('GET', `/api/cluster/clusters/${id}/gateway/status`)).json()) as { lastOperation: { status: string } | null };
    return st.lastOperation?.status === 'failed';
  });
  // A stand-in of Envoy Gateway's controller: the class and Gateway with the conditions it writes.
  const ns = `lens-gateway-${id}`;
  const custom = kube.kubeConfig().makeApiClient(CustomObjectsApi);
  await objects.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as KubernetesObject).catch(() => {});
  const GW = { group: 'gateway.networking.k8s.io', version: 'v1' };
  const now = new Date().toISOString();
  const cond = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastTransitionTime: now, observedGeneration: 1 });
  await custom.createClusterCustomObject({ ...GW, plural: 'gatewayclasses', body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: `lens-envoy-ai-gateway-${id}` }, spec: { controllerName: 'gateway.envoyproxy.io/gatewayclass-controller' } } });
  await custom.patchClusterCustomObjectStatus(
    { ...GW, plural: 'gatewayclasses', name: `lens-envoy-ai-gateway-${id}`, body: { status: { conditions: [cond('Accepted', 'True', 'Accepted', 'Valid GatewayClass')] } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await custom.createNamespacedCustomObject({
    ...GW,
    namespace: ns,
    plural: 'gateways',
    body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name: 'lens-gateway', namespace: ns }, spec: { gatewayClassName: `lens-envoy-ai-gateway-${id}`, listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] } },
  });
  await custom.patchNamespacedCustomObjectStatus(
    {
      ...GW,
      namespace: ns,
      plural: 'gateways',
      name: 'lens-gateway',
      body: {
        status: {
          addresses: [{ type: 'IPAddress', value: '192.0.2.50' }],
          conditions: [cond('Accepted', 'True', 'Accepted', 'The Gateway has been scheduled by Envoy Gateway'), cond('Programmed', 'False', 'NoResources', 'Envoy replicas unavailable')],
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1280, height: 900 },
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  await context.addInitScript((t) => sessionStorage.setItem('ironlens.console.token', t), TOKEN);
  page = context.pages()[0] ?? (await context.newPage());
}, 600_000);

afterAll(async () => {
  await context?.close();
  await cp?.close();
  await kube?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the cluster page’s gateway card', () => {
  it('shows each condition with its reason, the last reconcile’s failure, and the public URL with a curl line that copies', async () => {
    await page.goto(`${base}/clusters/${id}`);
    const card = page.getByTestId('cluster-gateway');
    await expect.poll(() => card.textContent(), { timeout: 30_000 }).toContain('Programmed=False (NoResources)');
    const text = (await card.textContent()) ?? '';
    expect(text).toContain(`GatewayClass lens-envoy-ai-gateway-${id}`);
    expect(text).toContain('Accepted=True (Accepted)');
    expect(text).toContain('envoy-ai-gateway');
    expect(text).toContain('Last reconcile: failed');
    // Its failure is the first stage's: the CRD bundles could not be fetched from the mirror.
    expect(text).toMatch(/Last reconcile: failed \S+ .*(fetch|ECONNREFUSED|mirror|bundle)/i);
    const curl = `curl http://192.0.2.50:30124/v1/models -H 'Authorization: Bearer <key>'`;
    expect(await page.getByTestId('gateway-curl').textContent()).toBe(curl);
    await card.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(curl);
    await shot('gateway-card');
    expect(await axe('gateway-card')).toEqual([]);
  });

  it('creates a key shown once that the hook accepts, and revokes it', async () => {
    await page.getByTestId('gateway-key-name').fill('team-a');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('gateway-new-key');
    await expect.poll(() => shown.textContent(), { timeout: 20_000 }).toMatch(/Key team-a \(shown once\): ilgw_[A-Za-z0-9_-]{43}/);
    const key = /(ilgw_[A-Za-z0-9_-]{43})/.exec((await shown.textContent()) ?? '')![1];
    await expect.poll(() => page.getByTestId('gateway-keys').textContent()).toContain('team-a');
    const ok = await hook(key);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-llm-d-inference-fairness-id')).toBe('team-a');
    expect(await axe('gateway-key-created')).toEqual([]);
    // Shown once: after a reload the name is listed, the key is nowhere on the page.
    await page.reload();
    await expect.poll(() => page.getByTestId('gateway-keys').textContent(), { timeout: 20_000 }).toContain('team-a');
    expect(await page.content()).not.toContain(key);
    await page.getByTestId('gateway-keys').getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => page.getByTestId('gateway-keys').textContent(), { timeout: 20_000 }).not.toContain('team-a');
    expect((await hook(key)).status).toBe(403);
  });

  it('the reconcile button starts a new reconcile job', async () => {
    const before = ((await (await api('GET', `/api/cluster/clusters/${id}/gateway/status`)).json()) as { lastOperation: { id: string } }).lastOperation.id;
    const answered = page.waitForResponse((r) => r.url().endsWith(`/api/cluster/clusters/${id}/gateway/reconcile`) && r.request().method() === 'POST');
    await page.getByTestId('gateway-reconcile').click();
    expect((await answered).status()).toBe(202);
    const after = await until('a new reconcile', async () => {
      const st = (await (await api('GET', `/api/cluster/clusters/${id}/gateway/status`)).json()) as { lastOperation: { id: string; status: string } };
      return st.lastOperation.id !== before && st.lastOperation;
    });
    expect(after.id).not.toBe(before);
    await shot('gateway-reconciled');
  });
});
