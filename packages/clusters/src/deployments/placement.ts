import type { Accelerator, PlacementAnswer, PlacementRow } from '../api/deployments';

/**
 * Placement before anything is applied (issue 28): from what the cluster's nodes really offer
 * (allocatable minus what live pods already request, per accelerator resource; DRA devices of
 * ResourceSlices minus the allocated ones where a node has no extended resource), decide whether
 * every model-server pod fits, and where. Pure: the caller reads the cluster (and the host reports
 * of the workers ironlens booted) and hands the facts in, already shape-checked.
 */

/** A node as placement sees it. */
export interface NodeFacts {
  name: string;
  ready: boolean;
  unschedulable: boolean;
  taints: Array<{ key: string; effect: string }>;
  labels: Record<string, string>;
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  addresses: string[];
}

/** A pod bound to a node, with the sum of its containers' requests per resource. */
export interface PodFacts {
  nodeName: string | null;
  /** `Succeeded`/`Failed` pods hold nothing. */
  phase: string;
  requests: Record<string, number>;
}

/** One DRA device of a ResourceSlice. */
export interface DeviceFacts {
  node: string;
  driver: string;
  pool: string;
  name: string;
  product: string | null;
}

/** One allocated DRA device (a ResourceClaim's allocation result). */
export interface AllocatedDevice {
  driver: string;
  pool: string;
  device: string;
}

/** A machine ironlens booted that joined this cluster, as its host report describes it (issue 24). */
export interface ReportedWorker {
  workerId: string;
  /** The address it reported (the bootstrap names its node after it, or the node lists it). */
  address: string | null;
  accelerators: Array<{ vendor: string; model: string; pciId: string | null; count: number }>;
}

export interface ClusterFacts {
  nodes: NodeFacts[];
  pods: PodFacts[];
  devices: DeviceFacts[];
  allocated: AllocatedDevice[];
  workers: ReportedWorker[];
}

/** One kind of model-server pod: `count` pods each needing `devices` accelerators on one node. */
export interface PodGroup {
  role: string;
  count: number;
  devices: number;
}

export interface PlacementRequest {
  accelerator: Accelerator;
  groups: PodGroup[];
  node: string | null;
  gpuProduct: string | null;
}

export interface AcceleratorSpec {
  /** Extended resources, in preference order (a node offers one of them). */
  resources: string[];
  /** GFD-style product label. */
  productLabel: string | null;
  /** DRA driver (DeviceClass name) when a node offers no extended resource. */
  draDriver: string | null;
  /** PCI vendor id of the host report's accelerators. */
  pciVendor: string | null;
  vendorWord: string | null;
}

export const ACCELERATOR_SPECS: Record<Accelerator, AcceleratorSpec> = {
  nvidia: { resources: ['nvidia.com/gpu'], productLabel: 'nvidia.com/gpu.product', draDriver: 'gpu.nvidia.com', pciVendor: '10de', vendorWord: 'nvidia' },
  intel: { resources: ['gpu.intel.com/xe', 'gpu.intel.com/i915'], productLabel: 'gpu.intel.com/product', draDriver: 'gpu.intel.com', pciVendor: '8086', vendorWord: 'intel' },
  cpu: { resources: [], productLabel: null, draDriver: null, pciVendor: null, vendorWord: null },
};

/** Taints a model-server pod tolerates (the accelerator's own, as GPU node pools taint themselves). */
export function toleratedTaintKeys(accelerator: Accelerator): string[] {
  return ACCELERATOR_SPECS[accelerator].resources;
}

const count = (q: string | undefined): number => {
  if (q === undefined) return 0;
  const n = Number(q);
  return Number.isInteger(n) && n >= 0 ? n : 0;
};

/** The node of a booted worker: named from its address by the bootstrap's inventory, or listing that address. */
function workerOf(node: NodeFacts, workers: ReportedWorker[]): ReportedWorker | null {
  for (const w of workers) {
    if (!w.address) continue;
    // The bootstrap's inventory names a node after its address (`10.0.0.1` → `10-0-0-1`).
    const named = w.address.toLowerCase().replace(/\./g, '-');
    if (node.name === named || node.addresses.includes(w.address)) return w;
  }
  return null;
}

