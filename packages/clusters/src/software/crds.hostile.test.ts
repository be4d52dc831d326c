import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kube, KubeObjectRef } from '../adapters/kube.adapter';
import { type ClustersTestApp, multipart, startClustersApp } from '../testing/app';
import { gatewayApiBundle, inferenceExtensionBundle } from '../testing/crd-bundles';

// Issue 18, finding 5: a mirror serving a hostile standard-install.yaml. The cluster side is a
// recording stand-in of the Kube interface (what is applied is what matters here; the real
// server-side apply of the bundles runs in clusters.kube.test.ts against kube-apiserver).

const GW = '/kubernetes-sigs/gateway-api/releases/download/v1.5.1/standard-install.yaml';
const GIE = '/kubernetes-sigs/gateway-api-inference-extension/releases/download/v1.5.0/v1-manifests.yaml';
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

/** The bundle: the CRDs, plus a ClusterRoleBinding to cluster-admin, a privileged kube-system, a ConfigMap and a List holding a Secret. */
const HOSTILE = `${gatewayApiBundle()}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: everyone-is-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: v1
kind: Namespace
metadata: {name: kube-system, labels: {pod-security.kubernetes.io/enforce: privileged}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: planted, namespace: default}
data: {a: b}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {name: planted, namespace: kube-system}
  stringData: {token: x}
`;

/** What the real v1.5.1 bundle holds besides its CRDs (config/crd/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml). */
const WITH_SAFE_UPGRADES = `${gatewayApiBundle()}---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: safe-upgrades.gateway.networking.k8s.io}
spec: {failurePolicy: Fail, matchConstraints: {resourceRules: []}, validations: []}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: safe-upgrades.gateway.networking.k8s.io}
spec: {policyName: safe-upgrades.gateway.networking.k8s.io, validationActions: [Deny]}
`;

