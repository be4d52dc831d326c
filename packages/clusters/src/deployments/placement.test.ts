import { describe, expect, it } from 'vitest';
import { acceleratorRows, type ClusterFacts, type NodeFacts, place, type PodFacts } from './placement';

// Placement before anything is applied (issue 28): facts as a cluster reports them, expectations literal.

function node(name: string, o: Partial<Omit<NodeFacts, 'allocatable'>> & { gpus?: number; allocatable?: number; product?: string; intel?: number } = {}): NodeFacts {
  const capacity: Record<string, string> = { cpu: '64', memory: '512Gi' };
  const allocatable: Record<string, string> = { cpu: '63', memory: '500Gi' };
  const labels: Record<string, string> = { 'kubernetes.io/hostname': name };
  if (o.gpus !== undefined) {
    capacity['nvidia.com/gpu'] = String(o.gpus);
    allocatable['nvidia.com/gpu'] = String(o.allocatable ?? o.gpus);
    labels['nvidia.com/gpu.product'] = o.product ?? 'NVIDIA-H100-80GB-HBM3';
  }
  if (o.intel !== undefined) {
    capacity['gpu.intel.com/xe'] = String(o.intel);
    allocatable['gpu.intel.com/xe'] = String(o.intel);
    labels['gpu.intel.com/product'] = o.product ?? 'Max_1550';
  }
  const { gpus: _g, allocatable: _a, product: _p, intel: _i, ...rest } = o;
  return { name, ready: true, unschedulable: false, taints: [], addresses: [], ...rest, labels: { ...labels, ...o.labels }, capacity, allocatable };
}

const gpuPod = (nodeName: string, n: number, phase = 'Running'): PodFacts => ({ nodeName, phase, requests: { 'nvidia.com/gpu': n } });
const facts = (nodes: NodeFacts[], pods: PodFacts[] = [], extra: Partial<ClusterFacts> = {}): ClusterFacts => ({ nodes, pods, devices: [], allocated: [], workers: [], ...extra });

