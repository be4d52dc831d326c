import { AppError } from '@ironlens/core';
import type { V1DaemonSet, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type { Kube, ResourceClaimLike, ResourceSliceLike } from '../adapters/kube.adapter';
import type { ComponentStatus, GpuDevice, Hardware, OverviewNode, OverviewResponse } from '../api/clusters';
import { count, isoUtc } from '../shared/domain';
import type { GatewayStatusView } from '../api/gateway';
import type { ClusterRow } from '../registry/cluster.repository';
import { type ClusterAccess, onCluster } from '../registry/cluster-access';
import type { ClusterService } from '../registry/cluster.service';
import { isControlPlane } from './platform.service';
import {
  applyDcgm,
  countedDevices,
  DCGM_SERIES,
  type DcgmSeries,
  dcgmDevices,
  deviceMetrics,
  draDevices,
  groupDcgm,
  meanUtilisation,
  nodeAddresses,
  percent,
  type PromSample,
  sampleNode,
  vramUsage,
} from './gpu-devices';

/** Extended resources that count GPUs, and the accelerator profile they belong to. */
export const GPU_RESOURCES: Record<string, string> = {
  'nvidia.com/gpu': 'nvidia-cuda',
  'gpu.intel.com/i915': 'intel-xpu',
  'gpu.intel.com/xe': 'intel-xpu',
};
/** DRA drivers that publish GPUs, and their profile. */
export const DRA_GPU_DRIVERS: Record<string, string> = { 'gpu.nvidia.com': 'nvidia-cuda', 'gpu.intel.com': 'intel-xpu' };

export type { ComponentStatus, Hardware, OverviewNode, OverviewResponse } from '../api/clusters';

export interface OverviewOptions {
  /** Parallel Summary API calls through the node proxy. */
  summaryConcurrency: number;
  /**
   * A node's Summary is reused for this long; an older one (up to `summaryMaxStaleMs`) is still
   * answered while a background scrape refreshes it, so a polled overview does not wait on
   * every kubelet each time.
   */
  summaryTtlMs: number;
  summaryMaxStaleMs: number;
  summaryTimeoutMs: number;
  /**
   * How long an overview waits, counted from the request's arrival, for Summaries it does not
   * hold yet. Past it the overview answers with the disk figures `null` (unknown) while the
   * scrape goes on in the background and fills the cache for the next call. `0`: never wait.
   */
  summaryBudgetMs: number;
  prometheusTimeoutMs: number;
}

const UNITS: Record<string, number> = {
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
  k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, m: 1e-3, n: 1e-9, u: 1e-6,
};

/**
 * A Kubernetes quantity (`480Gi`, `7500m`, `1e3`) as a number; 0 for anything that is not one
 * (`1.2.3`, `abc`, a value of another type): the answer's figures are always finite numbers (a
 * NaN has no JSON, and the schema's serializer refuses it).
 */
export function quantity(q: unknown): number {
  if (typeof q === 'number') return Number.isFinite(q) ? q : 0;
  if (typeof q !== 'string') return 0;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?\d+)?)([A-Za-z]*)$/.exec(q.trim());
  if (!m) return 0;
  const mult = m[2] ? UNITS[m[2]] : 1;
  const v = mult === undefined ? 0 : Number(m[1]) * mult;
  return Number.isFinite(v) ? v : 0;
}

interface NodeFs {
  capacityBytes: number;
  usedBytes: number;
  availableBytes: number;
}

/** What one kubelet's Summary says of its node: the filesystem, CPU and memory in use (each null when it does not say). */
interface NodeStats {
  fs: NodeFs | null;
  cpuNanoCores: number | null;
  memoryWorkingSetBytes: number | null;
}

const round1 = (v: number) => Math.round(v * 10) / 10;
/** A figure a kubelet reported: a finite, non-negative number, else null. */
const reported = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

function nodeReady(n: V1Node): boolean {
  return !!n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}

/** One cluster's Summaries: the last answer per node, the scrapes in flight, and the queue waiting for a slot. */
interface SummaryCache {
  nodes: Map<string, { at: number; stats: NodeStats | null }>;
  inflight: Map<string, Promise<void>>;
  queue: Array<{ name: string; kube: Kube; done: () => void }>;
  active: number;
  pumpScheduled: boolean;
  /** The last overview that looked at this cluster. */
  usedAt: number;
}

