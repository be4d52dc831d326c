/**
 * The cluster manager (seed 000, issue 9) and the Kubespray bootstrap (issue 10) as the console
 * calls them, at their seed paths on the console listener. Every answer type is the `Static<>` of
 * the route's own response schema, imported as a type only from `@ironlens/clusters/api` (issue
 * 19): the bundle holds no server code, and the client cannot drift from what the API answers.
 */
import type {
  AcceleratorInventory,
  DeploymentExecution,
  DeploymentExecutionList,
  DeploymentPatchRequest,
  DeploymentRun,
  ExecutionEvents,
  ExecutionPods,
  PlacementAnswer,
  PodLogs,
  StandardVllmRunRequest,
  BootstrapNodeInput,
  BootstrapPhase,
  BootstrapStatus,
  BootstrapSummary,
  ClusterList,
  ClusterRecord,
  ClusterSettingsUpdateBody,
  ClusterWithSession,
  Condition,
  CordonResult,
  CordonResults,
  CrdApplyResult,
  CrdStatus,
  GatewayJobAnswer,
  GatewayKey,
  GatewayKeyCreated,
  GatewayKeyList,
  GatewayPortCheck,
  GatewayStatusView,
  HfTokenSecretCreateBody,
  HfTokenSecretRef,
  HfTokenSecretUpdateBody,
  HostKeyItem,
  HostKeyPin,
  HostKeysRequest,
  HostKeysResponse,
  KubernetesVersionCheck,
  LensHostsAnswer,
  OverviewResponse,
  PreflightResult,
  PrepullStatus,
  ProxyConfig,
  PublicKeyResponse,
  SoftwareDownloadStatus,
  StackProfile,
  StartRequest,
  StartResponse,
  WorkerNodeInput,
} from '@ironlens/clusters/api';
import { FAILURE_PHASES, PHASES } from '@ironlens/clusters/constants';
import { type Http, query } from '../shared/http';

export type {
  BootstrapNodeInput,
  BootstrapPhase,
  BootstrapStatus,
  ClusterRecord,
  CordonResult,
  CrdApplyResult,
  CrdStatus,
  GatewayKey,
  GatewayPortCheck,
  HfTokenSecretRef,
  HostKeyItem,
  HostKeyPin,
  PrepullStatus,
  ProxyConfig,
  WorkerNodeInput,
};
export type ClusterPatch = ClusterSettingsUpdateBody;
/** Model deployments (issue 28). */
export type { AcceleratorInventory, DeploymentExecution, ExecutionEvents, ExecutionPods, PlacementAnswer, PodLogs, StandardVllmRunRequest };
export type PlacementPreview = { fits: boolean; detail: string | null; placement: PlacementAnswer };
export type BootstrapRole = BootstrapNodeInput['roles'][number];
export type BootstrapListItem = BootstrapSummary;
export type KubernetesVersion = KubernetesVersionCheck;
export type SoftwareDownloads = SoftwareDownloadStatus;
export type Overview = OverviewResponse;
export type PreflightResponse = PreflightResult;
/** `POST /api/cluster/clusters` (and PATCH): the record and the Lens session it opened. */
export type CreateClusterResponse = ClusterWithSession;
/** GET …/gateway/status (issue 22). */
export type GatewayStatus = GatewayStatusView;
export type GatewayCondition = Condition;

/** The fingerprint of a host-key item, or null when the host could not be read. */
export function fingerprintOf(k: HostKeyItem): { algorithm: string; fingerprint: string } | null {
  return 'fingerprint' in k ? { algorithm: k.algorithm, fingerprint: k.fingerprint } : null;
}

/** The phases a job goes through on success, in order (the server's `PHASES` without the failures). */
export const BOOTSTRAP_PHASES: BootstrapPhase[] = PHASES.filter((p) => !(FAILURE_PHASES as readonly string[]).includes(p));

const enc = encodeURIComponent;

