/**
 * The provisioning API (seed 004) as the console calls it, through the console listener's
 * `/api/metal` prefix. Every shape is a `Static<>` of the API's own schema (`@ironlens/metal/api`),
 * imported as a type only, so the bundle holds no server code and the client cannot drift from the
 * answers the server's serializer lets through.
 */
import type {
  AgentInput,
  AgentLunTarget,
  AgentProbe,
  AgentView,
  BatchBindRequest,
  BatchBindResult,
  BatchPowerResult,
  BatchPreview,
  BmcRequest,
  BmcView,
  CreateWorkerInput,
  Device,
  DeviceDeclaration,
  DiskBatchRequest,
  DiskBatchResult,
  DiskRequest,
  LastPower,
  MastersListing,
  OperationsPage,
  Os,
  PowerAction,
  PowerAnswer,
  PowerStateView,
  ReconcileResult,
  RolloutCreateRequest,
  RolloutList,
  RolloutView,
  RolloutWorkerView,
  FleetDrift,
  WorkerDeleted,
  WorkerStatus,
  WorkerView,
} from '@ironlens/metal/api';
import { MENU_ITEMS, OS_VALUES } from '@ironlens/metal/constants';
import { type Http, query } from '../shared/http';

export type {
  AgentLunTarget,
  AgentProbe,
  AgentView,
  BatchBindResult,
  BatchPowerResult,
  BatchPreview,
  BmcRequest,
  BmcView,
  Device,
  DiskBatchResult,
  LastPower,
  MastersListing,
  OperationsPage,
  Os,
  PowerAction,
  PowerAnswer,
  PowerStateView,
  ReconcileResult,
  RolloutView,
  RolloutWorkerView,
  FleetDrift,
  WorkerStatus,
  WorkerView,
};

/** The operating systems a disk can hold (seed §7), the server's own list with Ubuntu first (the form's default). */
export const OS_CHOICES: readonly Os[] = ['ubuntu', ...OS_VALUES.filter((o) => o !== 'ubuntu')];

/** Boot menu items `menu_default` may name: the server's own list. */
export { MENU_ITEMS };

const enc = encodeURIComponent;