/** How a Service is recognised as the cluster's Prometheus. */
const PROMETHEUS_SELECTORS = ['app.kubernetes.io/name=prometheus', 'operated-prometheus=true', 'app=prometheus'];

/** The shared gateway's status of a record (the gateway feature's `GatewayService`). */
export interface GatewayStatusSource {
  statusOfRecord(row: ClusterRow): Promise<GatewayStatusView>;
}

/**
 * The live overview. Node, GPU and capacity figures come from the node objects (extended
 * resources, GPU Feature Discovery / Intel labels) or DRA ResourceSlices; disk from each
 * kubelet's Summary API through the API server's node proxy; memory use from the cluster's
 * Prometheus through the API server's service proxy. A figure whose source is unavailable is
 * `null`, never 0.
 */
export class OverviewService {
  private readonly summaries = new Map<string, SummaryCache>();

  constructor(
    private readonly access: ClusterAccess,
    private readonly clusters: ClusterService,
    /** The gateway whose status the overview shows (the same source as `GET …/gateway/status`); null: none wired in. */
    private readonly gateway: GatewayStatusSource | null,
    private readonly opts: OverviewOptions,
  ) {}

  /**
   * One read per connection (cluster record version) and object kind in flight: overviews that
   * arrive while a read is on its way share its answer instead of sending their own (200
   * concurrent overviews make one list of each kind, not 200). Nothing is cached past the answer.
   */
  private readonly inflightReads = new WeakMap<Kube, Map<string, Promise<unknown>>>();

  private shared<T>(kube: Kube, kind: string, read: () => Promise<T>): Promise<T> {
    let m = this.inflightReads.get(kube);
    if (!m) {
      m = new Map();
      this.inflightReads.set(kube, m);
    }
    const hit = m.get(kind);
    if (hit) return hit as Promise<T>;
    const map = m;
    const p = read().finally(() => {
      if (map.get(kind) === p) map.delete(kind);
    });
    map.set(kind, p);
    // Every caller awaits (or catches) it; this keeps a rejection nobody waits for from being unhandled.
    p.catch(() => {});
    return p;
  }

  async overview(clusterId: string): Promise<OverviewResponse> {
    try {
      return await this.build(clusterId);
    } catch (e) {
      // A cluster's objects of a shape no Kubernetes API server sends (`"ports": "x"`, a string
      // where a list belongs): a 502 of its own, never a crash and never a stack trace.
      if (e instanceof TypeError || e instanceof RangeError) {
        throw new AppError('cluster_response_invalid', 'the cluster answered with objects of an unexpected shape');
      }
      throw e;
    }
  }

