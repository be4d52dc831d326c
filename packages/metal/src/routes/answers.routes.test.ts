import { waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bmc } from '../adapters/bmc';
import type { PowerAction, PowerState } from '../domain/power';
import { FakeAgent } from '../testing/fake-agent';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

/**
 * Issue 19: what fastify answers is what the service returned, on every route. fastify
 * serializes with the route's response schema (fast-json-stringify), which silently drops a
 * field the schema does not list; the fixture compares each JSON answer with its handler's value
 * (`answerCheck`), and this file calls every route of the provisioning API with a 2xx answer, in
 * states that make the answers as full as they get (a worker with disks, a CD, boot settings, a
 * host report, a power action), then asserts that each route was checked and none drifted.
 * The storage agent is `FakeAgent` (its protocol, answering like the real one); the BMC is an
 * in-memory stand-in (the real ones are tested against sushy-emulator and ipmi_sim in
 * packages/metal/test).
 */
const TOKEN = 'answers-t0ken';
const auth = { authorization: `Bearer ${TOKEN}` };
const MAC1 = '52:54:00:19:00:01';
const MAC2 = '52:54:00:19:00:02';
const MAC3 = '52:54:00:19:00:03';
const MASTER = 'debian_tpl_12.img';
const MASTER2 = 'debian_tpl_13.img';

/** A BMC stand-in: a machine that is on or off, in memory. */
class StandInBmc implements Bmc {
  state: PowerState = 'off';
  async powerState(): Promise<PowerState> {
    return this.state;
  }
  async power(action: PowerAction): Promise<void> {
    this.state = action === 'off' || action === 'soft-off' ? 'off' : 'on';
  }
  async setOneTimeNetworkBoot(): Promise<void> {}
}

let f: MetalFixture;
let agent: FakeAgent;
const bmc = new StandInBmc();

const api = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, status = 200) => {
  const r = await f.app.inject({ method, url, headers: auth, payload: payload as object });
  expect(r.statusCode, `${method} ${url}: ${r.body}`).toBe(status);
  return r;
};

beforeAll(async () => {
  agent = await new FakeAgent({ masters: [MASTER, MASTER2] }).start();
  f = await newMetalFixture({ IPXE_CP_TOKEN: TOKEN }, { bmc: () => bmc });
});
afterAll(async () => {
  f?.services.power.stop();
  await f?.close();
  await agent?.stop();
});

