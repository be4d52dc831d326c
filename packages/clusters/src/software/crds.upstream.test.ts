import { createHash } from 'node:crypto';
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBundlePins } from '../shared/profile';
import { bundleObjects, checkBundleObjects } from './crds.service';
import { type ClustersTestApp, multipart, startClustersApp } from '../testing/app';
import { LocalGithubMirror } from '../testing/github-mirror';
import { upstreamGatewayApiBundle, upstreamInferenceExtensionCrds } from '../testing/upstream-crd-bundles';
import { sleep } from '@ironlens/core/testing';

// Issue 18, finding 5, with the real bundles: the Gateway API's standard-install.yaml rebuilt from
// the Go module sigs.k8s.io/gateway-api@v1.5.1 hashes to the profile's pin, passes the allow-list,
// and is applied (CRDs and the safe-upgrades admission policy) to a real kube-apiserver.
let gw: string;
let gie: string;
let h: KubeHarness;
let mirror: LocalGithubMirror;
let t: ClustersTestApp;

beforeAll(async () => {
  gw = upstreamGatewayApiBundle('v1.5.1');
  gie = upstreamInferenceExtensionCrds('v1.5.0');
  h = await startKubeCluster({ nodes: 'test' });
  mirror = new LocalGithubMirror();
  mirror.addReleaseAsset('/kubernetes-sigs/gateway-api/releases/download/v1.5.1/standard-install.yaml', gw);
  mirror.addReleaseAsset('/kubernetes-sigs/gateway-api-inference-extension/releases/download/v1.5.0/v1-manifests.yaml', gie);
  await mirror.start();
  t = await startClustersApp({ env: { IRONLENS_GITHUB_MIRROR: mirror.url } });
}, 45 * 60_000);

afterAll(async () => {
  await t?.close();
  await mirror?.stop();
  await h?.stop();
});

describe('the real CRD bundles', () => {
  it('standard-install.yaml v1.5.1 hashes to the pin of profile/crd-bundles.json and holds only what the allow-list names', () => {
    expect(createHash('sha256').update(gw).digest('hex')).toBe(loadBundlePins().gateway_api);
    const objects = bundleObjects(gw);
    expect(() => checkBundleObjects('gateway_api', objects)).not.toThrow();
    const kinds = objects.map((o) => o.kind);
    expect(kinds.filter((k) => k === 'CustomResourceDefinition')).toHaveLength(8);
    expect(kinds.filter((k) => k !== 'CustomResourceDefinition').sort()).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    expect(() => checkBundleObjects('gateway_api_inference_extension', bundleObjects(gie))).not.toThrow();
  });

  it('are applied to a real API server with the profile’s pins: ok, Established, the admission policy in place', async () => {
    const { payload, headers } = multipart({ name: 'upstream-crds', draft: 'true' }, { content: h.kubeconfig });
    const reg = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
    expect(reg.statusCode, reg.body).toBe(201);
    const id = reg.json().cluster.id;
    const res = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/crds` });
    expect(res.json()).toEqual({ gateway_api: { ok: true, message: '' }, gateway_api_inference_extension: { ok: true, message: '' } });
    const end = Date.now() + 60_000;
    let status: unknown;
    while (Date.now() < end) {
      status = (await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/crds` })).json();
      if (JSON.stringify(status) === JSON.stringify({ gateway_api: 'ready', gateway_api_inference_extension: 'ready' })) break;
      await sleep(250);
    }
    expect(status).toEqual({ gateway_api: 'ready', gateway_api_inference_extension: 'ready' });
    const adm = h.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
    expect((await adm.readValidatingAdmissionPolicy({ name: 'safe-upgrades.gateway.networking.k8s.io' })).metadata?.name).toBe('safe-upgrades.gateway.networking.k8s.io');
  });
});
