import { type Job, type JobContext, OperationsLog, partOf, SecretBox } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelmRelease } from '../adapters/helm.adapter';
import { clientNodeConnector } from '../adapters/kube.adapter';
import { ClusterAccess } from '../registry/cluster-access';
import { ClusterRepository } from '../registry/cluster.repository';
import { stackProfile } from '../shared/profile';
import { type ClustersTestApp, closedPort, kubeconfigWithKey, multipart, startClustersApp } from '../testing/app';
import { FakeHelm } from '../testing/fake-helm';
import { ensureRelease, GatewayReconciler } from './gateway-reconcile.service';
import { GatewayRepository } from './gateway.repository';
import { GatewaySettings } from './gateway.settings';

// The gateway's Helm rules, fast: the reconcile job and `ensureRelease` against the FakeHelm (the
// contract suite keeps it honest against the real helm, in gateway.kube.test.ts and
// testing/fake-helm.test.ts). The cluster's API server is a closed port: a reconcile gets through
// the CRDs (none, here) and the control plane's charts, then fails at the first Kubernetes object,
// which is where these tests stop looking.

const p = stackProfile();
const MIRROR = {
  'gateway-helm': ['v1.8.1'],
  'ai-gateway-crds-helm': ['v0.7.0'],
  'ai-gateway-helm': ['v0.7.0'],
  'payload-processor': ['0.1.0'],
  base: ['1.29.4'],
  istiod: ['1.29.4'],
};
let t: ClustersTestApp;
let access: ClusterAccess;

function ctx(): Pick<JobContext, 'signal' | 'log'> & { lines: string[] } {
  const lines: string[] = [];
  return { signal: new AbortController().signal, log: (l: string) => lines.push(l), lines };
}

/** A draft registration (its own app starts no gateway job) with these gateway settings. */
async function register(fields: Record<string, string>): Promise<string> {
  const { payload, headers } = multipart({ name: `rules-${Math.random().toString(16).slice(2, 8)}`, draft: 'true', gatewayAuthzHost: '192.0.2.10', ...fields }, { content: kubeconfigWithKey(`https://127.0.0.1:${await closedPort()}`).kubeconfig });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster.id;
}

function reconciler(helm: FakeHelm): GatewayReconciler {
  const settings = new GatewaySettings({ profile: p, githubMirror: 'http://127.0.0.1:9', authzPort: 8080, crdWaitMs: 0, rate: { perSecond: 1, burst: 1 } });
  return new GatewayReconciler(access, new GatewayRepository(), t.services.runner, new OperationsLog(partOf(t.store)), helm, { checkedBundle: async () => [] }, settings);
}

async function run(r: GatewayReconciler, id: string): Promise<Job> {
  const job = await r.reconcile(id);
  return (await t.services.runner.wait(job.id))!;
}

const installed = (h: FakeHelm) => h.installs.map((i) => `${i.namespace}/${i.release} ${i.chart} ${i.version}`);

beforeAll(async () => {
  t = await startClustersApp();
  access = new ClusterAccess(t.store, new ClusterRepository(), SecretBox.fromEnv({}, t.dataDir), clientNodeConnector, { requestTimeoutMs: 2000, env: {} });
});

afterAll(async () => {
  access?.close();
  await t?.close();
});

describe('ensureRelease (the Helm rule of a reconcile)', () => {
  const release: HelmRelease = { release: 'lens-ipp', namespace: 'lens-gateway-x', chart: 'payload-processor', version: 'v0.1.0', values: { a: { b: 1, c: 'x' }, d: true } };

  it('installs a release that is not there, and says so in the job log', async () => {
    const h = new FakeHelm(MIRROR);
    const c = ctx();
    expect(await ensureRelease(h, 'kc', release, c)).toBe(true);
    expect(installed(h)).toEqual(['lens-gateway-x/lens-ipp payload-processor v0.1.0']);
    expect(c.lines).toContain('lens-gateway-x/lens-ipp: helm upgrade --install payload-processor-v0.1.0');
  });

  it('leaves a release deployed at that version (the mirror’s 0.1.0 for v0.1.0) with the same values (in any key order) alone', async () => {
    const h = new FakeHelm(MIRROR);
    await ensureRelease(h, 'kc', release, ctx());
    const c = ctx();
    expect(await ensureRelease(h, 'kc', { ...release, values: { d: true, a: { c: 'x', b: 1 } } }, c)).toBe(false);
    expect(h.installs).toHaveLength(1);
    expect(c.lines).toEqual(['lens-gateway-x/lens-ipp: payload-processor-v0.1.0 is deployed with these values']);
  });

  it('installs again when the values or the version differ, or the release is not deployed (failed)', async () => {
    const h = new FakeHelm({ ...MIRROR, 'payload-processor': ['0.1.0', '0.2.0'] });
    await ensureRelease(h, 'kc', release, ctx());
    expect(await ensureRelease(h, 'kc', { ...release, values: { a: { b: 2, c: 'x' }, d: true } }, ctx())).toBe(true);
    expect(await ensureRelease(h, 'kc', { ...release, version: 'v0.2.0', values: { a: { b: 2, c: 'x' }, d: true } }, ctx())).toBe(true);
    h.failNext('Error: UPGRADE FAILED: context deadline exceeded');
    await expect(ensureRelease(h, 'kc', { ...release, values: {} }, ctx())).rejects.toThrow(/UPGRADE FAILED/);
    expect((await h.get('kc', 'lens-ipp', 'lens-gateway-x'))?.status).toBe('failed');
    expect(await ensureRelease(h, 'kc', { ...release, values: {} }, ctx())).toBe(true);
    expect(installed(h)).toEqual([
      'lens-gateway-x/lens-ipp payload-processor v0.1.0',
      'lens-gateway-x/lens-ipp payload-processor v0.1.0',
      'lens-gateway-x/lens-ipp payload-processor v0.2.0',
      'lens-gateway-x/lens-ipp payload-processor v0.1.0',
      'lens-gateway-x/lens-ipp payload-processor v0.1.0',
    ]);
  });
});

