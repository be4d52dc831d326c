import { stringify } from 'yaml';
import type { HelmRelease } from '../adapters/helm.adapter';
import type { KubeObjectRef } from '../adapters/kube.adapter';
import type { Accelerator } from '../api/deployments';
import { isDnsLabel, isDnsSubdomain, type GatewayProvider } from '../shared/domain';
import type { StackProfile } from '../shared/profile';
import { ACCELERATOR_SPECS, toleratedTaintKeys } from './placement';
import { checkArguments, type DeploymentSpec, RESERVED_VLLM_ARGS } from './deployment.spec';

/**
 * What one deployment is made of, rendered (pure functions, no I/O), after llm-d's guides
 * (`guides/optimized-baseline`, `pd-disaggregation`, `wide-ep-lws`; the model-server overlays'
 * patch semantics) and Lens' providers: the model servers ironlens server-side applies itself,
 * the Inference Extension's `inferencepool` chart (InferencePool + endpoint picker, Helm from the
 * chart mirror), and the publication on the cluster's shared gateway (Lens' `render_model_route`:
 * an HTTPRoute in the gateway namespace matching `X-Gateway-Base-Model-Name`, a ReferenceGrant in
 * the pool's namespace, the payload processor's model map).
 */

export const MANAGED_BY = { key: 'app.kubernetes.io/managed-by', value: 'ironlens' } as const;
export const CLUSTER_LABEL = 'ironlens.dev/cluster';
export const DEPLOYMENT_LABEL = 'ironlens.dev/deployment';
export const INSTANCE_LABEL = 'app.kubernetes.io/instance';
export const ROLE_LABEL = 'llm-d.ai/role';
export const GUIDE_LABEL = 'llm-d.ai/guide';
export const BASE_MODEL_HEADER = 'X-Gateway-Base-Model-Name';
export const HF_SECRET = 'llm-d-hf-token';
export const HF_KEY = 'HF_TOKEN';
export const INFERENCEPOOL_CHART = 'inferencepool';
export const IPP_MANAGED_LABEL = 'inference.llm-d.ai/ipp-managed';
/** The port every model server's OpenAI API answers on (the routing sidecar's on P/D decode). */
export const SERVER_PORT = 8000;
/** vLLM behind the routing sidecar (P/D and wide-EP decode). */
export const VLLM_BEHIND_SIDECAR_PORT = 8200;
const NIXL_PORT = 5600;
const GW_API = 'gateway.networking.k8s.io/v1';
const POOL_GROUP = 'inference.networking.k8s.io';
const LWS_API = 'leaderworkerset.x-k8s.io/v1';

/** The model-server image per accelerator, from the stack profile (the images the pre-pull pulls). */
export function modelServerImage(p: StackProfile, a: Accelerator): string {
  return `ghcr.io/llm-d/${a === 'nvidia' ? 'llm-d-cuda' : a === 'intel' ? 'llm-d-xpu' : 'llm-d-cpu'}:${p.llm_d}`;
}
export const eppImage = (p: StackProfile) => ({ registry: 'ghcr.io/llm-d', repository: 'llm-d-router-endpoint-picker', tag: p.llm_d_router });
export const sidecarImage = (p: StackProfile) => `ghcr.io/llm-d/llm-d-router-disagg-sidecar:${p.llm_d_router}`;

/** Where the deployment is published (the registration's shared gateway), or null: not published. */
export interface PublishTarget {
  provider: GatewayProvider;
  namespace: string;
  gatewayName: string;
}

export interface Workload {
  apiVersion: string;
  kind: 'Deployment' | 'LeaderWorkerSet';
  name: string;
  role: 'decode' | 'prefill';
  /** Pods it should run (LWS: replicas × group size). */
  pods: number;
}

export interface RenderedDeployment {
  namespace: KubeObjectRef;
  /** Server-side applied in the deployment namespace, in this order. */
  objects: KubeObjectRef[];
  /** The Inference Extension chart (InferencePool + endpoint picker); null on the baseline path. */
  release: HelmRelease | null;
  /** HTTPRoute and model map in the gateway namespace, ReferenceGrant in the deployment's; empty when not published. */
  publication: KubeObjectRef[];
  workloads: Workload[];
  /** The deployment's own endpoint: the decode servers' Service (the smoke request goes through it). */
  service: { name: string; port: number };
  pool: { name: string; namespace: string } | null;
  route: { name: string; namespace: string } | null;
}

