import { describe, it, expect } from 'vitest';
import { deviceClasses, nodeCount, nodeObject, nvidiaGpuUuid, planNodes, resourceSlice } from './gpu.fixtures';
import { buildSummary } from './kubelet-summary.stand-in';

describe('GPU fixtures (no cluster)', () => {
  it('plans 3 nodes for tests and 1,000 for benchmarks, node 0 the control plane', () => {
    expect(nodeCount('test')).toBe(3);
    const bench = planNodes('bench');
    expect(bench).toHaveLength(1000);
    expect(new Set(bench.map((n) => n.name)).size).toBe(1000);
    expect(new Set(bench.map((n) => n.ip)).size).toBe(1000);
    expect(bench.every((n) => /^198\.1[89]\.\d+\.\d+$/.test(n.ip))).toBe(true); // RFC 2544 range
    expect(bench[0].role).toBe('control-plane');
    const nv = bench.filter((n) => n.model?.vendor === 'nvidia').length;
    const intel = bench.filter((n) => n.model?.vendor === 'intel').length;
    expect(nv + intel).toBe(999);
    expect(nv).toBeGreaterThan(intel);
    const test = planNodes('test');
    expect(test.map((n) => n.model?.vendor ?? n.role)).toEqual(['control-plane', 'nvidia', 'intel']);
  });

  it('builds Node objects with capacity, labels, kubelet endpoint and the control-plane taint', () => {
    const [cp, nv, intel] = planNodes('test');
    const cpNode = nodeObject(cp, 10250, 'v1.36.3');
    expect(cpNode.spec?.taints).toEqual([{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]);
    const nvNode = nodeObject(nv, 12345, 'v1.36.3');
    expect(nvNode.status?.capacity?.['nvidia.com/gpu']).toBe('8');
    expect(nvNode.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(12345);
    expect(nvNode.metadata?.labels?.['nvidia.com/gpu.count']).toBe('8');
    const intelNode = nodeObject(intel, 1, 'v1.36.3');
    expect(intelNode.status?.capacity?.['gpu.intel.com/xe']).toBe('4');
    expect(intelNode.metadata?.labels?.['gpu.intel.com/device-id.0380-0b48.present']).toBe('true');
  });

  it('makes resource.k8s.io/v1 DeviceClasses and one ResourceSlice per GPU node', () => {
    expect(deviceClasses().map((c) => c.metadata.name)).toEqual(['gpu.nvidia.com', 'gpu.intel.com']);
    const [cp, nv] = planNodes('test');
    expect(resourceSlice(cp)).toBeUndefined();
    const s = resourceSlice(nv)!;
    expect(s.apiVersion).toBe('resource.k8s.io/v1');
    const devices = (s.spec as { devices: Array<{ name: string; attributes: Record<string, { string?: string }> }> }).devices;
    expect(devices).toHaveLength(8);
    // NVML's PCI bus ids, as the NVIDIA DRA driver publishes them; the UUID is the one DCGM labels the GPU with.
    expect(devices.map((d) => d.attributes.pcieBusID?.string)).toEqual(['00000000:18:00.0', '00000000:2a:00.0', '00000000:3a:00.0', '00000000:5d:00.0', '00000000:9a:00.0', '00000000:ab:00.0', '00000000:ba:00.0', '00000000:db:00.0']);
    expect(devices[3].attributes.uuid?.string).toBe(nvidiaGpuUuid(nv.name, 3));
  });

  it('shapes a stats/v1alpha1 Summary like the kubelet', () => {
    const s = buildSummary('n1', new Date(Date.now() - 60_000).toISOString(), [{ name: 'p', namespace: 'd', uid: 'u', containers: ['a', 'b'] }], {}, new Date());
    const node = s.node as Record<string, unknown>;
    expect(Object.keys(node)).toEqual(
      expect.arrayContaining(['nodeName', 'systemContainers', 'startTime', 'cpu', 'memory', 'network', 'fs', 'runtime', 'rlimit']),
    );
    const pods = s.pods as Array<Record<string, unknown>>;
    expect(pods[0]).toHaveProperty('ephemeral-storage');
    expect(pods[0]).toHaveProperty('process_stats.process_count', 2);
  });
});
