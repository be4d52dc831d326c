import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { type KubeHarness, nvidiaGpuUuid, startKubeCluster } from '@ironlens/kube-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientNodeConnector, type Kube, type KubeConnector } from './adapters/kube.adapter';
import { stackProfile } from './shared/profile';
import { type ClustersTestApp, multipart, startClustersApp } from './testing/app';
import { CountingConnectProxy } from './testing/counting-proxy';
import { gatewayApiBundle, inferenceExtensionBundle } from './testing/crd-bundles';
import { LocalGithubMirror } from './testing/github-mirror';
import { sleep } from '@ironlens/core/testing';

// The cluster manager against a real control plane (etcd, kube-apiserver, controller-manager,
// scheduler) with kwok GPU nodes: control-plane-0, gpu-nv-0001 (8x H100), gpu-intel-0002 (4x Max 1550).

let h: KubeHarness;
let t: ClustersTestApp;
let mirror: LocalGithubMirror;
let core: CoreV1Api;
let apps: AppsV1Api;
let ext: ApiextensionsV1Api;
let id: string;

const MiB = 2 ** 20;
const GiB = 2 ** 30;

async function until<T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await sleep(200);
  }
}

async function register(fields: Record<string, string>, kubeconfig = h.kubeconfig) {
  const { payload, headers } = multipart(fields, { content: kubeconfig });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster as { id: string; [k: string]: unknown };
}

const get = (url: string) => t.app.inject({ method: 'GET', url });

/** One GPU of the overview (Lens' GpuDeviceSummary): what is not given is unknown (null). */
const gpuView = (g: { id: string; index: number; name: string; pciAddress?: string; uuid?: string; vramTotalBytes?: number }) => ({
  pciAddress: null,
  uuid: null,
  computeUsagePercent: null,
  vramTotalBytes: null,
  vramUsedBytes: null,
  vramUsagePercent: null,
  vramReadThroughputBytes: null,
  vramWriteThroughputBytes: null,
  vramTotalThroughputBytes: null,
  vramBandwidthPercent: null,
  ...g,
});
const send = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object) => t.app.inject({ method, url, payload });

beforeAll(async () => {
  h = await startKubeCluster({ nodes: 'test', gpu: true });
  // What each kubelet's Summary says the node uses (the overview's CPU and memory figures, issue 33).
  h.kubelet.setUsage('gpu-nv-0001', { cpuNanoCores: 56e9, memoryWorkingSetBytes: 403 * GiB });
  h.kubelet.setUsage('gpu-intel-0002', { cpuNanoCores: 11.2e9, memoryWorkingSetBytes: 256 * GiB });
  h.kubelet.setUsage('control-plane-0', { cpuNanoCores: 2e9, memoryWorkingSetBytes: 8 * GiB });
  core = h.kubeConfig().makeApiClient(CoreV1Api);
  apps = h.kubeConfig().makeApiClient(AppsV1Api);
  ext = h.kubeConfig().makeApiClient(ApiextensionsV1Api);
  mirror = new LocalGithubMirror();
  mirror.addReleaseAsset('/kubernetes-sigs/gateway-api/releases/download/v1.5.1/standard-install.yaml', gatewayApiBundle());
  mirror.addReleaseAsset('/kubernetes-sigs/gateway-api-inference-extension/releases/download/v1.5.0/v1-manifests.yaml', inferenceExtensionBundle());
  await mirror.start();
  // The suite checks figures, not timing: overviews wait for every kubelet Summary (the budget
  // is tested on its own below).
  // The trimmed test bundles are pinned by their own sha256 (the profile pins the real assets).
  const sha = (text: string) => createHash('sha256').update(text).digest('hex');
  t = await startClustersApp({
    env: { IRONLENS_GITHUB_MIRROR: mirror.url, IRONLENS_CLUSTER_GATEWAY_CLEANUP_TIMEOUT_MS: '60000', IRONLENS_CLUSTER_SUMMARY_BUDGET_MS: '60000' },
    deps: { bundlePins: { gateway_api: sha(gatewayApiBundle()), gateway_api_inference_extension: sha(inferenceExtensionBundle()) } },
  });
  id = (await register({ name: 'harness' })).id;
}, 45 * 60_000);

afterAll(async () => {
  await t?.close();
  await mirror?.stop();
  await h?.stop();
});

describe('a registered live cluster', () => {
  it('is ready in the list, and its Kubernetes version is checked against min_k8s_version', async () => {
    const item = (await get('/api/cluster/clusters')).json().items.find((c: { id: string }) => c.id === id);
    expect(item.ready).toBe(true);
    const v = await get(`/api/cluster/clusters/${id}/kubernetes-version`);
    expect(v.statusCode).toBe(200);
    expect(v.json()).toEqual({ reachable: true, version: '1.36', min_k8s_version: 'v1.32.0', supported: true });
  });

  it('says supported:false when the profile asks for a newer Kubernetes than the cluster runs', async () => {
    const newer = await startClustersApp({ deps: { profile: { ...stackProfile(), min_k8s_version: 'v1.37.0' } } });
    try {
      const { payload, headers } = multipart({ name: 'old-k8s' }, { content: h.kubeconfig });
      const cid = (await newer.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers })).json().cluster.id;
      expect((await newer.app.inject({ method: 'GET', url: `/api/cluster/clusters/${cid}/kubernetes-version` })).json()).toEqual({
        reachable: true,
        version: '1.36',
        min_k8s_version: 'v1.37.0',
        supported: false,
      });
    } finally {
      await newer.close();
    }
  });

  it('applies fs.inotify.max_user_instances on every node, and again when PATCH sends a new value', async () => {
    const ds = await until('inotify DaemonSet ready on 3 nodes', async () => {
      const d = await apps.readNamespacedDaemonSet({ name: `inotify-${id}`, namespace: 'lens-node-tuning' });
      return d.status?.numberReady === 3 && d;
    });
    const spec = ds.spec!.template.spec!;
    expect(spec.initContainers![0].command).toEqual(['sysctl', '-w', 'fs.inotify.max_user_instances=8192']);
    expect(spec.initContainers![0].securityContext?.privileged).toBe(true);
    expect(spec.tolerations).toEqual([{ operator: 'Exists' }]);
    const res = await send('PATCH', `/api/cluster/clusters/${id}`, { inotifyMaxUserInstances: 16384 });
    expect(res.json().cluster.inotifyMaxUserInstances).toBe(16384);
    await until('inotify DaemonSet re-applied with 16384', async () => {
      const d = await apps.readNamespacedDaemonSet({ name: `inotify-${id}`, namespace: 'lens-node-tuning' });
      return d.spec!.template.spec!.initContainers![0].command!.includes('fs.inotify.max_user_instances=16384');
    });
  });
});