export function createClustersApi(http: Http) {
  const c = http.call.bind(http);
  const cl = (id: string) => `/api/cluster/clusters/${enc(id)}`;
  return {
    versions: () => c<StackProfile>('GET', '/api/v1/versions'),
    lensHosts: () => c<LensHostsAnswer>('GET', '/api/cluster/lens-hosts'),
    clusters: (includeDrafts = true) => c<ClusterList>('GET', `/api/cluster/clusters${query({ includeDrafts: includeDrafts ? 'true' : undefined })}`),
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
    update: (id: string, patch: ClusterSettingsUpdateBody) => c<CreateClusterResponse>('PATCH', cl(id), patch),
    remove: (id: string) => c<null>('DELETE', cl(id)),
    kubernetesVersion: (id: string) => c<KubernetesVersion>('GET', `${cl(id)}/kubernetes-version`),
    gatewayPortCheck: (id: string, port: number) => c<GatewayPortCheck>('GET', `${cl(id)}/gateway-port-check${query({ port })}`),
    createHfSecret: (id: string, body: HfTokenSecretCreateBody) => c<HfTokenSecretRef>('POST', `${cl(id)}/hf-token-secrets`, body),
    rotateHfSecret: (id: string, body: HfTokenSecretUpdateBody) => c<HfTokenSecretRef>('PUT', `${cl(id)}/hf-token-secret`, body),
    startDownloads: (id: string) => c<SoftwareDownloads>('POST', `${cl(id)}/software-downloads`, {}),
    downloads: (id: string) => c<SoftwareDownloads>('GET', `${cl(id)}/software-downloads`),
    startPrepull: (id: string, accelerators: string[]) => c<PrepullStatus>('POST', `${cl(id)}/images/prepull`, { accelerators }),
    prepull: (id: string) => c<PrepullStatus>('GET', `${cl(id)}/images/prepull`),
    applyCrds: (id: string) => c<CrdApplyResult>('POST', `${cl(id)}/crds`),
    crds: (id: string) => c<CrdStatus>('GET', `${cl(id)}/crds`),
    gatewayStatus: (id: string) => c<GatewayStatus>('GET', `${cl(id)}/gateway/status`),
    gatewayReconcile: (id: string) => c<GatewayJobAnswer>('POST', `${cl(id)}/gateway/reconcile`),
    gatewayKeys: (id: string) => c<GatewayKeyList>('GET', `${cl(id)}/gateway/keys`),
    createGatewayKey: (id: string, name: string) => c<GatewayKeyCreated>('POST', `${cl(id)}/gateway/keys`, { name }),
    revokeGatewayKey: (id: string, name: string) => c<null>('DELETE', `${cl(id)}/gateway/keys/${enc(name)}`),
    overview: (id: string) => c<Overview>('GET', `/api/cluster/overview${query({ clusterId: id })}`),
    cordon: (id: string, names: string[]) => c<CordonResults>('POST', `${cl(id)}/nodes/cordon`, { names }),
    uncordon: (id: string, names: string[]) => c<CordonResults>('POST', `${cl(id)}/nodes/uncordon`, { names }),

    accelerators: (id: string) => c<AcceleratorInventory>('GET', `${cl(id)}/accelerators`),
    deploy: (body: StandardVllmRunRequest) => c<DeploymentRun>('POST', '/api/v1/deployments/standard-vllm-runs', body),
    placement: (body: StandardVllmRunRequest) => c<PlacementPreview>('POST', '/api/v1/deployments/placement', body),
    deployments: (clusterId?: string) => c<DeploymentExecutionList>('GET', `/api/v1/deployments/executions${query({ cluster_id: clusterId })}`),
    deployment: (execId: string) => c<DeploymentExecution>('GET', `/api/v1/deployments/executions/${enc(execId)}`),
    patchDeployment: (execId: string, body: DeploymentPatchRequest) => c<DeploymentExecution>('PATCH', `/api/v1/deployments/executions/${enc(execId)}`, body),
    deleteDeployment: (execId: string) => c<null>('DELETE', `/api/v1/deployments/executions/${enc(execId)}`),
    cancelDeployment: (execId: string) => c<{ id: string; status: string }>('POST', `/api/v1/deployments/executions/${enc(execId)}/cancel`),
    deploymentPods: (execId: string) => c<ExecutionPods>('GET', `/api/v1/deployments/executions/${enc(execId)}/pods`),
    deploymentEvents: (execId: string) => c<ExecutionEvents>('GET', `/api/v1/deployments/executions/${enc(execId)}/events`),
    podLogs: (execId: string, pod: string, o: { container?: string; previous?: boolean; tail?: number } = {}) =>
      c<PodLogs>('GET', `/api/v1/deployments/executions/${enc(execId)}/pods/${enc(pod)}/logs${query({ container: o.container, previous: o.previous ? 'true' : undefined, tail: o.tail })}`),

    bootstraps: () => c<{ items: BootstrapListItem[] }>('GET', '/api/cluster/bootstrap'),
    hostKeys: (nodes: HostKeysRequest['nodes']) => c<HostKeysResponse>('POST', '/api/cluster/bootstrap/host-keys', { nodes }),
    preflight: (nodes: Array<BootstrapNodeInput | WorkerNodeInput>, hostKeys: HostKeyPin[]) => c<PreflightResponse>('POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys }),
    startBootstrap: (body: StartRequest) =>
      c<StartResponse>('POST', '/api/cluster/bootstrap', body),
    bootstrap: (id: string) => c<BootstrapStatus>('GET', `/api/cluster/bootstrap/${enc(id)}`),
    cancelBootstrap: (id: string) => c<null>('POST', `/api/cluster/bootstrap/${enc(id)}/cancel`),
    sshPublicKey: () => c<PublicKeyResponse>('GET', '/api/cluster/bootstrap/ssh-public-key'),
  };
}

export type ClustersApi = ReturnType<typeof createClustersApi>;
