import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerHost } from '../bootstrap/workers';
import { type ClustersTestApp, multipart, startClustersApp } from '../testing/app';
import { LocalGithubMirror } from '../testing/github-mirror';
import { sleep } from '@ironlens/core/testing';

// The cluster's overview shows the shared gateway from the same source as
// `GET …/gateway/status` (issue 22, item 3), against a real API server. The GitHub mirror here
// holds no CRD bundle, so the reconcile fails: the overview carries that failure as the status does.

let h: KubeHarness;
let t: ClustersTestApp;
let gh: LocalGithubMirror;
let core: CoreV1Api;
/** The booted workers that joined each cluster, as metal's host reports give them to `ironlens serve` (a stand-in of that directory). */
const joined = new Map<string, WorkerHost[]>();

const get = (url: string) => t.app.inject({ method: 'GET', url });

async function register(fields: Record<string, string>): Promise<string> {
  const { payload, headers } = multipart(fields, { content: h.kubeconfig });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster.id;
}

async function finishedJob(id: string): Promise<{ status: string }> {
  const end = Date.now() + 120_000;
  for (;;) {
    const [j] = await t.services.runner.repository.list({ kind: 'clusters.gateway', subject: id, limit: 1 });
    if (j && j.status !== 'queued' && j.status !== 'running') return j;
    if (Date.now() > end) throw new Error(`the gateway job of ${id} did not finish: ${JSON.stringify(j)}`);
    await sleep(200);
  }
}

beforeAll(async () => {
  h = await startKubeCluster({ nodes: 'test', gpu: false });
  core = h.kubeConfig().makeApiClient(CoreV1Api);
  gh = new LocalGithubMirror();
  await gh.start();
  t = await startClustersApp({
    env: { IRONLENS_GITHUB_MIRROR: gh.url, IRONLENS_GATEWAY_AUTHZ_PORT: '8080', IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '30000' },
    deps: { workers: { joinedTo: async (clusterId) => joined.get(clusterId) ?? [] } },
  });
}, 15 * 60_000);

afterAll(async () => {
  await t?.close();
  await gh?.stop();
  await h?.stop();
});

describe('the cluster overview shows the shared gateway', () => {
  it('a cluster with a provider: the overview’s gateway is the gateway status (its failed reconcile, a URL from a ready node’s InternalIP), seed 000’s fields unchanged', async () => {
    const id = await register({ name: 'overview-gw', gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30080', gatewayAuthzHost: '192.0.2.10' });
    expect((await finishedJob(id)).status).toBe('failed');
    const res = await get(`/api/cluster/overview?clusterId=${id}`);
    expect(res.statusCode, res.body).toBe(200);
    const ov = res.json();
    // Seed 000's shape is still all there.
    expect(Object.keys(ov).sort()).toEqual(['cluster', 'fetchedAt', 'gateway', 'gatewayError', 'kubernetes']);
    expect(ov.gatewayError).toBeNull();
    expect(Object.keys(ov.kubernetes).sort()).toEqual(['components', 'hardware', 'namespaces', 'nodes']);
    expect(ov.cluster.id).toBe(id);
    const st = (await get(`/api/cluster/clusters/${id}/gateway/status`)).json();
    expect(ov.gateway).toEqual(st);
    const ready = (await core.listNode()).items.find((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    const ip = ready?.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    expect(ip).toBeTruthy();
    expect(ov.gateway).toMatchObject({
      clusterId: id,
      gatewayProvider: 'envoy-ai-gateway',
      gatewayState: 'missing',
      gatewayPort: 30080,
      gatewayNodeAddress: ip,
      gatewayPublicUrl: `http://${ip}:30080/v1`,
      lastOperation: { kind: 'reconcile-gateway', status: 'failed', clusterId: id },
    });
    expect(ov.gateway.error).toEqual(expect.any(String));
    expect(ov.gateway.lastOperation.message).toBe(ov.gateway.error);
  }, 5 * 60_000);

  it('a cluster without a provider: the overview says there is no gateway', async () => {
    const id = await register({ name: 'overview-plain' });
    const ov = (await get(`/api/cluster/overview?clusterId=${id}`)).json();
    expect(ov.gateway).toMatchObject({ clusterId: id, gatewayProvider: null, gatewayState: 'missing', ippState: 'missing', authz: { state: 'disabled' }, lastOperation: null });
    expect(ov.gateway).toEqual((await get(`/api/cluster/clusters/${id}/gateway/status`)).json());
  }, 2 * 60_000);

  it('a worker ironlens booted that joined the cluster: the public URL takes the address it reported, not the node’s InternalIP', async () => {
    const id = await register({ name: 'overview-worker', gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30081', gatewayAuthzHost: '192.0.2.10' });
    await finishedJob(id);
    // The bootstrap names a worker's node from its address (192.0.2.77 → 192-0-2-77); its kubelet
    // here reports another InternalIP.
    await core.createNode({ body: { metadata: { name: '192-0-2-77' } } });
    const ready = { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready', lastHeartbeatTime: new Date(), lastTransitionTime: new Date() };
    await core.patchNodeStatus(
      { name: '192-0-2-77', body: { status: { conditions: [ready], addresses: [{ type: 'InternalIP', address: '198.51.100.7' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const before = (await get(`/api/cluster/clusters/${id}/gateway/status`)).json();
    expect(before.gatewayNodeAddress).not.toBe('192.0.2.77');
    // Two workers joined: one whose node is not in the cluster (skipped), and the one above.
    joined.set(id, [
      { workerId: 'w-a', address: '192.0.2.99', hostKeys: [] },
      { workerId: 'w-b', address: '192.0.2.77', hostKeys: [] },
    ]);
    const st = (await get(`/api/cluster/clusters/${id}/gateway/status`)).json();
    expect(st).toMatchObject({ gatewayNodeAddress: '192.0.2.77', gatewayPublicUrl: 'http://192.0.2.77:30081/v1' });
    expect((await get(`/api/cluster/overview?clusterId=${id}`)).json().gateway).toMatchObject({ gatewayPublicUrl: 'http://192.0.2.77:30081/v1' });
    // A worker of another cluster gives nothing here.
    joined.delete(id);
    joined.set('ffffffff', [{ workerId: 'w-b', address: '192.0.2.77', hostKeys: [] }]);
    expect((await get(`/api/cluster/clusters/${id}/gateway/status`)).json().gatewayPublicUrl).toBe(before.gatewayPublicUrl);
  }, 2 * 60_000);
});