  private async build(clusterId: string): Promise<OverviewResponse> {
    const deadline = Date.now() + this.opts.summaryBudgetMs;
    const row = await this.access.record(clusterId);
    const kube = this.access.kube(row);
    // The gateway's status reads its own objects beside the lists below (shared by the overviews in
    // flight, as the lists are); it reports a cluster it cannot read in its own `error`, so it
    // never fails the overview.
    const gw = this.gateway;
    // A status that fails altogether (its own store reads) is `gateway: null` with the reason in `gatewayError`.
    const gatewayP: Promise<{ gateway: GatewayStatusView | null; gatewayError: string | null }> = gw
      ? this.shared(kube, 'gateway-status', () => gw.statusOfRecord(row)).then(
          (gateway) => ({ gateway, gatewayError: null }),
          (e: unknown) => ({ gateway: null, gatewayError: `the gateway's status could not be read: ${String((e as Error)?.message ?? e).slice(0, 300)}` }),
        )
      : Promise.resolve({ gateway: null, gatewayError: null });
    const serviceList = this.shared(kube, 'services', () => kube.listServices());
    // The Prometheus queries start as soon as the Services are listed, beside the other lists
    // (a failed list is reported below). The chain never rejects: it is awaited only when the
    // lists succeed.
    const memoryP = serviceList
      .then((services) => {
        const p = findPrometheus(services);
        return p ? this.shared(kube, `prometheus:${p.namespace}/${p.name}:${p.port}`, () => this.memoryUse(kube, p)) : null;
      })
      .catch(() => null);
    // DCGM's per-GPU series, beside the memory queries (null: no Prometheus, or it failed).
    const dcgmP = serviceList
      .then((services) => {
        const p = findPrometheus(services);
        return p ? this.shared(kube, `dcgm:${p.namespace}/${p.name}:${p.port}`, () => this.dcgm(kube, p)) : null;
      })
      .catch(() => null);
    const [nodes, namespaces, deployments, daemonSets, statefulSets, pods, slices, claims, services] = await onCluster(() =>
      Promise.all([
        this.shared(kube, 'nodes', () => kube.listNodes()),
        this.shared(kube, 'namespaces', () => kube.listNamespaces()),
        this.shared(kube, 'deployments', () => kube.listDeployments()),
        this.shared(kube, 'daemonsets', () => kube.listDaemonSets()),
        this.shared(kube, 'statefulsets', () => kube.listStatefulSets()),
        this.shared(kube, 'pods', () => kube.listPods({ fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' })),
        this.shared(kube, 'resourceslices', () => kube.listResourceSlices().catch(() => [] as ResourceSliceLike[])),
        this.shared(kube, 'resourceclaims', () => kube.listResourceClaims().catch(() => [] as ResourceClaimLike[])),
        serviceList,
      ]),
    );
    const prometheus = findPrometheus(services);
    // The Summaries this overview lacks are asked for once its own reads are in (on a large
    // cluster their scrape would otherwise slow those reads), within what is left of the budget.
    const [stats, memory, dcgmSeries] = await Promise.all([this.readyStats(row.id, kube, nodes, deadline), memoryP, dcgmP]);
    const memoryPercent = memory?.mean ?? null;
    const disk = sumDisk(stats);
    const dcgm = groupDcgm(dcgmSeries ?? {}, nodes);
    // Each node's own memory use, where a node-exporter sample names it (its name or address in `instance`, `node`…).
    const nodeNames = new Set(nodes.map((n) => n.metadata?.name ?? '').filter(Boolean));
    const addresses = nodeAddresses(nodes);
    const memoryByNode = new Map<string, number>();
    for (const x of memory?.samples ?? []) {
      const node = sampleNode(x.metric, nodeNames, addresses);
      if (node) memoryByNode.set(node, x.pct);
    }
    const gpuSlices = new Set(Object.keys(DRA_GPU_DRIVERS));

    // Per-node GPUs: extended resources first; DRA devices when a node advertises none.
    const draByNode = new Map<string, { byProfile: Record<string, number>; vram: number }>();
    for (const s of slices) {
      const profile = DRA_GPU_DRIVERS[s.spec?.driver];
      const nodeName = s.spec?.nodeName;
      if (!profile || !nodeName) continue;
      const e = draByNode.get(nodeName) ?? { byProfile: {}, vram: 0 };
      for (const d of s.spec.devices ?? []) {
        e.byProfile[profile] = (e.byProfile[profile] ?? 0) + 1;
        e.vram += quantity(d.capacity?.memory?.value);
      }
      draByNode.set(nodeName, e);
    }

    const outNodes: OverviewNode[] = nodes.map((n) => {
      const name = n.metadata?.name ?? '';
      const cap = (n.status?.capacity ?? {}) as Record<string, string>;
      const labels = n.metadata?.labels ?? {};
      const byProfile: Record<string, number> = {};
      let vram = 0;
      for (const [res, profile] of Object.entries(GPU_RESOURCES)) {
        const c = Math.floor(quantity(cap[res]));
        if (c > 0) byProfile[profile] = (byProfile[profile] ?? 0) + c;
      }
      let gpuCount = Object.values(byProfile).reduce((a, b) => a + b, 0);
      if (gpuCount > 0) {
        const nvidia = Math.floor(quantity(cap['nvidia.com/gpu']));
        // GPU Feature Discovery's label is MiB per GPU; one that is not a number counts nothing.
        const mib = Number(labels['nvidia.com/gpu.memory']);
        if (nvidia > 0 && Number.isFinite(mib)) vram += nvidia * mib * 2 ** 20;
        if ((byProfile['intel-xpu'] ?? 0) > 0) vram += quantity(labels['gpu.intel.com/memory.max'] ?? cap['gpu.intel.com/memory.max']);
        const dra = draByNode.get(name);
        if (vram === 0 && dra) vram = dra.vram;
      } else {
        const dra = draByNode.get(name);
        if (dra) {
          Object.assign(byProfile, dra.byProfile);
          gpuCount = Object.values(byProfile).reduce((a, b) => a + b, 0);
          vram = dra.vram;
        }
      }
      // Lens' per-node figures (issue 33): the Summary API, Prometheus, the GPUs' identities and DCGM.
      const st = stats?.get(name) ?? null;
      const cores = quantity(cap.cpu);
      const memoryCapacity = Math.round(quantity(cap.memory));
      let gpus: GpuDevice[] = draDevices(slices, gpuSlices, name, quantity);
      if (gpus.length === 0) gpus = dcgmDevices(dcgm.get(name));
      if (gpus.length === 0 && gpuCount > 0) gpus = countedDevices(n, Math.min(gpuCount, 4096));
      applyDcgm(gpus, dcgm.get(name));
      const nodeMemory = memoryByNode.get(name);
      const fs = st?.fs ?? null;
      return {
        name,
        version: n.status?.nodeInfo?.kubeletVersion ?? '',
        osImage: n.status?.nodeInfo?.osImage ?? '',
        ready: nodeReady(n),
        schedulingDisabled: !!n.spec?.unschedulable,
        cpu: cores,
        gpu: gpuCount > 0,
        gpuCount,
        gpuByProfile: byProfile,
        vramBytes: Math.round(vram),
        role: isControlPlane(n) ? 'control-plane' : 'worker',
        cachedImages: (n.status?.images ?? []).map((i) => (i.names ?? []).find((x) => !x.includes('@sha256:')) ?? i.names?.[0] ?? '').filter(Boolean),
        cpuUsagePercent: st?.cpuNanoCores != null && cores > 0 ? percent((st.cpuNanoCores / (cores * 1e9)) * 100) : null,
        memoryBytes: memoryCapacity,
        memoryUsagePercent:
          nodeMemory !== undefined ? percent(nodeMemory) : st?.memoryWorkingSetBytes != null && memoryCapacity > 0 ? percent((st.memoryWorkingSetBytes / memoryCapacity) * 100) : null,
        gpuUsagePercent: meanUtilisation(gpus),
        vramUsagePercent: vramUsage(gpus),
        gpus,
        diskBytes: fs ? Math.round(fs.capacityBytes) : null,
        diskUsedBytes: fs ? Math.round(fs.usedBytes) : null,
        diskUsagePercent: fs && fs.capacityBytes > 0 ? percent((fs.usedBytes / fs.capacityBytes) * 100) : null,
      };
    });

    // GPUs in use: extended-resource requests of live pods bound to nodes, plus DRA allocations.
    let allocated = 0;
    const usable = new Set(outNodes.filter((n) => n.ready && !n.schedulingDisabled).map((n) => n.name));
    for (const p of pods as V1Pod[]) {
      if (!p.spec?.nodeName || !usable.has(p.spec.nodeName)) continue;
      for (const c of p.spec.containers ?? []) {
        for (const res of Object.keys(GPU_RESOURCES)) allocated += Math.floor(quantity((c.resources?.requests as Record<string, string> | undefined)?.[res] ?? (c.resources?.limits as Record<string, string> | undefined)?.[res]));
      }
    }
    const gpuDrivers = new Set(Object.keys(DRA_GPU_DRIVERS));
    for (const c of claims) {
      for (const r of c.status?.allocation?.devices?.results ?? []) if (gpuDrivers.has(r.driver) && usable.has(r.pool)) allocated += 1;
    }

    const allGpus = outNodes.flatMap((n) => n.gpus);
    const accelerators = new Map<string, number>();
    for (const n of outNodes) for (const [id, c] of Object.entries(n.gpuByProfile)) accelerators.set(id, (accelerators.get(id) ?? 0) + c);
    const memoryBytes = nodes.reduce((s, n) => s + quantity((n.status?.capacity as Record<string, string> | undefined)?.memory), 0);
    const totalGpu = outNodes.reduce((s, n) => s + n.gpuCount, 0);
    const readyGpu = outNodes.filter((n) => n.ready).reduce((s, n) => s + n.gpuCount, 0);
    const usableGpu = outNodes.filter((n) => usable.has(n.name)).reduce((s, n) => s + n.gpuCount, 0);
    const hardware: Hardware = {
      nodes: outNodes.length,
      cpuCores: outNodes.reduce((s, n) => s + n.cpu, 0),
      memoryBytes,
      memoryUsagePercent: memoryPercent === null ? null : round1(memoryPercent),
      memoryAvailableBytes: memoryPercent === null ? null : Math.round(memoryBytes * (1 - memoryPercent / 100)),
      diskBytes: disk?.capacity ?? null,
      diskUsedBytes: disk?.used ?? null,
      diskAvailableBytes: disk?.available ?? null,
      diskUsagePercent: disk && disk.capacity > 0 ? round1((disk.used / disk.capacity) * 100) : null,
      gpuNodes: outNodes.filter((n) => n.gpu).length,
      gpuCount: readyGpu,
      totalGpuCount: totalGpu,
      accelerators: [...accelerators].map(([id, gpuCount]) => ({ id, gpuCount })).sort((a, b) => a.id.localeCompare(b.id)),
      vramBytes: outNodes.reduce((s, n) => s + n.vramBytes, 0),
      allocatedGpuCount: Math.min(allocated, usableGpu),
      availableGpuCount: Math.max(0, usableGpu - allocated),
      usableGpuCount: usableGpu,
      cpuUsagePercent: cpuUse(stats, outNodes),
      gpuUsagePercent: meanUtilisation(allGpus),
      vramUsagePercent: vramUsage(allGpus),
      deviceMetrics: deviceMetrics(allGpus),
      // Lens caps usable GPUs by a PCI allow-list of its own (PRISM_GPU_PCI_ALLOWLIST); ironlens has none.
      configuredGpuLimit: null,
    };

    const depsByNs = new Map<string, OverviewResponse['kubernetes']['namespaces'][number]['deployments']>();
    for (const d of deployments) {
      const ns = d.metadata?.namespace ?? '';
      const list = depsByNs.get(ns) ?? [];
      list.push({ name: d.metadata?.name ?? '', desired: count(d.spec?.replicas), ready: count(d.status?.readyReplicas), available: count(d.status?.availableReplicas) });
      depsByNs.set(ns, list);
    }
    const outNamespaces = namespaces
      .map((ns) => {
        const name = ns.metadata?.name ?? '';
        const deps = (depsByNs.get(name) ?? []).sort((a, b) => a.name.localeCompare(b.name));
        return { name, deployments: deps, ready: deps.filter((d) => d.desired > 0 && d.ready >= d.desired).length };
      })
      .sort((a, b) => a.name.localeCompare(b.name));

    const components: OverviewResponse['kubernetes']['components'] = {
      nvidiaDevicePlugin: daemonSetComponent(daemonSets, /nvidia-device-plugin/),
      intelDevicePlugin: daemonSetComponent(daemonSets, /intel-gpu-plugin/),
      monitoring: prometheus
        ? workloadComponent(
            [...deployments, ...statefulSets].filter((w) => w.metadata?.namespace === prometheus.namespace),
            daemonSets.filter((d) => d.metadata?.namespace === prometheus.namespace),
          )
        : { installed: false, ready: 0, desired: 0, status: 'missing' },
      acceleratorDevicePlugins: acceleratorPlugins(daemonSets, [...deployments, ...statefulSets]),
    };

    const cluster = await this.clusters.recordOf(row, false);
    cluster.ready = true; // the reads above succeeded
    return {
      cluster,
      fetchedAt: isoUtc(),
      kubernetes: { components, nodes: outNodes, namespaces: outNamespaces, hardware },
      ...(await gatewayP),
    };
  }

  /** One kubelet's Summary: its node's filesystem, CPU and memory use (each checked; null what it does not say), or null when it does not answer. */
  private async fetchStats(kube: Kube, name: string): Promise<NodeStats | null> {
    try {
      const s = await kube.nodeSummary(name, this.opts.summaryTimeoutMs);
      const node = s?.node;
      if (!node || typeof node !== 'object') return null;
      const fs = node.fs;
      const [capacity, used, available] = [reported(fs?.capacityBytes), reported(fs?.usedBytes), reported(fs?.availableBytes)];
      return {
        fs: capacity !== null && used !== null && available !== null ? { capacityBytes: capacity, usedBytes: used, availableBytes: available } : null,
        cpuNanoCores: reported(node.cpu?.usageNanoCores),
        memoryWorkingSetBytes: reported(node.memory?.workingSetBytes),
      };
    } catch {
      return null;
    }
  }

  /**
   * Summaries of a cluster's nodes: fresh ones from the cache; stale ones (older than
   * `summaryTtlMs`, at most `summaryMaxStaleMs`) answered while refreshed in the background;
   * missing ones scraped, waited for until `deadline` and left `null` past it (their scrape
   * goes on and fills the cache for the next call).
   */
  private async nodeStats(clusterId: string, kube: Kube, names: string[], deadline: number): Promise<Array<NodeStats | null>> {
    const now = Date.now();
    let c = this.summaries.get(clusterId);
    if (!c) {
      c = { nodes: new Map(), inflight: new Map(), queue: [], active: 0, pumpScheduled: false, usedAt: now };
      this.summaries.set(clusterId, c);
    }
    const cache = c;
    // Clusters not looked at for longer than an answer may be used (deleted ones among them) are forgotten.
    for (const [id, other] of this.summaries) {
      if (other !== cache && other.inflight.size === 0 && now - other.usedAt > this.opts.summaryMaxStaleMs) this.summaries.delete(id);
    }
    cache.usedAt = now;
    const age = (n: string) => {
      const e = cache.nodes.get(n);
      return e ? now - e.at : Number.POSITIVE_INFINITY;
    };
    // Nodes gone from the cluster are forgotten once their answer is too old to be used.
    for (const [n, e] of cache.nodes) if (now - e.at > this.opts.summaryMaxStaleMs) cache.nodes.delete(n);
    const missing = names.filter((n) => age(n) > this.opts.summaryMaxStaleMs);
    for (const n of names) if (age(n) > this.opts.summaryTtlMs && age(n) <= this.opts.summaryMaxStaleMs) void this.scrape(cache, kube, n);
    if (missing.length) {
      const all = Promise.all(missing.map((n) => this.scrape(cache, kube, n)));
      const left = deadline - Date.now();
      if (left > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, left)))]);
        clearTimeout(timer);
      }
    }
    return names.map((n) => {
      const e = cache.nodes.get(n);
      return e && Date.now() - e.at <= this.opts.summaryMaxStaleMs ? e.stats : null;
    });
  }

  /** Queues one node's Summary (once, however many overviews ask), `summaryConcurrency` at a time per cluster. */
  private scrape(c: SummaryCache, kube: Kube, name: string): Promise<void> {
    const running = c.inflight.get(name);
    if (running) return running;
    const p = new Promise<void>((done) => c.queue.push({ name, kube, done }));
    c.inflight.set(name, p);
    // The requests go out on the next turn of the event loop: an overview past its budget
    // answers first.
    if (!c.pumpScheduled) {
      c.pumpScheduled = true;
      setImmediate(() => {
        c.pumpScheduled = false;
        this.pump(c);
      });
    }
    return p;
  }

  private pump(c: SummaryCache): void {
    while (c.active < this.opts.summaryConcurrency && c.queue.length) {
      const { name, kube, done } = c.queue.shift()!;
      c.active++;
      void this.fetchStats(kube, name).then((stats) => {
        c.nodes.set(name, { at: Date.now(), stats });
        c.active--;
        c.inflight.delete(name);
        done();
        this.pump(c);
      });
    }
  }

  /** Every Ready node's Summary (null where it is missing or not in yet); null when no node is Ready. */
  private async readyStats(clusterId: string, kube: Kube, nodes: V1Node[], deadline: number): Promise<Map<string, NodeStats | null> | null> {
    const ready = nodes.filter(nodeReady).map((n) => n.metadata!.name!);
    if (ready.length === 0) return null;
    const stats = await this.nodeStats(clusterId, kube, ready, deadline);
    return new Map(ready.map((name, i) => [name, stats[i]]));
  }

  /** One instant query through the service proxy: the result vector (throws when Prometheus says it failed). */
  private async query(kube: Kube, p: { namespace: string; name: string; port: string }, query: string): Promise<PromSample[]> {
    const r = (await kube.serviceProxyGet(p.namespace, p.name, p.port, `/api/v1/query?query=${encodeURIComponent(query)}`, this.opts.prometheusTimeoutMs)) as {
      status?: string;
      data?: { result?: PromSample[] };
    };
    if (r?.status !== 'success') throw new Error('prometheus query failed');
    const result = r.data?.result;
    return Array.isArray(result) ? result.filter((x) => !!x && typeof x.metric === 'object' && x.metric !== null && Array.isArray(x.value)) : [];
  }

  /**
   * Memory use from node-exporter (through the service proxy): the average over its samples (seed
   * 000's `memoryUsagePercent`), and each sample's own (a node's, where it names one); null when
   * unavailable.
   */
  private async memoryUse(kube: Kube, p: { namespace: string; name: string; port: string }): Promise<{ mean: number; samples: Array<{ metric: Record<string, string>; pct: number }> } | null> {
    try {
      const [avail, total] = await Promise.all([this.query(kube, p, 'node_memory_MemAvailable_bytes'), this.query(kube, p, 'node_memory_MemTotal_bytes')]);
      const key = (m: Record<string, string>) => m.instance ?? m.node ?? m.nodename ?? JSON.stringify(m);
      const totals = new Map(total.map((s) => [key(s.metric), Number(s.value[1])]));
      const pcts: Array<{ metric: Record<string, string>; pct: number }> = [];
      for (const s of avail) {
        const t = totals.get(key(s.metric));
        const a = Number(s.value[1]);
        if (t && t > 0 && Number.isFinite(t) && Number.isFinite(a)) pcts.push({ metric: s.metric, pct: (1 - a / t) * 100 });
      }
      if (pcts.length === 0) return null;
      return { mean: pcts.reduce((x, y) => x + y.pct, 0) / pcts.length, samples: pcts };
    } catch {
      return null;
    }
  }

  /** DCGM's series (bare selectors, any Prometheus answers them); a series that fails is left out. */
  private async dcgm(kube: Kube, p: { namespace: string; name: string; port: string }): Promise<Partial<Record<DcgmSeries, PromSample[]>>> {
    const out: Partial<Record<DcgmSeries, PromSample[]>> = {};
    await Promise.all(
      DCGM_SERIES.map(async (name) => {
        out[name] = await this.query(kube, p, name).catch(() => []);
      }),
    );
    return out;
  }
}