/** The labels of everything ironlens applies for a deployment. */
export function ownLabels(s: Pick<DeploymentSpec, 'clusterId' | 'id'>): Record<string, string> {
  return { [MANAGED_BY.key]: MANAGED_BY.value, [CLUSTER_LABEL]: s.clusterId, [DEPLOYMENT_LABEL]: s.id };
}

/** A label value from a model id: `Qwen/Qwen3-0.6B` → `Qwen3-0.6B` (at most 63 characters, label grammar). */
export function modelLabel(model: string): string {
  const last = model.split('/').pop() ?? model;
  const v = last.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return v || 'model';
}

/** Refuses a spec whose values are outside their grammar, before anything is rendered from it. */
export function checkSpec(s: DeploymentSpec): void {
  if (!/^[0-9a-f]{12}$/.test(s.id) || !/^[0-9a-f]{8}$/.test(s.clusterId)) throw new Error('deployment or cluster id out of grammar');
  if (!isDnsLabel(s.base) || s.base.length > 30 || !isDnsLabel(s.namespace)) throw new Error('deployment names out of grammar');
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/.test(s.model) || s.model.length > 300) throw new Error(`model ${JSON.stringify(s.model)} out of grammar`);
  if (s.pins.node !== null && !isDnsSubdomain(s.pins.node)) throw new Error('node pin out of grammar');
  if (s.pins.gpuProduct !== null && !/^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/.test(s.pins.gpuProduct)) throw new Error('gpu product pin out of grammar');
  if (s.storage.type === 'model-cache' && !isDnsSubdomain(s.storage.volume)) throw new Error('model-cache volume out of grammar');
  checkArguments(s.vllm.arguments);
  for (const n of [s.replicas, s.tensorParallelSize, s.prefill?.replicas ?? 1, s.prefill?.tensorParallelSize ?? 1]) if (!Number.isInteger(n) || n < 1 || n > 32) throw new Error('sizes out of range');
}

/** vLLM's own arguments for one role, in a fixed order (the `vllm serve` positional model first). */
export function vllmArgs(s: DeploymentSpec, o: { port: number; tensorParallelSize: number; kv: boolean }): string[] {
  const v = s.vllm;
  const args = [
    s.model,
    `--port=${o.port}`,
    `--tensor-parallel-size=${o.tensorParallelSize}`,
    `--max-model-len=${v.maxModelLen}`,
    `--gpu-memory-utilization=${v.gpuMemoryUtilization}`,
    `--max-num-seqs=${v.maxNumSeqs}`,
    `--max-num-batched-tokens=${v.maxNumBatchedTokens}`,
    v.enablePrefixCaching ? '--enable-prefix-caching' : '--no-enable-prefix-caching',
    ...(v.enforceEager ? ['--enforce-eager'] : []),
    '--disable-access-log-for-endpoints=/health,/metrics,/v1/models',
  ];
  if (o.kv) args.push('--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}');
  for (const a of s.vllm.arguments) {
    if (RESERVED_VLLM_ARGS.has(a.name)) throw new Error(`--${a.name} is reserved`);
    if (a.value === 'true') args.push(`--${a.name}`);
    else if (a.value === 'false') args.push(`--no-${a.name}`);
    else args.push(`--${a.name}=${a.value}`);
  }
  return args;
}

function env(s: DeploymentSpec, extra: Array<Record<string, unknown>> = []): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [{ name: 'HF_HOME', value: '/model-cache' }];
  if (s.storage.type === 'model-cache') out.push({ name: 'HF_HUB_OFFLINE', value: '1' });
  if (s.hfToken) out.push({ name: HF_KEY, valueFrom: { secretKeyRef: { name: HF_SECRET, key: HF_KEY } } });
  if (s.proxy) {
    if (s.proxy.httpProxy) out.push({ name: 'HTTP_PROXY', value: s.proxy.httpProxy }, { name: 'http_proxy', value: s.proxy.httpProxy });
    if (s.proxy.httpsProxy) out.push({ name: 'HTTPS_PROXY', value: s.proxy.httpsProxy }, { name: 'https_proxy', value: s.proxy.httpsProxy });
    // In-cluster names never through the proxy (Lens forces the same suffixes).
    const no = ['localhost', '127.0.0.1', '.svc', '.svc.cluster.local', '.cluster.local', ...(s.proxy.noProxy ? s.proxy.noProxy.split(',').filter(Boolean) : [])].join(',');
    out.push({ name: 'NO_PROXY', value: no }, { name: 'no_proxy', value: no });
  }
  return [...out, ...extra];
}

