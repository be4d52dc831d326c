import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { clientNodeConnector, type Kube, KubeApiError, type KubeObjectRef } from '../adapters/kube.adapter';
import type { GatewayProvider } from '../shared/domain';
import { stackProfile } from '../shared/profile';
import { FIELD_MANAGER } from '../shared/manifests';
import { realInferenceExtensionBundle, upstreamDir } from '../testing/gateway-upstream';
import { upstreamGatewayApiBundle } from '../testing/upstream-crd-bundles';
import { renderGateway } from './gateway.render';
import { sleep } from '@ironlens/core/testing';

// What ironlens renders itself for the providers other than envoy-ai-gateway (whose objects the
// gateway suite applies through a full reconcile), server-side applied to a real API server that
// holds the REAL upstream CRDs at the profile's versions: the Gateway API standard channel and the
// Inference Extension (Go modules sigs.k8s.io/…), and Istio's CRDs from the Go module
// `istio.io/api` at the profile's istio (`kubernetes/customresourcedefinitions.gen.yaml`).
// agentgateway's CRDs (`agentgateway.dev`) are not on the Go module proxy (neither
// github.com/agentgateway/agentgateway nor its api module): its two own kinds are named below as
// the ones NOT validated here; every other object of that provider is.

const p = stackProfile();
let h: KubeHarness;
let kube: Kube;

const connect = () => clientNodeConnector(h.kubeconfig, { proxy: { mode: 'none', httpProxy: null, httpsProxy: null, noProxy: null }, timeoutMs: 30_000 });

const docs = (text: string): KubeObjectRef[] =>
  parseAllDocuments(text)
    .map((d) => d.toJSON() as KubeObjectRef | null)
    .filter((o): o is KubeObjectRef => !!o && typeof o === 'object' && typeof o.kind === 'string');

function istioCrds(): KubeObjectRef[] {
  return docs(readFileSync(join(upstreamDir('istio.io/api', `v${p.gateway_providers.istio}`), 'kubernetes', 'customresourcedefinitions.gen.yaml'), 'utf8'));
}

/** Everything ironlens applies itself for one registration, in its apply order. */
function rendered(provider: GatewayProvider, clusterId: string): KubeObjectRef[] {
  const r = renderGateway(
    { clusterId, provider, namespace: `lens-gateway-${clusterId}`, gatewayName: 'lens-gateway', port: 30090, authzHost: '192.0.2.10', authzPort: 8080 },
    p,
  );
  return [...(r.gatewayClass ? [r.gatewayClass] : []), ...r.gateway, ...r.authz, ...r.ippWiring];
}

/** Applies each object as the reconcile does (server-side apply, ironlens' field manager) and reads it back. */
async function applyAll(objs: KubeObjectRef[]): Promise<string[]> {
  const applied: string[] = [];
  for (const o of objs) {
    try {
      await kube.apply(o, FIELD_MANAGER, true);
    } catch (e) {
      throw new Error(`${o.apiVersion} ${o.kind} ${o.metadata.name} refused: ${(e as Error).message}`);
    }
    const back = await kube.getObject(o.apiVersion, o.kind, o.metadata.name, o.metadata.namespace);
    expect(back?.metadata.labels?.['app.kubernetes.io/managed-by'], `${o.kind} ${o.metadata.name}`).toBe('ironlens');
    applied.push(`${o.kind}/${o.metadata.name}`);
  }
  return applied;
}

beforeAll(async () => {
  h = await startKubeCluster({ nodes: 'test', gpu: false });
  const setup = connect();
  // The bundles as ironlens installs them (the Gateway API's holds its admission policy beside the CRDs).
  const bundle = [...docs(upstreamGatewayApiBundle(p.k8s_gateway_api)), ...docs(realInferenceExtensionBundle(p)), ...istioCrds()];
  for (const o of bundle) await setup.apply(o, FIELD_MANAGER, true);
  const crds = bundle.filter((c) => c.kind === 'CustomResourceDefinition');
  expect(crds.filter((c) => c.spec && (c.spec as { group?: string }).group === 'security.istio.io').length).toBeGreaterThan(0);
  const end = Date.now() + 120_000;
  for (const c of crds) {
    while (!(await setup.crdEstablished(c.metadata.name))) {
      if (Date.now() > end) throw new Error(`CRD ${c.metadata.name} not Established`);
      await sleep(200);
    }
  }
  // A client whose discovery starts after the CRDs are served.
  kube = connect();
}, 10 * 60_000);

afterAll(async () => {
  await h?.stop();
});

describe('what ironlens renders for each provider is accepted by the real schemas', () => {
  it('istio: the class, Gateway, its parameters ConfigMap, the hook and the AuthorizationPolicy (Istio’s own CRD) are all accepted', async () => {
    const objs = rendered('istio', 'a1b2c3d4');
    expect(objs.map((o) => o.kind)).toContain('AuthorizationPolicy');
    const applied = await applyAll(objs);
    expect(applied).toEqual(objs.map((o) => `${o.kind}/${o.metadata.name}`));
    // The schema is really there: Istio's CRD refuses an action it does not know.
    const ap = objs.find((o) => o.kind === 'AuthorizationPolicy')!;
    const bad = { ...ap, metadata: { ...ap.metadata, name: 'bad-policy' }, spec: { ...(ap.spec as object), action: 'BOGUS' } };
    const err = await kube.apply(bad, FIELD_MANAGER, true).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toBe(422);
  });

  it('gke: the Gateway on the built-in class and the IPP wiring are accepted', async () => {
    const objs = rendered('gke', 'b1b2c3d4');
    expect(objs.some((o) => o.kind === 'Gateway')).toBe(true);
    expect(await applyAll(objs)).toEqual(objs.map((o) => `${o.kind}/${o.metadata.name}`));
  });

  it('agentgateway: every object but its own two kinds (CRDs not on the Go module proxy) is accepted', async () => {
    const objs = rendered('agentgateway', 'c1b2c3d4');
    const own = objs.filter((o) => o.apiVersion.startsWith('agentgateway.dev/'));
    expect(own.map((o) => o.kind).sort()).toEqual(['AgentgatewayParameters', 'AgentgatewayPolicy']);
    // The Gateway names its parameters by reference; the reference needs no CRD to be accepted.
    const rest = objs.filter((o) => !own.includes(o));
    expect(rest.map((o) => o.kind)).toEqual(expect.arrayContaining(['GatewayClass', 'Gateway', 'Service', 'EndpointSlice']));
    expect(await applyAll(rest)).toEqual(rest.map((o) => `${o.kind}/${o.metadata.name}`));
  });
});
