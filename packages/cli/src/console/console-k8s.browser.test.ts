/**
 * The console's Kubernetes pages in a real Chromium against a real `ironlens serve`: the cluster
 * wizard against a real control plane with simulated GPU nodes (`@ironlens/kube-harness`), the
 * overview, cordon, delete; the bootstrap wizard against real sshd processes on loopback
 * addresses, up to the host-key confirmation and the preflight table; and llm-d Lens' own
 * create-cluster wizard, call by call as its client makes them, from a page behind a plain nginx
 * (issue 33). Screenshots and axe reports go to `<repo>/.artifacts/console-k8s-<run>/`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeTcpPort, sleep } from '@ironlens/core/testing';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { buildWebAssets } from '@ironlens/web';
import { CoreV1Api } from '@kubernetes/client-node';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, serve } from '../serve';
import { axeViolations } from '../testing/axe';
import { type LensAnswer, lensRegister, lensRequest } from '../testing/lens-client';
import { type Balancer, reverseProxyConf, startNginx } from '../testing/replicas';

const CHROMIUM = '/usr/bin/chromium';
const SSHD = '/usr/sbin/sshd';
const TOKEN = 'console-k8s-token';
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const artifacts = join(repoRoot, '.artifacts', `console-k8s-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);

let tmp: string;
let kube: KubeHarness;
let cp: Running;
let base: string;
let context: BrowserContext;
let page: Page;
const sshds: ChildProcess[] = [];
/** nginx in front of the console, as a Lens deployment puts it: Host and Origin kept, the bearer token added (Lens' browser sends none). */
let lensProxy: Balancer | undefined;

const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

/** axe-core's serious and critical violations on the page now (the full report goes beside the screenshots). */
const axe = (name: string) => axeViolations(page, join(artifacts, `axe-${name}.json`));


/** A real sshd on a loopback address with its own host key; returns its port and the fingerprint ssh-keygen prints. */
async function startSshd(dir: string, address: string, authorizedKeys: string): Promise<{ port: number; fingerprint: string }> {
  mkdirSync(dir, { recursive: true });
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const hostKey = join(dir, 'host_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  const port = await freeTcpPort(address);
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [`ListenAddress ${address}`, `Port ${port}`, `HostKey ${hostKey}`, `PidFile ${join(dir, 'sshd.pid')}`, `AuthorizedKeysFile ${authorizedKeys}`, 'PermitRootLogin prohibit-password', 'PasswordAuthentication no', 'UsePAM no', 'StrictModes no', ''].join('\n'),
  );
  const child = spawn(SSHD, ['-D', '-e', '-f', config], { detached: true, stdio: 'ignore' });
  sshds.push(child);
  const end = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = createConnection({ host: address, port }, () => {
        s.destroy();
        r(true);
      });
      s.on('error', () => r(false));
    });
    if (ok) break;
    if (Date.now() > end || child.exitCode !== null) throw new Error(`sshd on ${address}:${port} did not start`);
    await sleep(50);
  }
  const fp = /(SHA256:[A-Za-z0-9+/]{43})/.exec(execFileSync('ssh-keygen', ['-lf', `${hostKey}.pub`], { encoding: 'utf8' }))?.[1];
  if (!fp) throw new Error('ssh-keygen printed no fingerprint');
  return { port, fingerprint: fp };
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  if (!existsSync(SSHD)) throw new Error(`${SSHD} is missing: apt-get install openssh-server`);
  mkdirSync(artifacts, { recursive: true });
  tmp = mkdtempSync(join(tmpdir(), 'ironlens-console-k8s-'));
  const dist = await buildWebAssets(join(tmp, 'dist'));
  kube = await startKubeCluster({ nodes: 'test', gpu: true });
  cp = await serve({
    IRONLENS_DATA_DIR: join(tmp, 'data'),
    IRONLENS_BOOT_LISTEN: 'off',
    IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
    IRONLENS_CONSOLE_TOKEN: TOKEN,
    IRONLENS_WEB_DIST: dist,
    IRONLENS_GITHUB_MIRROR: 'http://127.0.0.1:9', // nothing is fetched in these flows
  });
  base = cp.urls.console;
  const prefix = join(tmp, 'nginx');
  lensProxy = await startNginx(prefix, (port) => reverseProxyConf(prefix, port, base, { host: '$http_host', headers: { Authorization: `Bearer ${TOKEN}` } }));
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1280, height: 800 },
  });
  // The token as the prompt would keep it: this tab's sessionStorage.
  await context.addInitScript((t) => sessionStorage.setItem('ironlens.console.token', t), TOKEN);
  page = context.pages()[0] ?? (await context.newPage());
}, 600_000);

