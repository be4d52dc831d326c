import { describe, expect, it } from 'vitest';
import { errorText } from '../shared/http';
import { accessOf, gate } from './access';
import { parsePairs } from './pages/machines/batch-pairs';
import { firmwareLabel, lastBootStage } from './pages/machines/boot-stage';
import { routeOf } from './router';

describe('batch bind pairs', () => {
  it('reads one pair per line with any separator, and an optional serial', () => {
    expect(parsePairs('00:0c:29:aa:bb:01 worker-01\n00-0c-29-aa-bb-02,worker-02,SN-2\n\n# comment\n000c29aabb03\tworker-03')).toEqual({
      pairs: [
        { mac: '00:0c:29:aa:bb:01', worker_id: 'worker-01' },
        { mac: '00-0c-29-aa-bb-02', worker_id: 'worker-02', serial: 'SN-2' },
        { mac: '000c29aabb03', worker_id: 'worker-03' },
      ],
      errors: [],
    });
  });

  it('takes the column order from a header line and reports lines it cannot read', () => {
    expect(parsePairs('worker,mac,product\nw1,00:0c:29:aa:bb:01,R640\nlonely\n')).toEqual({
      pairs: [{ mac: '00:0c:29:aa:bb:01', worker_id: 'w1', product: 'R640' }],
      errors: ['line 3: expected “mac worker_id”, got "lonely"'],
    });
  });
});

describe('API error messages', () => {
  it('shows each API’s own error shape as text', () => {
    expect(errorText({ detail: 'worker already exists: w1' }, 409)).toBe('worker already exists: w1');
    expect(errorText({ detail: [{ type: 'required', loc: ['body', 'worker_id'], msg: "must have required property 'worker_id'" }] }, 422)).toBe(
      "worker_id: must have required property 'worker_id'",
    );
    expect(errorText({ agent: 'storage-01', error: 'iqn exists' }, 409)).toBe('agent storage-01: iqn exists');
    expect(errorText({ type: 'about:blank', title: 'Conflict', status: 409, detail: 'a cluster named x exists', code: 'cluster_name_conflict' }, 409)).toBe('a cluster named x exists');
    expect(errorText('Bad Gateway', 502)).toBe('Bad Gateway');
    expect(errorText(null, 500)).toBe('HTTP 500');
  });
});

describe('routes', () => {
  it('gives every page its own path', () => {
    expect(routeOf('/')).toEqual({ page: 'devices' });
    expect(routeOf('/machines/devices')).toEqual({ page: 'devices' });
    expect(routeOf('/machines/workers')).toEqual({ page: 'workers' });
    expect(routeOf('/machines/workers/worker%2001')).toEqual({ page: 'worker', id: 'worker 01' });
    expect(routeOf('/machines/storage')).toEqual({ page: 'storage' });
    expect(routeOf('/machines/operations')).toEqual({ page: 'operations' });
    expect(routeOf('/machines/rollouts')).toEqual({ page: 'rollouts' });
    expect(routeOf('/machines/rollouts/ro-0123456789ab')).toEqual({ page: 'rollout', id: 'ro-0123456789ab' });
    expect(routeOf('/clusters')).toEqual({ page: 'clusters' });
    expect(routeOf('/clusters/new')).toEqual({ page: 'cluster-new' });
    expect(routeOf('/clusters/abcd1234')).toEqual({ page: 'cluster', id: 'abcd1234' });
    expect(routeOf('/clusters/abcd1234/deploy')).toEqual({ page: 'deploy', id: 'abcd1234' });
    expect(routeOf('/deployments/a1b2c3d4e5f6')).toEqual({ page: 'deployment', id: 'a1b2c3d4e5f6' });
    expect(routeOf('/deployments')).toEqual({ page: 'not-found' });
    expect(routeOf('/bootstrap')).toEqual({ page: 'bootstrap' });
    expect(routeOf('/bootstrap/bootstrap-5b7fd3a81290')).toEqual({ page: 'bootstrap-run', id: 'bootstrap-5b7fd3a81290' });
    expect(routeOf('/local-clusters')).toEqual({ page: 'local-clusters' });
    expect(routeOf('/machines/nope')).toEqual({ page: 'not-found' });
    expect(routeOf('/clusters/a/b')).toEqual({ page: 'not-found' });
  });
});

describe('permission gates (issue 20)', () => {
  const viewer = accessOf({ name: 'lab-viewer', role: 'viewer', permissions: ['metal:device:read', 'metal:power:read'] });
  it('disables a control whose route the token may not call, with the reason as its title', () => {
    expect(gate(viewer, 'metal:power:operate')).toEqual({ disabled: true, title: 'your token (lab-viewer, viewer) may not metal:power:operate' });
    expect(gate(viewer, ['metal:power:read', 'metal:bmc:write'])).toEqual({ disabled: true, title: 'your token (lab-viewer, viewer) may not metal:bmc:write' });
  });
  it('leaves a permitted control enabled unless busy, and without a reason', () => {
    expect(gate(viewer, 'metal:power:read')).toEqual({ disabled: false, title: undefined });
    expect(gate(viewer, 'metal:power:read', true)).toEqual({ disabled: true, title: undefined });
    // whoami not known yet: the server decides.
    expect(gate(accessOf(null), 'metal:power:operate')).toEqual({ disabled: false, title: undefined });
  });
});

describe("a device's firmware and where its last boot stopped (issue 30)", () => {
  const timeline = { report_at: '2026-12-01T10:00:00Z', boot_vars_at: '2026-12-01T10:00:01Z', iscsi_login_at: '2026-12-01T10:00:03Z', host_report_at: '2026-12-01T10:01:40Z', seconds: 100 };
  const worker = { boot_timeline: timeline, disks: [{}] as never, default_os: 'debian' as const };
  const bound = { state: 'bound' as const, bound_worker_id: 'w1' };

  it('names the firmware iPXE reported', () => {
    expect([firmwareLabel('efi'), firmwareLabel('pcbios'), firmwareLabel(undefined), firmwareLabel('linux')]).toEqual(['UEFI', 'BIOS', '—', '—']);
  });

  it('says a boot reached the booted system when its host report is the newest event', () => {
    expect(lastBootStage({ ...bound, last_seen: '2026-12-01T10:00:00Z' }, worker)).toEqual({ stage: 'host report', text: 'booted: host report 100 s after iPXE (boot vars, iSCSI login)', at: '2026-12-01T10:01:40Z' });
  });

  it('says a later boot stopped after iPXE, and why when the ledger tells', () => {
    expect(lastBootStage({ ...bound, last_seen: '2026-12-01T11:00:00Z' }, worker)).toEqual({
      stage: 'ipxe',
      text: 'iPXE report; no host report since (the last one came from an earlier boot): check the console, GRUB and the initramfs',
      at: '2026-12-01T11:00:00Z',
    });
    expect(lastBootStage({ ...bound, last_seen: '2026-12-01T11:00:00Z' }, { boot_timeline: null, disks: [], default_os: undefined }).text).toBe('iPXE report; no system disk or default OS yet: reboot loop');
    expect(lastBootStage({ state: 'pooled', bound_worker_id: null, last_seen: '2026-12-01T11:00:00Z' }).text).toBe('iPXE report; in the pool: reboots until bound to a worker');
    expect(lastBootStage({ state: 'pooled', bound_worker_id: null, last_seen: null })).toEqual({ stage: 'none', text: 'no network boot seen', at: null });
  });
});
