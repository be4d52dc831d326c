/**
 * GPU node fixtures shaped like real clusters show them:
 * - NVIDIA nodes: `nvidia.com/gpu` extended resource (device plugin), GPU Feature
 *   Discovery labels (`nvidia.com/gpu.product`, `.memory` in MiB, `.count`, `.family`,
 *   `cuda.driver.*`, ...) and NFD's `feature.node.kubernetes.io/pci-10de.present`.
 * - Intel nodes: `gpu.intel.com/i915` (Flex, i915 driver) or `gpu.intel.com/xe`
 *   (Max, xe driver) extended resources, with the Intel NFD rule labels
 *   (`gpu.intel.com/device-id.<class>-<id>.present`, `family`, `product`, `device.count`)
 *   and the fractional-resource labels (`memory.max`, `millicores`, `tiles`).
 * - One control-plane node with `node-role.kubernetes.io/control-plane` and its
 *   NoSchedule taint.
 * - DRA: DeviceClasses `gpu.nvidia.com` and `gpu.intel.com` and one ResourceSlice
 *   per GPU node (resource.k8s.io/v1, devices with attributes and capacity).
 *
 * Size: 'test' = 3 nodes (control plane, NVIDIA, Intel); 'bench' = 1,000 nodes;
 * or any number >= 1 (node 0 is the control plane, then a fixed NVIDIA/Intel mix).
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';

export type FixtureSize = 'test' | 'bench' | number;

export function nodeCount(size: FixtureSize): number {
  if (size === 'test') return 3;
  if (size === 'bench') return 1000;
  if (!Number.isInteger(size) || size < 0) throw new Error(`fixture size must be 'test', 'bench' or an integer >= 0, got ${size}`);
  return size;
}

export interface GpuModel {
  vendor: 'nvidia' | 'intel';
  /** Label value, as GFD / the Intel NFD rules write it. */
  product: string;
  count: number;
  /** Per-device memory, MiB (GFD's unit for nvidia.com/gpu.memory). */
  memoryMiB: number;
  family: string;
  machine: string;
  cpu: number;
  memoryGi: number;
  // NVIDIA
  computeMajor?: number;
  computeMinor?: number;
  architecture?: string;
  // Intel
  driver?: 'i915' | 'xe';
  pciId?: string;
  tiles?: number;
}

export const GPU_MODELS: Record<string, GpuModel> = {
  h100: {
    vendor: 'nvidia', product: 'NVIDIA-H100-80GB-HBM3', count: 8, memoryMiB: 81559, family: 'hopper',
    machine: 'DGX-H100', cpu: 224, memoryGi: 2015, computeMajor: 9, computeMinor: 0, architecture: 'Hopper',
  },
  a100: {
    vendor: 'nvidia', product: 'NVIDIA-A100-SXM4-40GB', count: 8, memoryMiB: 40960, family: 'ampere',
    machine: 'DGX-A100', cpu: 256, memoryGi: 1007, computeMajor: 8, computeMinor: 0, architecture: 'Ampere',
  },
  l4: {
    vendor: 'nvidia', product: 'NVIDIA-L4', count: 1, memoryMiB: 23034, family: 'ada-lovelace',
    machine: 'g2-standard-8', cpu: 8, memoryGi: 32, computeMajor: 8, computeMinor: 9, architecture: 'Ada Lovelace',
  },
  max1550: {
    vendor: 'intel', product: 'Max_1550', count: 4, memoryMiB: 131072, family: 'Max_Series', machine: 'Intel-Max-1550-x4',
    cpu: 112, memoryGi: 1024, driver: 'xe', pciId: '0b48', tiles: 2,
  },
  flex170: {
    vendor: 'intel', product: 'Flex_170', count: 1, memoryMiB: 16384, family: 'Flex_Series', machine: 'Intel-Flex-170',
    cpu: 64, memoryGi: 256, driver: 'i915', pciId: '56c0', tiles: 1,
  },
};

export interface FixtureNode {
  name: string;
  ip: string;
  role: 'control-plane' | 'gpu' | 'worker';
  model?: GpuModel;
}

/** The deterministic node plan for a size: node 0 control plane, then the GPU mix. */
/**
 * Node addresses come from 198.18.0.0/15 (RFC 2544, set aside for benchmarking):
 * kube-apiserver only proxies to global-unicast node addresses, so 127.x cannot be
 * used. Nothing ever dials them: the API server's egress goes through the
 * FakeKonnectivityServer on a Unix socket, which splices to loopback listeners.
 * `block` (0..31) separates successive fixture loads into their own /21.
 */
