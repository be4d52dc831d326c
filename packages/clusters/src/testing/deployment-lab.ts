import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FixtureSize, type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { parseAllDocuments } from 'yaml';
import { modelServerImage, sidecarImage } from '../deployments/deployment.render';
import { envoyGatewayValues } from '../gateway/gateway.render';
import { type StackProfile, stackProfile } from '../shared/profile';
import { type ClustersTestApp, multipart, startClustersApp } from './app';
import { EnvoyGatewayController } from './envoy-gateway.controller';
import { CountingChartMirror, packageCharts, realInferenceExtensionBundle, testHelm, upstreamDir } from './gateway-upstream';
import { LocalGithubMirror } from './github-mirror';
import { LWS_VERSION, LwsController } from './lws.controller';
import { PodNetwork } from './pod-network';
import { KUBELET_VERDICT_STAGE, TestKubelet } from './test-kubelet';
import { upstreamGatewayApiBundle } from './upstream-crd-bundles';

/**
 * The cluster side of a model-deployment lab, shared by the deployments suite, `npm run
 * bench:deploy` (through `startDeploymentLab`) and the console's browser test: the kube-harness
 * (kwok GPU nodes; `nodes: 4`: control plane, H100 ×8, Max 1550 ×4, A100 ×8) with LWS' CRD and, with
 * `lws`, its real controller (`LwsController`), the pod network and the kubelet stand-in, a GitHub
 * mirror of the CRD bundles, a counting chart mirror (the gateway's charts and the `inferencepool`
 * chart, packaged by the real helm), the real Envoy Gateway controller with ironlens' extension-
 * manager values. Helm is behind a gate: `<gate>/hold` makes an `upgrade` wait (it writes
 * `<gate>/waiting`). `env` is what ironlens needs to use them; `registration` the form fields of a
 * cluster with the shared gateway (Envoy AI Gateway).
 */
export interface DeploymentCluster {
  profile: StackProfile;
  h: KubeHarness;
  charts: CountingChartMirror;
  eg: EnvoyGatewayController;
  lws: LwsController | null;
  net: PodNetwork;
  kubelet: TestKubelet;
  gate: string;
  env: Record<string, string>;
  registration: Record<string, string>;
  stop(): Promise<void>;
}

