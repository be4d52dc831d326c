/**
 * The overview's per-GPU figures (issue 33, item 4) from what a cluster and its Prometheus say:
 * each rule with the input that exercises it, hostile values included (a cluster's answers are
 * data to check, never to trust). The end-to-end figures against the kube-harness are in
 * clusters.kube.test.ts.
 */
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ResourceSliceLike } from '../adapters/kube.adapter';
import { applyDcgm, countedDevices, dcgmDevices, deviceMetrics, draDevices, groupDcgm, meanUtilisation, type PromSample, vramUsage } from './gpu-devices';
import { quantity } from './overview.service';

const MiB = 2 ** 20;
const node = (name: string, ip: string, labels: Record<string, string> = {}): V1Node => ({ metadata: { name, labels }, status: { addresses: [{ type: 'InternalIP', address: ip }] } });
const sample = (name: string, metric: Record<string, string>, value: string): PromSample => ({ metric: { __name__: name, ...metric }, value: [0, value] });
const UUID0 = 'GPU-0a1b2c3d-0000-1111-2222-333344445555';
const UUID1 = 'GPU-0a1b2c3d-0000-1111-2222-333344446666';

const slice = (nodeName: string, devices: Array<{ name: string; attributes: Record<string, { string?: string; int?: number }>; memory?: string }>): ResourceSliceLike => ({
  metadata: { name: `${nodeName}-gpu.nvidia.com` },
  spec: { driver: 'gpu.nvidia.com', nodeName, devices: devices.map((d) => ({ name: d.name, attributes: d.attributes, capacity: d.memory ? { memory: { value: d.memory } } : undefined })) },
});

describe('GPU identities', () => {
  it('from DRA: name, index, PCI address and UUID as the driver gives them; anything outside their grammar is null', () => {
    const devices = draDevices(
      [
        slice('n1', [
          { name: 'gpu-1', attributes: { index: { int: 1 }, productName: { string: 'NVIDIA H100' }, uuid: { string: UUID1 }, pcieBusID: { string: '00000000:2a:00.0' } }, memory: '80Gi' },
          { name: 'gpu-0', attributes: { index: { int: 0 }, productName: { string: 'NVIDIA H100\u001b[2J' }, uuid: { string: 'GPU-$(reboot)' }, pcieBusID: { string: '2a:00.0; rm' } }, memory: 'lots' },
        ]),
        slice('n2', [{ name: 'gpu-0', attributes: {} }]),
      ],
      new Set(['gpu.nvidia.com']),
      'n1',
      quantity,
    );
    expect(devices.map((d) => [d.id, d.index, d.name, d.pciAddress, d.uuid, d.vramTotalBytes])).toEqual([
      ['gpu-0', 0, '', null, null, null],
      ['gpu-1', 1, 'NVIDIA H100', '00000000:2a:00.0', UUID1, 80 * 1024 * MiB],
    ]);
  });

  it('from the node’s count when nothing else names them: gpu-<i>, the product label, GFD’s MiB', () => {
    const n = node('n1', '10.0.0.1', { 'nvidia.com/gpu.product': 'NVIDIA-L4', 'nvidia.com/gpu.memory': '23034' });
    expect(countedDevices(n, 2).map((d) => [d.id, d.name, d.vramTotalBytes, d.pciAddress])).toEqual([
      ['gpu-0', 'NVIDIA L4', 23034 * MiB, null],
      ['gpu-1', 'NVIDIA L4', 23034 * MiB, null],
    ]);
  });

  it('from DCGM’s labels when no DRA slice names them', () => {
    const grouped = groupDcgm({ DCGM_FI_DEV_GPU_UTIL: [sample('DCGM_FI_DEV_GPU_UTIL', { Hostname: 'n1', gpu: '0', UUID: UUID0, modelName: 'NVIDIA L4', pci_bus_id: '00000000:18:00.0' }, '40')] }, [node('n1', '10.0.0.1')]);
    expect(dcgmDevices(grouped.get('n1')).map((d) => [d.id, d.name, d.uuid, d.pciAddress])).toEqual([['gpu-0', 'NVIDIA L4', UUID0, '00000000:18:00.0']]);
  });
});