describe('HF token secret', () => {
  it('creates namespace and secret (201), refuses a second create (409), rotates with PUT, refuses an empty token', async () => {
    const created = await send('POST', `/api/cluster/clusters/${id}/hf-token-secrets`, { namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-a', token: 'hf_firstTokenValue' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({ namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-a' });
    const ns = await core.readNamespace({ name: `llm-d-bench-storage-${id}` });
    expect(ns.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('llm-d-lens');
    const secret = await core.readNamespacedSecret({ name: 'hf-token-a', namespace: `llm-d-bench-storage-${id}` });
    expect(secret.type).toBe('Opaque');
    expect(Buffer.from(secret.data!.HF_TOKEN, 'base64').toString()).toBe('hf_firstTokenValue');

    const again = await send('POST', `/api/cluster/clusters/${id}/hf-token-secrets`, { namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-a', token: 'hf_other' });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('secret_already_exists');

    const rotated = await send('PUT', `/api/cluster/clusters/${id}/hf-token-secret`, { token: 'hf_rotatedTokenValue' });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json()).toEqual({ namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-a' });
    const after = await core.readNamespacedSecret({ name: 'hf-token-a', namespace: `llm-d-bench-storage-${id}` });
    expect(Buffer.from(after.data!.HF_TOKEN, 'base64').toString()).toBe('hf_rotatedTokenValue');

    const empty = await send('PUT', `/api/cluster/clusters/${id}/hf-token-secret`, { token: '' });
    expect(empty.statusCode).toBe(422);
    expect(empty.json().code).toBe('invalid_secret_token');

    const rec = (await get('/api/cluster/clusters')).json().items.find((c: { id: string }) => c.id === id);
    expect(rec.hfTokenSecret).toEqual({ namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-a' });
  });

  it('model-secrets lists names and namespaces, never values', async () => {
    const res = await get(`/api/cluster/model-secrets?clusterId=${id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ hostManagedAvailable: true, items: [{ namespace: `llm-d-bench-storage-${id}`, name: 'hf-token-a', hostManaged: true }] });
    expect(res.body).not.toContain('hf_rotated');
  });

  it('keeps the token out of the store, the operations log and every file of the data dir', async () => {
    const ops = await t.store.db.selectFrom('operations').selectAll().execute();
    expect(JSON.stringify(ops)).not.toContain('hf_firstTokenValue');
    expect(JSON.stringify(ops)).not.toContain('hf_rotatedTokenValue');
    expect(ops.some((o) => o.op === 'cluster.hf_token.rotate')).toBe(true);
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d)) {
        const p = join(d, e);
        if (statSync(p).isDirectory()) walk(p);
        else files.push(p);
      }
    };
    walk(t.dataDir);
    const keyData = /client-key-data: (\S+)/.exec(h.kubeconfig)![1];
    const keyPem = Buffer.from(keyData, 'base64').toString();
    const keyLine = keyPem.split('\n').find((l) => l && !l.startsWith('-----'))!;
    for (const f of files) {
      const content = readFileSync(f).toString('latin1');
      for (const needle of ['hf_firstTokenValue', 'hf_rotatedTokenValue', keyData.slice(0, 40), keyLine]) {
        expect(content.includes(needle), `${needle.slice(0, 10)}… in ${f}`).toBe(false);
      }
    }
  });
});

describe('Gateway API / Inference Extension CRDs', () => {
  it('reports missing, applies both bundles server-side (field manager ironlens), reports ready; a second apply changes nothing', async () => {
    expect((await get(`/api/cluster/clusters/${id}/crds`)).json()).toEqual({ gateway_api: 'missing', gateway_api_inference_extension: 'missing' });
    const first = await send('POST', `/api/cluster/clusters/${id}/crds`);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ gateway_api: { ok: true, message: '' }, gateway_api_inference_extension: { ok: true, message: '' } });
    expect(mirror.requests).toContain('/kubernetes-sigs/gateway-api/releases/download/v1.5.1/standard-install.yaml');
    expect(mirror.requests).toContain('/kubernetes-sigs/gateway-api-inference-extension/releases/download/v1.5.0/v1-manifests.yaml');
    expect(mirror.requests.filter((p) => p.startsWith('/assets/'))).toHaveLength(2); // the 302s were followed
    await until('CRDs Established', async () => (await get(`/api/cluster/clusters/${id}/crds`)).json().gateway_api_inference_extension === 'ready');
    expect((await get(`/api/cluster/clusters/${id}/crds`)).json()).toEqual({ gateway_api: 'ready', gateway_api_inference_extension: 'ready' });
    const crd = await ext.readCustomResourceDefinition({ name: 'httproutes.gateway.networking.k8s.io' });
    expect(crd.metadata?.managedFields?.some((m) => m.manager === 'ironlens' && m.operation === 'Apply')).toBe(true);
    expect(crd.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration']).toBeUndefined();
    const rv = crd.metadata?.resourceVersion;
    const second = await send('POST', `/api/cluster/clusters/${id}/crds`);
    expect(second.json()).toEqual({ gateway_api: { ok: true, message: '' }, gateway_api_inference_extension: { ok: true, message: '' } });
    expect((await ext.readCustomResourceDefinition({ name: 'httproutes.gateway.networking.k8s.io' })).metadata?.resourceVersion).toBe(rv);
  });
});

describe('overview', () => {
  it('reports the fixtures’ nodes, GPUs, VRAM, capacity and disk; memory is null until a Prometheus answers', async () => {
    const res = await get(`/api/cluster/overview?clusterId=${id}`);
    expect(res.statusCode).toBe(200);
    const o = res.json();
    expect(o.cluster).toMatchObject({ id, ready: true });
    expect(o.fetchedAt).toMatch(/Z$/);
    const byName = Object.fromEntries(o.kubernetes.nodes.map((n: { name: string }) => [n.name, n]));
    // Lens' per-GPU identity from the DRA ResourceSlices; no Prometheus yet: no figures (null, never invented).
    const nvGpu = (i: number, bus: string) =>
      gpuView({ id: `gpu-${i}`, index: i, name: 'NVIDIA H100 80GB HBM3', pciAddress: `00000000:${bus}:00.0`, uuid: nvidiaGpuUuid('gpu-nv-0001', i), vramTotalBytes: 81559 * MiB });
    expect(byName['gpu-nv-0001']).toEqual({
      name: 'gpu-nv-0001',
      version: 'v1.36.3',
      osImage: 'Ubuntu 24.04.2 LTS',
      ready: true,
      schedulingDisabled: false,
      cpu: 224,
      gpu: true,
      gpuCount: 8,
      gpuByProfile: { 'nvidia-cuda': 8 },
      vramBytes: 8 * 81559 * MiB,
      role: 'worker',
      cachedImages: [],
      // 56 of 224 cores, 403 of 2015 GiB in the Summary (set above).
      cpuUsagePercent: 25,
      memoryBytes: 2015 * GiB,
      memoryUsagePercent: 20,
      gpuUsagePercent: null,
      vramUsagePercent: null,
      gpus: ['18', '2a', '3a', '5d', '9a', 'ab', 'ba', 'db'].map((bus, i) => nvGpu(i, bus)),
      diskBytes: 450 * GiB,
      diskUsedBytes: 150 * GiB,
      diskUsagePercent: 33.3,
    });
    expect(byName['gpu-intel-0002']).toMatchObject({ cpu: 112, gpu: true, gpuCount: 4, gpuByProfile: { 'intel-xpu': 4 }, vramBytes: 4 * 131072 * MiB, role: 'worker', cpuUsagePercent: 10, memoryBytes: 1024 * GiB, memoryUsagePercent: 25 });
    expect(byName['gpu-intel-0002'].gpus).toEqual([0, 1, 2, 3].map((i) => gpuView({ id: `gpu-${i}`, index: i, name: 'Max_1550', vramTotalBytes: 131072 * MiB })));
    expect(byName['control-plane-0']).toMatchObject({ cpu: 8, gpu: false, gpuCount: 0, gpuByProfile: {}, vramBytes: 0, role: 'control-plane', gpus: [], cpuUsagePercent: 25, memoryUsagePercent: 25, gpuUsagePercent: null, diskUsagePercent: 33.3 });
    const hw = o.kubernetes.hardware;
    expect(hw).toEqual({
      nodes: 3,
      cpuCores: 344,
      memoryBytes: (32 + 2015 + 1024) * GiB,
      memoryUsagePercent: null,
      memoryAvailableBytes: null,
      diskBytes: 3 * 450 * GiB,
      diskUsedBytes: 3 * 150 * GiB,
      diskAvailableBytes: 3 * 300 * GiB,
      diskUsagePercent: 33.3,
      gpuNodes: 2,
      gpuCount: 12,
      totalGpuCount: 12,
      accelerators: [
        { id: 'intel-xpu', gpuCount: 4 },
        { id: 'nvidia-cuda', gpuCount: 8 },
      ],
      vramBytes: 8 * 81559 * MiB + 4 * 131072 * MiB,
      allocatedGpuCount: 0,
      availableGpuCount: 12,
      usableGpuCount: 12,
      // (56 + 11.2 + 2) of (224 + 112 + 8) cores.
      cpuUsagePercent: 20.1,
      gpuUsagePercent: null,
      vramUsagePercent: null,
      deviceMetrics: ['vramTotalBytes'],
      configuredGpuLimit: null,
    });
    expect(o.kubernetes.components.monitoring).toEqual({ installed: false, ready: 0, desired: 0, status: 'missing' });
    expect(o.kubernetes.components.acceleratorDevicePlugins).toEqual({
      'intel-xpu': { installed: false, ready: 0, desired: 0, status: 'missing' },
      'nvidia-cuda': { installed: false, ready: 0, desired: 0, status: 'missing' },
    });
    expect(o.kubernetes.namespaces.map((n: { name: string }) => n.name)).toEqual(expect.arrayContaining(['default', 'kube-system', 'lens-node-tuning']));
    // The disk figures came from each kubelet's Summary API through the node proxy.
    expect(h.kubelet.requests).toEqual(expect.arrayContaining(['gpu-nv-0001 /stats/summary', 'gpu-intel-0002 /stats/summary', 'control-plane-0 /stats/summary']));
  });

  it('takes memory use from the cluster’s Prometheus through the service proxy, and counts allocated GPUs', async () => {
    const prom = await h.exposePrometheus();
    h.prometheus.set([
      { metric: { __name__: 'node_memory_MemTotal_bytes', instance: 'gpu-nv-0001' }, value: 100 * GiB },
      { metric: { __name__: 'node_memory_MemAvailable_bytes', instance: 'gpu-nv-0001' }, value: 80 * GiB },
      { metric: { __name__: 'node_memory_MemTotal_bytes', instance: 'gpu-intel-0002' }, value: 100 * GiB },
      { metric: { __name__: 'node_memory_MemAvailable_bytes', instance: 'gpu-intel-0002' }, value: 40 * GiB },
    ]);
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'gpu-user' },
        spec: { containers: [{ name: 'c', image: 'example.invalid/x:1', resources: { requests: { 'nvidia.com/gpu': '2' }, limits: { 'nvidia.com/gpu': '2' } } }] },
      },
    });
    await until('gpu pod bound', async () => (await core.readNamespacedPod({ name: 'gpu-user', namespace: 'default' })).spec?.nodeName);
    // NVIDIA's device plugin, as the GPU operator names it, on the NVIDIA node only.
    const dpLabels = { 'app.kubernetes.io/name': 'nvidia-device-plugin' };
    await apps.createNamespacedDaemonSet({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'nvidia-device-plugin-daemonset', labels: dpLabels },
        spec: {
          selector: { matchLabels: dpLabels },
          template: { metadata: { labels: dpLabels }, spec: { nodeSelector: { 'nvidia.com/gpu.present': 'true' }, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'plugin', image: 'nvcr.io/nvidia/k8s-device-plugin:v0.17.1' }] } },
        },
      },
    });
    await until('device plugin ready on the NVIDIA node', async () => {
      const d = await apps.readNamespacedDaemonSet({ name: 'nvidia-device-plugin-daemonset', namespace: 'kube-system' });
      return d.status?.desiredNumberScheduled === 1 && d.status.numberReady === 1;
    });
    const o = (await get(`/api/cluster/overview?clusterId=${id}`)).json();
    const hw = o.kubernetes.hardware;
    // (20% + 60%) / 2 = 40% of the nodes' capacity.
    expect(hw.memoryUsagePercent).toBe(40);
    expect(hw.memoryAvailableBytes).toBe(Math.round((32 + 2015 + 1024) * GiB * 0.6));
    expect(hw.allocatedGpuCount).toBe(2);
    expect(hw.availableGpuCount).toBe(10);
    expect(o.kubernetes.components.monitoring).toEqual({ installed: true, ready: 1, desired: 1, status: 'ready' });
    expect(h.prometheus.queries).toEqual(expect.arrayContaining(['node_memory_MemAvailable_bytes', 'node_memory_MemTotal_bytes']));
    // Each node's own memory use where node-exporter names it (instance = the node): 20% and 60%; the control plane's from its Summary.
    const byName = Object.fromEntries(o.kubernetes.nodes.map((n: { name: string }) => [n.name, n]));
    expect([byName['gpu-nv-0001'].memoryUsagePercent, byName['gpu-intel-0002'].memoryUsagePercent, byName['control-plane-0'].memoryUsagePercent]).toEqual([20, 60, 25]);
    // DCGM's series for each H100, tied to its DRA device by UUID (the fixture's figures: utilisation
    // (37·i + 121) mod 100, framebuffer used that share of 81559 MiB, DRAM active utilisation mod 50).
    const util = [21, 58, 95, 32, 69, 6, 43, 80];
    const usedMiB = [17127, 47304, 77481, 26099, 56276, 4894, 35070, 65247];
    const dram = [21, 8, 45, 32, 19, 6, 43, 30];
    expect(
      byName['gpu-nv-0001'].gpus.map((g: Record<string, unknown>) => [g.uuid, g.computeUsagePercent, g.vramUsedBytes, g.vramTotalBytes, g.vramUsagePercent, g.vramBandwidthPercent, g.vramReadThroughputBytes]),
    ).toEqual(util.map((u, i) => [nvidiaGpuUuid('gpu-nv-0001', i), u, usedMiB[i] * MiB, 81559 * MiB, u, dram[i], null]));
    expect(byName['gpu-nv-0001']).toMatchObject({ gpuUsagePercent: 50.5, vramUsagePercent: 50.5 });
    expect(o.kubernetes.components.acceleratorDevicePlugins).toEqual({
      'intel-xpu': { installed: false, ready: 0, desired: 0, status: 'missing' },
      'nvidia-cuda': { installed: true, ready: 1, desired: 1, status: 'ready' },
    });
    // The Intel GPUs have no XPU manager series: their figures stay unknown.
    expect(byName['gpu-intel-0002']).toMatchObject({ gpuUsagePercent: null, vramUsagePercent: null });
    expect(byName['gpu-intel-0002'].gpus.every((g: { computeUsagePercent: unknown }) => g.computeUsagePercent === null)).toBe(true);
    expect(hw).toMatchObject({ gpuUsagePercent: 50.5, vramUsagePercent: 50.5, deviceMetrics: ['computeUsagePercent', 'vramBandwidthPercent', 'vramTotalBytes', 'vramUsagePercent', 'vramUsedBytes'], configuredGpuLimit: null });
    expect(h.prometheus.queries).toEqual(expect.arrayContaining(['DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_FB_FREE', 'DCGM_FI_PROF_DRAM_ACTIVE']));
    expect(prom.namespace).toBe('monitoring');
    await core.deleteNamespacedPod({ name: 'gpu-user', namespace: 'default', gracePeriodSeconds: 0 });
    await apps.deleteNamespacedDaemonSet({ name: 'nvidia-device-plugin-daemonset', namespace: 'kube-system' });
  });
});

/**
 * The real adapter, except that kubelet Summaries are held until `release()`: a kubelet that
 * has not answered yet. Counts the Summary calls it was asked for and those that finished.
 */
class HeldSummaries {
  readonly asked: string[] = [];
  finished = 0;
  private released = false;
  private readonly waiting: Array<() => void> = [];

  readonly connector: KubeConnector = (kubeconfig, opts) => {
    const real = clientNodeConnector(kubeconfig, opts);
    return new Proxy(real, {
      get: (target, prop) => {
        if (prop === 'nodeSummary') {
          return async (name: string, timeoutMs?: number) => {
            this.asked.push(name);
            if (!this.released) await new Promise<void>((r) => this.waiting.push(r));
            try {
              return await target.nodeSummary(name, timeoutMs);
            } finally {
              this.finished++;
            }
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Kube;
  };

  release(): void {
    this.released = true;
    for (const r of this.waiting.splice(0)) r();
  }
}

describe('overview within its time budget (IRONLENS_CLUSTER_SUMMARY_BUDGET_MS)', () => {
  it('answers with the disk figures null while kubelet Summaries are outstanding, and has them on the next call', async () => {
    const held = new HeldSummaries();
    const b = await startClustersApp({ env: { IRONLENS_CLUSTER_SUMMARY_BUDGET_MS: '300' }, deps: { connector: held.connector } });
    try {
      const { payload, headers } = multipart({ name: 'budget', draft: 'true' }, { content: h.kubeconfig });
      const reg = await b.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
      expect(reg.statusCode, reg.body).toBe(201);
      const cid = reg.json().cluster.id as string;

      // No kubelet answers: the overview does not wait for them past the budget.
      const first = await b.app.inject({ method: 'GET', url: `/api/cluster/overview?clusterId=${cid}` });
      expect(first.statusCode).toBe(200);
      const o1 = first.json();
      const ready = o1.kubernetes.nodes.filter((n: { ready: boolean }) => n.ready).map((n: { name: string }) => n.name);
      expect(ready).toEqual(expect.arrayContaining(['control-plane-0', 'gpu-nv-0001', 'gpu-intel-0002']));
      expect(o1.kubernetes.hardware).toMatchObject({
        nodes: o1.kubernetes.nodes.length,
        diskBytes: null,
        diskUsedBytes: null,
        diskAvailableBytes: null,
        diskUsagePercent: null,
        totalGpuCount: expect.any(Number),
      });
      expect(o1.kubernetes.hardware.totalGpuCount).toBeGreaterThanOrEqual(12);
      expect([...held.asked].sort()).toEqual([...ready].sort());

      // The scrape goes on in the background; once the kubelets answer, the next call has the figures.
      held.release();
      await until('the held Summaries finished', async () => held.finished === ready.length, 30_000);
      await new Promise((r) => setImmediate(r));
      const o2 = (await b.app.inject({ method: 'GET', url: `/api/cluster/overview?clusterId=${cid}` })).json();
      expect(o2.kubernetes.hardware).toMatchObject({
        diskBytes: ready.length * 450 * GiB,
        diskUsedBytes: ready.length * 150 * GiB,
        diskAvailableBytes: ready.length * 300 * GiB,
        diskUsagePercent: 33.3,
      });
      // From the cache filled by the first call's scrape: no kubelet was asked twice.
      expect(held.asked.length).toBe(ready.length);
    } finally {
      await b.close();
    }
  });
});

describe('cordon / uncordon', () => {
  it('sets spec.unschedulable on workers, refuses control-plane nodes and unknown names, one result per node', async () => {
    const res = await send('POST', `/api/cluster/clusters/${id}/nodes/cordon`, { names: ['gpu-nv-0001', 'control-plane-0', 'no-such-node'] });
    expect(res.statusCode).toBe(200);
    const items = res.json().items;
    expect(items).toEqual([
      { name: 'gpu-nv-0001', ok: true, schedulingDisabled: true, error: null },
      { name: 'control-plane-0', ok: false, schedulingDisabled: false, error: expect.any(String) },
      { name: 'no-such-node', ok: false, schedulingDisabled: null, error: 'node not found' },
    ]);
    expect((await core.readNode({ name: 'gpu-nv-0001' })).spec?.unschedulable).toBe(true);
    expect((await core.readNode({ name: 'control-plane-0' })).spec?.unschedulable).toBeFalsy();
    const o = (await get(`/api/cluster/overview?clusterId=${id}`)).json();
    expect(o.kubernetes.nodes.find((n: { name: string }) => n.name === 'gpu-nv-0001').schedulingDisabled).toBe(true);
    expect(o.kubernetes.hardware.usableGpuCount).toBe(4);

    const un = await send('POST', `/api/cluster/clusters/${id}/nodes/uncordon`, { names: ['gpu-nv-0001'] });
    expect(un.json().items).toEqual([{ name: 'gpu-nv-0001', ok: true, schedulingDisabled: false, error: null }]);
    expect((await core.readNode({ name: 'gpu-nv-0001' })).spec?.unschedulable).toBeFalsy();
  });
});

describe('sessions and planning discovery', () => {
  it('reads the allow-listed resources for an active session', async () => {
    const sid = (await get(`/api/cluster/session?clusterId=${id}`)).json().sessionId;
    const nodes = (await get(`/api/cluster/sessions/${sid}/planning-discovery/nodes`)).json();
    expect(nodes.result.items.map((n: { metadata: { name: string } }) => n.metadata.name).sort()).toEqual(['control-plane-0', 'gpu-intel-0002', 'gpu-nv-0001']);
    expect((await get(`/api/cluster/sessions/${sid}/planning-discovery/version`)).json().result.gitVersion).toBe('v1.36.3');
    const classes = (await get(`/api/cluster/sessions/${sid}/planning-discovery/deviceclasses`)).json().result.items.map((c: { metadata: { name: string } }) => c.metadata.name);
    expect(classes.sort()).toEqual(['gpu.intel.com', 'gpu.nvidia.com']);
    const slices = (await get(`/api/cluster/sessions/${sid}/planning-discovery/resourceslices`)).json().result.items;
    expect(slices).toHaveLength(2);
    // DRA attributes come back as the API server wrote them (`int`, not a client's `_int`).
    expect(slices[0].spec.devices[0].attributes.index).toEqual({ int: 0 });
    expect((await get(`/api/cluster/sessions/${sid}/planning-discovery/runtimeclasses`)).json()).toEqual({ result: expect.objectContaining({ items: [] }) });
  });
});

describe('gateway port', () => {
  it('checks NodePorts against every Service and refuses a held port on PATCH', async () => {
    await core.createNamespace({ body: { metadata: { name: 'user-ns' } } });
    await core.createNamespacedService({
      namespace: 'user-ns',
      body: { metadata: { name: 'web' }, spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ port: 80, nodePort: 30123 }] } },
    });
    expect((await get(`/api/cluster/clusters/${id}/gateway-port-check?port=30123`)).json()).toEqual({
      available: false,
      owner: 'user-ns/web',
      reason: expect.any(String),
    });
    expect((await get(`/api/cluster/clusters/${id}/gateway-port-check?port=30124`)).json()).toEqual({ available: true, owner: null });
    const outside = (await get(`/api/cluster/clusters/${id}/gateway-port-check?port=8080`)).json();
    expect(outside).toEqual({ available: false, owner: null, reason: expect.any(String) });
    const held = await send('PATCH', `/api/cluster/clusters/${id}`, { gatewayPort: 30123 });
    expect(held.statusCode).toBe(422);
    expect(held.json().code).toBe('gateway_port_in_use');
    expect((await send('PATCH', `/api/cluster/clusters/${id}`, { gatewayPort: 30124 })).json().cluster.gatewayPort).toBe(30124);
  });
});

describe('image pre-pull', () => {
  it('runs one privileged puller per image on every node, reports per image and per node, and after a restart', async () => {
    const bad = await send('POST', `/api/cluster/clusters/${id}/images/prepull`, { accelerators: ['amd'] });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().code).toBe('invalid_accelerator');
    expect((await get(`/api/cluster/clusters/${id}/images/prepull`)).json()).toEqual({ state: 'idle', desired: 0, ready: 0, images: [], nodes: [] });

    const res = await send('POST', `/api/cluster/clusters/${id}/images/prepull`, { accelerators: ['nvidia', 'intel'] });
    expect(res.statusCode).toBe(200);
    expect(res.json().images.map((i: { name: string }) => i.name)).toEqual([
      'ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.11.0',
      'ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.11.0',
      'ghcr.io/llm-d/llm-d-inference-payload-processor:v0.1.0',
      'ghcr.io/llm-d/llm-d-cuda:v0.10.0',
      'ghcr.io/llm-d/llm-d-xpu:v0.10.0',
    ]);
    const ready = await until('pre-pull ready on every node', async () => {
      const s = (await get(`/api/cluster/clusters/${id}/images/prepull`)).json();
      return s.state === 'ready' && s;
    });
    expect(ready.desired).toBe(3);
    expect(ready.ready).toBe(3);
    expect(ready.images.every((i: { ready: number; desired: number; state: string }) => i.ready === 3 && i.desired === 3 && i.state === 'ready')).toBe(true);
    expect(ready.nodes).toEqual([
      { node: 'control-plane-0', phase: 'Running', ready: true, restarts: 0 },
      { node: 'gpu-intel-0002', phase: 'Running', ready: true, restarts: 0 },
      { node: 'gpu-nv-0001', phase: 'Running', ready: true, restarts: 0 },
    ]);
    const ds = await apps.readNamespacedDaemonSet({ name: `prepull-${id}`, namespace: 'lens-images' });
    expect(ds.spec?.template.spec?.hostPID).toBe(true);
    expect(ds.spec?.template.spec?.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(ds.spec?.template.spec?.containers.every((c) => c.securityContext?.privileged && c.readinessProbe?.exec)).toBe(true);

    await t.restart();
    expect((await get(`/api/cluster/clusters/${id}/images/prepull`)).json()).toEqual(ready);

    // A puller that keeps crashing on one node makes its image, and the whole pre-pull, failed.
    const pods = await core.listNamespacedPod({ namespace: 'lens-images', labelSelector: `ironlens.dev/cluster=${id}` });
    const pod = pods.items.find((p) => p.spec?.nodeName === 'gpu-nv-0001')!;
    pod.status!.containerStatuses = pod.status!.containerStatuses!.map((c) =>
      c.name === 'pull-3' ? { ...c, ready: false, restartCount: 4, started: false, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } } } : c,
    );
    pod.status!.conditions = pod.status!.conditions!.map((c) => (c.type === 'Ready' || c.type === 'ContainersReady' ? { ...c, status: 'False' } : c));
    await core.replaceNamespacedPodStatus({ name: pod.metadata!.name!, namespace: 'lens-images', body: pod });
    const failed = await until('pre-pull failed', async () => {
      const s = (await get(`/api/cluster/clusters/${id}/images/prepull`)).json();
      return s.state === 'failed' && s;
    }, 10_000);
    expect(failed.images.find((i: { name: string }) => i.name === 'ghcr.io/llm-d/llm-d-cuda:v0.10.0')).toEqual({ name: 'ghcr.io/llm-d/llm-d-cuda:v0.10.0', ready: 2, desired: 3, state: 'failed' });
    expect(failed.images.find((i: { name: string }) => i.name === 'ghcr.io/llm-d/llm-d-xpu:v0.10.0').state).toBe('ready');
    expect(failed.nodes.find((n: { node: string }) => n.node === 'gpu-nv-0001')).toEqual({ node: 'gpu-nv-0001', phase: 'Running', ready: false, restarts: 4 });
  });
});

describe('proxy settings', () => {
  it('sends every request to a cluster through its custom proxy, and none when noProxy matches', async () => {
    const proxy = new CountingConnectProxy();
    await proxy.start();
    try {
      const server = new URL(h.server);
      const via = await register({ name: 'via-proxy', proxy: JSON.stringify({ mode: 'custom', httpsProxy: proxy.url }) });
      const list = (await get('/api/cluster/clusters')).json().items;
      expect(list.find((c: { id: string }) => c.id === via.id).ready).toBe(true);
      const o = await get(`/api/cluster/overview?clusterId=${via.id}`);
      expect(o.statusCode).toBe(200);
      expect(proxy.connects.length).toBeGreaterThan(0);
      expect(new Set(proxy.connects)).toEqual(new Set([server.host]));

      const before = proxy.connects.length;
      const direct = await register({ name: 'no-proxy-match', proxy: JSON.stringify({ mode: 'custom', httpsProxy: proxy.url, noProxy: `localhost,${server.hostname}` }) });
      expect((await get(`/api/cluster/clusters/${direct.id}/kubernetes-version`)).json().reachable).toBe(true);
      await get(`/api/cluster/overview?clusterId=${direct.id}`);
      expect(proxy.connects.length).toBe(before);

      // A proxy that refuses the tunnel makes the cluster unreachable: proof the setting is used.
      const closed = await register({ name: 'dead-proxy', proxy: JSON.stringify({ mode: 'custom', httpsProxy: 'http://127.0.0.1:9' }) });
      expect((await get(`/api/cluster/clusters/${closed.id}/kubernetes-version`)).json().reachable).toBe(false);
    } finally {
      await proxy.stop();
    }
  });
});

describe('delete', () => {
  it('refuses while llm-d-lens deployments are available or volumes exist (409), then cleans up in order', async () => {
    const c = await register({ name: 'to-delete' });
    const label = { 'app.kubernetes.io/managed-by': 'llm-d-lens' };
    await core.createNamespace({ body: { metadata: { name: 'serving' } } });
    await apps.createNamespacedDeployment({
      namespace: 'serving',
      body: {
        metadata: { name: 'model', labels: label },
        spec: { replicas: 1, selector: { matchLabels: { app: 'model' } }, template: { metadata: { labels: { app: 'model' } }, spec: { containers: [{ name: 'm', image: 'example.invalid/m:1' }] } } },
      },
    });
    await until('deployment available', async () => ((await apps.readNamespacedDeployment({ name: 'model', namespace: 'serving' })).status?.availableReplicas ?? 0) > 0);
    const r1 = await send('DELETE', `/api/cluster/clusters/${c.id}`);
    expect(r1.statusCode).toBe(409);
    expect(r1.json().code).toBe('cluster_has_available_deployments');
    await apps.deleteNamespacedDeployment({ name: 'model', namespace: 'serving' });
    await until('deployment gone', async () => !(await apps.listNamespacedDeployment({ namespace: 'serving', labelSelector: 'app.kubernetes.io/managed-by=llm-d-lens' })).items.length);
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'serving',
      body: { metadata: { name: 'models', labels: label }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '1Gi' } } } },
    });
    const r2 = await send('DELETE', `/api/cluster/clusters/${c.id}`);
    expect(r2.statusCode).toBe(409);
    expect(r2.json().code).toBe('cluster_has_storage_volumes');
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'models', namespace: 'serving' });
    await until('pvc gone', async () => !(await core.listNamespacedPersistentVolumeClaim({ namespace: 'serving' })).items.length);

    // The HF secret in a user namespace that also holds a user object; a gateway namespace with content.
    await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
    await core.createNamespacedConfigMap({ namespace: 'team-a', body: { metadata: { name: 'user-settings' }, data: { a: 'b' } } });
    expect((await send('POST', `/api/cluster/clusters/${c.id}/hf-token-secrets`, { namespace: 'team-a', name: 'hf', token: 'hf_x' })).statusCode).toBe(201);
    await core.createNamespace({ body: { metadata: { name: `lens-gateway-${c.id}` } } });
    await core.createNamespacedConfigMap({ namespace: `lens-gateway-${c.id}`, body: { metadata: { name: 'route' }, data: { x: 'y' } } });

    const r3 = await send('DELETE', `/api/cluster/clusters/${c.id}`);
    expect(r3.statusCode).toBe(204);
    expect(r3.body).toBe('');
    // Each attempt is a clusters.delete job of the shared runner: two refused, one done.
    const jobs = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: c.id });
    expect(jobs.map((j) => j.status).sort()).toEqual(['failed', 'failed', 'success']);
    expect(jobs.filter((j) => j.status === 'failed').map((j) => j.error)).toEqual(
      expect.arrayContaining([r1.json().detail, r2.json().detail]),
    );
    const done = jobs.find((j) => j.status === 'success')!;
    expect(done).toMatchObject({ percent: 100, message: 'cluster to-delete deleted', finishedAt: expect.stringMatching(/Z$/) });
    expect(done.log).toEqual(
      expect.arrayContaining([
        '==> check that the cluster no longer serves',
        `==> delete the gateway namespace lens-gateway-${c.id}`,
        '==> delete the HF token secret team-a/hf',
        '==> remove the record',
        'namespace team-a kept: it holds 1 other object(s)',
      ]),
    );
    expect(done.result).toEqual({ notes: ['namespace team-a kept: it holds 1 other object(s)'] });
    expect(await core.readNamespace({ name: `lens-gateway-${c.id}` }).catch((e) => e.code)).toBe(404);
    expect(await core.readNamespacedSecret({ name: 'hf', namespace: 'team-a' }).catch((e) => e.code)).toBe(404);
    expect((await core.readNamespace({ name: 'team-a' })).status?.phase).toBe('Active');
    expect((await core.readNamespacedConfigMap({ name: 'user-settings', namespace: 'team-a' })).data).toEqual({ a: 'b' });
    const gone = await send('DELETE', `/api/cluster/clusters/${c.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().code).toBe('cluster_not_found');
  });

  it('deletes a namespace left with only Kubernetes’ own objects, and a draft’s volumes', async () => {
    const c = await register({ name: 'draft-delete', draft: 'true' });
    await core.createNamespace({ body: { metadata: { name: 'plain-ns' } } });
    await until('kube-root-ca.crt injected', async () => core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'plain-ns' }));
    expect((await send('POST', `/api/cluster/clusters/${c.id}/hf-token-secrets`, { namespace: 'plain-ns', name: 'hf', token: 'hf_y' })).statusCode).toBe(201);
    const label = { 'app.kubernetes.io/managed-by': 'llm-d-lens' };
    await core.createPersistentVolume({
      body: {
        metadata: { name: `pv-${c.id}`, labels: label },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: '', hostPath: { path: '/tmp/models' } },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: { metadata: { name: 'draft-models', labels: label }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', volumeName: `pv-${c.id}`, resources: { requests: { storage: '1Gi' } } } },
    });
    const r = await send('DELETE', `/api/cluster/clusters/${c.id}`);
    expect(r.statusCode).toBe(204);
    await until('plain-ns deleted', async () => {
      const ns = await core.readNamespace({ name: 'plain-ns' }).catch((e) => (e.code === 404 ? null : Promise.reject(e)));
      return !ns || !!ns.metadata?.deletionTimestamp;
    });
    await until('draft PVC and PV deleted', async () => {
      const pvc = await core.readNamespacedPersistentVolumeClaim({ name: 'draft-models', namespace: 'default' }).catch((e) => (e.code === 404 ? null : Promise.reject(e)));
      const pv = await core.readPersistentVolume({ name: `pv-${c.id}` }).catch((e) => (e.code === 404 ? null : Promise.reject(e)));
      return (!pvc || !!pvc.metadata?.deletionTimestamp) && (!pv || !!pv.metadata?.deletionTimestamp);
    });
  });

  it('a delete job cancelled while the gateway namespace is terminating answers 502 and keeps the record', async () => {
    const c = await register({ name: 'cancel-delete', draft: 'true' });
    // A draft some write of ironlens reached (one none reached skips the remote cleanup: clusters.api.test.ts).
    await t.store.db.updateTable('clusters').set({ reached_at: '2026-01-01T00:00:00Z' }).where('id', '=', c.id).execute();
    const ns = `lens-gateway-${c.id}`;
    // A finalizer nobody removes keeps the namespace terminating.
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'held', finalizers: ['example.com/hold'] } } });
    const pending = send('DELETE', `/api/cluster/clusters/${c.id}`);
    const job = await until('the delete job waiting for the gateway namespace', async () => {
      const [j] = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: c.id });
      return j?.status === 'running' && j.stage === `delete the gateway namespace ${ns}` ? j : undefined;
    });
    await t.services.runner.cancel(job.id);
    const res = await pending;
    expect(res.statusCode).toBe(502);
    expect(res.json().code).toBe('cluster_gateway_cleanup_failed');
    expect((await t.services.runner.repository.get(job.id))?.status).toBe('cancelled');
    const items = (await get('/api/cluster/clusters?includeDrafts=true')).json().items;
    expect(items.map((x: { id: string }) => x.id)).toContain(c.id);
    await core.patchNamespacedConfigMap({ name: 'held', namespace: ns, body: [{ op: 'remove', path: '/metadata/finalizers' }] });
    expect((await send('DELETE', `/api/cluster/clusters/${c.id}`)).statusCode).toBe(204);
  });

  it('deletes the namespace ironlens created for the HF secret (labelled) with the cluster', async () => {
    const c = await register({ name: 'own-ns' });
    expect((await send('POST', `/api/cluster/clusters/${c.id}/hf-token-secrets`, { namespace: `hf-${c.id}`, name: 'hf', token: 'hf_z' })).statusCode).toBe(201);
    await core.createNamespacedConfigMap({ namespace: `hf-${c.id}`, body: { metadata: { name: 'extra' } } });
    expect((await send('DELETE', `/api/cluster/clusters/${c.id}`)).statusCode).toBe(204);
    await until('labelled namespace deleted', async () => {
      const ns = await core.readNamespace({ name: `hf-${c.id}` }).catch((e) => (e.code === 404 ? null : Promise.reject(e)));
      return !ns || !!ns.metadata?.deletionTimestamp;
    });
  });
});