/** The accelerator request of one container (extended resource) or pod (DRA claim). */
function acceleratorResources(s: DeploymentSpec, devices: number, claim: string | null): Record<string, unknown> {
  if (s.request.kind === 'extended' && devices > 0) return { limits: { [s.request.resource]: String(devices) }, requests: { [s.request.resource]: String(devices) } };
  if (s.request.kind === 'dra' && claim) return { claims: [{ name: 'accelerators' }] };
  return {};
}

function claimTemplate(s: DeploymentSpec, name: string, devices: number, labels: Record<string, string>): KubeObjectRef | null {
  if (s.request.kind !== 'dra' || devices === 0) return null;
  const exactly: Record<string, unknown> = { deviceClassName: s.request.deviceClass, count: devices };
  if (s.pins.gpuProduct) exactly.selectors = [{ cel: { expression: `device.attributes["${s.request.deviceClass}"].productName == "${s.pins.gpuProduct}"` } }];
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaimTemplate',
    metadata: { name, namespace: s.namespace, labels: { ...labels } },
    spec: { spec: { devices: { requests: [{ name: 'accelerators', exactly }] } } },
  };
}

function nodeSelector(s: DeploymentSpec): Record<string, string> | undefined {
  const sel: Record<string, string> = {};
  if (s.pins.node) sel['kubernetes.io/hostname'] = s.pins.node;
  const label = ACCELERATOR_SPECS[s.accelerator].productLabel;
  // A product pin is a node selector for an extended resource, a CEL selector of the claim for DRA.
  if (s.pins.gpuProduct && label && s.request.kind !== 'dra') sel[label] = s.pins.gpuProduct;
  return Object.keys(sel).length ? sel : undefined;
}

const probes = (port: number | string) => ({
  startupProbe: { httpGet: { path: '/v1/models', port }, initialDelaySeconds: 15, periodSeconds: 30, failureThreshold: 120 },
  livenessProbe: { httpGet: { path: '/health', port }, periodSeconds: 10 },
  readinessProbe: { httpGet: { path: '/v1/models', port }, periodSeconds: 5 },
});

interface RoleShape {
  role: 'decode' | 'prefill';
  tensorParallelSize: number;
  /** The OpenAI port the pod answers on (8000); vLLM listens behind a sidecar on `vllmPort` when they differ. */
  vllmPort: number;
  sidecar: string[] | null;
  kv: boolean;
  devices: number;
  /** Wide-EP: data-parallel ranks in this pod (their ports follow `SERVER_PORT`). */
  ranks: number;
}

