import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { CoreV1Api, type V1Pod, Watch } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientNodeKube } from '../adapters/kube.adapter';
import { upstreamInferenceExtensionCrds } from '../testing/upstream-crd-bundles';
import { KubeClusterNodes } from './cluster-nodes.service';
import { modelServerBudget, modelServerObjects } from '../testing/model-server';

/**
 * The clusters side of a rollout's drain (issue 31) against a real control plane (the
 * kube-harness: kube-apiserver, the controller-manager's disruption controller computing each
 * PodDisruptionBudget's status, the scheduler, kwok nodes named like workers), with the real
 * InferencePool CRD of the Gateway API Inference Extension v1.5.0: a node found by the worker's
 * name, cordoned and uncordoned; a drain the budget refuses fails with "blocked by PDB
 * <namespace>/<name>" and evicts nothing; a drain the budget allows evicts through the eviction
 * API, the model server leaves its InferencePool (its pool label removed) before it is evicted,
 * and the budget's healthy count never drops below its minimum (a watch sees every pod change).
 */

let h: KubeHarness;
let core: CoreV1Api;
let nodes: KubeClusterNodes;
const NS = 'serving';
const NO_PROXY = { mode: 'none' as const, httpProxy: null, httpsProxy: null, noProxy: null };
const C = 'c1';