/** The Ready nodes' filesystems summed; null when any Ready node's is missing (or not in yet). */
function sumDisk(stats: Map<string, NodeStats | null> | null): { capacity: number; used: number; available: number } | null {
  if (!stats) return null;
  const all = [...stats.values()];
  if (all.some((s) => !s?.fs)) return null;
  return all.reduce((a, s) => ({ capacity: a.capacity + s!.fs!.capacityBytes, used: a.used + s!.fs!.usedBytes, available: a.available + s!.fs!.availableBytes }), {
    capacity: 0,
    used: 0,
    available: 0,
  });
}

/** The Ready nodes' CPU in use of their cores; null when any Ready node's figure is missing. */
function cpuUse(stats: Map<string, NodeStats | null> | null, nodes: OverviewNode[]): number | null {
  if (!stats) return null;
  let used = 0;
  let cores = 0;
  for (const [name, s] of stats) {
    if (s?.cpuNanoCores == null) return null;
    used += s.cpuNanoCores;
    cores += nodes.find((n) => n.name === name)?.cpu ?? 0;
  }
  return cores > 0 ? percent((used / (cores * 1e9)) * 100) : null;
}

/**
 * The device plugin and DRA driver of each accelerator profile, as Lens' profiles recognise them
 * (DaemonSets, Deployments and StatefulSets in any namespace): by name, namespace or label.
 */
