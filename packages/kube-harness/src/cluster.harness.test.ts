/**
 * The harness against a real control plane (etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler of the pinned version, plus kwok).
 * beforeAll builds the binaries if the cache is cold (tens of minutes) and starts
 * one cluster with the 3-node GPU fixture.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request } from 'node:https';
import {
  AppsV1Api,
  CoreV1Api,
  ApiextensionsV1Api,
  CustomObjectsApi,
  ResourceV1Api,
  VersionApi,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';
import { startKubeCluster, type KubeHarness } from './cluster.harness';
import { crdBundle, jsonSize, BUNDLE_GROUP } from './crd-bundle.fixture';
import { KUBERNETES_VERSION } from './versions.config';
import { DRA_DRIVERS } from './gpu.fixtures';
import { sleep } from '@ironlens/core/testing';

let h: KubeHarness;
let core: CoreV1Api;
let apps: AppsV1Api;

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(250);
  }
}

function statusCode(e: unknown): number | undefined {
  return (e as { code?: number }).code;
}

/** A cold build of the binaries takes longer than the root hookTimeout (600 s): allow 45 min. */
const COLD_BUILD_TIMEOUT_MS = 45 * 60_000;

beforeAll(async () => {
  h = await startKubeCluster({ nodes: 'test', gpu: true });
  const kc = h.kubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
}, COLD_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await h?.stop();
});