/** The pod template of one role: labels, the model-server container (and the routing sidecar), volumes, the accelerator request. */
function podTemplate(s: DeploymentSpec, p: StackProfile, shape: RoleShape, podLabels: Record<string, string>, claim: string | null, lws: { size: number } | null): Record<string, unknown> {
  const ports: Array<Record<string, unknown>> =
    shape.sidecar || shape.vllmPort !== SERVER_PORT ? [{ name: 'vllm', containerPort: shape.vllmPort }] : [{ name: 'http', containerPort: shape.vllmPort }];
  if (shape.kv) ports.push({ name: 'nixl', containerPort: NIXL_PORT });
  const extraEnv: Array<Record<string, unknown>> = [];
  if (shape.kv) extraEnv.push({ name: 'VLLM_NIXL_SIDE_CHANNEL_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
  if (shape.kv && shape.role === 'prefill') extraEnv.push({ name: 'VLLM_HTTP_TIMEOUT_KEEP_ALIVE', value: '120' });
  let command = ['vllm', 'serve'];
  let args = vllmArgs(s, { port: shape.vllmPort, tensorParallelSize: shape.tensorParallelSize, kv: shape.kv });
  if (lws && s.wideEp) {
    // Data-parallel ranks across the group: the start rank comes from the LeaderWorkerSet's
    // injected worker index. The script is a constant; every value is a positional argument.
    const dp = lws.size * s.wideEp.dataParallelLocal;
    extraEnv.push({ name: 'DP_SIZE_LOCAL', value: String(s.wideEp.dataParallelLocal) });
    command = ['/bin/sh', '-c', 'exec vllm serve "$@" --data-parallel-address="$LWS_LEADER_ADDRESS" --data-parallel-start-rank="$((LWS_WORKER_INDEX * DP_SIZE_LOCAL))"', 'vllm'];
    args = [...args, `--data-parallel-size=${dp}`, `--data-parallel-size-local=${s.wideEp.dataParallelLocal}`, '--data-parallel-rpc-port=5555', '--enable-expert-parallel', '--data-parallel-multi-port-external-lb'];
  }
  const vllm: Record<string, unknown> = {
    name: 'vllm',
    image: modelServerImage(p, s.accelerator),
    imagePullPolicy: 'IfNotPresent',
    command,
    args,
    env: env(s, extraEnv),
    ports,
    ...probes(shape.vllmPort),
    resources: acceleratorResources(s, shape.devices, claim),
    volumeMounts: [
      { name: 'shm', mountPath: '/dev/shm' },
      { name: 'model-cache', mountPath: '/model-cache', ...(s.storage.type === 'model-cache' ? { readOnly: true } : {}) },
    ],
  };
  const spec: Record<string, unknown> = {
    enableServiceLinks: false,
    terminationGracePeriodSeconds: 30,
    containers: [vllm],
    volumes: [
      { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '20Gi' } },
      s.storage.type === 'model-cache' ? { name: 'model-cache', persistentVolumeClaim: { claimName: `${s.base}-model-cache`, readOnly: true } } : { name: 'model-cache', emptyDir: {} },
    ],
  };
  if (shape.sidecar) {
    const sidecarPorts = Array.from({ length: shape.ranks }, (_, i) => ({ name: `rank${i}`, containerPort: SERVER_PORT + i }));
    spec.initContainers = [
      {
        name: 'routing-proxy',
        image: sidecarImage(p),
        imagePullPolicy: 'IfNotPresent',
        restartPolicy: 'Always',
        args: shape.sidecar,
        ports: shape.ranks > 1 ? sidecarPorts : [{ name: 'http', containerPort: SERVER_PORT }],
        securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true },
      },
    ];
  }
  const tolerations = toleratedTaintKeys(s.accelerator).map((key) => ({ key, operator: 'Exists', effect: 'NoSchedule' }));
  if (tolerations.length) spec.tolerations = tolerations;
  const sel = nodeSelector(s);
  if (sel) spec.nodeSelector = sel;
  if (claim && s.request.kind === 'dra' && shape.devices > 0) spec.resourceClaims = [{ name: 'accelerators', resourceClaimTemplateName: claim }];
  return { metadata: { labels: podLabels }, spec };
}

/** The EPP's plugin configuration for P/D (llm-d's `pd-disaggregation.values.yaml`, the same plugins). */
const PD_PLUGINS = {
  apiVersion: 'inference.networking.x-k8s.io/v1alpha1',
  kind: 'EndpointPickerConfig',
  plugins: [
    { type: 'disagg-headers-handler' },
    { type: 'always-disagg-pd-decider' },
    { type: 'disagg-profile-handler', parameters: { deciderPluginName: 'always-disagg-pd-decider' } },
    { type: 'prefill-filter' },
    { type: 'decode-filter' },
    { type: 'prefix-cache-scorer' },
    { type: 'queue-scorer' },
    { type: 'kv-cache-utilization-scorer' },
    { type: 'max-score-picker' },
  ],
  schedulingProfiles: [
    { name: 'prefill', plugins: [{ pluginRef: 'prefill-filter' }, { pluginRef: 'prefix-cache-scorer', weight: 2 }, { pluginRef: 'queue-scorer', weight: 1 }, { pluginRef: 'max-score-picker' }] },
    {
      name: 'decode',
      plugins: [{ pluginRef: 'decode-filter' }, { pluginRef: 'prefix-cache-scorer', weight: 2 }, { pluginRef: 'kv-cache-utilization-scorer', weight: 1 }, { pluginRef: 'queue-scorer', weight: 1 }, { pluginRef: 'max-score-picker' }],
    },
  ],
};

/** The Inference Extension chart's values: the pool over this deployment's servers, llm-d's endpoint picker. */
export function poolValues(s: DeploymentSpec, p: StackProfile, publish: PublishTarget | null, targetPorts: number[], selector: Record<string, string>): Record<string, unknown> {
  const inferenceExtension: Record<string, unknown> = {
    image: { ...eppImage(p), pullPolicy: 'IfNotPresent' },
    flags: { v: 1, 'kv-cache-usage-percentage-metric': 'vllm:kv_cache_usage_perc' },
  };
  // Istio and agentgateway talk plaintext h2c to the endpoint picker (Lens heals their EPPs the same way).
  if (publish && (publish.provider === 'istio' || publish.provider === 'agentgateway')) (inferenceExtension.flags as Record<string, unknown>)['secure-serving'] = false;
  if (s.path === 'pd-disaggregation' || s.path === 'wide-ep') {
    inferenceExtension.pluginsConfigFile = 'ironlens-pd.yaml';
    inferenceExtension.pluginsCustomConfig = { 'ironlens-pd.yaml': stringify(PD_PLUGINS) };
  }
  return {
    inferenceExtension,
    inferencePool: { targetPorts: targetPorts.map((number) => ({ number })), modelServerType: 'vllm', modelServerProtocol: 'http', modelServers: { matchLabels: selector } },
    provider: { name: publish?.provider === 'istio' ? 'istio' : publish?.provider === 'gke' ? 'gke' : 'none' },
  };
}