describe('a reconcile’s charts (FakeHelm)', () => {
  it('envoy-ai-gateway: Envoy Gateway, then the AI Gateway’s CRDs and controller, at the profile’s versions, each in its namespace, in that order', async () => {
    const id = await register({ gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30080' });
    const h = new FakeHelm(MIRROR);
    const job = await run(reconciler(h), id);
    expect(installed(h)).toEqual([
      'envoy-gateway-system/eg gateway-helm v1.8.1',
      'envoy-ai-gateway-system/aieg-crd ai-gateway-crds-helm v0.7.0',
      'envoy-ai-gateway-system/aieg ai-gateway-helm v0.7.0',
    ]);
    expect(p.gateway_providers).toMatchObject({ envoy_gateway: 'v1.8.1', envoy_ai_gateway: 'v0.7.0' });
    // Envoy Gateway's chart is told to run the AI Gateway's extension manager.
    expect(h.installs[0].values).toMatchObject({ config: { envoyGateway: { extensionManager: { service: { fqdn: { hostname: 'ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local', port: 1063 } } } } } });
    // Then the GatewayClass needs the cluster (a closed port here): the job fails there, saying so.
    expect(job.status).toBe('failed');
    expect(job.log.join('\n')).toContain(`apply the GatewayClass lens-envoy-ai-gateway-${id}`);
  });

  it('istio: istio-base then istiod (the Inference Extension switched on); gke: no chart at all', async () => {
    const istio = await register({ gatewayProvider: 'istio' });
    const h = new FakeHelm(MIRROR);
    await run(reconciler(h), istio);
    expect(installed(h)).toEqual(['istio-system/istio-base base 1.29.4', 'istio-system/istiod istiod 1.29.4']);
    expect(h.installs[1].values).toEqual({ pilot: { env: { ENABLE_GATEWAY_API_INFERENCE_EXTENSION: 'true' } } });
    const gke = await register({ gatewayProvider: 'gke' });
    const g = new FakeHelm(MIRROR);
    const job = await run(reconciler(g), gke);
    expect(g.installs).toEqual([]);
    expect(job.log.join('\n')).toContain('gke: no control plane to install');
  });

  it('a second reconcile installs no chart the cluster already has at that version with those values', async () => {
    const id = await register({ gatewayProvider: 'envoy-ai-gateway' });
    const h = new FakeHelm(MIRROR);
    const r = reconciler(h);
    await run(r, id);
    expect(h.installs).toHaveLength(3);
    const again = await run(r, id);
    expect(h.installs).toHaveLength(3);
    expect(again.log.filter((l) => l.endsWith('is deployed with these values'))).toHaveLength(3);
  });

  it('a chart that fails stops the reconcile there: the job and the status say Helm’s message, no later chart is installed', async () => {
    const id = await register({ gatewayProvider: 'envoy-ai-gateway' });
    const h = new FakeHelm(MIRROR);
    h.failNext('Error: INSTALLATION FAILED: unable to build kubernetes objects');
    const job = await run(reconciler(h), id);
    expect(job.status).toBe('failed');
    expect(job.error).toContain('INSTALLATION FAILED: unable to build kubernetes objects');
    expect(installed(h)).toEqual(['envoy-gateway-system/eg gateway-helm v1.8.1']);
    const st = (await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/gateway/status` })).json();
    expect(st.lastOperation).toMatchObject({ status: 'failed', message: expect.stringContaining('INSTALLATION FAILED') });
  });

  it('a chart version the mirror does not hold fails the reconcile, naming it', async () => {
    const id = await register({ gatewayProvider: 'envoy-ai-gateway' });
    const h = new FakeHelm({ ...MIRROR, 'gateway-helm': ['v1.7.0'] });
    const job = await run(reconciler(h), id);
    expect(job.status).toBe('failed');
    expect(job.error).toMatch(/gateway-helm.*v1\.8\.1 not found/);
    expect(h.installs.map((i) => i.chart)).toEqual(['gateway-helm']);
  });
});