export function planNodes(size: FixtureSize, opts: { gpu?: boolean; block?: number } = {}): FixtureNode[] {
  const n = nodeCount(size);
  const gpu = opts.gpu ?? true;
  const block = opts.block ?? 0;
  if (n > 2000) throw new Error('at most 2,000 fixture nodes per load');
  const mix = ['h100', 'max1550', 'a100', 'h100', 'l4', 'flex170', 'a100', 'h100'];
  const out: FixtureNode[] = [];
  for (let i = 0; i < n; i++) {
    const third = block * 8 + Math.floor(i / 250);
    const ip = `198.${18 + Math.floor(third / 256)}.${third % 256}.${(i % 250) + 1}`;
    if (i === 0) {
      out.push({ name: 'control-plane-0', ip, role: 'control-plane' });
      continue;
    }
    if (!gpu) {
      out.push({ name: `worker-${i}`, ip, role: 'worker' });
      continue;
    }
    const model = GPU_MODELS[mix[(i - 1) % mix.length]];
    const name = `${model.vendor === 'nvidia' ? 'gpu-nv' : 'gpu-intel'}-${String(i).padStart(4, '0')}`;
    out.push({ name, ip, role: 'gpu', model });
  }
  return out;
}

const GFD_TIMESTAMP = '1767225600'; // fixed so fixtures are reproducible

function baseLabels(name: string): Record<string, string> {
  return {
    'kubernetes.io/hostname': name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': 'amd64',
    type: 'kwok', // kwok's convention for fake nodes
  };
}

export function gpuLabels(m: GpuModel): Record<string, string> {
  if (m.vendor === 'nvidia') {
    return {
      'feature.node.kubernetes.io/pci-10de.present': 'true',
      'nvidia.com/gpu.present': 'true',
      'nvidia.com/gpu.deploy.device-plugin': 'true',
      'nvidia.com/gpu.deploy.gpu-feature-discovery': 'true',
      'nvidia.com/gpu.deploy.dcgm-exporter': 'true',
      'nvidia.com/gpu.product': m.product,
      'nvidia.com/gpu.memory': String(m.memoryMiB),
      'nvidia.com/gpu.count': String(m.count),
      'nvidia.com/gpu.family': m.family,
      'nvidia.com/gpu.machine': m.machine,
      'nvidia.com/gpu.compute.major': String(m.computeMajor),
      'nvidia.com/gpu.compute.minor': String(m.computeMinor),
      'nvidia.com/gpu.mode': 'compute',
      'nvidia.com/gpu.replicas': '1',
      'nvidia.com/gpu.sharing-strategy': 'none',
      'nvidia.com/mig.capable': String(m.family !== 'ada-lovelace'),
      'nvidia.com/mig.strategy': 'single',
      'nvidia.com/cuda.driver-version.major': '570',
      'nvidia.com/cuda.driver-version.minor': '133',
      'nvidia.com/cuda.driver-version.revision': '20',
      'nvidia.com/cuda.driver-version.full': '570.133.20',
      'nvidia.com/cuda.driver.major': '570',
      'nvidia.com/cuda.driver.minor': '133',
      'nvidia.com/cuda.driver.rev': '20',
      'nvidia.com/cuda.runtime-version.major': '12',
      'nvidia.com/cuda.runtime-version.minor': '8',
      'nvidia.com/cuda.runtime.major': '12',
      'nvidia.com/cuda.runtime.minor': '8',
      'nvidia.com/gfd.timestamp': GFD_TIMESTAMP,
    };
  }
  const cls = m.driver === 'xe' ? '0380' : '0300';
  return {
    'intel.feature.node.kubernetes.io/gpu': 'true',
    [`gpu.intel.com/device-id.${cls}-${m.pciId}.present`]: 'true',
    [`gpu.intel.com/device-id.${cls}-${m.pciId}.count`]: String(m.count),
    'gpu.intel.com/device.count': String(m.count),
    'gpu.intel.com/family': m.family,
    'gpu.intel.com/product': m.product,
    'gpu.intel.com/cards': Array.from({ length: m.count }, (_, i) => `card${i}`).join('.'),
    'gpu.intel.com/gpu-numbers': Array.from({ length: m.count }, (_, i) => String(i)).join('.'),
    'gpu.intel.com/memory.max': String(m.memoryMiB * 2 ** 20 * m.count),
    'gpu.intel.com/millicores': String(1000 * m.count),
    'gpu.intel.com/tiles': String((m.tiles ?? 1) * m.count),
  };
}

/** Node capacity as the kubelet + device plugin report it. */
export function nodeCapacity(node: FixtureNode): Record<string, string> {
  const m = node.model;
  const cap: Record<string, string> = {
    cpu: String(m?.cpu ?? (node.role === 'control-plane' ? 8 : 32)),
    memory: `${(m?.memoryGi ?? (node.role === 'control-plane' ? 32 : 128)) * 1024 * 1024}Ki`,
    pods: '110',
    'ephemeral-storage': `${480 * 1024 * 1024}Ki`,
    'hugepages-1Gi': '0',
    'hugepages-2Mi': '0',
  };
  if (m?.vendor === 'nvidia') cap['nvidia.com/gpu'] = String(m.count);
  if (m?.vendor === 'intel') {
    // The Intel plugin advertises one resource per driver; shared-dev-num (here 1) multiplies it.
    cap[`gpu.intel.com/${m.driver}`] = String(m.count);
    cap['gpu.intel.com/millicores'] = String(1000 * m.count);
    cap['gpu.intel.com/memory.max'] = String(m.memoryMiB * 2 ** 20 * m.count);
    cap['gpu.intel.com/tiles'] = String((m.tiles ?? 1) * m.count);
  }
  return cap;
}

