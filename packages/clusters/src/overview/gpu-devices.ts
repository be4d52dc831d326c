import type { V1Node } from '@kubernetes/client-node';
import type { ResourceSliceLike } from '../adapters/kube.adapter';
import type { GpuDevice } from '../api/clusters';

/**
 * The GPUs of each node in Lens' `GpuDeviceSummary` shape (issue 33), from what the cluster says
 * and nothing invented: identities from the DRA ResourceSlices, else DCGM's series, else the
 * node's GPU count (extended resources) with its product label; figures from DCGM. Every value
 * comes from a cluster (or its Prometheus) and is checked here before it reaches the answer:
 * numbers finite and in range, text of bounded length and a known grammar.
 */

/** One sample of a Prometheus instant vector, as the API answers it. */
export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** The DCGM series the overview reads (bare selectors: any Prometheus answers them). */
export const DCGM_SERIES = ['DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_FB_FREE', 'DCGM_FI_PROF_DRAM_ACTIVE'] as const;
export type DcgmSeries = (typeof DCGM_SERIES)[number];

/** The per-GPU keys that are figures (what `deviceMetrics` lists when a GPU has one). */
export const DEVICE_METRIC_KEYS = [
  'computeUsagePercent',
  'vramTotalBytes',
  'vramUsedBytes',
  'vramUsagePercent',
  'vramReadThroughputBytes',
  'vramWriteThroughputBytes',
  'vramTotalThroughputBytes',
  'vramBandwidthPercent',
] as const;

const MiB = 2 ** 20;
/** A PCI address: NVML's `00000000:18:00.0` or the short `0000:18:00.0`. */
const PCI_ADDRESS = /^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;
/** A GPU UUID as NVML writes it (`GPU-` and a UUID), or a plain UUID. */
const GPU_UUID = /^(GPU-|MIG-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A product name: printable ASCII, bounded. */
const PRODUCT = /^[\x20-\x7e]{1,128}$/;
const DEVICE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export const round1 = (v: number) => Math.round(v * 10) / 10;
/** A percentage as answered: rounded to 0.1, within 0–100. */
export const percent = (v: number) => round1(Math.min(100, Math.max(0, v)));

const text = (v: unknown, re: RegExp): string | null => (typeof v === 'string' && re.test(v) ? v : null);
const finite = (v: unknown): number | null => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
  return Number.isFinite(n) ? n : null;
};

function emptyDevice(index: number, id: string, name: string): GpuDevice {
  return {
    id,
    index,
    name,
    pciAddress: null,
    uuid: null,
    computeUsagePercent: null,
    vramTotalBytes: null,
    vramUsedBytes: null,
    vramUsagePercent: null,
    vramReadThroughputBytes: null,
    vramWriteThroughputBytes: null,
    vramTotalThroughputBytes: null,
    vramBandwidthPercent: null,
  };
}

/** A node's DRA GPU devices (the GPU drivers' ResourceSlices for it), in index order. */
export function draDevices(slices: ResourceSliceLike[], drivers: ReadonlySet<string>, nodeName: string, quantity: (q: unknown) => number): GpuDevice[] {
  const out: GpuDevice[] = [];
  for (const s of slices) {
    if (!drivers.has(s.spec?.driver) || s.spec?.nodeName !== nodeName || !Array.isArray(s.spec.devices)) continue;
    for (const d of s.spec.devices) {
      const a = d.attributes ?? {};
      const index = finite(a.index?.int);
      const i = index !== null && Number.isSafeInteger(index) && index >= 0 ? index : out.length;
      const dev = emptyDevice(i, text(d.name, DEVICE_NAME) ?? `gpu-${i}`, text(a.productName?.string, PRODUCT) ?? text(a.model?.string, PRODUCT) ?? '');
      dev.pciAddress = text(a.pcieBusID?.string, PCI_ADDRESS) ?? text(a.pciAddress?.string, PCI_ADDRESS) ?? text(a.pciBusID?.string, PCI_ADDRESS);
      dev.uuid = text(a.uuid?.string, GPU_UUID);
      const mem = quantity(d.capacity?.memory?.value);
      if (mem > 0) dev.vramTotalBytes = Math.round(mem);
      out.push(dev);
    }
  }
  return out.sort((x, y) => x.index - y.index);
}

/** `count` devices of a node that says only how many it has: `gpu-<i>`, its product label, GFD's per-GPU MiB. */
export function countedDevices(node: V1Node, count: number): GpuDevice[] {
  const labels = node.metadata?.labels ?? {};
  const product = (text(labels['nvidia.com/gpu.product'], PRODUCT) ?? text(labels['gpu.intel.com/product'], PRODUCT) ?? '').replace(/-/g, ' ');
  const mib = finite(labels['nvidia.com/gpu.memory']);
  return Array.from({ length: count }, (_, i) => {
    const d = emptyDevice(i, `gpu-${i}`, product);
    if (mib !== null && mib > 0 && labels['nvidia.com/gpu.product'] !== undefined) d.vramTotalBytes = Math.round(mib * MiB);
    return d;
  });
}

/**
 * Which node a DCGM sample is of: the exporter's `Hostname` (the node name in gpu-operator's
 * deployment), or a relabelled `node` / `kubernetes_node` / `nodename` / `hostname` / `host`;
 * else the host of `instance` when it is a node's name or InternalIP. Null: none of the nodes.
 */
export function sampleNode(metric: Record<string, string>, names: ReadonlySet<string>, byAddress: ReadonlyMap<string, string>): string | null {
  for (const k of ['Hostname', 'node', 'kubernetes_node', 'nodename', 'hostname', 'host']) {
    const v = metric[k];
    if (typeof v === 'string' && names.has(v)) return v;
  }
  const inst = metric.instance;
  if (typeof inst !== 'string') return null;
  const host = inst.startsWith('[') ? inst.slice(1, inst.indexOf(']')) : inst.replace(/:\d+$/, '');
  if (names.has(host)) return host;
  return byAddress.get(host) ?? null;
}