/** A `DeploymentCluster` with the cluster manager on it: a cluster registered (its gateway installed) and an HF token secret. */
export interface DeploymentLab extends DeploymentCluster {
  t: ClustersTestApp;
  lws: LwsController;
  clusterId: string;
  gatewayNamespace: string;
  /** Milliseconds of the registration's first gateway reconcile (the job's own start to end). */
  reconcileMs: number;
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function startDeploymentCluster(o: { nodes?: FixtureSize; lws?: boolean; log?: (l: string) => void } = {}): Promise<DeploymentCluster> {
  const p = stackProfile();
  const gate = mkdtempSync(join(tmpdir(), 'ironlens-helm-gate-'));
  // The pod network first (it claims its CIDR's route), then kwok giving pods IPs in it.
  const net = await PodNetwork.create();
  const parts: Array<() => Promise<void> | void> = [() => net.close(), () => rmSync(gate, { recursive: true, force: true })];
  const stop = async () => {
    for (const s of parts.splice(0).reverse()) await s();
  };
  try {
    const h = await startKubeCluster({ nodes: o.nodes ?? 4, gpu: true, podCidr: net.podCidr, extraStages: [KUBELET_VERDICT_STAGE], log: o.log });
    parts.push(() => h.stop());
    h.konnectivity.routeNetwork(net.cidr);
    // LeaderWorkerSet's CRD, from its Go module, as a cluster that runs LWS has it.
    const lwsCrd = readFileSync(join(upstreamDir('sigs.k8s.io/lws', LWS_VERSION), 'config', 'crd', 'bases', 'leaderworkerset.x-k8s.io_leaderworkersets.yaml'), 'utf8');
    await h.apply(parseAllDocuments(lwsCrd).map((d) => d.toJSON()).filter(Boolean));
    // And its REAL controller, with its webhooks (the pods of a group get their index and leader there).
    let lws: LwsController | null = null;
    if (o.lws) {
      const c = new LwsController(h);
      parts.push(() => c.stop());
      await c.start();
      lws = c;
    }
    const gh = new LocalGithubMirror();
    gh.addReleaseAsset(`/kubernetes-sigs/gateway-api/releases/download/${p.k8s_gateway_api}/standard-install.yaml`, upstreamGatewayApiBundle(p.k8s_gateway_api));
    gh.addReleaseAsset(`/kubernetes-sigs/gateway-api-inference-extension/releases/download/${p.k8s_gateway_api_inference_extension}/v1-manifests.yaml`, realInferenceExtensionBundle(p));
    await gh.start();
    parts.push(() => gh.stop());
    const charts = new CountingChartMirror(packageCharts(p, { inferencePool: true }).dir);
    await charts.start();
    parts.push(() => charts.stop());
    const eg = new EnvoyGatewayController(h.kubeconfigPath, undefined, envoyGatewayValues().config.envoyGateway.extensionManager);
    eg.start();
    parts.push(() => eg.stop());
    const helm = join(gate, 'helm');
    writeFileSync(helm, `#!/bin/sh\nif [ "$1" = upgrade ] && [ -e '${gate}/hold' ]; then : > '${gate}/waiting'; while [ -e '${gate}/hold' ]; do sleep 0.1; done; rm -f '${gate}/waiting'; fi\nexec '${testHelm()}' "$@"\n`);
    chmodSync(helm, 0o755);
    const kubelet = new TestKubelet(h, net, new Set([...(['nvidia', 'intel'] as const).map((a) => modelServerImage(p, a)), sidecarImage(p)]));
    kubelet.start();
    parts.push(() => kubelet.stop());
    return {
      profile: p,
      h,
      charts,
      eg,
      lws,
      net,
      kubelet,
      gate,
      env: {
        IRONLENS_GITHUB_MIRROR: gh.url,
        IRONLENS_CHART_MIRROR: charts.url,
        IRONLENS_HELM: helm,
        // The hook's EndpointSlice needs a real port (a test's console listens on an ephemeral one).
        IRONLENS_GATEWAY_AUTHZ_PORT: '8080',
        IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '30000',
      },
      registration: { gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30180', gatewayAuthzHost: '192.0.2.10' },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** `startDeploymentCluster` (with the LWS controller) and the cluster manager on it, the cluster registered with its gateway installed, an HF token secret. */
export async function startDeploymentLab(o: { env?: Record<string, string>; log?: (l: string) => void } = {}): Promise<DeploymentLab> {
  const c = await startDeploymentCluster({ lws: true, log: o.log });
  let t: ClustersTestApp | undefined;
  const stop = async () => {
    await t?.close();
    await c.stop();
  };
  try {
    t = await startClustersApp({ env: { ...c.env, ...o.env } });
    const app = t;
    const { payload, headers } = multipart({ name: 'serving', ...c.registration }, { content: c.h.kubeconfig });
    const res = await app.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
    if (res.statusCode !== 201) throw new Error(`registration: ${res.statusCode} ${res.body}`);
    const clusterId = res.json().cluster.id as string;
    const job = await until(
      'the gateway reconcile',
      async () => {
        const j = (await app.services.runner.repository.list({ kind: 'clusters.gateway', subject: clusterId, limit: 1 }))[0];
        return j && (j.status === 'success' || j.status === 'failed') ? j : null;
      },
      600_000,
    );
    if (job.status !== 'success') throw new Error(`the gateway reconcile failed: ${job.error}\n${job.log.join('\n')}`);
    const secret = await app.app.inject({ method: 'POST', url: `/api/cluster/clusters/${clusterId}/hf-token-secrets`, payload: { namespace: 'llm-d-hf', name: 'hf-token', token: 'hf_serving_test_token' } });
    if (secret.statusCode !== 201) throw new Error(`HF token secret: ${secret.statusCode} ${secret.body}`);
    return {
      ...c,
      lws: c.lws!,
      t: app,
      clusterId,
      gatewayNamespace: `lens-gateway-${clusterId}`,
      reconcileMs: Date.parse(job.finishedAt ?? '') - Date.parse(job.startedAt ?? ''),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
