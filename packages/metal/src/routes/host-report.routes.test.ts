import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';
import { sleep } from '@ironlens/core/testing';

// POST /hosts/report against the real app and store: what a report needs beyond the happy path
// that packages/cli/src/host-reporter.test.ts runs with the real reporter.
const MAC = '52:54:00:24:0d:01';
const TOKEN = 'host-report-routes-token';
const auth = { authorization: `Bearer ${TOKEN}` };
let f: MetalFixture;

const body = (hostname = 'w1') => ({
  mac: MAC,
  hostname,
  addresses: [{ interface: 'eth0', mac: MAC, ipv4: ['192.0.2.5'], ipv6: [] }],
  ssh_host_keys: [{ algorithm: 'ssh-ed25519', fingerprint: `SHA256:${'A'.repeat(43)}` }],
  os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' },
  kernel: '6.1.0-28-amd64',
  hardware: { cpu_model: 'x', cpus: 1, memory_bytes: 1, disks: [], nics: [], accelerators: [] },
});
const post = (b: unknown, headers: Record<string, string> = {}) =>
  f.app.inject({ method: 'POST', url: '/hosts/report', headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(Math.floor(Date.now() / 1000)), ...headers }, payload: JSON.stringify(b) });

beforeEach(async () => {
  f = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN });
  await f.services.devices.register({ mac: MAC }, {});
  await f.services.workers.create({ worker_id: 'w1', mac: MAC }, {});
});
afterEach(async () => {
  await f?.close();
});

describe('POST /hosts/report', () => {
  it('is open (no token) and accepts the bound MAC with its hostname or worker id', async () => {
    expect((await f.app.inject({ url: '/workers/w1' })).statusCode).toBe(401);
    const res = await post(body());
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ worker_id: 'w1', accepted: true, changed: true });
    expect((await f.app.inject({ url: '/workers/w1', headers: auth })).json().host.ssh_host_keys).toHaveLength(1);
    await sleep(1100);
    expect((await post(body('W1'))).json()).toEqual({ worker_id: 'w1', accepted: true, changed: false });
  });

  it('needs a timestamp', async () => {
    const res = await f.app.inject({ method: 'POST', url: '/hosts/report', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body()) });
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('host_report_invalid');
  });

  it('never treats a CHAP account it cannot open as "no CHAP": an unsigned report is refused', async () => {
    await f.store.db.insertInto('worker_chap').values({ worker_id: 'w1', chap_user: 'il-w1', secret_sealed: 'v1:damaged', created_at: new Date().toISOString() }).execute();
    const res = await post(body());
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('host_report_signature_invalid');
    expect((await f.app.inject({ url: '/workers/w1', headers: auth })).json().host).toBeNull();
  });

  it('lists the workers that joined a cluster with their reported address (the gateway URL’s source), none for another cluster', async () => {
    expect((await post(body())).statusCode).toBe(200);
    await f.services.hostReports.joinCluster(['w1'], 'c0000002');
    expect(await f.services.hostReports.joinedTo('c0000002')).toEqual([{ workerId: 'w1', address: '192.0.2.5', hostKeys: expect.any(Array) }]);
    expect(await f.services.hostReports.joinedTo('c0000003')).toEqual([]);
  });

  it('gives the accelerators a joined worker reported (the deployments’ inventory, issue 28), none for another cluster', async () => {
    const report = body();
    report.hardware.accelerators = [{ vendor: 'NVIDIA Corporation', model: 'H100 80GB HBM3', pci_id: '10de:2330', count: 8, memory_bytes: null }] as never;
    expect((await post(report)).statusCode).toBe(200);
    await f.services.hostReports.joinCluster(['w1'], 'c0000002');
    expect(await f.services.hostReports.inventoryOf('c0000002')).toEqual([{ workerId: 'w1', address: '192.0.2.5', accelerators: [{ vendor: 'NVIDIA Corporation', model: 'H100 80GB HBM3', pciId: '10de:2330', count: 8 }] }]);
    expect(await f.services.hostReports.inventoryOf('c0000003')).toEqual([]);
  });

  it('forgets the report, the fixed address and the cluster with the worker', async () => {
    expect((await post(body())).statusCode).toBe(200);
    await f.services.workers.setFixedAddress('w1', '192.0.2.40', {});
    await f.services.hostReports.joinCluster(['w1'], 'c0000001');
    expect((await f.app.inject({ url: '/workers/w1', headers: auth })).json()).toMatchObject({ fixed_address: '192.0.2.40', cluster_id: 'c0000001', address: '192.0.2.5' });
    expect((await f.app.inject({ method: 'DELETE', url: '/workers/w1', headers: auth })).statusCode).toBe(200);
    for (const t of ['host_reports', 'worker_addresses', 'worker_clusters'] as const) expect(await f.store.db.selectFrom(t).selectAll().execute()).toEqual([]);
  });
});