/** Renders everything for one deployment (`publish` null: not published, e.g. the baseline path). */
export function renderDeployment(s: DeploymentSpec, p: StackProfile, publish: PublishTarget | null): RenderedDeployment {
  checkSpec(s);
  if (publish && (!isDnsLabel(publish.namespace) || !isDnsLabel(publish.gatewayName))) throw new Error('gateway names out of grammar');
  const labels = ownLabels(s);
  const meta = (name: string, extra: Record<string, string> = {}) => ({ name, namespace: s.namespace, labels: { ...labels, ...extra } });
  const variant = s.accelerator === 'nvidia' ? 'gpu' : s.accelerator === 'intel' ? 'xpu' : 'cpu';
  const vendor = s.accelerator === 'nvidia' ? 'nvidia' : 'intel';
  const guide = s.path === 'wide-ep' ? 'wide-ep-lws' : s.path;
  const common = {
    ...labels,
    [INSTANCE_LABEL]: s.base,
    [GUIDE_LABEL]: guide,
    'llm-d.ai/model': modelLabel(s.model),
    'llm-d.ai/accelerator-variant': variant,
    'llm-d.ai/accelerator-vendor': vendor,
    'llm-d.ai/inference-serving': 'true',
  };
  const selectorOf = (role: string) => ({ [DEPLOYMENT_LABEL]: s.id, [ROLE_LABEL]: role });
  const objects: KubeObjectRef[] = [];
  const workloads: Workload[] = [];
  if (s.storage.type === 'model-cache') {
    objects.push({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: meta(`${s.base}-model-cache`),
      spec: { accessModes: ['ReadOnlyMany'], storageClassName: '', volumeName: s.storage.volume, resources: { requests: { storage: '1Gi' } } },
    });
  }
  const published = s.path !== 'baseline' && publish !== null;
  // `--model-server-port` (the sidecar's `--vllm-port` is deprecated since the router's v0.10.0).
  const sidecarArgs = (ranks: number) => [`--port=${SERVER_PORT}`, `--model-server-port=${VLLM_BEHIND_SIDECAR_PORT}`, '--kv-connector=nixlv2', '--secure-proxy=false', ...(ranks > 1 ? [`--data-parallel-size=${ranks}`] : [])];
  const roles: Array<{ shape: RoleShape; replicas: number }> = [];
  if (s.path === 'wide-ep' && s.wideEp) {
    const ranks = s.wideEp.dataParallelLocal;
    roles.push({
      replicas: s.replicas,
      shape: { role: 'decode', tensorParallelSize: s.tensorParallelSize, vllmPort: VLLM_BEHIND_SIDECAR_PORT, sidecar: sidecarArgs(ranks), kv: true, devices: s.accelerator === 'cpu' ? 0 : s.tensorParallelSize * ranks, ranks },
    });
    if (s.prefill) {
      roles.push({
        replicas: s.prefill.replicas,
        shape: { role: 'prefill', tensorParallelSize: s.prefill.tensorParallelSize, vllmPort: SERVER_PORT, sidecar: null, kv: true, devices: s.prefill.tensorParallelSize * ranks, ranks },
      });
    }
  } else {
    const pd = s.path === 'pd-disaggregation';
    roles.push({
      replicas: s.replicas,
      shape: {
        role: 'decode',
        tensorParallelSize: s.tensorParallelSize,
        vllmPort: pd ? VLLM_BEHIND_SIDECAR_PORT : SERVER_PORT,
        sidecar: pd ? sidecarArgs(1) : null,
        kv: pd,
        devices: s.accelerator === 'cpu' ? 0 : s.tensorParallelSize,
        ranks: 1,
      },
    });
    if (pd && s.prefill) {
      roles.push({
        replicas: s.prefill.replicas,
        shape: { role: 'prefill', tensorParallelSize: s.prefill.tensorParallelSize, vllmPort: SERVER_PORT, sidecar: null, kv: true, devices: s.accelerator === 'cpu' ? 0 : s.prefill.tensorParallelSize, ranks: 1 },
      });
    }
  }
  for (const { shape, replicas } of roles) {
    const name = `${s.base}-${shape.role}`;
    const podLabels = { ...common, [ROLE_LABEL]: shape.role };
    const claimName = `${name}-accelerators`;
    const claim = claimTemplate(s, claimName, shape.devices, labels);
    if (claim) objects.push(claim);
    const lws = s.path === 'wide-ep' && s.wideEp ? { size: s.wideEp.groupSize } : null;
    const template = podTemplate(s, p, shape, podLabels, claim ? claimName : null, lws);
    if (lws) {
      objects.push({
        apiVersion: LWS_API,
        kind: 'LeaderWorkerSet',
        metadata: meta(name, { [ROLE_LABEL]: shape.role }),
        spec: {
          replicas,
          startupPolicy: 'LeaderCreated',
          leaderWorkerTemplate: { size: lws.size, restartPolicy: 'RecreateGroupOnPodRestart', workerTemplate: template },
        },
      });
      workloads.push({ apiVersion: LWS_API, kind: 'LeaderWorkerSet', name, role: shape.role, pods: replicas * lws.size });
    } else {
      objects.push({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: meta(name, { [ROLE_LABEL]: shape.role }),
        spec: { replicas, progressDeadlineSeconds: 1800, selector: { matchLabels: selectorOf(shape.role) }, template },
      });
      workloads.push({ apiVersion: 'apps/v1', kind: 'Deployment', name, role: shape.role, pods: replicas });
    }
  }
  // A LeaderWorkerSet's controller makes a headless Service named after it (`<base>-decode`): the
  // DNS name of its leader (`LWS_LEADER_ADDRESS`) lives there, so wide-EP's own Service is another.
  const service = { name: s.path === 'wide-ep' ? `${s.base}-decode-http` : `${s.base}-decode`, port: SERVER_PORT };
  objects.push({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(service.name),
    spec: { selector: selectorOf('decode'), ports: [{ name: 'http', port: SERVER_PORT, targetPort: SERVER_PORT, protocol: 'TCP' }] },
  });

  const ranks = s.path === 'wide-ep' && s.wideEp ? s.wideEp.dataParallelLocal : 1;
  const targetPorts = Array.from({ length: ranks }, (_, i) => SERVER_PORT + i);
  const poolSelector = { [DEPLOYMENT_LABEL]: s.id, 'llm-d.ai/inference-serving': 'true' };
  const release: HelmRelease | null =
    s.path === 'baseline'
      ? null
      : { release: s.base, chart: INFERENCEPOOL_CHART, version: p.k8s_gateway_api_inference_extension, namespace: s.namespace, values: poolValues(s, p, publish, targetPorts, poolSelector) };
  const pool = release ? { name: s.base, namespace: s.namespace } : null;

  const publication: KubeObjectRef[] = [];
  let route: RenderedDeployment['route'] = null;
  if (published && pool && publish) {
    const routeName = `ilm-${s.id}`;
    route = { name: routeName, namespace: publish.namespace };
    publication.push({
      apiVersion: GW_API,
      kind: 'HTTPRoute',
      metadata: { name: routeName, namespace: publish.namespace, labels: { ...labels } },
      spec: {
        parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: publish.gatewayName, namespace: publish.namespace }],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/' }, headers: [{ type: 'Exact', name: BASE_MODEL_HEADER, value: s.model }] }],
            backendRefs: [{ group: POOL_GROUP, kind: 'InferencePool', name: pool.name, namespace: pool.namespace }],
            ...(publish.provider === 'gke' ? {} : { timeouts: { request: '300s' } }),
          },
        ],
      },
    });
    publication.push({
      apiVersion: GW_API,
      kind: 'ReferenceGrant',
      metadata: meta(`ilm-${s.id}-pool-grant`),
      spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: publish.namespace }], to: [{ group: POOL_GROUP, kind: 'InferencePool', name: pool.name }] },
    });
    publication.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `ilm-${s.id}-model-map`, namespace: publish.namespace, labels: { ...labels, [IPP_MANAGED_LABEL]: 'true' } },
      data: { baseModel: s.model, adapters: '' },
    });
  }
  return {
    namespace: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: s.namespace, labels: { ...labels } } },
    objects,
    release,
    publication,
    workloads,
    service,
    pool,
    route,
  };
}