/** The nodes' InternalIPs (then other addresses), for `instance` labels. */
export function nodeAddresses(nodes: V1Node[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of nodes) {
    const name = n.metadata?.name;
    if (!name) continue;
    for (const a of n.status?.addresses ?? []) if (typeof a.address === 'string' && !out.has(a.address)) out.set(a.address, name);
  }
  return out;
}

/** DCGM samples grouped by node, then by series. */
export type DcgmByNode = Map<string, Map<DcgmSeries, PromSample[]>>;

export function groupDcgm(series: Partial<Record<DcgmSeries, PromSample[]>>, nodes: V1Node[]): DcgmByNode {
  const names = new Set(nodes.map((n) => n.metadata?.name ?? '').filter(Boolean));
  const byAddress = nodeAddresses(nodes);
  const out: DcgmByNode = new Map();
  for (const name of DCGM_SERIES) {
    for (const s of series[name] ?? []) {
      if (!s || typeof s.metric !== 'object' || !Array.isArray(s.value)) continue;
      const node = sampleNode(s.metric, names, byAddress);
      if (!node) continue;
      const m = out.get(node) ?? new Map<DcgmSeries, PromSample[]>();
      m.set(name, [...(m.get(name) ?? []), s]);
      out.set(node, m);
    }
  }
  return out;
}

/** A node's devices as DCGM names them (`gpu` index, `UUID`, `modelName`, `pci_bus_id`), when no DRA slice does. */
export function dcgmDevices(samples: Map<DcgmSeries, PromSample[]> | undefined): GpuDevice[] {
  const byIndex = new Map<number, GpuDevice>();
  for (const list of samples?.values() ?? []) {
    for (const s of list) {
      const i = finite(s.metric.gpu);
      if (i === null || !Number.isSafeInteger(i) || i < 0 || i > 4096 || byIndex.has(i)) continue;
      const d = emptyDevice(i, `gpu-${i}`, text(s.metric.modelName, PRODUCT) ?? '');
      d.uuid = text(s.metric.UUID, GPU_UUID);
      d.pciAddress = text(s.metric.pci_bus_id, PCI_ADDRESS);
      byIndex.set(i, d);
    }
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

/**
 * Puts DCGM's figures on a node's devices: a sample belongs to the device with its `UUID`, else
 * to the one with its `gpu` index. Utilisation and framebuffer (MiB) as DCGM reports them; DRAM
 * active is a ratio (×100). VRAM total is DCGM's used + free when it has both, else what the
 * device's identity said (DRA capacity, GFD).
 */
export function applyDcgm(devices: GpuDevice[], samples: Map<DcgmSeries, PromSample[]> | undefined): void {
  if (!samples) return;
  const byUuid = new Map(devices.filter((d) => d.uuid).map((d) => [d.uuid!.toUpperCase(), d]));
  const byIndex = new Map(devices.map((d) => [d.index, d]));
  const target = (m: Record<string, string>): GpuDevice | undefined => {
    const uuid = typeof m.UUID === 'string' ? byUuid.get(m.UUID.toUpperCase()) : undefined;
    if (uuid) return uuid;
    const i = finite(m.gpu);
    return i === null ? undefined : byIndex.get(i);
  };
  const values = (name: DcgmSeries): Array<[GpuDevice, number]> =>
    (samples.get(name) ?? []).flatMap((s) => {
      const d = target(s.metric);
      const v = finite(s.value[1]);
      return d && v !== null && v >= 0 ? [[d, v] as [GpuDevice, number]] : [];
    });
  for (const [d, v] of values('DCGM_FI_DEV_GPU_UTIL')) d.computeUsagePercent = percent(v);
  const used = new Map(values('DCGM_FI_DEV_FB_USED'));
  const free = new Map(values('DCGM_FI_DEV_FB_FREE'));
  for (const d of devices) {
    const u = used.get(d);
    const f = free.get(d);
    if (u !== undefined && u < 2 ** 32) d.vramUsedBytes = Math.round(u * MiB);
    if (u !== undefined && f !== undefined && u + f > 0 && u + f < 2 ** 32) d.vramTotalBytes = Math.round((u + f) * MiB);
    if (d.vramUsedBytes !== null && d.vramTotalBytes) d.vramUsagePercent = percent((d.vramUsedBytes / d.vramTotalBytes) * 100);
  }
  for (const [d, v] of values('DCGM_FI_PROF_DRAM_ACTIVE')) if (v <= 1) d.vramBandwidthPercent = percent(v * 100);
}

/** The mean of the devices' utilisation that is known; null when none is. */
export function meanUtilisation(devices: GpuDevice[]): number | null {
  const known = devices.map((d) => d.computeUsagePercent).filter((v): v is number => v !== null);
  return known.length ? round1(known.reduce((a, b) => a + b, 0) / known.length) : null;
}

/** VRAM used of total over the devices that report both; null when none does. */
export function vramUsage(devices: GpuDevice[]): number | null {
  const both = devices.filter((d) => d.vramUsedBytes !== null && d.vramTotalBytes);
  const total = both.reduce((s, d) => s + (d.vramTotalBytes ?? 0), 0);
  return total > 0 ? percent((both.reduce((s, d) => s + (d.vramUsedBytes ?? 0), 0) / total) * 100) : null;
}

/** The figure keys at least one device has, sorted. */
export function deviceMetrics(devices: GpuDevice[]): string[] {
  return DEVICE_METRIC_KEYS.filter((k) => devices.some((d) => d[k] !== null)).sort();
}