describe('DCGM figures', () => {
  const nodes = [node('n1', '10.0.0.1'), node('n2', '10.0.0.2')];
  const devices = () =>
    draDevices(
      [
        slice('n1', [
          { name: 'gpu-0', attributes: { index: { int: 0 }, uuid: { string: UUID0 } }, memory: '1000Mi' },
          { name: 'gpu-1', attributes: { index: { int: 1 }, uuid: { string: UUID1 } }, memory: '1000Mi' },
        ]),
      ],
      new Set(['gpu.nvidia.com']),
      'n1',
      quantity,
    );

  it('go to the GPU with the sample’s UUID (else its index) on the node its Hostname or instance address names', () => {
    const grouped = groupDcgm(
      {
        // By UUID, whatever the index says; the second by the node's address in `instance`.
        DCGM_FI_DEV_GPU_UTIL: [sample('DCGM_FI_DEV_GPU_UTIL', { Hostname: 'n1', gpu: '7', UUID: UUID1 }, '30'), sample('DCGM_FI_DEV_GPU_UTIL', { instance: '10.0.0.1:9400', gpu: '0' }, '10')],
        DCGM_FI_DEV_FB_USED: [sample('DCGM_FI_DEV_FB_USED', { Hostname: 'n1', UUID: UUID0 }, '250'), sample('DCGM_FI_DEV_FB_USED', { Hostname: 'n1', UUID: UUID1 }, '500')],
        DCGM_FI_DEV_FB_FREE: [sample('DCGM_FI_DEV_FB_FREE', { Hostname: 'n1', UUID: UUID0 }, '750'), sample('DCGM_FI_DEV_FB_FREE', { Hostname: 'n1', UUID: UUID1 }, '1500')],
        DCGM_FI_PROF_DRAM_ACTIVE: [sample('DCGM_FI_PROF_DRAM_ACTIVE', { Hostname: 'n1', UUID: UUID0 }, '0.125')],
        // Another node's sample, and one of no node here: neither lands on n1.
        DCGM_FI_DEV_GPU_TEMP: [],
      } as never,
      nodes,
    );
    const d = devices();
    applyDcgm(d, grouped.get('n1'));
    expect(d.map((x) => [x.computeUsagePercent, x.vramUsedBytes, x.vramTotalBytes, x.vramUsagePercent, x.vramBandwidthPercent])).toEqual([
      [10, 250 * MiB, 1000 * MiB, 25, 12.5],
      [30, 500 * MiB, 2000 * MiB, 25, null],
    ]);
    expect(meanUtilisation(d)).toBe(20);
    expect(vramUsage(d)).toBe(25);
    expect(deviceMetrics(d)).toEqual(['computeUsagePercent', 'vramBandwidthPercent', 'vramTotalBytes', 'vramUsagePercent', 'vramUsedBytes']);
  });

  it('refuse what is not a figure: NaN, negative, a ratio above 1, utilisation past 100 is 100; a sample of no node or no GPU is dropped', () => {
    const grouped = groupDcgm(
      {
        DCGM_FI_DEV_GPU_UTIL: [sample('DCGM_FI_DEV_GPU_UTIL', { Hostname: 'n1', UUID: UUID0 }, 'NaN'), sample('DCGM_FI_DEV_GPU_UTIL', { Hostname: 'n1', UUID: UUID1 }, '250'), sample('DCGM_FI_DEV_GPU_UTIL', { Hostname: 'elsewhere', gpu: '0' }, '99')],
        DCGM_FI_DEV_FB_USED: [sample('DCGM_FI_DEV_FB_USED', { Hostname: 'n1', UUID: UUID0 }, '-5'), sample('DCGM_FI_DEV_FB_USED', { Hostname: 'n1', gpu: '9' }, '5')],
        DCGM_FI_PROF_DRAM_ACTIVE: [sample('DCGM_FI_PROF_DRAM_ACTIVE', { Hostname: 'n1', UUID: UUID1 }, '7')],
      },
      nodes,
    );
    const d = devices();
    applyDcgm(d, grouped.get('n1'));
    expect(d.map((x) => [x.computeUsagePercent, x.vramUsedBytes, x.vramTotalBytes, x.vramBandwidthPercent])).toEqual([
      [null, null, 1000 * MiB, null],
      [100, null, 1000 * MiB, null],
    ]);
    expect(grouped.has('elsewhere')).toBe(false);
    expect(vramUsage(d)).toBeNull();
    expect(deviceMetrics(d)).toEqual(['computeUsagePercent', 'vramTotalBytes']);
  });
});
