import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { OperationsLog, partOf } from '@ironlens/core';
import { sleep } from '@ironlens/core/testing';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackProfile } from '../shared/profile';
import { HelmCli } from '../adapters/helm.adapter';
import { FIELD_MANAGER } from '../shared/manifests';
import { helmContract } from '../testing/helm.contract';
import { GatewayRepository } from './gateway.repository';
import { type ClustersTestApp, multipart, startClustersApp } from '../testing/app';
import { EnvoyGatewayController } from '../testing/envoy-gateway.controller';
import { CountingChartMirror, packageCharts, realInferenceExtensionBundle, testHelm } from '../testing/gateway-upstream';
import { LocalGithubMirror } from '../testing/github-mirror';
import { upstreamGatewayApiBundle } from '../testing/upstream-crd-bundles';

// The shared inference gateway against a real control plane with the REAL upstream CRDs at the
// profile's versions (Gateway API v1.5.1 standard channel, Inference Extension v1.5.0, Envoy
// Gateway v1.8.1's and the AI Gateway v0.7.0's own CRDs installed by their real charts through the
// real Helm), charts served by a counting mirror, and the REAL Envoy Gateway v1.8.1 controller
// running outside the cluster against the harness (its conditions, addresses and proxy Service are
// its own).

const p = stackProfile();
let h: KubeHarness;
let t: ClustersTestApp;
let gh: LocalGithubMirror;
let charts: CountingChartMirror;
let eg: EnvoyGatewayController;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let id: string;
let ns: string;

const GW = { group: 'gateway.networking.k8s.io', version: 'v1' };
const EG = { group: 'gateway.envoyproxy.io', version: 'v1alpha1' };

