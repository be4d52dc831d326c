/**
 * The console's "Deploy a model" wizard and deployment page (issue 28) in a real Chromium against
 * a real `ironlens serve` and a real control plane (`@ironlens/kube-harness`: the real scheduler,
 * kwok GPU nodes), on the deployments suite's lab (`startDeploymentCluster`: the pod network and
 * kubelet stand-in, the real Envoy Gateway controller, the chart and CRD mirrors): the cluster is
 * registered with its shared gateway. The wizard asks the server where the request fits as the
 * form changes; the deployment it starts (Lens' direct `baseline` path) becomes ready once a vLLM
 * stand-in answers its smoke request at the pods' own IPs. The page shows the stages, readiness and
 * who asserted it, the pods with their logs, the events; a deployment published on the gateway
 * (the optimized baseline) shows the copyable curl line with the gateway's URL and `$KEY`, never a
 * key; a crashing one shows its reason and its last log lines.
 * Screenshots and axe reports go to `<repo>/.artifacts/console-deploy-<run>/`.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DeploymentCluster, startDeploymentCluster } from '@ironlens/clusters/testing';
import { buildWebAssets } from '@ironlens/web';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { axeViolations } from '../testing/axe';
import { sleep } from '@ironlens/core/testing';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'console-deploy-token';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-deploy-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

let tmp: string;
let lab: DeploymentCluster;
let cp: Running;
let base: string;
let context: BrowserContext;
let page: Page;
let id = '';
let deployed = '';

const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
const axe = (name: string) => axeViolations(page, join(artifacts, `axe-${name}.json`));
const api = async (method: string, path: string, body?: unknown) => {
  const r = await fetch(`${base}${path}`, { method, headers: AUTH, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: r.status === 204 ? null : await r.json() };
};

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), `ironlens-console-deploy-${process.pid}-`));
  const dist = await buildWebAssets(join(tmp, 'dist'));
  lab = await startDeploymentCluster({ nodes: 'test' });
  cp = await serve({
    ...lab.env,
    IRONLENS_DATA_DIR: join(tmp, 'data'),
    IRONLENS_BOOT_LISTEN: 'off',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: TOKEN,
    IRONLENS_WEB_DIST: dist,
    IRONLENS_DEPLOYMENT_POLL_MS: '250',
    IRONLENS_DEPLOYMENT_SMOKE_TIMEOUT_MS: '3000',
  });
  base = cp.urls.console;
  const form = new FormData();
  form.append('name', 'serving-lab');
  for (const [k, v] of Object.entries(lab.registration)) form.append(k, v);
  form.append('file', new Blob([lab.h.kubeconfig]), 'kubeconfig.yaml');
  const res = await fetch(`${base}/api/cluster/clusters`, { method: 'POST', body: form, headers: { authorization: AUTH.authorization } });
  expect(res.status, await res.clone().text()).toBe(201);
  id = ((await res.json()) as { cluster: { id: string } }).cluster.id;
  // Its shared gateway installed (the registration's reconcile), as a published deployment needs.
  let op: { status: string } | null = null;
  for (const end = Date.now() + 300_000; Date.now() < end && (!op || op.status === 'running'); await sleep(500)) op = (await api('GET', `/api/cluster/clusters/${id}/gateway/status`)).body.lastOperation;
  expect(op?.status, JSON.stringify(op)).toBe('succeeded');
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1280, height: 900 },
  });
  await context.addInitScript((t) => sessionStorage.setItem('ironlens.console.token', t), TOKEN);
  page = context.pages()[0] ?? (await context.newPage());
}, 600_000);

afterAll(async () => {
  await context?.close();
  await cp?.close();
  await lab?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('deploying a model from the console', { timeout: 120_000 }, () => {
  it('the cluster page shows GPU allocation per node and opens the wizard', async () => {
    await page.goto(`${base}/clusters/${id}`);
    await expect.poll(() => page.getByTestId('alloc-gpu-nv-0001').textContent(), { timeout: 30_000 }).toContain('0 of 8 allocated, 8 free');
    expect(await page.getByTestId('alloc-gpu-intel-0002').textContent()).toContain('0 of 4 allocated, 4 free');
    expect(await page.getByTestId('cluster-deployments').textContent()).toContain('No model deployed here yet.');
    await page.getByTestId('deploy-open').click();
    await page.waitForURL(`${base}/clusters/${id}/deploy`);
  });

  it('the wizard says where a request fits as it changes, and refuses to submit one that does not', async () => {
    await page.getByTestId('deploy-model').fill('Qwen/Qwen3-0.6B');
    await page.getByTestId('deploy-name').fill('browser qwen');
    await page.getByTestId('deploy-path-baseline').check();
    await expect.poll(() => page.getByTestId('deploy-product').locator('option').allTextContents(), { timeout: 20_000 }).toEqual(['any', 'NVIDIA-H100-80GB-HBM3']);
    await page.getByTestId('deploy-product').selectOption('NVIDIA-H100-80GB-HBM3');
    await page.getByTestId('deploy-replicas').fill('2');
    await page.getByTestId('deploy-tp').fill('8');
    const verdict = page.getByTestId('deploy-fit-verdict');
    await expect.poll(() => verdict.textContent(), { timeout: 20_000 }).toBe('does not fit');
    expect(await page.getByTestId('deploy-fit').textContent()).toContain('16 nvidia accelerator(s) needed (2 decode × 8');
    expect(await page.getByTestId('deploy-fit').textContent()).toContain('gpu-nv-0001 (NVIDIA-H100-80GB-HBM3) 8 of 8 free');
    expect(await page.getByTestId('deploy-submit').isDisabled()).toBe(true);
    await page.getByTestId('deploy-tp').fill('2');
    await expect.poll(() => verdict.textContent(), { timeout: 20_000 }).toBe('fits');
    expect(await page.getByTestId('deploy-fit').textContent()).toContain('4 accelerator(s): decode 0 on gpu-nv-0001, decode 1 on gpu-nv-0001');
    await shot('wizard-fits');
    expect(await axe('wizard')).toEqual([]);
    await page.getByTestId('deploy-submit').click();
    await page.waitForURL(/\/deployments\/[0-9a-f]{12}$/, { timeout: 20_000 });
    deployed = page.url().split('/').pop()!;
  });

  it('the deployment page shows its stages, readiness and who asserted it, the pods, their logs and the events; ready once a model server answered', async () => {
    await expect.poll(() => page.getByTestId('deployment-status').textContent(), { timeout: 60_000 }).toBe('ready');
    expect(await page.getByTestId('deployment-smoke').textContent()).toMatch(/^answered 200 in [\d.]+ ms/);
    expect(await page.getByTestId('deployment-stages').textContent()).toContain('placerendercopy the HF tokenapply the model servers');
    const readiness = (await page.getByTestId('deployment-readiness').textContent()) ?? '';
    expect(readiness).toContain('Model-server podsokkubelet');
    expect(readiness).toContain('Smoke requestokmodel-server');
    expect(readiness).not.toContain('HTTPRoute');
    await expect.poll(async () => (await page.getByTestId('deployment-pods').textContent())?.match(/gpu-nv-0001/g)?.length, { timeout: 20_000 }).toBe(2);
    const podName = ((await page.getByTestId('deployment-pods').locator('tbody tr').first().locator('td').first().textContent()) ?? '').trim();
    await page.getByTestId(`pod-logs-${podName}`).click();
    await expect.poll(() => page.getByTestId('pod-log').textContent(), { timeout: 20_000 }).toContain('Starting vLLM API server');
    await expect.poll(() => page.getByTestId('deployment-events').textContent(), { timeout: 20_000 }).toContain('Scheduled');
    await shot('deployment-ready');
    expect(await axe('deployment-ready')).toEqual([]);
    // The cluster page lists it, and its GPUs as allocated.
    await page.goto(`${base}/clusters/${id}`);
    await expect.poll(() => page.getByTestId('cluster-deployments-table').textContent(), { timeout: 20_000 }).toContain('browser qwen');
    await expect.poll(() => page.getByTestId('alloc-gpu-nv-0001').textContent(), { timeout: 30_000 }).toContain('4 of 8 allocated, 4 free');
  });

  it('a deployment published on the gateway shows the copyable curl line: the gateway’s URL, the model’s header, $KEY — never a key', async () => {
    // A key exists: the page must not show it (a key is shown once, when it is created).
    const key = (await api('POST', `/api/cluster/clusters/${id}/gateway/keys`, { name: 'console-curl' })).body.key as string;
    expect(key).toMatch(/^ilgw_/);
    const r = await api('POST', '/api/v1/deployments/standard-vllm-runs', { cluster_id: id, model: 'Qwen/Qwen3-1.7B', deployment_name: 'published qwen', replicas: 1, tensor_parallel_size: 1 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // Ready or failed, from the API (a failure's reason and the job's log in the message).
    let e: { status: string; reason?: string; job?: { log: string[] } } | null = null;
    for (const end = Date.now() + 100_000; Date.now() < end && (!e || !['ready', 'failed'].includes(e.status)); await sleep(500)) e = (await api('GET', `/api/v1/deployments/executions/${r.body.execution_id}`)).body;
    expect(e?.status, `${e?.reason}\n${e?.job?.log.join('\n')}`).toBe('ready');
    await page.goto(`${base}/deployments/${r.body.execution_id}`);
    await expect.poll(() => page.getByTestId('deployment-status').textContent(), { timeout: 20_000 }).toBe('ready');
    // Published: the real Envoy Gateway controller accepted its route.
    expect(await page.getByTestId('deployment-readiness').textContent()).toContain('gateway.envoyproxy.io/gatewayclass-controller');
    // The gateway's URL as its status gives it now (once its controller wrote the Gateway's address, that one).
    const gateway = (await api('GET', `/api/cluster/clusters/${id}/gateway/status`)).body.gatewayPublicUrl as string;
    expect(gateway).toMatch(/^http:\/\/198\.18\.0\.\d+:30180\/v1$/);
    const curl = (await page.getByTestId('deployment-curl').textContent()) ?? '';
    expect(curl).toBe(
      `curl -sS ${gateway}/completions -H "Authorization: Bearer $KEY" -H "X-Gateway-Base-Model-Name: Qwen/Qwen3-1.7B" -H "Content-Type: application/json" -d '{"model":"Qwen/Qwen3-1.7B","prompt":"Hello","max_tokens":16}'`,
    );
    // Copy puts exactly that line on the clipboard.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.getByTestId('deployment-curl-copy').click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(curl);
    // Never the key's secret: not on the page, not in the answer behind it.
    expect(await page.content()).not.toContain(key);
    expect(JSON.stringify((await api('GET', `/api/v1/deployments/executions/${r.body.execution_id}`)).body)).not.toContain(key);
    await shot('deployment-published');
    expect(await axe('deployment-published')).toEqual([]);
  });

  it('a crashing model server shows its reason and its last log lines; Delete removes the deployment', async () => {
    const r = await api('POST', '/api/v1/deployments/standard-vllm-runs', { cluster_id: id, model: 'Qwen/Qwen3-0.6B', deployment_name: 'bad flag', path: 'baseline', replicas: 1, tensor_parallel_size: 1, vllm_arguments: [{ name: 'not-a-vllm-flag', value: '1' }] });
    expect(r.status).toBe(200);
    await page.goto(`${base}/deployments/${r.body.execution_id}`);
    await expect.poll(() => page.getByTestId('deployment-status').textContent(), { timeout: 60_000 }).toBe('failed');
    expect(await page.getByTestId('deployment-reason').textContent()).toMatch(/CrashLoopBackOff: back-off 40s restarting failed container=vllm/);
    expect(await page.getByTestId('deployment-logs').textContent()).toContain('vllm serve: error: unrecognized arguments: --not-a-vllm-flag=1');
    await shot('deployment-failed');
    expect(await axe('deployment-failed')).toEqual([]);
    await page.getByTestId('deployment-delete').click();
    await page.waitForURL(`${base}/clusters/${id}`, { timeout: 30_000 });
    const gone = await api('GET', `/api/v1/deployments/executions/${r.body.execution_id}`);
    expect(gone.body.status).toBe('cleaned');
    // The first one is untouched.
    expect((await api('GET', `/api/v1/deployments/executions/${deployed}`)).body.status).toBe('ready');
  });
});