const ACCELERATOR_WORKLOADS: Record<string, { names: RegExp; namespaces: string[]; labels: Array<[string, string]> }> = {
  'intel-xpu': {
    names: /intel-gpu-plugin|intel-gpu-resource-driver/,
    namespaces: ['intel-gpu-resource-driver'],
    labels: [
      ['app', 'intel-gpu-plugin'],
      ['app.kubernetes.io/name', 'intel-gpu-resource-driver'],
    ],
  },
  'nvidia-cuda': {
    names: /nvidia-device-plugin|nvidia-dra-driver/,
    namespaces: ['nvidia-dra-driver-gpu'],
    labels: [['app.kubernetes.io/name', 'nvidia-device-plugin']],
  },
};

type Workload = { metadata?: { name?: string; namespace?: string; labels?: Record<string, string> } };

function acceleratorPlugins(daemonSets: V1DaemonSet[], others: Array<Workload & { spec?: { replicas?: number }; status?: { readyReplicas?: number } }>): Record<string, ComponentStatus> {
  const out: Record<string, ComponentStatus> = {};
  for (const [id, m] of Object.entries(ACCELERATOR_WORKLOADS)) {
    const matches = (w: Workload) => {
      const md = w.metadata ?? {};
      return m.names.test(md.name ?? '') || m.namespaces.includes(md.namespace ?? '') || m.labels.some(([k, v]) => md.labels?.[k] === v);
    };
    const ds = daemonSets.filter(matches);
    const rest = others.filter(matches);
    out[id] = ds.length + rest.length ? workloadComponent(rest, ds) : { installed: false, ready: 0, desired: 0, status: 'missing' };
  }
  return out;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/;

/**
 * The cluster's Prometheus Service: the first matching one, on its `web`/`http-web`/9090 port.
 * The Services are a cluster's answer, so every field is checked before use (a `ports` that is
 * not a list, a name that is not a DNS label): such a Service is skipped, never a throw.
 */
export function findPrometheus(services: V1Service[]): { namespace: string; name: string; port: string } | null {
  if (!Array.isArray(services)) return null;
  const candidates = services.filter((x): x is V1Service => {
    const md = (x as { metadata?: unknown })?.metadata as { namespace?: unknown; name?: unknown; labels?: unknown } | undefined;
    return !!md && typeof md.namespace === 'string' && DNS_LABEL.test(md.namespace) && typeof md.name === 'string' && DNS_LABEL.test(md.name) && !!md.labels && typeof md.labels === 'object';
  });
  for (const sel of PROMETHEUS_SELECTORS) {
    const [k, v] = sel.split('=');
    const matching = candidates
      .filter((x) => (x.metadata?.labels as Record<string, unknown> | undefined)?.[k] === v)
      .sort((a, b) => `${a.metadata?.namespace}/${a.metadata?.name}`.localeCompare(`${b.metadata?.namespace}/${b.metadata?.name}`));
    for (const s of matching) {
      const raw = (s.spec as { ports?: unknown } | undefined)?.ports;
      if (!Array.isArray(raw)) continue;
      const ports = raw.filter(
        (p): p is { name?: string; port: number } =>
          !!p && typeof p === 'object' && Number.isInteger(p.port) && p.port > 0 && p.port < 65536 && (p.name === undefined || (typeof p.name === 'string' && (p.name === '' || PORT_NAME.test(p.name)))),
      );
      const port = ports.find((p) => p.name === 'web' || p.name === 'http-web') ?? ports.find((p) => p.port === 9090) ?? ports[0];
      if (!port) continue;
      return { namespace: s.metadata!.namespace!, name: s.metadata!.name!, port: port.name || String(port.port) };
    }
  }
  return null;
}

function status(installed: boolean, ready: number, desired: number): ComponentStatus['status'] {
  if (!installed) return 'missing';
  if (desired > 0 && ready >= desired) return 'ready';
  return ready > 0 ? 'degraded' : 'unavailable';
}

function daemonSetComponent(list: V1DaemonSet[], name: RegExp): ComponentStatus {
  const ds = list.filter((d) => name.test(d.metadata?.name ?? ''));
  const ready = ds.reduce((s, d) => s + count(d.status?.numberReady), 0);
  const desired = ds.reduce((s, d) => s + count(d.status?.desiredNumberScheduled), 0);
  return { installed: ds.length > 0, ready, desired, status: status(ds.length > 0, ready, desired) };
}

function workloadComponent(workloads: Array<{ spec?: { replicas?: number }; status?: { readyReplicas?: number } }>, ds: V1DaemonSet[]): ComponentStatus {
  const ready = workloads.reduce((s, w) => s + count(w.status?.readyReplicas), 0) + ds.reduce((s, d) => s + count(d.status?.numberReady), 0);
  const desired = workloads.reduce((s, w) => s + count(w.spec?.replicas), 0) + ds.reduce((s, d) => s + count(d.status?.desiredNumberScheduled), 0);
  return { installed: true, ready, desired, status: status(true, ready, desired) };
}
