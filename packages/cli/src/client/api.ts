/**
 * The API calls the client commands make: one function each, typed with the API packages' types
 * (`@ironlens/metal/api`, `@ironlens/clusters/api`) and checked with the same schemas (`CALLS`, each the answer schema its route declares;
 * `api.contract.test.ts` compares them with the routes' OpenAPI documents). A new verb's call is a
 * line in `CALLS` and a function in {@link createApi}.
 */
import {
  ListResponse as BootstrapListSchema,
  StatusResponse as BootstrapStatusSchema,
  ClusterListSchema,
} from '@ironlens/clusters/api';
import {
  agentViewSchema,
  type CreateWorkerInput,
  type DeviceDeclaration,
  type DeviceListQuery,
  type DiskRequest,
  deviceSchema,
  type OperationsQuery,
  operationsSchema,
  type PowerActionRequest,
  powerAnswerSchema,
  type RolloutCreateRequest,
  type RolloutResumeRequest,
  rolloutListSchema,
  rolloutSchema,
  workerDeletedSchema,
  workerSchema,
} from '@ironlens/metal/api';
import { type TSchema, Type } from '@sinclair/typebox';
import type { ApiName, Call, Transport } from './transport';

const call = <S extends TSchema>(api: ApiName, method: Call['method'], route: string, answer: S, status = 200): Call<S> => ({ api, method, route, status, answer });

/**
 * `GET /api/auth/whoami` (core's access routes, both listeners): written here because the route
 * declares it in plain JSON Schema; the contract test holds the two together.
 */
const WhoamiSchema = Type.Object({ name: Type.String(), role: Type.String(), permissions: Type.Array(Type.String()) });

/** Every call, by name: its API, method, route, status and answer schema. */
export const CALLS = {
  whoami: call('auth', 'GET', '/api/auth/whoami', WhoamiSchema),
  devices: call('metal', 'GET', '/devices', Type.Array(deviceSchema)),
  device: call('metal', 'GET', '/devices/{mac}', deviceSchema),
  createDevice: call('metal', 'POST', '/devices', deviceSchema, 201),
  revokeDevice: call('metal', 'DELETE', '/devices/{mac}', deviceSchema),
  bind: call('metal', 'POST', '/devices/{mac}/bind', deviceSchema),
  unbind: call('metal', 'DELETE', '/devices/{mac}/bind', deviceSchema),
  power: call('metal', 'POST', '/devices/{mac}/power', powerAnswerSchema),
  workers: call('metal', 'GET', '/workers', Type.Array(workerSchema)),
  worker: call('metal', 'GET', '/workers/{worker_id}', workerSchema),
  createWorker: call('metal', 'POST', '/workers', workerSchema),
  deleteWorker: call('metal', 'DELETE', '/workers/{worker_id}', workerDeletedSchema),
  createDisk: call('metal', 'POST', '/workers/{worker_id}/luns/disk', workerSchema),
  deleteDisk: call('metal', 'DELETE', '/workers/{worker_id}/luns/disk/{os}', workerSchema),
  agents: call('metal', 'GET', '/agents', Type.Array(agentViewSchema)),
  operations: call('metal', 'GET', '/operations', operationsSchema),
  rollouts: call('metal', 'GET', '/rollouts', rolloutListSchema),
  rollout: call('metal', 'GET', '/rollouts/{rollout_id}', rolloutSchema),
  createRollout: call('metal', 'POST', '/rollouts', rolloutSchema, 201),
  pauseRollout: call('metal', 'POST', '/rollouts/{rollout_id}/pause', rolloutSchema),
  resumeRollout: call('metal', 'POST', '/rollouts/{rollout_id}/resume', rolloutSchema),
  abortRollout: call('metal', 'POST', '/rollouts/{rollout_id}/abort', rolloutSchema),
  clusters: call('cluster', 'GET', '/api/cluster/clusters', ClusterListSchema),
  bootstraps: call('cluster', 'GET', '/api/cluster/bootstrap', BootstrapListSchema),
  bootstrap: call('cluster', 'GET', '/api/cluster/bootstrap/{id}', BootstrapStatusSchema),
} satisfies Record<string, Call>;

/** The typed calls over one {@link Transport}. */
export function createApi(t: Transport) {
  const c = CALLS;
  return {
    url: t.url,
    whoami: () => t.call(c.whoami),

    devices: (state?: DeviceListQuery['state']) => t.call(c.devices, { query: { state } }),
    device: (mac: string) => t.call(c.device, { params: { mac } }),
    createDevice: (body: DeviceDeclaration) => t.call(c.createDevice, { body }),
    revokeDevice: (mac: string) => t.call(c.revokeDevice, { params: { mac } }),
    bind: (mac: string, workerId: string, force: boolean) => t.call(c.bind, { params: { mac }, query: { worker_id: workerId, force: force || undefined } }),
    unbind: (mac: string) => t.call(c.unbind, { params: { mac } }),
    power: (mac: string, body: PowerActionRequest) => t.call(c.power, { params: { mac }, body }),

    workers: () => t.call(c.workers),
    worker: (id: string) => t.call(c.worker, { params: { worker_id: id } }),
    createWorker: (body: CreateWorkerInput) => t.call(c.createWorker, { body }),
    deleteWorker: (id: string, deleteDisk: boolean) => t.call(c.deleteWorker, { params: { worker_id: id }, query: { delete_disk: deleteDisk || undefined } }),
    createDisk: (id: string, body: DiskRequest) => t.call(c.createDisk, { params: { worker_id: id }, body }),
    deleteDisk: (id: string, os: string, deleteFile: boolean) => t.call(c.deleteDisk, { params: { worker_id: id, os }, query: { delete_file: deleteFile || undefined } }),

    agents: () => t.call(c.agents),
    operations: (q: OperationsQuery) => t.call(c.operations, { query: q }),

    rollouts: () => t.call(c.rollouts),
    rollout: (id: string) => t.call(c.rollout, { params: { rollout_id: id } }),
    createRollout: (body: RolloutCreateRequest) => t.call(c.createRollout, { body }),
    pauseRollout: (id: string) => t.call(c.pauseRollout, { params: { rollout_id: id } }),
    resumeRollout: (id: string, body: RolloutResumeRequest) => t.call(c.resumeRollout, { params: { rollout_id: id }, body }),
    abortRollout: (id: string) => t.call(c.abortRollout, { params: { rollout_id: id } }),

    clusters: (includeDrafts: boolean) => t.call(c.clusters, { query: { includeDrafts: includeDrafts || undefined } }),
    bootstraps: () => t.call(c.bootstraps),
    bootstrap: (id: string) => t.call(c.bootstrap, { params: { id } }),
  };
}

export type Api = ReturnType<typeof createApi>;