describe('placement', () => {
  it('subtracts what live pods already request and fits each replica on one node, tightest first', () => {
    const f = facts([node('gpu-a', { gpus: 8 }), node('gpu-b', { gpus: 8 })], [gpuPod('gpu-a', 6), gpuPod('gpu-b', 1), gpuPod('gpu-b', 4, 'Succeeded')]);
    const out = place(f, { accelerator: 'nvidia', groups: [{ role: 'decode', count: 2, devices: 2 }], node: null, gpuProduct: null });
    expect(out.ok).toBe(true);
    expect(out.answer.needed).toBe(4);
    expect(out.answer.assignments).toEqual([
      { role: 'decode', replica: 0, node: 'gpu-a', devices: 2 },
      { role: 'decode', replica: 1, node: 'gpu-b', devices: 2 },
    ]);
    expect(out.answer.nodes.map((r) => [r.node, r.allocatable, r.requested, r.free])).toEqual([
      ['gpu-a', 8, 6, 2],
      ['gpu-b', 8, 1, 7],
    ]);
  });

  it('refuses what does not fit, naming what is free where — a replica never spans nodes', () => {
    const f = facts([node('gpu-a', { gpus: 8 }), node('gpu-b', { gpus: 8 })], [gpuPod('gpu-a', 5), gpuPod('gpu-b', 5)]);
    const out = place(f, { accelerator: 'nvidia', groups: [{ role: 'decode', count: 1, devices: 4 }], node: null, gpuProduct: null });
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.detail).toBe(
      '4 nvidia accelerator(s) needed (1 decode × 4, each pod\'s on one node) do not fit: no room for decode replica 0 (4); free: gpu-a (NVIDIA-H100-80GB-HBM3) 3 of 8 free; gpu-b (NVIDIA-H100-80GB-HBM3) 3 of 8 free',
    );
    expect(out.answer.nodes.map((r) => r.free)).toEqual([3, 3]);
  });

  it('leaves out nodes that are not Ready, cordoned or tainted, and tolerates the accelerator’s own taint', () => {
    const f = facts([
      node('cp', { gpus: 8, taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] }),
      node('down', { gpus: 8, ready: false }),
      node('cordoned', { gpus: 8, unschedulable: true }),
      node('gpu-pool', { gpus: 2, taints: [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }] }),
    ]);
    const out = place(f, { accelerator: 'nvidia', groups: [{ role: 'decode', count: 1, devices: 2 }], node: null, gpuProduct: null });
    expect(out.ok).toBe(true);
    expect(out.answer.assignments).toEqual([{ role: 'decode', replica: 0, node: 'gpu-pool', devices: 2 }]);
    expect(out.answer.nodes.map((r) => r.node)).toEqual(['gpu-pool']);
  });

  it('honours a GPU product pin and a node pin', () => {
    const f = facts([node('h100', { gpus: 8 }), node('a100', { gpus: 8, product: 'NVIDIA-A100-SXM4-40GB' })]);
    const byProduct = place(f, { accelerator: 'nvidia', groups: [{ role: 'decode', count: 2, devices: 4 }], node: null, gpuProduct: 'NVIDIA-A100-SXM4-40GB' });
    expect(byProduct.answer.assignments.map((a) => a.node)).toEqual(['a100', 'a100']);
    const tooMany = place(f, { accelerator: 'nvidia', groups: [{ role: 'decode', count: 3, devices: 4 }], node: 'h100', gpuProduct: null });
    expect(tooMany.ok).toBe(false);
    expect(tooMany.answer.nodes.map((r) => r.node)).toEqual(['h100']);
    expect(place(f, { accelerator: 'nvidia', groups: [{ role: 'decode', count: 1, devices: 1 }], node: 'nope', gpuProduct: null })).toMatchObject({ ok: false, detail: 'the pinned node nope is not in the cluster' });
  });

  it('fits P/D roles together, largest pods first', () => {
    const f = facts([node('a', { gpus: 4 }), node('b', { gpus: 4 })]);
    const out = place(f, {
      accelerator: 'nvidia',
      groups: [
        { role: 'decode', count: 1, devices: 4 },
        { role: 'prefill', count: 4, devices: 1 },
      ],
      node: null,
      gpuProduct: null,
    });
    expect(out.ok).toBe(true);
    expect(out.answer.assignments).toEqual([
      { role: 'decode', replica: 0, node: 'a', devices: 4 },
      { role: 'prefill', replica: 0, node: 'b', devices: 1 },
      { role: 'prefill', replica: 1, node: 'b', devices: 1 },
      { role: 'prefill', replica: 2, node: 'b', devices: 1 },
      { role: 'prefill', replica: 3, node: 'b', devices: 1 },
    ]);
  });

  it('counts DRA devices where a node offers no extended resource, minus the allocated ones', () => {
    const intel = node('xpu', { labels: { 'gpu.intel.com/product': 'Max_1550' } });
    const f = facts([intel], [], {
      devices: [0, 1, 2, 3].map((i) => ({ node: 'xpu', driver: 'gpu.intel.com', pool: 'xpu', name: `gpu-${i}`, product: 'Max_1550' })),
      allocated: [{ driver: 'gpu.intel.com', pool: 'xpu', device: 'gpu-0' }],
    });
    const rows = acceleratorRows(f, 'intel');
    expect(rows).toEqual([{ node: 'xpu', product: 'Max_1550', resource: 'gpu.intel.com (DRA)', allocatable: 4, requested: 1, free: 3, reported: null, mismatch: null }]);
    expect(place(f, { accelerator: 'intel', groups: [{ role: 'decode', count: 1, devices: 4 }], node: null, gpuProduct: null }).ok).toBe(false);
    expect(place(f, { accelerator: 'intel', groups: [{ role: 'decode', count: 1, devices: 3 }], node: null, gpuProduct: null }).ok).toBe(true);
  });

  it('shows a booted worker’s host report beside its node and flags a mismatch with its likely cause', () => {
    const worker = (address: string, count: number) => ({ workerId: `w-${address}`, address, accelerators: [{ vendor: 'NVIDIA Corporation', model: 'H100 80GB HBM3', pciId: '10de:2330', count }] });
    const f = facts(
      [
        node('10-0-0-1', { gpus: 7 }),
        node('gpu-b', { gpus: 8, allocatable: 7, addresses: ['10.0.0.2'] }),
        node('10-0-0-3'),
        node('10-0-0-4', { gpus: 8 }),
      ],
      [],
      { workers: [worker('10.0.0.1', 8), worker('10.0.0.2', 8), worker('10.0.0.3', 2), worker('10.0.0.4', 8)] },
    );
    const rows = acceleratorRows(f, 'nvidia');
    expect(rows.map((r) => [r.node, r.reported, r.mismatch])).toEqual([
      ['10-0-0-1', { workerId: 'w-10.0.0.1', accelerators: 8, product: 'H100 80GB HBM3' }, 'the host report has 8 GPU(s) but the node offers 7: an unhealthy GPU, or one its device plugin does not see'],
      ['10-0-0-3', { workerId: 'w-10.0.0.3', accelerators: 2, product: 'H100 80GB HBM3' }, 'the host report has 2 GPU(s) but the node offers none: no device plugin (or DRA driver) for them'],
      ['10-0-0-4', { workerId: 'w-10.0.0.4', accelerators: 8, product: 'H100 80GB HBM3' }, null],
      ['gpu-b', { workerId: 'w-10.0.0.2', accelerators: 8, product: 'H100 80GB HBM3' }, "1 of the node's 8 GPU(s) are not allocatable: marked unhealthy by the device plugin"],
    ]);
  });

  it('places CPU model servers on any Ready, schedulable node', () => {
    const f = facts([node('w1'), node('w2', { unschedulable: true })]);
    const out = place(f, { accelerator: 'cpu', groups: [{ role: 'decode', count: 2, devices: 0 }], node: null, gpuProduct: null });
    expect(out.answer.assignments.map((a) => a.node)).toEqual(['w1', 'w1']);
    expect(place(facts([node('w2', { unschedulable: true })]), { accelerator: 'cpu', groups: [{ role: 'decode', count: 1, devices: 0 }], node: null, gpuProduct: null }).ok).toBe(false);
  });
});
