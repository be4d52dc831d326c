/**
 * The cluster manager (seed 000, issue 9) and the Kubespray bootstrap (issue 10) as the console
 * calls them, at their seed paths on the console listener.
 *
 * The types below are written from seed 000 and the issues' text because `@ironlens/clusters`
 * does not export its schemas yet; they live in this one module so that they can be replaced
 * by `import type { … } from '@ironlens/clusters'` when it does, with no change to the pages.
 */
import { type Http, query } from './http';

/** Cluster proxy (seed 000's ProxyConfigDTO): `none` direct, `system` ironlens' own proxy environment, `custom` these values. */
export interface ProxyConfig {
  mode: 'none' | 'system' | 'custom';
  httpProxy?: string | null;
  httpsProxy?: string | null;
  noProxy?: string | null;
}

export interface HfTokenSecretRef {
  namespace: string;
  name: string;
}

export interface ClusterRecord {
  id: string;
  name: string;
  description?: string | null;
  createdAt: string;
  ready: boolean;
  proxy?: ProxyConfig | null;
  llmDRef?: string | null;
  llmDBenchmarkRef?: string | null;
  llmDRepoPath?: string | null;
  llmDBenchmarkRepoPath?: string | null;
  hfTokenSecret?: HfTokenSecretRef | null;
  draft: boolean;
  gatewayProvider?: string | null;
  gatewayNamespace?: string | null;
  gatewayName?: string | null;
  gatewayPublicUrl?: string | null;
  gatewayPort?: number | null;
  gatewayAuthzHost?: string | null;
  inotifyMaxUserInstances?: number | null;
  routerVersion?: string | null;
  gieVersion?: string | null;
  ippVersion?: string | null;
}

export interface CreateClusterResponse {
  cluster: ClusterRecord;
  sessionId: string | null;
}

export interface StackVersions {
  llm_d: string;
  min_k8s_version: string;
  llm_d_router: string;
  llm_d_lensmark: string;
  llm_d_inference_payload_processor: string;
  k8s_gateway_api: string;
  k8s_gateway_api_inference_extension: string;
  gateway_providers: Record<string, string>;
}

export interface KubernetesVersion {
  reachable: boolean;
  version?: string;
  min_k8s_version: string;
  supported?: boolean;
  error?: string;
}

export interface DownloadState {
  ref: string;
  state: 'idle' | 'downloading' | 'ready' | 'failed';
  path: string | null;
  error: string | null;
}

export interface SoftwareDownloads {
  llmD: DownloadState;
  llmDBenchmark: DownloadState;
}

export interface PrepullStatus {
  state: string;
  desired: number;
  ready: number;
  images: Array<{ name: string; ready: number; desired: number; state: string }>;
  nodes: Array<{ node: string; phase: string; ready: boolean; restarts: number }>;
}

export interface CrdApplyResult {
  gateway_api: { ok: boolean; message: string };
  gateway_api_inference_extension: { ok: boolean; message: string };
}

export interface CrdStatus {
  gateway_api: 'ready' | 'missing' | string;
  gateway_api_inference_extension: 'ready' | 'missing' | string;
}

export interface GatewayPortCheck {
  available: boolean;
  owner: string | null;
  reason?: string;
}

export interface OverviewNode {
  name: string;
  version: string;
  osImage: string;
  ready: boolean;
  schedulingDisabled: boolean;
  cpu: number;
  gpu: boolean;
  gpuCount: number;
  gpuByProfile: Record<string, number>;
  vramBytes: number | null;
  role: string;
  cachedImages: string[];
}

export interface Hardware {
  nodes: number;
  cpuCores: number;
  memoryBytes: number | null;
  memoryUsagePercent: number | null;
  memoryAvailableBytes: number | null;
  diskBytes: number | null;
  diskUsedBytes: number | null;
  diskAvailableBytes: number | null;
  diskUsagePercent: number | null;
  gpuNodes: number;
  gpuCount: number;
  totalGpuCount: number;
  accelerators: Array<{ id: string; gpuCount: number }>;
  vramBytes: number | null;
  allocatedGpuCount: number | null;
  availableGpuCount: number | null;
  usableGpuCount: number | null;
}

export interface Overview {
  cluster: ClusterRecord;
  fetchedAt: string;
  kubernetes: {
    components: Record<string, { installed: boolean; ready: number; desired: number; status: string }>;
    nodes: OverviewNode[];
    namespaces: Array<{ name: string; deployments: Array<{ name: string; desired: number; ready: number; available: number }>; ready: number }>;
    hardware: Hardware;
  };
}

export interface CordonResult {
  items: Array<{ name: string; ok: boolean; schedulingDisabled: boolean | null; error: string | null }>;
}

// ---- bootstrap (issue 10) ----

export type BootstrapRole = 'control-plane' | 'worker';

export interface BootstrapNodeInput {
  host: string;
  port: number;
  roles: BootstrapRole[];
  username: string;
  privateKey?: string;
  password?: string;
}

export interface HostKeyItem {
  host: string;
  port: number;
  algorithm?: string;
  fingerprint?: string;
  error?: string;
}

export interface HostKeyPin {
  host: string;
  port: number;
  fingerprint: string;
}

export interface PreflightCheck {
  id: string;
  label: string;
  status: 'passed' | 'failed' | 'skipped' | string;
  detail?: string;
}

export interface PreflightResponse {
  items: Array<{ host: string; roles: BootstrapRole[]; state: string; error?: string; checks: PreflightCheck[] }>;
  allPassed: boolean;
}