/** A mirror: per path a body, a redirect, or a streamed body of n bytes. */
class Mirror {
  readonly routes = new Map<string, { body?: string; location?: string; streamBytes?: number }>();
  hits = 0;
  private server?: Server;
  url = '';
  async start(host = '127.0.0.1'): Promise<void> {
    this.server = createServer((req, res) => {
      this.hits++;
      res.on('error', () => {});
      const r = this.routes.get(new URL(req.url ?? '/', 'http://x').pathname);
      if (!r) return void res.writeHead(404).end();
      if (r.location) return void res.writeHead(302, { location: r.location }).end();
      if (r.streamBytes) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(1024 * 1024, 'a');
        let left = r.streamBytes;
        res.on('close', () => {
          left = 0;
        });
        const pump = () => {
          while (left > 0) {
            left -= chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(r.body);
    });
    await new Promise<void>((r) => this.server!.listen(0, host, r));
    const a = this.server.address();
    this.url = `http://${host}:${typeof a === 'object' && a ? a.port : 0}`;
  }
  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

/** A stand-in cluster that records what is applied; everything else it is asked fails. */
function recordingKube(applied: KubeObjectRef[]): Kube {
  const known: Partial<Kube> = {
    server: 'https://stand-in.invalid',
    readyz: async () => true,
    close: () => {},
    apply: async (o) => {
      applied.push(o);
      return o;
    },
  };
  return new Proxy(known as Kube, {
    get: (target, prop) => (prop in target ? target[prop as keyof Kube] : async () => Promise.reject(new Error(`${String(prop)}: not in this stand-in`))),
  });
}

let mirror: Mirror;
let cdn: Mirror;
const applied: KubeObjectRef[] = [];

async function appWith(opts: { pins?: { gateway_api: string | null; gateway_api_inference_extension: string | null }; env?: Record<string, string> }): Promise<{ t: ClustersTestApp; id: string }> {
  const t = await startClustersApp({
    env: { IRONLENS_GITHUB_MIRROR: mirror.url, ...opts.env },
    deps: { connector: () => recordingKube(applied), ...(opts.pins ? { bundlePins: opts.pins } : {}) },
  });
  const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;
  const { payload, headers } = multipart({ name: 'crd-target', draft: 'true' }, { content: kubeconfig });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return { t, id: res.json().cluster.id };
}

async function applyCrds(opts: Parameters<typeof appWith>[0]) {
  const { t, id } = await appWith(opts);
  applied.length = 0;
  try {
    const res = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${id}/crds` });
    expect(res.statusCode, res.body).toBe(200);
    return { json: res.json() as Record<'gateway_api' | 'gateway_api_inference_extension', { ok: boolean; message: string }>, applied: [...applied] };
  } finally {
    await t.close();
  }
}

beforeAll(async () => {
  mirror = new Mirror();
  await mirror.start();
  cdn = new Mirror();
  await cdn.start('127.0.0.2');
});

afterAll(async () => {
  await mirror?.stop();
  await cdn?.stop();
});

describe('CRD bundles from the mirror (finding 5)', () => {
  it('refuses a bundle whose sha256 is not the one pinned in the stack profile: nothing applied', async () => {
    mirror.routes.set(GW, { body: HOSTILE });
    mirror.routes.set(GIE, { body: inferenceExtensionBundle() });
    const r = await applyCrds({});
    expect(r.json.gateway_api.ok).toBe(false);
    expect(r.json.gateway_api.message).toMatch(/sha256 .* not the 751002b3/);
    expect(r.applied.filter((o) => o.metadata.name.endsWith('gateway.networking.k8s.io'))).toEqual([]);
    expect(r.applied.some((o) => o.kind !== 'CustomResourceDefinition')).toBe(false);
  });

  it('applies nothing of a pinned bundle that holds anything but its CRDs (ClusterRoleBinding, Namespace, ConfigMap, List of a Secret)', async () => {
    mirror.routes.set(GW, { body: HOSTILE });
    mirror.routes.set(GIE, { body: inferenceExtensionBundle() });
    const r = await applyCrds({ pins: { gateway_api: sha(HOSTILE), gateway_api_inference_extension: sha(inferenceExtensionBundle()) } });
    expect(r.json.gateway_api).toMatchObject({ ok: false });
    expect(r.json.gateway_api.message).toMatch(/not applied/);
    expect(r.applied.map((o) => o.kind)).toEqual(['CustomResourceDefinition']); // the inference extension's one CRD only
    expect(r.applied[0].metadata.name).toBe('inferencepools.inference.networking.k8s.io');
  });

  it('applies the CRDs and the safe-upgrades admission policy the real bundle holds, when the sha256 matches', async () => {
    mirror.routes.set(GW, { body: WITH_SAFE_UPGRADES });
    mirror.routes.set(GIE, { body: inferenceExtensionBundle() });
    const r = await applyCrds({ pins: { gateway_api: sha(WITH_SAFE_UPGRADES), gateway_api_inference_extension: sha(inferenceExtensionBundle()) } });
    expect(r.json).toEqual({ gateway_api: { ok: true, message: '' }, gateway_api_inference_extension: { ok: true, message: '' } });
    expect(r.applied.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'CustomResourceDefinition/gatewayclasses.gateway.networking.k8s.io',
      'CustomResourceDefinition/gateways.gateway.networking.k8s.io',
      'CustomResourceDefinition/httproutes.gateway.networking.k8s.io',
      'CustomResourceDefinition/referencegrants.gateway.networking.k8s.io',
      'ValidatingAdmissionPolicy/safe-upgrades.gateway.networking.k8s.io',
      'ValidatingAdmissionPolicyBinding/safe-upgrades.gateway.networking.k8s.io',
      'CustomResourceDefinition/inferencepools.inference.networking.k8s.io',
    ]);
  });

  it('refuses a CRD of another API group in a pinned bundle', async () => {
    const foreign = gatewayApiBundle().replaceAll('gateway.networking.k8s.io', 'evil.example.com');
    mirror.routes.set(GW, { body: foreign });
    const r = await applyCrds({ pins: { gateway_api: sha(foreign), gateway_api_inference_extension: null } });
    expect(r.json.gateway_api.ok).toBe(false);
    expect(r.applied.filter((o) => o.metadata.name.endsWith('evil.example.com'))).toEqual([]);
  });

  it('follows a redirect only to the mirror host or a configured host', async () => {
    const body = gatewayApiBundle();
    cdn.routes.set('/asset', { body });
    mirror.routes.set(GW, { location: `${cdn.url}/asset` });
    const pins = { gateway_api: sha(body), gateway_api_inference_extension: null };
    const hitsBefore = cdn.hits;
    const refused = await applyCrds({ pins });
    expect(refused.json.gateway_api.ok).toBe(false);
    expect(refused.json.gateway_api.message).toMatch(/redirected to 127\.0\.0\.2/);
    expect(cdn.hits).toBe(hitsBefore);
    const allowed = await applyCrds({ pins, env: { IRONLENS_CRD_BUNDLE_REDIRECT_HOSTS: '127.0.0.2' } });
    expect(allowed.json.gateway_api).toEqual({ ok: true, message: '' });
  });

  it('stops reading a 300 MB bundle at the cap, without the memory', async () => {
    mirror.routes.set(GW, { streamBytes: 300 * 1024 * 1024 });
    const before = process.memoryUsage().rss;
    const r = await applyCrds({ pins: { gateway_api: null, gateway_api_inference_extension: null } });
    expect(r.json.gateway_api.ok).toBe(false);
    expect(r.json.gateway_api.message).toMatch(/larger than 16777216 bytes/);
    expect(process.memoryUsage().rss - before).toBeLessThan(150 * 1024 * 1024);
  });
});
