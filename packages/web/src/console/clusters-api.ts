/**
 * The cluster manager (seed 000, issue 9) and the Kubespray bootstrap (issue 10) as the console
 * calls them, at their seed paths on the console listener. Every shape is imported from the
 * server package as a type only (`@ironlens/clusters`), so the bundle holds no server code and
 * the client cannot drift from the API.
 */
import type {
  BootstrapNodeInput,
  BootstrapPhase,
  BootstrapProxy,
  BootstrapStatus,
  BootstrapSummary,
  BundleId,
  BundleResult,
  ClusterRecord,
  ClusterSettingsUpdateBody,
  CordonResult,
  HfTokenSecretRef,
  HostKeyItem,
  HostKeyPin,
  KubernetesVersionCheck,
  OverviewResponse,
  PreflightResult,
  PrepullStatus,
  ProxyConfig,
  SoftwareDownloadStatus,
  StackProfile,
  WorkerNodeInput,
} from '@ironlens/clusters';
import { FAILURE_PHASES, PHASES } from '@ironlens/clusters/constants';
import { type Http, query } from '../shared/http';

export type { BootstrapNodeInput, BootstrapPhase, BootstrapStatus, ClusterRecord, CordonResult, HfTokenSecretRef, HostKeyItem, HostKeyPin, PrepullStatus, ProxyConfig, WorkerNodeInput };
export type ClusterPatch = ClusterSettingsUpdateBody;
export type BootstrapRole = BootstrapNodeInput['roles'][number];
export type BootstrapListItem = BootstrapSummary;
export type KubernetesVersion = KubernetesVersionCheck;
export type SoftwareDownloads = SoftwareDownloadStatus;
export type Overview = OverviewResponse;
export type PreflightResponse = PreflightResult;
export type CrdApplyResult = Record<BundleId, BundleResult>;
export type CrdStatus = Record<BundleId, 'ready' | 'missing'>;

/** `POST /api/cluster/clusters`: the record and the Lens session it opened. */
export interface CreateClusterResponse {
  cluster: ClusterRecord;
  sessionId: string | null;
}

/** `GET /api/cluster/clusters/{id}/gateway-port-check` (the cluster service answers this shape; it has no named type). */
/** GET …/gateway/status (issue 22), the fields the console shows. */
export interface GatewayCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
export interface GatewayStatus {
  clusterId: string;
  gatewayProvider: string | null;
  gatewayState: string;
  gatewayNamespace: string;
  gatewayName: string;
  gatewayReady: boolean | null;
  gatewayAddress: string | null;
  gatewayPublicUrl: string | null;
  gatewayPort: number | null;
  ippState: string;
  ippReady: boolean | null;
  gatewayClassName: string | null;
  gatewayClassConditions: GatewayCondition[];
  gatewayConditions: GatewayCondition[];
  authz: { state: string; path: string; endpoints: string[]; reason: string | null };
  controlPlane: { state: string; deployments: Array<{ namespace: string; name: string; available: boolean }> };
  lastOperation: { id: string; status: string; message: string; finishedAt: string | null } | null;
  error: string | null;
}
export interface GatewayKey {
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface GatewayPortCheck {
  available: boolean;
  owner: string | null;
  reason?: string;
}

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
    update: (id: string, patch: ClusterSettingsUpdateBody) => c<CreateClusterResponse>('PATCH', cl(id), patch),
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
    gatewayStatus: (id: string) => c<GatewayStatus>('GET', `${cl(id)}/gateway/status`),
    gatewayReconcile: (id: string) => c<{ job: { id: string } }>('POST', `${cl(id)}/gateway/reconcile`),
    gatewayKeys: (id: string) => c<{ items: GatewayKey[] }>('GET', `${cl(id)}/gateway/keys`),
    createGatewayKey: (id: string, name: string) => c<{ name: string; key: string }>('POST', `${cl(id)}/gateway/keys`, { name }),
    revokeGatewayKey: (id: string, name: string) => c<null>('DELETE', `${cl(id)}/gateway/keys/${enc(name)}`),
    overview: (id: string) => c<Overview>('GET', `/api/cluster/overview${query({ clusterId: id })}`),
    cordon: (id: string, names: string[]) => c<{ items: CordonResult[] }>('POST', `${cl(id)}/nodes/cordon`, { names }),
    uncordon: (id: string, names: string[]) => c<{ items: CordonResult[] }>('POST', `${cl(id)}/nodes/uncordon`, { names }),

    bootstraps: () => c<{ items: BootstrapListItem[] }>('GET', '/api/cluster/bootstrap'),
    hostKeys: (nodes: Array<{ host: string; port?: number } | { workerId: string }>) => c<{ items: HostKeyItem[] }>('POST', '/api/cluster/bootstrap/host-keys', { nodes }),
    preflight: (nodes: Array<BootstrapNodeInput | WorkerNodeInput>, hostKeys: HostKeyPin[]) => c<PreflightResponse>('POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys }),
    startBootstrap: (body: { nodes: Array<BootstrapNodeInput | WorkerNodeInput>; hostKeys: HostKeyPin[]; proxy?: BootstrapProxy; register?: { name: string; description?: string } }) =>
      c<{ bootstrapId: string }>('POST', '/api/cluster/bootstrap', body),
    bootstrap: (id: string) => c<BootstrapStatus>('GET', `/api/cluster/bootstrap/${enc(id)}`),
    cancelBootstrap: (id: string) => c<null>('POST', `/api/cluster/bootstrap/${enc(id)}/cancel`),
    sshPublicKey: () => c<{ publicKey: string }>('GET', '/api/cluster/bootstrap/ssh-public-key'),
  };
}

export type ClustersApi = ReturnType<typeof createClustersApi>;