afterAll(async () => {
  await context?.close();
  await lensProxy?.stop();
  await cp?.close();
  for (const c of sshds) if (c.pid && c.exitCode === null) process.kill(-c.pid, 'SIGKILL');
  await kube?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

let clusterId = '';

describe('cluster pages against a real control plane', () => {
  it('registers a cluster through the wizard: kubeconfig, version check, gateway port, HF token, finish', async () => {
    await page.goto(`${base}/clusters/new`);
    await page.getByTestId('cluster-name').fill('gpu-lab');
    await page.getByTestId('cluster-kubeconfig').setInputFiles({ name: 'kubeconfig.yaml', mimeType: 'application/yaml', buffer: Buffer.from(kube.kubeconfig) });
    await page.getByTestId('cluster-upload').click();
    await expect.poll(() => page.url(), { timeout: 20_000 }).toMatch(/\/clusters\/new\?draft=[0-9a-f]{8}$/);
    clusterId = new URL(page.url()).searchParams.get('draft') ?? '';
    await expect.poll(() => page.getByTestId('k8s-version-line').textContent(), { timeout: 20_000 }).toContain('supported');
    await shot('wizard-version');
    await page.getByTestId('wizard-next-proxy').click();
    await page.getByTestId('gw-port').fill('30123');
    await expect.poll(() => page.getByTestId('gw-port-check').textContent(), { timeout: 20_000 }).toContain('port free');
    await page.getByTestId('wizard-next-gateway').click();
    await page.getByTestId('hf-token').fill('hf_consoleTestToken');
    await page.getByRole('button', { name: 'Create the secret and continue' }).click();
    await expect.poll(() => page.getByTestId('sw-start').isVisible(), { timeout: 20_000 }).toBe(true);
    const core = kube.kubeConfig().makeApiClient(CoreV1Api);
    const secret = await core.readNamespacedSecret({ namespace: `llm-d-bench-storage-${clusterId}`, name: `hf-token-${clusterId}` });
    expect(Buffer.from(secret.data?.HF_TOKEN ?? '', 'base64').toString()).toBe('hf_consoleTestToken');
    expect(await page.content()).not.toContain('hf_consoleTestToken');
    await page.getByTestId('wizard-next-software').click();
    await page.getByTestId('wizard-finish').click();
    await expect.poll(() => page.url(), { timeout: 20_000 }).toBe(`${base}/clusters/${clusterId}`);
  });

  it('shows the overview with the GPUs the nodes hold', async () => {
    const core = kube.kubeConfig().makeApiClient(CoreV1Api);
    const nodes = (await core.listNode()).items;
    const gpus = nodes.reduce((n, node) => {
      const cap = node.status?.capacity ?? {};
      return n + ['nvidia.com/gpu', 'gpu.intel.com/i915', 'gpu.intel.com/xe'].reduce((m, k) => m + Number(cap[k] ?? 0), 0);
    }, 0);
    await page.goto(`${base}/clusters/${clusterId}`);
    await expect.poll(() => page.getByTestId('ov-nodes').textContent(), { timeout: 30_000 }).toBe(String(nodes.length));
    expect(gpus).toBeGreaterThan(0);
    await expect.poll(() => page.getByTestId('ov-gpus').textContent()).toBe(String(gpus));
    await shot('cluster-overview');
    expect(await axe('cluster-overview')).toEqual([]);
  });

  it('cordons a worker node', async () => {
    const core = kube.kubeConfig().makeApiClient(CoreV1Api);
    const worker = (await core.listNode()).items.find((n) => !Object.keys(n.metadata?.labels ?? {}).some((l) => l.includes('control-plane')));
    const name = worker?.metadata?.name ?? '';
    await page.goto(`${base}/clusters/${clusterId}`);
    await page.getByRole('checkbox', { name: `Select node ${name}` }).check();
    await page.getByTestId('nodes-cordon').click();
    await expect.poll(async () => (await core.readNode({ name })).spec?.unschedulable, { timeout: 20_000 }).toBe(true);
    await expect.poll(() => page.getByTestId(`node-row-${name}`).textContent(), { timeout: 20_000 }).toContain('cordoned');
    // The batch answer, one row per node, in the shared result table.
    const results = page.getByRole('table', { name: 'Cordon results' });
    expect(await results.getByRole('row').filter({ hasText: name }).textContent()).toMatch(/cordoned.*scheduling disabled/);
    expect(await axe('cluster-cordon')).toEqual([]);
  });

  it('lists the cluster as ready, previews the delete, deletes', async () => {
    await page.goto(`${base}/clusters`);
    await expect.poll(() => page.getByTestId(`cluster-ready-${clusterId}`).textContent(), { timeout: 20_000 }).toBe('ready');
    expect(await axe('clusters')).toEqual([]);
    await page.goto(`${base}/clusters/${clusterId}`);
    await page.getByTestId('cluster-delete').click();
    expect(await page.getByTestId('delete-removed').textContent()).toContain(`lens-gateway-${clusterId}`);
    expect(await page.getByTestId('delete-kept').textContent()).toContain('kube-system');
    await shot('cluster-delete');
    await page.getByTestId('cluster-delete-confirm').click();
    await expect.poll(() => page.url(), { timeout: 30_000 }).toBe(`${base}/clusters`);
    await expect.poll(() => page.getByTestId(`cluster-row-${clusterId}`).count(), { timeout: 20_000 }).toBe(0);
  });
});

describe('bootstrap wizard against real sshd', () => {
  it('fetches host keys, needs each fingerprint confirmed, and runs the preflight', async () => {
    const keyDir = join(tmp, 'ssh');
    mkdirSync(keyDir);
    const clientKey = join(keyDir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', clientKey]);
    writeFileSync(join(keyDir, 'authorized_keys'), readFileSync(`${clientKey}.pub`));
    const a = 20 + Math.floor(Math.random() * 200);
    const cpHost = `127.${a}.7.10`;
    const wHost = `127.${a}.7.11`;
    const s1 = await startSshd(join(tmp, 'sshd1'), cpHost, join(keyDir, 'authorized_keys'));
    const s2 = await startSshd(join(tmp, 'sshd2'), wHost, join(keyDir, 'authorized_keys'));
    await page.goto(`${base}/bootstrap`);
    await page.getByTestId('node-host-0').fill(cpHost);
    await page.getByTestId('node-port-0').fill(String(s1.port));
    await page.getByTestId('node-host-1').fill(wHost);
    await page.getByTestId('node-port-1').fill(String(s2.port));
    const key = readFileSync(clientKey, 'utf8');
    await page.getByTestId('node-0').getByLabel('Private key (optional, never stored)').fill(key);
    await page.getByTestId('node-1').getByLabel('Private key (optional, never stored)').fill(key);
    await page.getByTestId('fetch-host-keys').click();
    await expect.poll(() => page.getByTestId(`hostkey-${cpHost}`).textContent(), { timeout: 20_000 }).toContain(s1.fingerprint);
    expect(await page.getByTestId(`hostkey-${wHost}`).textContent()).toContain(s2.fingerprint);
    // Nothing connects before every fingerprint is confirmed.
    expect(await page.getByTestId('run-preflight').isDisabled()).toBe(true);
    await page.getByTestId(`confirm-${cpHost}`).check();
    expect(await page.getByTestId('run-preflight').isDisabled()).toBe(true);
    await page.getByTestId(`confirm-${wHost}`).check();
    await shot('bootstrap-keys');
    expect(await axe('bootstrap-keys')).toEqual([]);
    await page.getByTestId('run-preflight').click();
    await expect.poll(() => page.getByTestId(`check-${cpHost}-ssh`).textContent(), { timeout: 30_000 }).toContain('passed');
    expect(await page.getByTestId(`check-${wHost}-ssh`).textContent()).toContain('passed');
    expect(await page.getByTestId('preflight-table').textContent()).toMatch(/hostname/i);
    await shot('bootstrap-preflight');
    expect(await axe('bootstrap-preflight')).toEqual([]);

    // Start: the job page follows its phase live. The GitHub mirror here answers nothing, so the
    // Kubespray checkout fails and the page shows the job's own error.
    await page.getByTestId('bootstrap-start').click();
    await expect.poll(() => page.url(), { timeout: 20_000 }).toMatch(/\/bootstrap\/bootstrap-[0-9a-f]{12}$/);
    const id = page.url().split('/').pop() ?? '';
    await expect.poll(() => page.getByTestId('bootstrap-phase').textContent(), { timeout: 120_000 }).toBe('failed');
    expect((await page.getByRole('alert').first().textContent())?.length).toBeGreaterThan(0);
    expect(await page.getByTestId('bootstrap-cancel').count()).toBe(0);
    await shot('bootstrap-run-failed');
    expect(await axe('bootstrap-run')).toEqual([]);
    await page.goto(`${base}/bootstrap`);
    await expect.poll(() => page.getByTestId('bootstrap-jobs').textContent(), { timeout: 20_000 }).toContain(id);
  });
});

/**
 * llm-d Lens' create-cluster wizard (`lens-ui/src/components/CreateClusterWizard.jsx`), call by
 * call with its bodies, from a page of the proxy's origin: its request helper sets `Accept` and
 * `Content-Type: application/json` on every call (a DELETE without a body too), sends the
 * browser's cookies, never an `Authorization` of its own, and the register step posts a
 * `FormData` (name, description, the kubeconfig as a File, draft) with the browser's own multipart
 * type and no header of ironlens'.
 */
describe('llm-d Lens’ create-cluster wizard behind nginx', () => {
  it('database check, hosts, versions, register (multipart), version check, proxy auto, gateway fields, HF token, finish; overview with Lens’ fields; Cancel and delete', async () => {
    await page.goto(`${lensProxy!.url}/clusters`);
    const call = (path: string, method?: string, body?: unknown) => page.evaluate(lensRequest, { path, method, body });
    const out: Record<string, LensAnswer> = {};
    out.database = await call('/api/v1/system/database');
    out.hosts = await call('/api/cluster/lens-hosts');
    out.versions = await call('/api/v1/versions');
    out.capabilities = await call('/api/v1/hardware/capabilities');
    out.register = await page.evaluate(lensRegister, { kubeconfig: kube.kubeconfig, name: 'lens-wizard' });
    const id = out.register.body.cluster.id as string;
    out.version = await call(`/api/cluster/clusters/${id}/kubernetes-version`);
    out.proxy = await call(`/api/cluster/clusters/${id}`, 'PATCH', { proxy: { mode: 'auto' } });
    out.gateway = await call(`/api/cluster/clusters/${id}`, 'PATCH', { gatewayProvider: 'istio', gatewayPort: null, gatewayPublicUrl: null, gatewayAuthzHost: out.hosts.body.items[0], inotifyMaxUserInstances: null });
    out.crds = await call(`/api/cluster/clusters/${id}/crds`);
    out.hf = await call(`/api/cluster/clusters/${id}/hf-token-secrets`, 'POST', { namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-1a2b3c4d', token: 'hf_lensWizardToken' });
    out.finish = await call(`/api/cluster/clusters/${id}`, 'PATCH', { draft: false });
    out.overview = await call(`/api/cluster/overview?clusterId=${id}`);
    // The Cancel of a second wizard: DELETE, Content-Type: application/json, no body.
    const other = await page.evaluate(lensRegister, { kubeconfig: kube.kubeconfig, name: 'lens-cancelled' });
    out.cancel = await call(`/api/cluster/clusters/${other.body.cluster.id}`, 'DELETE');
    out.list = await call('/api/cluster/clusters?includeDrafts=true');
    expect(out.database).toEqual({ status: 200, body: { configured: true, mode: 'embedded', engine: 'sqlite', displayTarget: null } });
    expect(out.hosts.status).toBe(200);
    expect(out.versions.body).toMatchObject({ llm_d: 'v0.10.0', min_k8s_version: 'v1.32.0' });
    // Not seed 000's: Lens swallows it and shows its static list.
    expect(out.capabilities.status).toBe(404);
    expect(out.register.status).toBe(201);
    expect(out.register.body.cluster).toMatchObject({ name: 'lens-wizard', draft: true, proxy: { mode: 'auto' } });
    expect(out.version).toEqual({ status: 200, body: { reachable: true, version: '1.36', min_k8s_version: 'v1.32.0', supported: true } });
    expect(out.proxy.status).toBe(200);
    expect(out.proxy.body.cluster.proxy).toEqual({ mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null });
    expect(out.gateway.status).toBe(200);
    expect(out.gateway.body.cluster).toMatchObject({ gatewayProvider: 'istio', gatewayPort: null, gatewayAuthzHost: out.hosts.body.items[0], inotifyMaxUserInstances: 8192 });
    expect(out.crds.status).toBe(200);
    expect(out.hf).toEqual({ status: 201, body: { namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-1a2b3c4d' } });
    const core = kube.kubeConfig().makeApiClient(CoreV1Api);
    const secret = await core.readNamespacedSecret({ namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-1a2b3c4d' });
    expect(Buffer.from(secret.data?.HF_TOKEN ?? '', 'base64').toString()).toBe('hf_lensWizardToken');
    expect(out.finish.body.cluster).toMatchObject({ id, draft: false });
    // The overview Lens' pages read: per-node memoryBytes (else Lens flags the cluster abnormal), gpus, the plugins.
    const ov = out.overview.body.kubernetes;
    expect(out.overview.status).toBe(200);
    expect(ov.components.acceleratorDevicePlugins).toHaveProperty('nvidia-cuda');
    const nv = ov.nodes.find((n: { name: string }) => n.name === 'gpu-nv-0001');
    expect(nv).toMatchObject({ memoryBytes: 2015 * 2 ** 30, gpuCount: 8 });
    expect(nv.gpus.map((g: { pciAddress: string }) => g.pciAddress)).toEqual(['18', '2a', '3a', '5d', '9a', 'ab', 'ba', 'db'].map((b) => `00000000:${b}:00.0`));
    expect(ov.hardware).toHaveProperty('deviceMetrics');
    expect(ov.hardware.configuredGpuLimit).toBeNull();
    expect(out.cancel.status).toBe(204);
    expect(out.list.body.items.map((c: { name: string }) => c.name)).toEqual(expect.arrayContaining(['lens-wizard']));
    expect(out.list.body.items.map((c: { name: string }) => c.name)).not.toContain('lens-cancelled');
    await shot('lens-wizard-behind-nginx');
    // Lens' delete of the finished cluster, as its helper sends it: the full cleanup, 204.
    expect((await call(`/api/cluster/clusters/${id}`, 'DELETE')).status).toBe(204);
    await expect.poll(async () => (await core.listNamespace()).items.some((n) => n.metadata?.name === `llm-d-bench-storage-${id}`), { timeout: 60_000 }).toBe(false);
  });
});