describe('every answer is what the service returned (issue 19)', () => {
  it('calls each route of the provisioning API and finds no field dropped or reshaped by its schema', async () => {
    // Health, the boot paths, the settings.
    await f.app.inject({ url: '/healthz' });
    await f.app.inject({ url: `/devices/report?mac=${MAC1}&uuid=4c4c4544-0042-3510-8052-b4c04f4e4d32&manufacturer=QEMU&product=Standard%20PC&serial=S1&cpumodel=Intel&mem-total=0x8000&mem-type=DDR5&mem-speed=5600&chip=RTL8125&busid=0110ec8125` });
    await api('GET', '/settings/auto-register');
    await api('PUT', '/settings/auto-register', { enabled: true });
    // The registration window of the seed control plane's current WebUI.
    await api('GET', '/settings/registration-window');
    await api('POST', '/settings/registration-window', { ttl_minutes: 30 }, 201);
    await api('GET', '/settings/registration-window');
    await api('DELETE', '/settings/registration-window');
    await api('PUT', '/settings/auto-register', { enabled: true });

    // Agents.
    await api('POST', '/agents/probe', { base_url: agent.url });
    await api('POST', '/agents', { id: 'a1', base_url: agent.url, role: { disk: true, cd: true }, tags: ['rack-1'], iscsi_server: '127.0.0.1' }, 201);
    await api('PUT', '/agents/a1', { base_url: agent.url, role: { disk: true, cd: true }, tags: ['rack-1', 'ssd'], iscsi_server: '127.0.0.1' });
    await api('GET', '/agents');
    await api('GET', '/agents?live=false');

    // Devices: declared, imported, bound, with a BMC.
    await api('POST', '/devices', { mac: MAC2, serial: 'S2', manufacturer: 'QEMU', product: 'Standard PC' }, 201);
    await api('POST', '/devices/import', { entries: [{ mac: MAC3 }, { mac: MAC2 }, { mac: 'nope' }] });
    await api('GET', '/devices');
    await api('PUT', `/devices/${MAC1}/bmc`, { driver: 'ipmi', host: 'bmc-01.example', port: 623, username: 'admin', password: 'secret-pw' });
    await api('GET', `/devices/${MAC1}/bmc`);

    // Workers: one with boot settings, one with an install CD, a batch.
    await api('POST', '/workers', { worker_id: 'w1', mac: MAC1, boot: { menu_default: 'debian', menu_timeout: 5000 } });
    await api('POST', '/workers', { worker_id: 'w2', windows_iso: 'win.iso' });
    await api('POST', '/workers/batch', { count: 2, name_prefix: 'b-', macs: [MAC3, 'zz'] });
    await api('PUT', '/workers/w1/address', { fixed_address: '192.0.2.10' });

    // System disks: from a master, in a batch, on one agent directly.
    await api('POST', '/workers/w1/luns/disk', { type: 'master', os: 'debian', name: MASTER });
    await api('POST', '/workers/w1/luns/disk', { type: 'empty', os: 'ubuntu', size: '1G' });
    await api('POST', '/workers/luns/disk/batch', { type: 'master', os: 'debian', name: MASTER, targets: [{ worker_id: 'w2', agent: 'a1' }, { worker_id: 'w1', agent: 'a1' }, { worker_id: 'nobody', agent: 'a1' }] });
    await api('DELETE', '/workers/w1/luns/disk/ubuntu?delete_file=true');
    await api('PUT', '/workers/w1/default-os', { os: 'debian', menu_default: 'debian', menu_timeout: 3000 });
    await api('POST', '/agents/a1/luns/disk', { iqn: 'iqn.2026-07.com.controller:direct', size: '1G' });
    await api('POST', '/agents/a1/luns/cd', { iso: 'tools.iso' });
    await api('GET', '/agents/a1/luns');
    await api('DELETE', '/agents/a1/luns?iqn=iqn.2026-07.com.controller:direct&delete_file=true');
    await api('DELETE', '/agents/a1/luns?iqn=iqn.2026-07.com.controller:gone&ignore_missing=true');
    await api('POST', '/agents/a1/luns/scan');
    await api('PUT', `/agents/a1/masters/${MASTER}/tag`, { os: 'Debian', os_version: '12', remark: 'the lab image' });
    await api('GET', '/masters');
    await api('DELETE', `/agents/a1/masters/${MASTER}/tag`);
    await api('PUT', '/workers/w1/default-disk', { disk: 'debian', menu_default: 'boot-os', menu_timeout: 3000 });

    // The booted worker: its boot variables and its host report.
    const bootVars = await f.app.inject({ url: `/boot-vars?mac=${MAC1}&format=json` });
    expect(bootVars.json()).toMatchObject({ base_iqn: 'iqn.2026-07.com.controller', iscsi_server: '127.0.0.1', menu_default: 'debian', menu_timeout: 3000 });
    const report = {
      mac: MAC1,
      hostname: 'w1',
      addresses: [{ interface: 'eth0', mac: MAC1, ipv4: ['192.0.2.10'], ipv6: ['fe80::1'] }],
      ssh_host_keys: [{ algorithm: 'ssh-ed25519', fingerprint: `SHA256:${'A'.repeat(43)}` }],
      os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' },
      kernel: '6.1.0-28-amd64',
      hardware: {
        cpu_model: 'Intel',
        cpus: 4,
        memory_bytes: 8 * 2 ** 30,
        disks: [{ name: 'sda', size_bytes: 2 ** 30, model: 'IET VIRTUAL-DISK' }],
        nics: [{ name: 'eth0', mac: MAC1, speed_mbps: 1000, driver: 'virtio_net' }],
        accelerators: [{ vendor: 'NVIDIA', model: 'H200', pci_id: '10de:2335', count: 1, memory_bytes: 141 * 2 ** 30 }],
      },
    };
    const hr = await f.app.inject({ method: 'POST', url: '/hosts/report', headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(Math.floor(Date.now() / 1000)) }, payload: JSON.stringify(report) });
    expect(hr.statusCode, hr.body).toBe(200);

    // Power: state, an action with a network boot, a batch, a bind with a reboot.
    await api('GET', `/devices/${MAC1}/power`);
    await api('POST', `/devices/${MAC1}/power`, { action: 'cycle', boot: 'network' });
    await api('POST', '/devices/power', { macs: [MAC1, MAC2, 'zz'], action: 'on' });
    await api('POST', '/workers', { worker_id: 'w3' });
    await api('POST', `/devices/${MAC2}/bind?worker_id=w3`);
    await api('PUT', `/devices/${MAC2}/bmc`, { driver: 'redfish', url: 'https://bmc-02.example/redfish/v1/Systems/1', username: 'admin', password: 'secret-pw', verify_tls: false });
    await api('DELETE', `/devices/${MAC2}/bind`);
    await api('POST', `/devices/${MAC2}/bind?worker_id=w3&reboot=true`);

    // Views of it all.
    const w1 = (await api('GET', '/workers/w1')).json();
    expect(w1).toMatchObject({ boot: { menu_default: 'debian', menu_timeout: 3000 }, default_os: 'debian', fixed_address: '192.0.2.10', host: { kernel: '6.1.0-28-amd64' } });
    expect((await api('GET', '/workers/w2')).json().cd).toMatchObject({ agent: 'a1', iso: 'win.iso' });
    expect((await api('GET', `/devices/${MAC1}`)).json().last_power).toMatchObject({ action: 'on', boot: null, bmc_ok: true });
    await api('GET', '/workers');
    await api('GET', '/workers/w1/status');
    await api('GET', '/devices?state=bound');
    await api('PUT', '/workers/w3/mac', { mac: MAC2 });
    await api('POST', '/devices/bind/batch/preview', { pairs: [{ mac: MAC3, worker_id: 'b-2', serial: 'other' }, { mac: MAC2, worker_id: 'w3' }, { mac: '52:54:00:19:00:99', worker_id: 'x' }] });
    await api('POST', '/devices/bind/batch', { pairs: [{ mac: MAC3, worker_id: 'b-1' }, { mac: 'zz', worker_id: 'b-2' }] });
    // Rollouts (issue 31): a clone the agent holds, then refuses, so the run pauses, resumes, aborts.
    let letGo!: () => void;
    let gate = new Promise<void>((r) => {
      letGo = r;
    });
    agent.handlers.set('POST /luns/disk', async (_call, res) => {
      await gate;
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: 'no space left on device' }));
    });
    const clones = () => agent.calls.filter((c) => c.method === 'POST' && c.path === '/luns/disk' && String((c.body as { master?: string }).master) === MASTER2).length;
    const ro = (await api('POST', '/rollouts', { workers: ['w1'], master: MASTER2, max_unavailable: '100%', boot_timeout_s: 60 }, 201)).json();
    await waitUntil('the clone to reach the agent', () => clones() === 1);
    await api('POST', `/rollouts/${ro.id}/pause`);
    letGo();
    expect((await f.services.rollouts.settled(ro.id)).state).toBe('paused');
    gate = new Promise<void>((r) => {
      letGo = r;
    });
    await api('POST', `/rollouts/${ro.id}/resume`, { retry_failed: true });
    await waitUntil('the clone to reach the agent again', () => clones() === 2);
    await api('POST', `/rollouts/${ro.id}/abort`);
    letGo();
    expect((await f.services.rollouts.settled(ro.id)).state).toBe('aborted');
    agent.handlers.delete('POST /luns/disk');
    await api('GET', '/rollouts');
    expect((await api('GET', `/rollouts/${ro.id}`)).json().workers[0].steps.length).toBeGreaterThan(3);
    expect((await api('GET', '/workers/w1')).json().image_history[0]).toMatchObject({ outcome: 'rolled_back', rollout_id: ro.id });
    // Drift: the fleet, and the reconcile of one worker and of all.
    await api('GET', '/drift');
    await api('POST', '/workers/w1/reconcile');
    await api('POST', '/drift/reconcile');
    await api('GET', '/operations?limit=500');

    // Removals.
    await api('DELETE', `/devices/${MAC2}/bmc`);
    await api('POST', '/devices', { mac: '52:54:00:19:00:04' }, 201);
    await api('DELETE', '/devices/52:54:00:19:00:04');
    await api('DELETE', '/workers/w2?delete_disk=true');
    await api('POST', '/workers/delete/batch', { worker_ids: ['b-1', 'b-2', 'nobody'] });
    await api('POST', '/agents', { id: 'a2', base_url: agent.url }, 201);
    await api('DELETE', '/agents/a2');

    expect(f.answers.drifts, 'answers that differ from what their handler returned').toEqual([]);

    // Every route of the API's document answered a checked 2xx (but the text-only device report and boot script).
    const doc = (await f.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`));
    const answered = new Set([...f.answers.checked].filter((c) => / 2\d\d$/.test(c)).map((c) => c.replace(/ \d+$/, '')));
    expect(routes.filter((r) => r !== 'GET /devices/report' && r !== 'GET /boot.ipxe' && !answered.has(r)), 'routes never checked with a 2xx answer').toEqual([]);
    expect(routes.length).toBeGreaterThan(40);
  });
});