function reportedCount(w: ReportedWorker, spec: AcceleratorSpec): { n: number; product: string | null } {
  let n = 0;
  let product: string | null = null;
  for (const a of w.accelerators) {
    const byPci = a.pciId ? a.pciId.toLowerCase().startsWith(`${spec.pciVendor}:`) : false;
    const byWord = spec.vendorWord ? a.vendor.toLowerCase().includes(spec.vendorWord) : false;
    if (byPci || (!a.pciId && byWord)) {
      n += a.count;
      product ??= a.model;
    }
  }
  return { n, product };
}

/**
 * One row per node that offers (or, by its host report, should offer) the accelerator: what it
 * has, what live pods request, what is free, and a mismatch with the host report's likely cause.
 */
export function acceleratorRows(facts: ClusterFacts, accelerator: Accelerator): PlacementRow[] {
  const spec = ACCELERATOR_SPECS[accelerator];
  if (accelerator === 'cpu') return [];
  const rows: PlacementRow[] = [];
  for (const n of facts.nodes) {
    const resource = spec.resources.find((r) => r in n.allocatable || r in n.capacity) ?? null;
    const w = workerOf(n, facts.workers);
    const reported = w ? reportedCount(w, spec) : null;
    let allocatable = 0;
    let requested = 0;
    let capacity = 0;
    let product = spec.productLabel ? (n.labels[spec.productLabel] ?? null) : null;
    let via: string | null = resource;
    if (resource) {
      allocatable = count(n.allocatable[resource]);
      capacity = count(n.capacity[resource]);
      for (const p of facts.pods) if (p.nodeName === n.name && p.phase !== 'Succeeded' && p.phase !== 'Failed') requested += p.requests[resource] ?? 0;
    } else if (spec.draDriver) {
      const devices = facts.devices.filter((d) => d.node === n.name && d.driver === spec.draDriver);
      if (devices.length) {
        via = `${spec.draDriver} (DRA)`;
        allocatable = devices.length;
        capacity = devices.length;
        const names = new Set(devices.map((d) => `${d.pool}/${d.name}`));
        requested = facts.allocated.filter((a) => a.driver === spec.draDriver && names.has(`${a.pool}/${a.device}`)).length;
        product ??= devices.find((d) => d.product)?.product ?? null;
      }
    }
    if (!via && !(reported && reported.n > 0)) continue;
    let mismatch: string | null = null;
    if (reported && reported.n > 0) {
      if (capacity === 0) mismatch = `the host report has ${reported.n} GPU(s) but the node offers none: no device plugin (or DRA driver) for them`;
      else if (capacity < reported.n) mismatch = `the host report has ${reported.n} GPU(s) but the node offers ${capacity}: an unhealthy GPU, or one its device plugin does not see`;
      else if (allocatable < capacity) mismatch = `${capacity - allocatable} of the node's ${capacity} GPU(s) are not allocatable: marked unhealthy by the device plugin`;
    } else if (allocatable < capacity) {
      mismatch = `${capacity - allocatable} of the node's ${capacity} GPU(s) are not allocatable: marked unhealthy by the device plugin`;
    }
    rows.push({
      node: n.name,
      product,
      resource: via,
      allocatable,
      requested,
      free: Math.max(0, allocatable - requested),
      reported: w && reported ? { workerId: w.workerId, accelerators: reported.n, product: reported.product } : null,
      mismatch,
    });
  }
  return rows.sort((a, b) => a.node.localeCompare(b.node));
}