describe('kube-harness control plane', { timeout: 120_000 }, () => {
  it('serves the pinned Kubernetes version over TLS with the generated kubeconfig', async () => {
    expect(h.server).toMatch(/^https:\/\/127\.\d+\.\d+\.\d+:\d+$/);
    expect(h.kubeconfig).toContain('certificate-authority-data');
    const v = await h.kubeConfig().makeApiClient(VersionApi).getCode();
    expect(v.gitVersion).toBe(KUBERNETES_VERSION);
    expect(v.major).toBe('1');
    for (const pid of Object.values(h.pids)) expect(() => process.kill(pid, 0)).not.toThrow();
  });

  it('server-side applies a Gateway-API-sized CRD bundle that client-side apply cannot store', async () => {
    const bundle = crdBundle();
    const biggest = bundle.reduce((a, b) => (jsonSize(a) > jsonSize(b) ? a : b));
    // Larger than the 262,144-byte total annotation limit that client-side apply's
    // last-applied-configuration annotation runs into.
    expect(jsonSize(biggest)).toBeGreaterThan(262_144);
    expect(bundle.reduce((s, c) => s + jsonSize(c), 0)).toBeGreaterThan(1_000_000);

    await h.apply(bundle as unknown as KubernetesObject[], { fieldManager: 'ironlens-test' });
    const ext = h.kubeConfig().makeApiClient(ApiextensionsV1Api);
    for (const c of bundle) {
      const got = await until(`${c.metadata.name} Established`, async () => {
        const o = await ext.readCustomResourceDefinition({ name: c.metadata.name });
        return o.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') && o;
      });
      expect(got.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration']).toBeUndefined();
      const mf = got.metadata?.managedFields?.find((m) => m.manager === 'ironlens-test');
      expect(mf?.operation).toBe('Apply');
    }

    // Re-applying the same bundle is a no-op (same resourceVersion): SSA is idempotent.
    const before = await ext.readCustomResourceDefinition({ name: biggest.metadata.name });
    await h.apply([biggest as unknown as KubernetesObject], { fieldManager: 'ironlens-test' });
    const after = await ext.readCustomResourceDefinition({ name: biggest.metadata.name });
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);

    // A custom resource of the new kind, validated by its schema and CEL rules.
    const custom = h.kubeConfig().makeApiClient(CustomObjectsApi);
    await h.apply([
      {
        apiVersion: `${BUNDLE_GROUP}/v1`,
        kind: 'HTTPRoute',
        metadata: { name: 'web', namespace: 'default' },
        spec: { hostnames: ['web.example.com'], parentRefs: [{ name: 'gw' }] },
      } as KubernetesObject,
    ]);
    const route = (await custom.getNamespacedCustomObject({
      group: BUNDLE_GROUP, version: 'v1', namespace: 'default', plural: 'httproutes', name: 'web',
    })) as { spec: { parentRefs: Array<{ kind: string }> } };
    expect(route.spec.parentRefs[0].kind).toBe('Gateway'); // schema default applied
    await expect(
      h.apply([
        {
          apiVersion: `${BUNDLE_GROUP}/v1`,
          kind: 'HTTPRoute',
          metadata: { name: 'bad', namespace: 'default' },
          spec: { parentRefs: [{ name: 'gw', port: 70000 }] },
        } as KubernetesObject,
      ]),
    ).rejects.toMatchObject({ code: 422 });

    // What client-side apply would send: the object plus itself in the annotation. Rejected.
    const csaGroup = `csa.${BUNDLE_GROUP}`;
    const csa = structuredClone(biggest);
    csa.metadata.name = `${(csa.spec.names as { plural: string }).plural}.${csaGroup}`;
    csa.spec.group = csaGroup;
    csa.metadata.annotations = {
      ...csa.metadata.annotations,
      'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(csa),
    };
    const err = await ext.createCustomResourceDefinition({ body: csa as never }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(statusCode(err)).toBe(422);
    expect(String((err as { body?: string }).body)).toMatch(/Too long|262144/);
  });

  it('deletes a namespace with content to completion (namespace controller)', async () => {
    const ns = 'harness-ns-delete';
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'c' }, data: { a: 'b' } } });
    await until('default ServiceAccount in the new namespace', async () =>
      (await core.readNamespacedServiceAccount({ name: 'default', namespace: ns })).metadata?.name,
    );
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'd' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'd' } },
          template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'registry.invalid/x:1' }] } },
        },
      },
    });
    await core.deleteNamespace({ name: ns });
    const terminating = await core.readNamespace({ name: ns }).catch(() => undefined);
    if (terminating) expect(terminating.status?.phase).toBe('Terminating');
    await until(
      `namespace ${ns} gone`,
      async () => {
        try {
          await core.readNamespace({ name: ns });
          return false;
        } catch (e) {
          return statusCode(e) === 404;
        }
      },
      90_000,
    );
  });

  it('runs a DaemonSet whose pods become Ready on every kwok node', async () => {
    const nodes = (await core.listNode()).items;
    expect(nodes).toHaveLength(3);
    await apps.createNamespacedDaemonSet({
      namespace: 'default',
      body: {
        metadata: { name: 'node-agent' },
        spec: {
          selector: { matchLabels: { app: 'node-agent' } },
          template: {
            metadata: { labels: { app: 'node-agent' } },
            spec: {
              tolerations: [{ operator: 'Exists' }], // like real node agents: also on the control plane
              containers: [{ name: 'agent', image: 'ghcr.io/ironlens/agent:dev', resources: { requests: { cpu: '10m' } } }],
            },
          },
        },
      },
    });
    const ds = await until(
      'DaemonSet ready on all nodes',
      async () => {
        const d = await apps.readNamespacedDaemonSet({ name: 'node-agent', namespace: 'default' });
        const s = d.status;
        return s && s.desiredNumberScheduled === 3 && s.numberReady === 3 && s.numberAvailable === 3 && d;
      },
      90_000,
    );
    expect(ds.status?.currentNumberScheduled).toBe(3);
    const pods = (await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=node-agent' })).items;
    expect(new Set(pods.map((p) => p.spec?.nodeName))).toEqual(new Set(nodes.map((n) => n.metadata?.name)));
    for (const p of pods) {
      expect(p.status?.phase).toBe('Running');
      expect(p.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }
  });

  it('runs a Deployment to Available, never on the tainted control-plane node', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 4,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.29' }] } },
        },
      },
    });
    await until(
      'Deployment available',
      async () => {
        const d = await apps.readNamespacedDeployment({ name: 'web', namespace: 'default' });
        return d.status?.readyReplicas === 4 && d.status?.availableReplicas === 4;
      },
      90_000,
    );
    const pods = (await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' })).items;
    expect(pods.every((p) => p.spec?.nodeName && p.spec.nodeName !== 'control-plane-0')).toBe(true);
  });

  it('shows GPU nodes as real clusters do: capacity, GFD and Intel labels, control-plane taint', async () => {
    const nodes = (await core.listNode()).items;
    const nv = nodes.find((n) => n.metadata?.labels?.['nvidia.com/gpu.present'] === 'true');
    const intel = nodes.find((n) => n.metadata?.labels?.['intel.feature.node.kubernetes.io/gpu'] === 'true');
    const cp = nodes.find((n) => n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] !== undefined);
    expect(nv?.status?.capacity?.['nvidia.com/gpu']).toBe('8');
    expect(nv?.status?.allocatable?.['nvidia.com/gpu']).toBe('8');
    expect(nv?.metadata?.labels).toMatchObject({
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'nvidia.com/gpu.memory': '81559',
      'nvidia.com/gpu.count': '8',
    });
    expect(intel?.status?.capacity?.['gpu.intel.com/xe']).toBe('4');
    expect(intel?.metadata?.labels?.['gpu.intel.com/product']).toBe('Max_1550');
    expect(cp?.spec?.taints).toEqual([{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]);
    for (const n of nodes) {
      expect(n.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address).toMatch(/^198\.1[89]\./);
    }

    // The scheduler honours the extended resource: a 2-GPU pod lands on the NVIDIA node.
    const pod: V1Pod = {
      metadata: { name: 'cuda-job' },
      spec: { containers: [{ name: 'c', image: 'nvcr.io/nvidia/cuda:12.8.0-base', resources: { limits: { 'nvidia.com/gpu': '2' } } }] },
    };
    await core.createNamespacedPod({ namespace: 'default', body: pod });
    const placed = await until('GPU pod Running', async () => {
      const p = await core.readNamespacedPod({ name: 'cuda-job', namespace: 'default' });
      return p.status?.phase === 'Running' && p;
    });
    expect(placed.spec?.nodeName).toBe(nv?.metadata?.name);
  });

  it('lists DRA DeviceClasses and ResourceSlices through resource.k8s.io/v1', async () => {
    const res = h.kubeConfig().makeApiClient(ResourceV1Api);
    const classes = (await res.listDeviceClass()).items.map((c) => c.metadata?.name);
    expect(classes).toEqual(expect.arrayContaining(Object.values(DRA_DRIVERS)));
    const slices = (await res.listResourceSlice()).items;
    expect(slices.map((s) => s.spec.driver).sort()).toEqual([DRA_DRIVERS.nvidia, DRA_DRIVERS.intel].sort());
    const nvSlice = slices.find((s) => s.spec.driver === DRA_DRIVERS.nvidia)!;
    expect(nvSlice.spec.devices).toHaveLength(8);
    expect(nvSlice.spec.devices?.[0].attributes?.productName?.string).toBe('NVIDIA H100 80GB HBM3');
    expect(nvSlice.spec.devices?.[0].capacity?.memory?.value).toBe('81559Mi');
    expect(nvSlice.spec.pool.name).toBe(nvSlice.spec.nodeName);
  });

  it('allocates a DRA ResourceClaim from the fixture ResourceSlices (kube-scheduler) and runs its pod', async () => {
    await h.apply([
      {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaim',
        metadata: { name: 'one-h100', namespace: 'default' },
        spec: {
          devices: {
            requests: [
              {
                name: 'gpu',
                exactly: {
                  deviceClassName: DRA_DRIVERS.nvidia,
                  selectors: [{ cel: { expression: `device.attributes['${DRA_DRIVERS.nvidia}'].productName == 'NVIDIA H100 80GB HBM3'` } }],
                },
              },
            ],
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'dra-job', namespace: 'default' },
        spec: {
          resourceClaims: [{ name: 'gpu', resourceClaimName: 'one-h100' }],
          containers: [{ name: 'c', image: 'nvcr.io/nvidia/cuda:12.8.0-base', resources: { claims: [{ name: 'gpu' }] } }],
        },
      },
    ]);
    const pod = await until('DRA pod Running', async () => {
      const p = await core.readNamespacedPod({ name: 'dra-job', namespace: 'default' });
      return p.status?.phase === 'Running' && p;
    });
    const res = h.kubeConfig().makeApiClient(ResourceV1Api);
    const claim = await res.readNamespacedResourceClaim({ name: 'one-h100', namespace: 'default' });
    const result = claim.status?.allocation?.devices?.results?.[0];
    expect(result?.driver).toBe(DRA_DRIVERS.nvidia);
    expect(result?.pool).toBe(pod.spec?.nodeName);
    expect(result?.device).toMatch(/^gpu-\d$/);
    expect(claim.status?.reservedFor?.map((r) => r.name)).toContain('dra-job');
  });

  it('reaches the kubelet Summary API stand-in through the API server node proxy', async () => {
    const nv = (await core.listNode({ labelSelector: 'nvidia.com/gpu.present=true' })).items[0];
    const name = nv.metadata!.name!;
    const raw = await core.connectGetNodeProxyWithPath({ name, path: 'stats/summary' });
    const summary = (typeof raw === 'string' ? JSON.parse(raw) : raw) as {
      node: { nodeName: string; cpu: { usageNanoCores: number }; memory: { workingSetBytes: number } };
      pods: Array<{ podRef: { name: string; namespace: string } }>;
    };
    expect(summary.node.nodeName).toBe(name);
    expect(summary.node.cpu.usageNanoCores).toBeGreaterThan(0);
    expect(summary.node.memory.workingSetBytes).toBeGreaterThan(0);
    // Pods are the ones the API server bound to this node (the DaemonSet pod at least).
    expect(summary.pods.some((p) => p.podRef.name.startsWith('node-agent-'))).toBe(true);
    expect(h.kubelet.requests).toContain(`${name} /stats/summary`);
    // The API server dialled the node's InternalIP:kubeletEndpoint.Port through its egress (CONNECT).
    const nodeIp = nv.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    expect(nv.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(10250);
    expect(h.konnectivity.connects).toContain(`${nodeIp}:10250`);

    // The stand-in, like a kubelet, refuses callers without a cluster-CA client certificate.
    const ep = h.kubelet.endpoint(name)!;
    const status = await new Promise<number>((resolve, reject) => {
      request({ host: ep.ip, port: ep.port, path: '/stats/summary', rejectUnauthorized: false }, (r) => {
        r.resume();
        resolve(r.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(401);
  });

  it('answers Prometheus instant queries for the GPU fixtures', async () => {
    const q = encodeURIComponent('sum by (Hostname) (DCGM_FI_DEV_GPU_UTIL)');
    const r = await fetch(`${h.prometheus.url}/api/v1/query?query=${q}`);
    const body = (await r.json()) as { status: string; data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    expect(body.status).toBe('success');
    expect(body.data.resultType).toBe('vector');
    expect(body.data.result).toHaveLength(1); // one NVIDIA node in the test fixture
    expect(Number(body.data.result[0].value[1])).toBeGreaterThanOrEqual(0);
    const bad = await fetch(`${h.prometheus.url}/api/v1/query?query=${encodeURIComponent('rate(x[5m])')}`);
    expect(bad.status).toBe(400);
  });
});