/** Allocatable = capacity minus a kubelet-like system reservation. */
function allocatable(cap: Record<string, string>): Record<string, string> {
  const out = { ...cap };
  out.cpu = `${Number(cap.cpu) * 1000 - 500}m`;
  const memKi = Number(cap.memory.replace('Ki', ''));
  out.memory = `${memKi - 1024 * 1024}Ki`;
  return out;
}

export function nodeObject(node: FixtureNode, kubeletPort: number, kubeletVersion: string): V1Node {
  const labels = baseLabels(node.name);
  let taints: V1Taint[] | undefined;
  if (node.role === 'control-plane') {
    labels['node-role.kubernetes.io/control-plane'] = '';
    labels['node.kubernetes.io/exclude-from-external-load-balancers'] = '';
    taints = [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }];
  }
  if (node.model) Object.assign(labels, gpuLabels(node.model), { 'node.kubernetes.io/instance-type': node.model.machine });
  const cap = nodeCapacity(node);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: node.name,
      labels,
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'kwok.x-k8s.io/node': 'fake',
      },
    },
    spec: { taints },
    status: {
      addresses: [
        { type: 'InternalIP', address: node.ip },
        { type: 'Hostname', address: node.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
      capacity: cap,
      allocatable: allocatable(cap),
      nodeInfo: {
        architecture: 'amd64',
        bootID: '',
        containerRuntimeVersion: 'containerd://2.1.4',
        kernelVersion: '6.8.0-60-generic',
        kubeProxyVersion: '',
        kubeletVersion,
        machineID: '',
        operatingSystem: 'linux',
        osImage: 'Ubuntu 24.04.2 LTS',
        systemUUID: '',
      },
    },
  } as V1Node;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: unknown;
  [k: string]: unknown;
}

export const DRA_DRIVERS = { nvidia: 'gpu.nvidia.com', intel: 'gpu.intel.com' } as const;

export function deviceClasses(): KubeObject[] {
  return Object.values(DRA_DRIVERS).map((driver) => ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'DeviceClass',
    metadata: { name: driver },
    spec: { selectors: [{ cel: { expression: `device.driver == '${driver}'` } }] },
  }));
}

/**
 * PCI bus numbers of an 8-GPU HGX board (a DGX H100's), in device order: the NVIDIA DRA driver's
 * `pcieBusID` and DCGM's `pci_bus_id` label, in NVML's form `00000000:<bus>:00.0`.
 */
const NVIDIA_BUSES = ['18', '2a', '3a', '5d', '9a', 'ab', 'ba', 'db'];

/** The PCI bus id NVML gives GPU `i` of a fixture node (the same on every node: each has its own PCI tree). */
export function nvidiaPciBusId(i: number): string {
  return `00000000:${NVIDIA_BUSES[i % NVIDIA_BUSES.length]}:00.0`;
}

/** The UUID NVML gives GPU `i` of `node`: the DRA driver's `uuid` attribute and DCGM's `UUID` label. */
export function nvidiaGpuUuid(node: string, i: number): string {
  return `GPU-${uuid(node, i)}`;
}

function uuid(node: string, i: number): string {
  let h = 0;
  for (const ch of `${node}/${i}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
  const hex = (h.toString(16).padStart(8, '0') + (h ^ 0x9e3779b9).toString(16).padStart(8, '0')).repeat(2);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** One ResourceSlice per GPU node, pool named after the node, like the NVIDIA/Intel DRA drivers publish. */
export function resourceSlice(node: FixtureNode): KubeObject | undefined {
  const m = node.model;
  if (!m) return undefined;
  const driver = DRA_DRIVERS[m.vendor];
  const devices = Array.from({ length: m.count }, (_, i) => {
    const attributes: Record<string, unknown> =
      m.vendor === 'nvidia'
        ? {
            type: { string: 'gpu' },
            uuid: { string: nvidiaGpuUuid(node.name, i) },
            pcieBusID: { string: nvidiaPciBusId(i) },
            productName: { string: m.product.replace(/-/g, ' ') },
            brand: { string: 'Nvidia' },
            architecture: { string: m.architecture },
            driverVersion: { version: '570.133.20' },
            cudaDriverVersion: { version: '12.8.0' },
            cudaComputeCapability: { version: `${m.computeMajor}.${m.computeMinor}.0` },
            index: { int: i },
            minor: { int: i },
          }
        : {
            type: { string: 'gpu' },
            uid: { string: `0000-${(0x18 + i).toString(16).padStart(2, '0')}-00-0-0x${m.pciId}` },
            model: { string: m.product },
            family: { string: m.family },
            pciId: { string: `0x${m.pciId}` },
            driver: { string: m.driver },
            index: { int: i },
          };
    return {
      name: `gpu-${i}`,
      attributes,
      capacity: { memory: { value: `${m.memoryMiB}Mi` } },
    };
  });
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name: `${node.name}-${driver}`, labels: { 'ironlens.dev/fixture': 'gpu' } },
    spec: {
      driver,
      nodeName: node.name,
      pool: { name: node.name, generation: 1, resourceSliceCount: 1 },
      devices,
    },
  };
}