describe('overview edge cases', () => {
  it('counts GPUs and VRAM from DRA ResourceSlices on a node without GPU extended resources, and lists cached images', async () => {
    await core.createNode({
      body: {
        metadata: { name: 'dra-only-0001', labels: { 'kubernetes.io/hostname': 'dra-only-0001', type: 'kwok' }, annotations: { 'kwok.x-k8s.io/node': 'fake' } },
        status: { capacity: { cpu: '16', memory: '64Gi', pods: '110' }, allocatable: { cpu: '16', memory: '64Gi', pods: '110' } },
      },
    });
    await h.apply([
      {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: { name: 'dra-only-0001-gpu.nvidia.com' },
        spec: {
          driver: 'gpu.nvidia.com',
          nodeName: 'dra-only-0001',
          pool: { name: 'dra-only-0001', generation: 1, resourceSliceCount: 1 },
          devices: [
            { name: 'gpu-0', attributes: { index: { int: 0 } }, capacity: { memory: { value: '80Gi' } } },
            { name: 'gpu-1', attributes: { index: { int: 1 } }, capacity: { memory: { value: '80Gi' } } },
          ],
        },
      } as never,
    ]);
    const node = await core.readNode({ name: 'gpu-intel-0002' });
    node.status!.images = [{ names: ['ghcr.io/llm-d/llm-d-xpu@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', 'ghcr.io/llm-d/llm-d-xpu:v0.10.0'], sizeBytes: 4_000_000_000 }];
    await core.replaceNodeStatus({ name: 'gpu-intel-0002', body: node });
    const o = (await get(`/api/cluster/overview?clusterId=${id}`)).json();
    const byName = Object.fromEntries(o.kubernetes.nodes.map((n: { name: string }) => [n.name, n]));
    expect(byName['dra-only-0001']).toMatchObject({ gpu: true, gpuCount: 2, gpuByProfile: { 'nvidia-cuda': 2 }, vramBytes: 160 * GiB, cpu: 16, role: 'worker' });
    expect(byName['gpu-intel-0002'].cachedImages).toEqual(['ghcr.io/llm-d/llm-d-xpu:v0.10.0']);
    expect(o.kubernetes.hardware.totalGpuCount).toBe(14);
  });

  it('never deletes a protected namespace holding the HF secret', async () => {
    const c = await register({ name: 'hf-in-default' });
    expect((await send('POST', `/api/cluster/clusters/${c.id}/hf-token-secrets`, { namespace: 'default', name: 'hf-default', token: 'hf_d' })).statusCode).toBe(201);
    expect((await send('DELETE', `/api/cluster/clusters/${c.id}`)).statusCode).toBe(204);
    expect(await core.readNamespacedSecret({ name: 'hf-default', namespace: 'default' }).catch((e) => e.code)).toBe(404);
    const ns = await core.readNamespace({ name: 'default' });
    expect(ns.metadata?.deletionTimestamp).toBeUndefined();
    expect(ns.status?.phase).toBe('Active');
  });
});