const events: Array<{ type: string; name: string; node: string | undefined; ready: boolean; pool: boolean; deleting: boolean }> = [];
let stopWatch: (() => void) | undefined;

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const podsOn = async (node: string) => (await core.listNamespacedPod({ namespace: NS, fieldSelector: `spec.nodeName=${node}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
const readyPods = async () => (await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=model' })).items.filter((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));

beforeAll(async () => {
  h = await startKubeCluster({ nodes: 0, gpu: false });
  core = h.kubeConfig().makeApiClient(CoreV1Api);
  const crds = parseAllDocuments(upstreamInferenceExtensionCrds('v1.5.0'))
    .map((d) => d.toJSON())
    .filter((o) => o && o.kind === 'CustomResourceDefinition');
  await h.apply(crds);
  await h.apply([
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'w01', labels: { 'kubernetes.io/hostname': 'w01' } } },
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'w02', labels: { 'kubernetes.io/hostname': 'w02' } } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
  ]);
  await until('the kwok nodes Ready', async () => (await core.listNode()).items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length === 2);
  const kube = new ClientNodeKube(h.kubeconfig, { proxy: NO_PROXY, timeoutMs: 15_000 });
  nodes = new KubeClusterNodes({ ids: async () => [C], kube: async () => kube }, { retryMs: 200 });
  // Every change of the model pods, in order (the pool label, readiness, deletion).
  const w = await new Watch(h.kubeConfig()).watch(
    `/api/v1/namespaces/${NS}/pods`,
    {},
    (type: string, p: V1Pod) => {
      events.push({
        type,
        name: p.metadata?.name ?? '',
        node: p.spec?.nodeName,
        ready: !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        pool: p.metadata?.labels?.['llm-d.ai/inferenceServing'] === 'true',
        deleting: !!p.metadata?.deletionTimestamp,
      });
    },
    () => {},
  );
  stopWatch = () => w.abort();
}, 600_000);

afterAll(async () => {
  stopWatch?.();
  await h?.stop();
});

describe('cluster nodes against a real API server', () => {
  it('finds the node a worker is by its name, or none; cordons and uncordons it; reads Ready', async () => {
    expect(await nodes.find({ worker_id: 'w01', hostname: 'w01', cluster_id: C, addresses: [] })).toEqual({ cluster_id: C, name: 'w01' });
    expect(await nodes.find({ worker_id: 'w09', hostname: 'w09', cluster_id: null, addresses: [] })).toBeNull();
    expect(await nodes.cordon({ cluster_id: C, name: 'w02' })).toEqual({ was_unschedulable: false });
    expect((await core.readNode({ name: 'w02' })).spec?.unschedulable).toBe(true);
    expect(await nodes.cordon({ cluster_id: C, name: 'w02' })).toEqual({ was_unschedulable: true });
    await nodes.uncordon({ cluster_id: C, name: 'w02' });
    expect((await core.readNode({ name: 'w02' })).spec?.unschedulable).toBeFalsy();
    expect(await nodes.ready({ cluster_id: C, name: 'w01' })).toBe(true);
  });

  it('drains through the eviction API: blocked by a PodDisruptionBudget until it allows; the model server leaves its InferencePool before it is evicted', async () => {
    await h.apply(modelServerObjects(NS, 2));
    await until('both model pods Ready, one per node', async () => (await readyPods()).length === 2 && (await podsOn('w01')).length === 1 && (await podsOn('w02')).length === 1);
    await until('the budget to count them', async () => (await fetchPdb()).currentHealthy === 2);
    const steady = events.length;
    const node = { cluster_id: C, name: 'w01' };
    const [pod] = await podsOn('w01');
    const podName = pod.metadata!.name!;

    // minAvailable 2 of 2: every eviction is refused (429) until the timeout.
    await nodes.cordon(node);
    const blocked = await nodes.drain(node, { timeoutMs: 2000, poolLeaveMs: 0 });
    expect(blocked).toMatchObject({ ok: false, blocked_by: `${NS}/model-pdb` });
    expect(blocked.ok === false && blocked.reason).toMatch(new RegExp(`^blocked by PDB ${NS}/model-pdb: ${NS}/${podName} could not be evicted from w01 within 2 s`));
    expect((await podsOn('w01')).map((p) => p.metadata?.name)).toEqual([podName]);
    // It left the pool for the attempt, and is back in it: it keeps serving.
    expect((await podsOn('w01'))[0].metadata?.labels?.['llm-d.ai/inferenceServing']).toBe('true');

    // minAvailable 1: the drain goes through, the pod first out of the pool.
    await h.apply([modelServerBudget(NS, 1)]);
    await until('the budget to allow one disruption', async () => (await fetchPdb()).disruptionsAllowed === 1);
    const from = events.length;
    const lines: string[] = [];
    const done = await nodes.drain(node, { timeoutMs: 30_000, poolLeaveMs: 300, log: (l) => lines.push(l) });
    expect(done).toEqual({ ok: true, evicted: [`${NS}/${podName}`], left_pool: [`${NS}/${podName}`] });
    expect(lines).toEqual([`${NS}/${podName} left its InferencePool (label llm-d.ai/inferenceServing removed)`, `evicted ${NS}/${podName}`]);
    expect(await podsOn('w01')).toEqual([]);
    const mine = events.slice(from).filter((e) => e.name === podName);
    const left = mine.findIndex((e) => !e.pool && !e.deleting);
    const deleted = mine.findIndex((e) => e.deleting || e.type === 'DELETED');
    expect(left, JSON.stringify(mine)).toBeGreaterThanOrEqual(0);
    expect(deleted).toBeGreaterThan(left);
    // The pod kept its controller's label (not orphaned): its replacement came from the same ReplicaSet.
    expect(mine[left]).toMatchObject({ type: 'MODIFIED', ready: true });
    await nodes.uncordon(node);
    // The budget's minimum held at every change the watch saw: never fewer than 1 model pod Ready and not deleting.
    await until('two model pods Ready again', async () => (await readyPods()).length === 2);
    const ready = new Map<string, boolean>();
    for (const [i, e] of events.entries()) {
      if (e.type === 'DELETED' || e.deleting) ready.delete(e.name);
      else ready.set(e.name, e.ready);
      if (i >= steady) expect([...ready.values()].filter(Boolean).length, `after ${JSON.stringify(e)}`).toBeGreaterThanOrEqual(1);
    }
  });
});

async function fetchPdb(): Promise<{ currentHealthy?: number; disruptionsAllowed?: number }> {
  const kube = new ClientNodeKube(h.kubeconfig, { proxy: NO_PROXY, timeoutMs: 15_000 });
  try {
    const b = await kube.getJson<{ status?: { currentHealthy?: number; disruptionsAllowed?: number } }>(`/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets/model-pdb`);
    return b.status ?? {};
  } finally {
    kube.close();
  }
}