/** Why a node cannot take model-server pods at all (null when it can). */
export function ineligible(n: NodeFacts, accelerator: Accelerator, pins: { node: string | null; gpuProduct: string | null }): string | null {
  if (!n.ready) return 'not Ready';
  if (n.unschedulable) return 'cordoned';
  const tolerated = new Set(toleratedTaintKeys(accelerator));
  const taint = n.taints.find((t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !tolerated.has(t.key));
  if (taint) return `tainted ${taint.key}:${taint.effect}`;
  if (pins.node && n.name !== pins.node) return 'not the pinned node';
  const label = ACCELERATOR_SPECS[accelerator].productLabel;
  if (pins.gpuProduct && label && n.labels[label] !== pins.gpuProduct) return 'not the pinned GPU product';
  return null;
}

export type PlacementResult = { ok: true; answer: PlacementAnswer } | { ok: false; answer: PlacementAnswer; detail: string };

/**
 * Fits every pod of every group on one node each (a replica's tensor-parallel ranks share a node),
 * largest first, each on the eligible node with the least free accelerators that still holds it
 * (ties by name), and says whether all fit. The answer's rows are the eligible nodes' free
 * accelerators before this deployment.
 */
export function place(facts: ClusterFacts, req: PlacementRequest): PlacementResult {
  const pins = { node: req.node, gpuProduct: req.gpuProduct };
  const spec = ACCELERATOR_SPECS[req.accelerator];
  const needed = req.groups.reduce((s, g) => s + g.count * g.devices, 0);
  const eligibleNames = new Set(facts.nodes.filter((n) => ineligible(n, req.accelerator, pins) === null).map((n) => n.name));
  const answer: PlacementAnswer = { accelerator: req.accelerator, resource: spec.resources[0] ?? null, needed, assignments: [], nodes: [], pins };
  if (req.node && !facts.nodes.some((n) => n.name === req.node)) return { ok: false, answer, detail: `the pinned node ${req.node} is not in the cluster` };

  if (req.accelerator === 'cpu') {
    const nodes = [...eligibleNames].sort();
    if (!nodes.length) return { ok: false, answer, detail: 'no Ready, schedulable node can take the model servers' };
    let i = 0;
    for (const g of req.groups) for (let r = 0; r < g.count; r++) answer.assignments.push({ role: g.role, replica: r, node: nodes[i++ % nodes.length], devices: 0 });
    return { ok: true, answer };
  }

  const rows = acceleratorRows(facts, req.accelerator);
  answer.nodes = rows.filter((r) => eligibleNames.has(r.node));
  const free = new Map(answer.nodes.map((r) => [r.node, r.free]));
  const pods = req.groups.flatMap((g) => Array.from({ length: g.count }, (_, replica) => ({ role: g.role, replica, devices: g.devices })));
  pods.sort((a, b) => b.devices - a.devices || a.role.localeCompare(b.role) || a.replica - b.replica);
  const missing: string[] = [];
  for (const p of pods) {
    const candidates = [...free.entries()].filter(([, f]) => f >= p.devices).sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]));
    const pick = candidates[0];
    if (!pick) {
      missing.push(`${p.role} replica ${p.replica} (${p.devices})`);
      continue;
    }
    free.set(pick[0], pick[1] - p.devices);
    answer.assignments.push({ role: p.role, replica: p.replica, node: pick[0], devices: p.devices });
  }
  answer.assignments.sort((a, b) => a.role.localeCompare(b.role) || a.replica - b.replica);
  if (!missing.length) return { ok: true, answer };
  const where = answer.nodes.length
    ? answer.nodes.map((r) => `${r.node}${r.product ? ` (${r.product})` : ''} ${r.free} of ${r.allocatable} free`).join('; ')
    : `no eligible node offers ${spec.resources.join(' or ')}${spec.draDriver ? ` or ${spec.draDriver} devices` : ''}`;
  const shape = req.groups.map((g) => `${g.count} ${g.role} × ${g.devices}`).join(' + ');
  return {
    ok: false,
    answer,
    detail: `${needed} ${req.accelerator} accelerator(s) needed (${shape}, each pod's on one node) do not fit: no room for ${missing.join(', ')}; free: ${where}`,
  };
}