export type BootstrapPhase = 'queued' | 'preflight' | 'provisioning' | 'running' | 'kubeconfig_ready' | 'succeeded' | 'failed' | 'cancelled';

export interface BootstrapStatus {
  id: string;
  phase: BootstrapPhase;
  logTail: string;
  error: string | null;
  /** Returned once, on the first read that sees `succeeded`; null with `register`. */
  kubeconfig: string | null;
  /** With `register`: the cluster ironlens registered. */
  clusterId: string | null;
}

export interface BootstrapListItem {
  id: string;
  phase: BootstrapPhase;
  error: string | null;
  nodes: Array<{ host: string; port: number; roles: string[]; username: string }>;
  register: { name: string; description?: string } | null;
  clusterId: string | null;
  kubeconfigDelivered: boolean;
  createdAt: string;
  finishedAt: string | null;
}

export const BOOTSTRAP_PHASES: BootstrapPhase[] = ['queued', 'preflight', 'provisioning', 'running', 'kubeconfig_ready', 'succeeded'];

const enc = encodeURIComponent;

export function createClustersApi(http: Http) {
  const c = http.call.bind(http);
  const cl = (id: string) => `/api/cluster/clusters/${enc(id)}`;
  return {
    versions: () => c<StackVersions>('GET', '/api/v1/versions'),
    lensHosts: () => c<{ items: string[] }>('GET', '/api/cluster/lens-hosts'),
    clusters: (includeDrafts = true) => c<{ items: ClusterRecord[] }>('GET', `/api/cluster/clusters${query({ includeDrafts: includeDrafts ? 'true' : undefined })}`),
    /** multipart, as the seed says: name, description, file, proxy (JSON string), draft. */
    async register(form: { name: string; description?: string; file: File | Blob; proxy?: ProxyConfig; draft: boolean; [k: string]: unknown }): Promise<CreateClusterResponse> {
      const fd = new FormData();
      fd.set('name', form.name);
      if (form.description) fd.set('description', form.description);
      fd.set('file', form.file, form.file instanceof File ? form.file.name : 'kubeconfig.yaml');
      if (form.proxy) fd.set('proxy', JSON.stringify(form.proxy));
      fd.set('draft', String(form.draft));
      return http.form<CreateClusterResponse>('POST', '/api/cluster/clusters', fd);
    },
    update: (id: string, patch: Partial<Omit<ClusterRecord, 'id' | 'createdAt' | 'ready'>>) => c<CreateClusterResponse>('PATCH', cl(id), patch),
    remove: (id: string) => c<null>('DELETE', cl(id)),
    kubernetesVersion: (id: string) => c<KubernetesVersion>('GET', `${cl(id)}/kubernetes-version`),
    gatewayPortCheck: (id: string, port: number) => c<GatewayPortCheck>('GET', `${cl(id)}/gateway-port-check${query({ port })}`),
    createHfSecret: (id: string, body: { namespace: string; name: string; token: string }) => c<HfTokenSecretRef>('POST', `${cl(id)}/hf-token-secrets`, body),
    rotateHfSecret: (id: string, body: { namespace?: string; name?: string; token: string }) => c<HfTokenSecretRef>('PUT', `${cl(id)}/hf-token-secret`, body),
    startDownloads: (id: string) => c<SoftwareDownloads>('POST', `${cl(id)}/software-downloads`, {}),
    downloads: (id: string) => c<SoftwareDownloads>('GET', `${cl(id)}/software-downloads`),
    startPrepull: (id: string, accelerators: string[]) => c<PrepullStatus>('POST', `${cl(id)}/images/prepull`, { accelerators }),
    prepull: (id: string) => c<PrepullStatus>('GET', `${cl(id)}/images/prepull`),
    applyCrds: (id: string) => c<CrdApplyResult>('POST', `${cl(id)}/crds`),
    crds: (id: string) => c<CrdStatus>('GET', `${cl(id)}/crds`),
    overview: (id: string) => c<Overview>('GET', `/api/cluster/overview${query({ clusterId: id })}`),
    cordon: (id: string, names: string[]) => c<CordonResult>('POST', `${cl(id)}/nodes/cordon`, { names }),
    uncordon: (id: string, names: string[]) => c<CordonResult>('POST', `${cl(id)}/nodes/uncordon`, { names }),

    bootstraps: () => c<{ items: BootstrapListItem[] }>('GET', '/api/cluster/bootstrap'),
    hostKeys: (nodes: Array<{ host: string; port: number }>) => c<{ items: HostKeyItem[] }>('POST', '/api/cluster/bootstrap/host-keys', { nodes }),
    preflight: (nodes: BootstrapNodeInput[], hostKeys: HostKeyPin[]) => c<PreflightResponse>('POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys }),
    startBootstrap: (body: { nodes: BootstrapNodeInput[]; hostKeys: HostKeyPin[]; proxy?: { mode: 'auto' | 'none' | 'custom'; httpProxy?: string; httpsProxy?: string; noProxy?: string }; register?: { name: string; description?: string } }) =>
      c<{ bootstrapId: string }>('POST', '/api/cluster/bootstrap', body),
    bootstrap: (id: string) => c<BootstrapStatus>('GET', `/api/cluster/bootstrap/${enc(id)}`),
    cancelBootstrap: (id: string) => c<null>('POST', `/api/cluster/bootstrap/${enc(id)}/cancel`),
    sshPublicKey: () => c<{ publicKey: string }>('GET', '/api/cluster/bootstrap/ssh-public-key'),
  };
}

export type ClustersApi = ReturnType<typeof createClustersApi>;