async function until<T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs = 120_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  let seen: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      seen = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''} (last: ${JSON.stringify(seen)?.slice(0, 3000)})`);
    await sleep(300);
  }
}

const get = (url: string) => t.app.inject({ method: 'GET', url });
const send = (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => t.app.inject({ method, url, payload });

type JobView = { id: string; status: string; stage: string | null; log: string[]; result: { changed: number; skipped: number; hookError: string | null } | null; error: string | null };

/** The newest gateway job of the cluster (default: the first registration), once finished. */
async function lastJob(after?: string, subject = id): Promise<JobView> {
  return until('the gateway job to finish', async () => {
    const jobs = await t.services.runner.repository.list({ kind: 'clusters.gateway', subject, limit: 1 });
    const j = jobs[0];
    if (!j || j.id === after || j.status === 'queued' || j.status === 'running') return null;
    return j as unknown as JobView;
  }, 600_000);
}

function helmCli(...args: string[]): string {
  return execFileSync(testHelm(), args, { encoding: 'utf8', env: { PATH: process.env.PATH, KUBECONFIG: h.kubeconfigPath, HOME: t.dataDir, HELM_CACHE_HOME: `${t.dataDir}/hc`, HELM_CONFIG_HOME: `${t.dataDir}/hcfg`, HELM_DATA_HOME: `${t.dataDir}/hd` } });
}

/** resourceVersion of every object ironlens applies itself, and of the Helm release records. */
async function versions(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const add = (k: string, o: { metadata?: { resourceVersion?: string } }) => {
    out[k] = o.metadata?.resourceVersion ?? '';
  };
  // The controller writes the status of the Gateway API and Envoy Gateway objects, which moves
  // their resourceVersion whenever it likes; what ironlens writes moves their generation (the
  // spec) or ironlens' own managedFields entry (labels, annotations): those are compared.
  type Managed = { metadata: { name: string; generation?: number; managedFields?: Array<{ manager?: string; subresource?: string; time?: string }> } };
  const written = (k: string, o: Managed) => {
    const mine = (o.metadata.managedFields ?? []).filter((f) => f.manager === FIELD_MANAGER && !f.subresource).map((f) => f.time);
    out[k] = `generation ${o.metadata.generation} ironlens ${mine.join(',')}`;
  };
  add('ns', await core.readNamespace({ name: ns }));
  for (const c of (await custom.listClusterCustomObject({ ...GW, plural: 'gatewayclasses' })).items as Managed[]) written(`gc/${c.metadata.name}`, c);
  for (const [api, plural] of [
    [GW, 'gateways'],
    [EG, 'envoyproxies'],
    [EG, 'securitypolicies'],
    [EG, 'clienttrafficpolicies'],
    [EG, 'envoyextensionpolicies'],
  ] as const) {
    for (const o of (await custom.listNamespacedCustomObject({ ...api, namespace: ns, plural })).items as Managed[]) written(`${plural}/${o.metadata.name}`, o);
  }
  add('svc/lens-authz', await core.readNamespacedService({ name: 'lens-authz', namespace: ns }));
  // What the real controller made from them: the proxy's Service (a write here would be a reconcile's doing too).
  for (const s of (await proxyServices()).items) add(`proxy-svc/${s.metadata?.name}`, s);
  for (const s of (await core.listSecretForAllNamespaces({ labelSelector: 'owner=helm' })).items) add(`helm/${s.metadata?.namespace}/${s.metadata?.name}`, s);
  // CRDs (the two bundles).
  for (const crd of ['gateways.gateway.networking.k8s.io', 'httproutes.gateway.networking.k8s.io', 'inferencepools.inference.networking.k8s.io']) {
    const r = (await custom.getClusterCustomObject({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: crd })) as { metadata: { resourceVersion: string } };
    add(`crd/${crd}`, r);
  }
  return out;
}

/** The Service(s) Envoy Gateway generated for the registration's Gateway (found by its owning-gateway labels). */
const proxyServices = () =>
  core.listNamespacedService({ namespace: 'envoy-gateway-system', labelSelector: `gateway.envoyproxy.io/owning-gateway-name=lens-gateway,gateway.envoyproxy.io/owning-gateway-namespace=${ns}` });

/** The nodePort of the Service Envoy Gateway generated for the registration's Gateway. */
async function proxyNodePort(): Promise<number | undefined> {
  const svcs = await proxyServices();
  return svcs.items[0]?.spec?.ports?.find((p) => p.port === 80)?.nodePort;
}

beforeAll(async () => {
  h = await startKubeCluster({ nodes: 'test', gpu: false });
  core = h.kubeConfig().makeApiClient(CoreV1Api);
  apps = h.kubeConfig().makeApiClient(AppsV1Api);
  custom = h.kubeConfig().makeApiClient(CustomObjectsApi);
  gh = new LocalGithubMirror();
  gh.addReleaseAsset(`/kubernetes-sigs/gateway-api/releases/download/${p.k8s_gateway_api}/standard-install.yaml`, upstreamGatewayApiBundle(p.k8s_gateway_api));
  gh.addReleaseAsset(`/kubernetes-sigs/gateway-api-inference-extension/releases/download/${p.k8s_gateway_api_inference_extension}/v1-manifests.yaml`, realInferenceExtensionBundle(p));
  await gh.start();
  charts = new CountingChartMirror(packageCharts(p).dir);
  await charts.start();
  eg = new EnvoyGatewayController(h.kubeconfigPath);
  eg.start();
  t = await startClustersApp({
    env: {
      IRONLENS_GITHUB_MIRROR: gh.url,
      IRONLENS_CHART_MIRROR: charts.url,
      IRONLENS_HELM: testHelm(),
      IRONLENS_GATEWAY_AUTHZ_PORT: '8080',
      IRONLENS_CLUSTER_GATEWAY_CLEANUP_TIMEOUT_MS: '90000',
      IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '30000',
    },
  });
}, 45 * 60_000);

afterAll(async () => {
  await t?.close();
  await eg?.stop();
  await charts?.stop();
  await gh?.stop();
  await h?.stop();
});

describe('the shared gateway on a live cluster (envoy-ai-gateway)', () => {
  it('a registration without a provider installs nothing', async () => {
    const { payload, headers } = multipart({ name: 'no-provider' }, { content: h.kubeconfig });
    const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
    expect(res.statusCode).toBe(201);
    const cid = res.json().cluster.id;
    await sleep(1000);
    expect(await t.services.runner.repository.list({ kind: 'clusters.gateway', subject: cid })).toEqual([]);
    expect((await core.listNamespace()).items.map((n) => n.metadata?.name)).not.toContain(`lens-gateway-${cid}`);
    expect(charts.requests).toEqual([]);
  });

  it('installs at registration: CRDs, the control plane from the mirror, the class, the Gateway on its NodePort, the IPP and the hook — every object accepted by the API server', async () => {
    const { payload, headers } = multipart(
      { name: 'with-gateway', gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30080', gatewayAuthzHost: '192.0.2.10' },
      { content: h.kubeconfig },
    );
    const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
    expect(res.statusCode, res.body).toBe(201);
    id = res.json().cluster.id;
    ns = `lens-gateway-${id}`;
    const job = await lastJob();
    expect(job.status, `${job.error}\n${job.log.join('\n')}`).toBe('success');
    expect(job.result?.hookError).toBeNull();

    // The control plane: the three charts at the profile's versions, from the mirror only.
    const releases = JSON.parse(helmCli('list', '--all-namespaces', '--output', 'json')) as Array<{ name: string; namespace: string; chart: string; status: string }>;
    expect(releases.map((r) => `${r.namespace}/${r.name} ${r.chart} ${r.status}`).sort()).toEqual(
      [
        `envoy-ai-gateway-system/aieg ai-gateway-helm-${p.gateway_providers.envoy_ai_gateway} deployed`,
        `envoy-ai-gateway-system/aieg-crd ai-gateway-crds-helm-${p.gateway_providers.envoy_ai_gateway} deployed`,
        `envoy-gateway-system/eg gateway-helm-${p.gateway_providers.envoy_gateway} deployed`,
        `${ns}/lens-ipp payload-processor-0.1.0 deployed`,
      ].sort(),
    );
    const cp = await apps.readNamespacedDeployment({ name: 'envoy-gateway', namespace: 'envoy-gateway-system' });
    expect(cp.spec?.template.spec?.containers[0].image).toBe(`docker.io/envoyproxy/gateway:${p.gateway_providers.envoy_gateway}`);
    // Everything fetched came from the two mirrors.
    const tgz = charts.requests.filter((r) => r.endsWith('.tgz')).sort();
    expect(tgz).toEqual([
      `GET /ai-gateway-crds-helm-${p.gateway_providers.envoy_ai_gateway}.tgz`,
      `GET /ai-gateway-helm-${p.gateway_providers.envoy_ai_gateway}.tgz`,
      `GET /gateway-helm-${p.gateway_providers.envoy_gateway}.tgz`,
      'GET /payload-processor-0.1.0.tgz',
    ]);
    expect(charts.requests.every((r) => r === 'GET /index.yaml' || r.endsWith('.tgz'))).toBe(true);
    expect(gh.requests.filter((r) => r.includes('/releases/download/')).length).toBe(2);

    // The objects ironlens applies itself, labelled as its own and the registration's.
    const cls = (await custom.getClusterCustomObject({ ...GW, plural: 'gatewayclasses', name: `lens-envoy-ai-gateway-${id}` })) as { metadata: { labels: Record<string, string> }; spec: { controllerName: string } };
    expect(cls.spec.controllerName).toBe('gateway.envoyproxy.io/gatewayclass-controller');
    expect(cls.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'ironlens', 'ironlens.dev/cluster': id });
    const gw = (await custom.getNamespacedCustomObject({ ...GW, namespace: ns, plural: 'gateways', name: 'lens-gateway' })) as { spec: Record<string, unknown>; metadata: { labels: Record<string, string> } };
    expect(gw.spec).toMatchObject({ gatewayClassName: `lens-envoy-ai-gateway-${id}`, listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] });
    expect(gw.metadata.labels['ironlens.dev/cluster']).toBe(id);
    const proxy = (await custom.getNamespacedCustomObject({ ...EG, namespace: ns, plural: 'envoyproxies', name: 'lens-gateway-proxy' })) as { spec: { provider: { kubernetes: { envoyService: Record<string, unknown> } } } };
    expect(proxy.spec.provider.kubernetes.envoyService).toMatchObject({ type: 'NodePort', patch: { value: { spec: { ports: [{ port: 80, nodePort: 30080 }] } } } });
    const sp = (await custom.getNamespacedCustomObject({ ...EG, namespace: ns, plural: 'securitypolicies', name: 'lens-gateway-authz' })) as { spec: { extAuth: { http: Record<string, unknown> } } };
    expect(sp.spec.extAuth.http).toMatchObject({ path: `/api/v1/internal/model-gateway/authorize/cluster/${id}`, backendRefs: [{ name: 'lens-authz', port: 8081 }] });
    const slices = await until('the hook EndpointSlice', async () => {
      const l = await h.kubeConfig().makeApiClient(CoreV1Api).readNamespacedService({ name: 'lens-authz', namespace: ns });
      return l;
    });
    expect(slices.spec?.ports?.[0]).toMatchObject({ port: 8081, targetPort: 8080 });
  }, 15 * 60_000);

  let seenStatus: unknown;
  it('reports the objects’ own conditions: the real controller’s class Accepted and Gateway Accepted/Programmed with their reasons, IPP, hook endpoints, control plane, a public URL from the Gateway’s address', async () => {
    type Cond = { type: string; status: string; reason: string; message: string };
    const st = await until('the controller’s conditions in the status', async () => {
      const r = (await get(`/api/cluster/clusters/${id}/gateway/status`)).json();
      seenStatus = r;
      const programmed = (r.gatewayConditions as Cond[]).find((c) => c.type === 'Programmed');
      return programmed && programmed.reason !== 'Pending' && r.ippReady === true && r.gatewayAddress && r;
    }).catch((e: Error) => {
      throw new Error(`${e.message}\nstatus: ${JSON.stringify(seenStatus)}\ncontroller log: ${eg.log()}`);
    });
    expect(st).toMatchObject({
      clusterId: id,
      gatewayProvider: 'envoy-ai-gateway',
      gatewayState: 'installed',
      gatewayNamespace: ns,
      gatewayName: 'lens-gateway',
      ippState: 'installed',
      ippName: 'lens-ipp',
      gatewayPort: 30080,
      authz: { state: 'ready', endpoints: ['192.0.2.10'], reason: null },
      controlPlane: { state: 'ready' },
      lastOperation: { kind: 'reconcile-gateway', status: 'succeeded', clusterId: id },
    });
    expect(st.gatewayClassConditions).toContainEqual(expect.objectContaining({ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Valid GatewayClass' }));
    expect(st.gatewayConditions).toContainEqual(expect.objectContaining({ type: 'Accepted', status: 'True', reason: 'Accepted' }));
    // The status says what the Gateway object says, condition by condition.
    const gw = (await custom.getNamespacedCustomObject({ ...GW, namespace: ns, plural: 'gateways', name: 'lens-gateway' })) as { status: { conditions: Cond[] } };
    const fromObject = gw.status.conditions.map(({ type, status, reason, message }) => ({ type, status, reason, message }));
    expect((st.gatewayConditions as Cond[]).map(({ type, status, reason, message }) => ({ type, status, reason, message }))).toEqual(fromObject);
    const programmed = fromObject.find((c) => c.type === 'Programmed')!;
    expect(st.gatewayReady).toBe(programmed.status === 'True');
    // Here the proxy's pods are refused by the AI Gateway's pod webhook (failurePolicy Fail; its
    // server is a kwok pod that cannot answer), so the real controller says NoResources.
    expect(programmed).toMatchObject({ status: 'False', reason: 'NoResources' });
    const rs = await until('the proxy ReplicaSet’s failure', async () => {
      const l = await apps.listNamespacedReplicaSet({ namespace: 'envoy-gateway-system', labelSelector: `gateway.envoyproxy.io/owning-gateway-name=lens-gateway` });
      return l.items[0]?.status?.conditions?.find((c) => c.type === 'ReplicaFailure');
    });
    expect(rs.message).toContain('failed calling webhook "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local"');
    // Envoy Gateway publishes the nodes' addresses for a NodePort Gateway: the URL takes the first.
    const nodeIps = (await core.listNode()).items.map((n) => n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address);
    expect(nodeIps).toContain(st.gatewayAddress);
    expect(st.gatewayPublicUrl).toBe(`http://${st.gatewayAddress}:30080/v1`);
    // The proxy's Service Envoy Gateway made from the EnvoyProxy: a NodePort on gatewayPort.
    expect(await proxyNodePort(), JSON.stringify((await core.listNamespacedService({ namespace: 'envoy-gateway-system' })).items.map((x) => [x.metadata?.name, x.metadata?.labels, x.spec?.ports]))).toBe(30080);
    const all = (await get('/api/v1/model-service/admin/gateway/status')).json();
    expect(all.clusters.find((c: { clusterId: string }) => c.clusterId === id)).toMatchObject({ gatewayState: 'installed', gatewayReady: st.gatewayReady });
    // The cluster's overview shows the same, from the same source.
    const ov = (await get(`/api/cluster/overview?clusterId=${id}`)).json();
    const brief = (l: Cond[]) => l.map(({ type, status, reason }) => ({ type, status, reason }));
    expect(ov.gateway).toMatchObject({ clusterId: id, gatewayState: 'installed', gatewayReady: st.gatewayReady, gatewayPublicUrl: st.gatewayPublicUrl, authz: { state: 'ready' }, controlPlane: { state: 'ready' } });
    expect(brief(ov.gateway.gatewayConditions)).toEqual(brief(st.gatewayConditions));
    expect(brief(ov.gateway.gatewayClassConditions)).toEqual(brief(st.gatewayClassConditions));
  }, 5 * 60_000);

  it('a second reconcile writes nothing (no resourceVersion, generation or ironlens field entry moves) and installs no chart again', async () => {
    const before = await versions();
    const prev = (await t.services.runner.repository.list({ kind: 'clusters.gateway', subject: id, limit: 1 }))[0].id;
    const fetched = charts.requests.length;
    const res = await send('POST', `/api/cluster/clusters/${id}/gateway/reconcile`);
    expect(res.statusCode, res.body).toBe(202);
    const job = await lastJob(prev);
    expect(job.status, job.error ?? '').toBe('success');
    expect(await versions()).toEqual(before);
    // The one write a second apply may make: the Gateway API bundle's ValidatingAdmissionPolicy,
    // whose managedFields the API server re-sorts once after its status controller wrote first
    // (same generation, same fields). A third reconcile changes nothing at all.
    const writes = job.log.filter((l) => /^(updated|created) /.test(l));
    expect(writes.every((l) => l === 'updated ValidatingAdmissionPolicy safe-upgrades.gateway.networking.k8s.io'), job.log.join('\n')).toBe(true);
    const third = await send('POST', `/api/cluster/clusters/${id}/gateway/reconcile`);
    const job3 = await lastJob(job.id);
    expect(third.statusCode).toBe(202);
    expect(job3.status).toBe('success');
    expect(job3.result?.changed, job3.log.join('\n')).toBe(0);
    expect(await versions()).toEqual(before);
    expect(charts.requests.length).toBe(fetched);
    // The job is visible and its stages recorded.
    const seen = (await get(`/api/cluster/clusters/${id}/gateway/jobs/${job.id}`)).json().job;
    expect(seen.status).toBe('success');
    expect(seen.log.join('\n')).toContain('is deployed with these values');
  }, 10 * 60_000);

  it('a PATCH with nothing changed starts nothing; a port change moves the real proxy Service to the new nodePort, and a reconcile after it changes nothing', async () => {
    // The controller watches EnvoyProxy objects (it started, as its pod does, once its chart's CRDs were served).
    expect(readFileSync(eg.logPath, 'utf8')).not.toMatch(/EnvoyProxy CRD not found/);
    const prev = (await t.services.runner.repository.list({ kind: 'clusters.gateway', subject: id, limit: 1 }))[0].id;
    expect((await send('PATCH', `/api/cluster/clusters/${id}`, { description: 'same gateway' })).statusCode).toBe(200);
    await sleep(1000);
    expect((await t.services.runner.repository.list({ kind: 'clusters.gateway', subject: id, limit: 1 }))[0].id).toBe(prev);
    const before = await versions();
    const svcBefore = (await proxyServices()).items.map((x) => ({ name: x.metadata?.name, uid: x.metadata?.uid }));
    expect(svcBefore).toHaveLength(1);
    expect((await send('PATCH', `/api/cluster/clusters/${id}`, { gatewayPort: 30081 })).statusCode).toBe(200);
    const job = await lastJob(prev);
    expect(job.status, job.error ?? '').toBe('success');
    const after = await versions();
    const moved = Object.keys(after).filter((k) => after[k] !== before[k] && !k.startsWith('proxy-svc/'));
    expect(moved).toEqual(['envoyproxies/lens-gateway-proxy']);
    const proxy = (await custom.getNamespacedCustomObject({ ...EG, namespace: ns, plural: 'envoyproxies', name: 'lens-gateway-proxy' })) as { spec: { provider: { kubernetes: { envoyService: { patch: { value: { spec: { ports: Array<{ nodePort: number }> } } } } } } } };
    expect(proxy.spec.provider.kubernetes.envoyService.patch.value.spec.ports[0].nodePort).toBe(30081);
    // The real controller updates its Service in place (the same object, server-side applied).
    await until('Envoy Gateway to move its Service to 30081', async () => (await proxyNodePort()) === 30081).catch((e: Error) => {
      throw new Error(`${e.message}\ncontroller log: ${eg.log()}`);
    });
    expect((await proxyServices()).items.map((x) => ({ name: x.metadata?.name, uid: x.metadata?.uid }))).toEqual(svcBefore);
    const st = (await get(`/api/cluster/clusters/${id}/gateway/status`)).json();
    expect(st).toMatchObject({ gatewayPort: 30081, gatewayPublicUrl: `http://${st.gatewayAddress}:30081/v1`, lastOperation: { status: 'succeeded' } });
    // Settled: a forced reconcile now moves no resourceVersion, the controller's Service included.
    const settled = await versions();
    const again = await send('POST', `/api/cluster/clusters/${id}/gateway/reconcile`);
    expect(again.statusCode).toBe(202);
    const job2 = await lastJob(job.id);
    expect(job2.status, job2.error ?? '').toBe('success');
    expect(job2.result?.changed, job2.log.join('\n')).toBe(0);
    await sleep(2000);
    expect(await versions()).toEqual(settled);
    expect(await proxyNodePort()).toBe(30081);
  }, 10 * 60_000);

  it('a loopback gatewayAuthzHost shows as the hook’s failure with the API server’s reason', async () => {
    const prev = (await t.services.runner.repository.list({ kind: 'clusters.gateway', subject: id, limit: 1 }))[0].id;
    expect((await send('PATCH', `/api/cluster/clusters/${id}`, { gatewayAuthzHost: '127.0.0.1' })).statusCode).toBe(200);
    const job = await lastJob(prev);
    expect(job.status).toBe('success');
    const st = (await get(`/api/cluster/clusters/${id}/gateway/status`)).json();
    expect(st.authz.state).toBe('failed');
    expect(st.authz.reason).toMatch(/loopback/);
    // Back to a usable address.
    expect((await send('PATCH', `/api/cluster/clusters/${id}`, { gatewayAuthzHost: '192.0.2.10' })).statusCode).toBe(200);
    expect((await lastJob(job.id)).status).toBe('success');
    expect((await get(`/api/cluster/clusters/${id}/gateway/status`)).json().authz).toMatchObject({ state: 'ready', reason: null });
  }, 10 * 60_000);

  it('a provider change re-installs: the Gateway moves to the new class, the old class and policies go, the old control plane stays', async () => {
    // GKE's own CRDs (the IPP chart's GKE wiring) exist only on GKE: STAND-IN CRDs (schemas left open) for them here.
    const gkeCrd = (kind: string, plural: string) => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.networking.gke.io` },
      spec: {
        group: 'networking.gke.io',
        names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
        scope: 'Namespaced',
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    await h.apply([gkeCrd('GCPRoutingExtension', 'gcproutingextensions'), gkeCrd('HealthCheckPolicy', 'healthcheckpolicies')], { fieldManager: 'test', force: true });
    for (const plural of ['gcproutingextensions', 'healthcheckpolicies']) {
      await until('the stand-in CRDs served', async () => (await custom.listNamespacedCustomObject({ group: 'networking.gke.io', version: 'v1', namespace: 'default', plural })) && true);
    }
    const prev = (await t.services.runner.repository.list({ kind: 'clusters.gateway', subject: id, limit: 1 }))[0].id;
    expect((await send('PATCH', `/api/cluster/clusters/${id}`, { gatewayProvider: 'gke' })).statusCode).toBe(200);
    const job = await lastJob(prev);
    expect(job.status, `${job.error}\n${job.log.join('\n')}`).toBe('success');
    const gw = (await custom.getNamespacedCustomObject({ ...GW, namespace: ns, plural: 'gateways', name: 'lens-gateway' })) as { spec: { gatewayClassName: string } };
    expect(gw.spec.gatewayClassName).toBe('gke-l7-regional-external-managed');
    await expect(custom.getClusterCustomObject({ ...GW, plural: 'gatewayclasses', name: `lens-envoy-ai-gateway-${id}` })).rejects.toThrow();
    expect((await custom.listNamespacedCustomObject({ ...EG, namespace: ns, plural: 'envoyproxies' })).items).toEqual([]);
    expect((await custom.listNamespacedCustomObject({ ...EG, namespace: ns, plural: 'securitypolicies' })).items).toEqual([]);
    expect((await apps.readNamespacedDeployment({ name: 'envoy-gateway', namespace: 'envoy-gateway-system' })).metadata?.name).toBe('envoy-gateway');
    const st = (await get(`/api/cluster/clusters/${id}/gateway/status`)).json();
    expect(st).toMatchObject({ gatewayProvider: 'gke', gatewayClassName: 'gke-l7-regional-external-managed', authz: { state: 'disabled' }, controlPlane: { state: 'none' } });
    // Back to Envoy for the delete below.
    expect((await send('PATCH', `/api/cluster/clusters/${id}`, { gatewayProvider: 'envoy-ai-gateway' })).statusCode).toBe(200);
    expect((await lastJob(job.id)).status).toBe('success');
  }, 15 * 60_000);

  it('a second registration, its console on an ephemeral port: the hook fails with gateway_authz_port_unknown until the bound port is given, then points at it; its delete leaves the first registration alone', async () => {
    const t2 = await startClustersApp({
      env: {
        IRONLENS_GITHUB_MIRROR: gh.url,
        IRONLENS_CHART_MIRROR: charts.url,
        IRONLENS_HELM: testHelm(),
        IRONLENS_CONSOLE_LISTEN: '127.0.0.1:0',
        IRONLENS_CLUSTER_GATEWAY_CLEANUP_TIMEOUT_MS: '90000',
        IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '30000',
      },
    });
    try {
      const done = (cid: string, after?: string) =>
        until(
          'the second registration’s gateway job',
          async () => {
            const [j] = await t2.services.runner.repository.list({ kind: 'clusters.gateway', subject: cid, limit: 1 });
            return j && j.id !== after && j.status !== 'queued' && j.status !== 'running' ? (j as unknown as JobView) : null;
          },
          600_000,
        );
      const { payload, headers } = multipart({ name: 'second', gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30082', gatewayAuthzHost: '192.0.2.11' }, { content: h.kubeconfig });
      const res = await t2.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
      expect(res.statusCode, res.body).toBe(201);
      const id2 = res.json().cluster.id as string;
      const ns2 = `lens-gateway-${id2}`;
      const job = await done(id2);
      expect(job.status, `${job.error}\n${job.log.join('\n')}`).toBe('success');
      expect(job.result?.hookError).toMatch(/^gateway_authz_port_unknown: /);
      // The rest is there; the hook is not.
      expect((await custom.getNamespacedCustomObject({ ...GW, namespace: ns2, plural: 'gateways', name: 'lens-gateway' })) as object).toBeTruthy();
      await expect(core.readNamespacedService({ name: 'lens-authz', namespace: ns2 })).rejects.toThrow();
      const st = (await t2.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id2}/gateway/status` })).json();
      expect(st.authz).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^gateway_authz_port_unknown: .*IRONLENS_GATEWAY_AUTHZ_PORT/) });
      // What `ironlens serve` does once its console listens; a reconcile then applies the hook on that port.
      t2.services.gateway.useConsolePort(41234);
      expect((await t2.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id2}/gateway/reconcile` })).statusCode).toBe(202);
      const job2 = await done(id2, job.id);
      expect(job2.status, job2.error ?? '').toBe('success');
      expect(job2.result?.hookError).toBeNull();
      const svc = await core.readNamespacedService({ name: 'lens-authz', namespace: ns2 });
      expect(svc.spec?.ports?.[0]).toMatchObject({ port: 8081, targetPort: 41234 });
      const slice = (await custom.getNamespacedCustomObject({ group: 'discovery.k8s.io', version: 'v1', namespace: ns2, plural: 'endpointslices', name: 'lens-authz-ironlens' })) as { ports: Array<{ port: number }>; endpoints: Array<{ addresses: string[] }> };
      expect(slice.ports[0].port).toBe(41234);
      expect(slice.endpoints[0].addresses).toEqual(['192.0.2.11']);
      expect((await t2.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id2}/gateway/status` })).json().authz).toMatchObject({ state: 'ready', reason: null, endpoints: ['192.0.2.11'] });
      // Deleting this registration leaves the first one's namespace, Gateway and class in place.
      const del = await t2.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${id2}` });
      expect(del.statusCode, del.body).toBe(204);
      expect((await core.listNamespace()).items.map((n) => n.metadata?.name)).not.toContain(ns2);
      expect((await core.readNamespace({ name: ns })).metadata?.name).toBe(ns);
      expect(((await custom.getNamespacedCustomObject({ ...GW, namespace: ns, plural: 'gateways', name: 'lens-gateway' })) as { metadata: { labels: Record<string, string> } }).metadata.labels['ironlens.dev/cluster']).toBe(id);
      expect(((await custom.getClusterCustomObject({ ...GW, plural: 'gatewayclasses', name: `lens-envoy-ai-gateway-${id}` })) as { metadata: { name: string } }).metadata.name).toBe(`lens-envoy-ai-gateway-${id}`);
      await expect(custom.getClusterCustomObject({ ...GW, plural: 'gatewayclasses', name: `lens-envoy-ai-gateway-${id2}` })).rejects.toThrow();
      // The real controller takes down the proxy it ran for that Gateway, and only that one.
      const proxiesOf = async (n: string) =>
        (await core.listNamespacedService({ namespace: 'envoy-gateway-system', labelSelector: `gateway.envoyproxy.io/owning-gateway-namespace=${n}` })).items.length;
      await until('Envoy Gateway to remove the second registration’s proxy Service', async () => (await proxiesOf(ns2)) === 0);
      expect(await proxiesOf(ns)).toBe(1);
    } finally {
      await t2.close();
    }
  }, 15 * 60_000);

  it('delete removes the namespace and the registration’s class, never the provider control plane or a user’s namespace', async () => {
    await core.createNamespace({ body: { metadata: { name: `user-${process.pid}` } } });
    const res = await send('DELETE', `/api/cluster/clusters/${id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect((await core.listNamespace()).items.map((n) => n.metadata?.name)).not.toContain(ns);
    await expect(custom.getClusterCustomObject({ ...GW, plural: 'gatewayclasses', name: `lens-envoy-ai-gateway-${id}` })).rejects.toThrow();
    expect((await core.readNamespace({ name: `user-${process.pid}` })).metadata?.name).toBe(`user-${process.pid}`);
    expect((await apps.readNamespacedDeployment({ name: 'envoy-gateway', namespace: 'envoy-gateway-system' })).metadata?.name).toBe('envoy-gateway');
    expect(JSON.parse(helmCli('list', '--namespace', 'envoy-gateway-system', '--output', 'json')).map((r: { name: string }) => r.name)).toEqual(['eg']);
    // The proxy the real controller ran for the registration's Gateway goes with it.
    await until('Envoy Gateway to remove the proxy Service', async () => (await proxyServices()).items.length === 0);
  }, 5 * 60_000);

  let cid3 = '';
  it('with no controller running, an unchanged reconcile writes nothing: no resourceVersion moves, the GatewayClass’s and the Gateway’s included (issue 28)', async () => {
    // Without a controller, the Gateway API objects keep the status the API server defaults on
    // read (`Pending`), which a plain apply would persist: the second reconcile wrote them.
    await eg.stop();
    const { payload, headers } = multipart({ name: 'no-controller', gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30083', gatewayAuthzHost: '192.0.2.12' }, { content: h.kubeconfig });
    const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
    expect(res.statusCode, res.body).toBe(201);
    cid3 = res.json().cluster.id;
    const first = await lastJob(undefined, cid3);
    expect(first.status, `${first.error}\n${first.log.join('\n')}`).toBe('success');
    const state = await new GatewayRepository().state(t.store.db as never, cid3);
    const applied = state?.appliedObjects ?? [];
    expect(applied.map((k) => k.kind)).toEqual(expect.arrayContaining(['GatewayClass', 'Gateway', 'EnvoyProxy', 'Namespace', 'Service', 'EndpointSlice', 'SecurityPolicy']));
    /** resourceVersion of every object the registration applied, of the bundles' CRDs and policy, and of the Helm release records. */
    const rvs = async () => {
      const out: Record<string, string> = {};
      const kube = (await import('../adapters/kube.adapter')).clientNodeConnector(h.kubeconfig, { proxy: { mode: 'none', httpProxy: null, httpsProxy: null, noProxy: null }, timeoutMs: 30_000 });
      try {
        for (const k of applied) {
          const o = await kube.getObject(k.apiVersion, k.kind, k.name, k.namespace);
          out[`${k.kind}/${k.namespace ?? ''}/${k.name}`] = String((o?.metadata as { resourceVersion?: string } | undefined)?.resourceVersion);
        }
        for (const crd of ['gatewayclasses.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io', 'inferencepools.inference.networking.k8s.io']) {
          const o = await kube.getObject('apiextensions.k8s.io/v1', 'CustomResourceDefinition', crd);
          out[`crd/${crd}`] = String((o?.metadata as { resourceVersion?: string } | undefined)?.resourceVersion);
        }
        const vap = await kube.getObject('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicy', 'safe-upgrades.gateway.networking.k8s.io');
        out.vap = String((vap?.metadata as { resourceVersion?: string } | undefined)?.resourceVersion);
      } finally {
        kube.close();
      }
      for (const sec of (await core.listSecretForAllNamespaces({ labelSelector: 'owner=helm' })).items) out[`helm/${sec.metadata?.namespace}/${sec.metadata?.name}`] = sec.metadata?.resourceVersion ?? '';
      return out;
    };
    const before = await rvs();
    expect(Object.keys(before)).toContain(`GatewayClass//lens-envoy-ai-gateway-${cid3}`);
    expect(Object.keys(before)).toContain(`Gateway/lens-gateway-${cid3}/lens-gateway`);
    const again = await send('POST', `/api/cluster/clusters/${cid3}/gateway/reconcile`);
    expect(again.statusCode, again.body).toBe(202);
    const job = await lastJob(first.id, cid3);
    expect(job.status, job.error ?? '').toBe('success');
    expect(await rvs()).toEqual(before);
    expect(job.log.filter((l) => /^(updated|created|deleted) /.test(l)), job.log.join('\n')).toEqual([]);
    expect(job.result?.changed).toBe(0);
  }, 15 * 60_000);

  it('a registration’s delete leaves its GatewayClass while another Gateway uses it, and says so in the job log and the operations log (issue 28)', async () => {
    expect(cid3).not.toBe('');
    const cls = `lens-envoy-ai-gateway-${cid3}`;
    const userNs = `user-gw-${process.pid}`;
    await core.createNamespace({ body: { metadata: { name: userNs } } });
    await custom.createNamespacedCustomObject({
      ...GW,
      namespace: userNs,
      plural: 'gateways',
      body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name: 'shared' }, spec: { gatewayClassName: cls, listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] } },
    });
    const del = await send('DELETE', `/api/cluster/clusters/${cid3}`);
    expect(del.statusCode, del.body).toBe(204);
    // The class stays for the Gateway that uses it; the registration's own namespace is gone.
    expect(((await custom.getClusterCustomObject({ ...GW, plural: 'gatewayclasses', name: cls })) as { metadata: { name: string } }).metadata.name).toBe(cls);
    expect((await core.listNamespace()).items.map((n) => n.metadata?.name)).not.toContain(`lens-gateway-${cid3}`);
    const note = `kept GatewayClass ${cls}: Gateway ${userNs}/shared still uses it`;
    const [delJob] = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: cid3, limit: 1 });
    expect(delJob.log).toContain(note);
    const { entries } = await new OperationsLog(partOf(t.store)).list({ limit: 1000 });
    const op = entries.filter((e) => (e as { op?: string }).op === 'cluster.delete' && (e as { cluster_id?: string }).cluster_id === cid3).pop() as { status: string; notes: string[] } | undefined;
    expect(op).toMatchObject({ status: 'ok', notes: expect.arrayContaining([note]) });
    await custom.deleteNamespacedCustomObject({ ...GW, namespace: userNs, plural: 'gateways', name: 'shared' });
    await custom.deleteClusterCustomObject({ ...GW, plural: 'gatewayclasses', name: cls });
    await core.deleteNamespace({ name: userNs });
  }, 5 * 60_000);
});

// The Helm adapter's contract against the real helm and the chart mirror (the FakeHelm runs the same suite).
helmContract('HelmCli, the real helm and chart mirror', () => ({
  helm: new HelmCli(testHelm(), charts.url, `${t.dataDir}/helm-contract`),
  helmWithoutMirror: new HelmCli(testHelm(), null, `${t.dataDir}/helm-contract`),
  kubeconfig: h.kubeconfig,
  namespace: 'helm-contract',
  chart: { name: 'payload-processor', version: p.llm_d_inference_payload_processor, reported: p.llm_d_inference_payload_processor.replace(/^v/, '') },
  values: { payloadProcessor: { name: 'contract-ipp', port: 9004 }, provider: { name: 'none' }, inferenceGateway: { name: 'contract-gw' } },
  otherValues: { payloadProcessor: { name: 'contract-ipp', port: 9005 }, provider: { name: 'none' } },
}));
