import { OperationsLog, partOf } from '@ironlens/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerHost } from './bootstrap/workers';
import { type ClustersTestApp, multipart, startClustersApp } from './testing/app';
import { HostileApiServer } from './testing/hostile-api-server';

// Failures that used to vanish (issue 32.7), each said where a user looks: a failing worker
// directory in the gateway status' `error` (its URL then falls back to another node); a gateway
// status that fails in the overview's `gatewayError`; a DaemonSet a cluster delete could not remove
// in the delete job's log and the operations log. The cluster is an API server of the test's own.

let t: ClustersTestApp;
let api: HostileApiServer;
/** What the booted-worker directory answers (metal's host reports in `ironlens serve`): workers, or a failure. */
let directory: () => Promise<WorkerHost[]> = async () => [];

const ready = [{ type: 'Ready', status: 'True' }];
const node = (name: string, ip: string) => ({ metadata: { name }, spec: {}, status: { conditions: ready, addresses: [{ type: 'InternalIP', address: ip }], capacity: { cpu: '4', memory: '8Gi' }, allocatable: { cpu: '4', memory: '8Gi' } } });

async function register(name: string, fields: Record<string, string> = {}): Promise<string> {
  const { payload, headers } = multipart({ name, draft: 'true', ...fields }, { content: api.kubeconfig() });
  const res = await t.app.inject({ method: 'POST', url: '/api/cluster/clusters', payload, headers });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().cluster.id;
}

beforeAll(async () => {
  api = new HostileApiServer();
  api.set('/api/v1/nodes', { json: { kind: 'NodeList', apiVersion: 'v1', metadata: {}, items: [node('node-a', '10.0.0.5'), node('10-0-0-9', '10.0.0.9')] } });
  api.set('/api/v1/persistentvolumeclaims', { json: { kind: 'PersistentVolumeClaimList', apiVersion: 'v1', metadata: {}, items: [] } });
  await api.start();
  t = await startClustersApp({ env: { IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS: '5000' }, deps: { workers: { joinedTo: () => directory() } } });
});

afterAll(async () => {
  await t?.close();
  await api?.stop();
});

describe('failures said where a user looks', () => {
  it('a worker directory that fails: the gateway status says so in `error`, and its node address is then the first Ready node’s', async () => {
    const id = await register('dir-fails', { gatewayProvider: 'envoy-ai-gateway', gatewayPort: '30080' });
    const status = async () => (await t.app.inject({ method: 'GET', url: `/api/cluster/clusters/${id}/gateway/status` })).json();
    directory = async () => [{ workerId: 'w1', address: '10.0.0.9', hostKeys: [] }];
    expect(await status()).toMatchObject({ gatewayNodeAddress: '10.0.0.9', gatewayPublicUrl: 'http://10.0.0.9:30080/v1', error: null });
    directory = async () => {
      throw new Error('the host reports could not be read: database is locked');
    };
    const st = await status();
    expect(st).toMatchObject({ gatewayNodeAddress: '10.0.0.5', gatewayPublicUrl: 'http://10.0.0.5:30080/v1' });
    expect(st.error).toContain('the booted workers that joined this cluster could not be read (the host reports could not be read: database is locked)');
    // The overview carries the same status.
    const ov = (await t.app.inject({ method: 'GET', url: `/api/cluster/overview?clusterId=${id}` })).json();
    expect(ov.gateway.error).toBe(st.error);
    directory = async () => [];
  });

  it('a gateway status that fails: the overview answers, with `gateway: null` and the reason in `gatewayError`', async () => {
    const id = await register('status-fails', { gatewayProvider: 'envoy-ai-gateway' });
    const overview = async () => (await t.app.inject({ method: 'GET', url: `/api/cluster/overview?clusterId=${id}` })).json();
    expect(await overview()).toMatchObject({ gateway: { clusterId: id }, gatewayError: null });
    // The status' own reads fail (here its store read, made to throw).
    const statuses = t.services.gateway.statuses;
    const original = statuses.statusOfRecord;
    statuses.statusOfRecord = async () => {
      throw new Error('SQLITE_BUSY: database is locked');
    };
    try {
      const ov = await overview();
      expect(ov.kubernetes.nodes).toHaveLength(2);
      expect(ov).toMatchObject({ gateway: null, gatewayError: "the gateway's status could not be read: SQLITE_BUSY: database is locked" });
    } finally {
      statuses.statusOfRecord = original;
    }
  });

  it('a DaemonSet the delete could not remove is named in the delete job’s log and the operations log; one that is not there is not', async () => {
    const id = await register('ds-refused');
    // A draft some write of ironlens reached (a draft nothing reached is deleted without a remote cleanup).
    await t.store.db.updateTable('clusters').set({ reached_at: '2026-01-01T00:00:00Z' }).where('id', '=', id).execute();
    api.set(`/apis/apps/v1/namespaces/lens-node-tuning/daemonsets/inotify-${id}`, {
      status: 403,
      json: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'daemonsets.apps "inotify" is forbidden: User "u" cannot delete resource' },
    });
    const del = await t.app.inject({ method: 'DELETE', url: `/api/cluster/clusters/${id}` });
    expect(del.statusCode, del.body).toBe(204);
    const [job] = await t.services.runner.repository.list({ kind: 'clusters.delete', subject: id, limit: 1 });
    const notes = job.log.filter((l) => l.startsWith('DaemonSet '));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(new RegExp(`^DaemonSet lens-node-tuning/inotify-${id} was not deleted: .*is forbidden`));
    const { entries } = await new OperationsLog(partOf(t.store)).list({ limit: 1000 });
    const op = entries.filter((e) => (e as { op?: string }).op === 'cluster.delete' && (e as { cluster_id?: string }).cluster_id === id).pop() as { status: string; notes: string[] } | undefined;
    expect(op?.status).toBe('ok');
    expect(op?.notes).toEqual(expect.arrayContaining([notes[0]]));
    expect(op?.notes.some((n) => n.includes(`prepull-${id}`))).toBe(false);
  });
});