export function createMetalApi(http: Http) {
  const c = http.call.bind(http);
  return {
    health: () => c<{ status: string }>('GET', '/healthz'),
    autoRegister: () => c<{ enabled: boolean }>('GET', '/settings/auto-register'),
    setAutoRegister: (enabled: boolean) => c<{ enabled: boolean }>('PUT', '/settings/auto-register', { enabled }),

    devices: (state: 'all' | 'pooled' | 'bound' | 'revoked' = 'all') => c<Device[]>('GET', `/devices${query({ state })}`),
    device: (mac: string) => c<Device>('GET', `/devices/${enc(mac)}`),
    registerDevice: (d: DeviceDeclaration) => c<Device>('POST', '/devices', d),
    revokeDevice: (mac: string) => c<Device>('DELETE', `/devices/${enc(mac)}`),
    bind: (mac: string, workerId: string, force: boolean) => c<Device>('POST', `/devices/${enc(mac)}/bind${query({ worker_id: workerId, force: force ? 'true' : undefined })}`),
    unbind: (mac: string) => c<Device>('DELETE', `/devices/${enc(mac)}/bind`),
    previewBatch: (req: BatchBindRequest) => c<BatchPreview>('POST', '/devices/bind/batch/preview', req),
    bindBatch: (req: BatchBindRequest) => c<BatchBindResult>('POST', '/devices/bind/batch', req),

    workers: () => c<WorkerView[]>('GET', '/workers'),
    worker: (id: string) => c<WorkerView>('GET', `/workers/${enc(id)}`),
    workerStatus: (id: string) => c<WorkerStatus>('GET', `/workers/${enc(id)}/status`),
    createWorker: (w: CreateWorkerInput) => c<WorkerView>('POST', '/workers', w),
    setWorkerAddress: (id: string, fixedAddress: string | null) => c<WorkerView>('PUT', `/workers/${enc(id)}/address`, { fixed_address: fixedAddress }),
    setWorkerMac: (id: string, mac: string) => c<WorkerView & { changed: boolean }>('PUT', `/workers/${enc(id)}/mac`, { mac }),
    setDefaultOs: (id: string, body: { os?: string | null; menu_default?: string | null; menu_timeout?: number | null }) => c<WorkerView>('PUT', `/workers/${enc(id)}/default-os`, body),
    deleteWorker: (id: string, deleteDisk: boolean) => c<WorkerDeleted>('DELETE', `/workers/${enc(id)}${query({ delete_disk: deleteDisk ? 'true' : undefined })}`),
    createDisk: (id: string, req: DiskRequest) => c<WorkerView>('POST', `/workers/${enc(id)}/luns/disk`, req),
    deleteDisk: (id: string, os: string, deleteFile: boolean) => c<WorkerView>('DELETE', `/workers/${enc(id)}/luns/disk/${enc(os)}${query({ delete_file: deleteFile ? 'true' : undefined })}`),
    createDisksBatch: (req: DiskBatchRequest) => c<DiskBatchResult>('POST', '/workers/luns/disk/batch', req),

    agents: (live = true) => c<AgentView[]>('GET', `/agents${query({ live: live ? 'true' : 'false' })}`),
    probeAgent: (body: { base_url: string; token?: string | null; agent_id?: string | null }) => c<AgentProbe>('POST', '/agents/probe', body),
    createAgent: (a: AgentInput & { id: string }) => c<AgentView>('POST', '/agents', a),
    updateAgent: (id: string, a: AgentInput) => c<AgentView>('PUT', `/agents/${enc(id)}`, a),
    luns: (agentId: string) => c<AgentLunTarget[]>('GET', `/agents/${enc(agentId)}/luns`),
    deleteLun: (agentId: string, iqn: string, deleteFile: boolean) =>
      c<unknown>('DELETE', `/agents/${enc(agentId)}/luns${query({ iqn, delete_file: deleteFile ? 'true' : undefined })}`),
    createCdLun: (agentId: string, iso: string, iqn?: string) => c<unknown>('POST', `/agents/${enc(agentId)}/luns/cd`, iqn ? { iso, iqn } : { iso }),
    scanLuns: (agentId: string) => c<unknown>('POST', `/agents/${enc(agentId)}/luns/scan`),
    masters: () => c<MastersListing>('GET', '/masters'),

    operations: (q: { since?: number; limit?: number; mac?: string }) => c<OperationsPage>('GET', `/operations${query(q)}`),

    // power through the BMC (issue 21)
    bmc: (mac: string) => c<BmcView>('GET', `/devices/${enc(mac)}/bmc`),
    setBmc: (mac: string, b: BmcRequest) => c<BmcView>('PUT', `/devices/${enc(mac)}/bmc`, b),
    deleteBmc: (mac: string) => c<{ mac: string; deleted: boolean }>('DELETE', `/devices/${enc(mac)}/bmc`),
    powerState: (mac: string) => c<PowerStateView>('GET', `/devices/${enc(mac)}/power`),
    power: (mac: string, action: PowerAction, network: boolean) => c<PowerAnswer>('POST', `/devices/${enc(mac)}/power`, { action, boot: network ? 'network' : null }),
    powerBatch: (macs: string[], action: PowerAction, network: boolean) => c<BatchPowerResult>('POST', '/devices/power', { macs, action, boot: network ? 'network' : null }),

    // rollouts and drift (issue 31)
    rollouts: () => c<RolloutList>('GET', '/rollouts'),
    rollout: (id: string) => c<RolloutView>('GET', `/rollouts/${enc(id)}`),
    createRollout: (req: RolloutCreateRequest) => c<RolloutView>('POST', '/rollouts', req),
    pauseRollout: (id: string) => c<RolloutView>('POST', `/rollouts/${enc(id)}/pause`),
    resumeRollout: (id: string) => c<RolloutView>('POST', `/rollouts/${enc(id)}/resume`, {}),
    abortRollout: (id: string) => c<RolloutView>('POST', `/rollouts/${enc(id)}/abort`),
    drift: () => c<FleetDrift>('GET', '/drift'),
    reconcileWorker: (id: string) => c<ReconcileResult>('POST', `/workers/${enc(id)}/reconcile`),
    reconcileAll: () => c<ReconcileResult>('POST', '/drift/reconcile'),
  };
}

export type MetalApi = ReturnType<typeof createMetalApi>;
