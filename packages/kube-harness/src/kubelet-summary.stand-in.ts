/**
 * FakeKubeletSummary: a STAND-IN for the one kubelet endpoint the harness needs,
 * the Summary API (`GET /stats/summary`, stats/v1alpha1). kwok fakes nodes and
 * pods but serves no Summary API, and there is no real kubelet here.
 *
 * How the real path works, and what this reproduces:
 *   client -> kube-apiserver `/api/v1/nodes/{name}/proxy/stats/summary`
 *          -> https://{node address}:{status.daemonEndpoints.kubeletEndpoint.Port}/stats/summary
 * The API server picks the node address by `--kubelet-preferred-address-types`
 * (the harness sets `InternalIP`), presents its `--kubelet-client-certificate`,
 * and verifies the kubelet's serving certificate against
 * `--kubelet-certificate-authority`. It refuses node addresses that are not global
 * unicast, so fake nodes carry 198.18.x.y InternalIPs (RFC 2544) with the kubelet
 * port 10250, and the API server's egress (FakeKonnectivityServer, HTTP CONNECT on
 * a Unix socket) splices each `CONNECT 198.18.x.y:10250` to this stand-in's
 * listener for that node on loopback. The serving certificate carries the node IPs
 * as SANs, and a client certificate signed by the cluster CA is required, like a
 * kubelet with x509 authentication.
 *
 * Pods in the summary are the pods the API server has bound to that node (looked
 * up through `podsForNode`), so the numbers follow what kwok "runs".
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';

export interface SummaryPodRef {
  name: string;
  namespace: string;
  uid: string;
  containers: string[];
  startTime?: string;
}

export interface NodeUsage {
  /** CPU in use, nanocores. */
  cpuNanoCores?: number;
  /** Memory working set, bytes. */
  memoryWorkingSetBytes?: number;
  memoryAvailableBytes?: number;
}

export interface FakeKubeletSummaryOptions {
  /** PEM paths: serving cert/key (SANs must cover every node IP) and the CA that signs API server client certs. */
  cert: string;
  key: string;
  clientCa: string;
  /** Pods bound to a node; default: none. */
  podsForNode?: (nodeName: string) => Promise<SummaryPodRef[]>;
}

interface Endpoint {
  nodeName: string;
  ip: string;
  port: number;
  server: Server;
  startTime: string;
}

/** What a container printed: the kubelet's `/containerLogs/{ns}/{pod}/{container}` (null: no such container, 404). */
export type ContainerLogSource = (namespace: string, pod: string, container: string, o: { previous: boolean; tailLines: number | null }) => string | null;

export class FakeKubeletSummary {
  private readonly endpoints = new Map<string, Endpoint>();
  private logSource: ContainerLogSource | null = null;
  private readonly usage = new Map<string, NodeUsage>();
  private readonly tls: { cert: Buffer; key: Buffer; ca: Buffer };
  /** Requests served, for tests: `${nodeName} ${path}`. */
  readonly requests: string[] = [];

  constructor(private readonly opts: FakeKubeletSummaryOptions) {
    this.tls = { cert: readFileSync(opts.cert), key: readFileSync(opts.key), ca: readFileSync(opts.clientCa) };
  }

  /**
   * Starts a kubelet-like TLS listener for one node on `ip` (random port); returns the port.
   * `serving` overrides the serving cert/key (its SANs must include `ip`).
   */
  async addNode(nodeName: string, ip: string, serving?: { cert: string; key: string }): Promise<number> {
    const existing = this.endpoints.get(nodeName);
    if (existing) return existing.port;
    const startTime = new Date().toISOString();
    const server = createServer(
      {
        ...this.tls,
        ...(serving ? { cert: readFileSync(serving.cert), key: readFileSync(serving.key) } : {}),
        requestCert: true,
        rejectUnauthorized: false,
      },
      (req, res) => void this.handle(nodeName, startTime, req, res),
    );
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, ip, () => {
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : 0);
      });
    });
    this.endpoints.set(nodeName, { nodeName, ip, port, server, startTime });
    return port;
  }

  endpoint(nodeName: string): { ip: string; port: number } | undefined {
    const e = this.endpoints.get(nodeName);
    return e && { ip: e.ip, port: e.port };
  }

  /**
   * Serves `GET /containerLogs/{namespace}/{pod}/{container}` (what the API server's
   * `pods/{name}/log` reaches) from `source`, honouring `tailLines` and `previous`. Without a
   * source the kubelet answers 404, as for a container it does not run.
   */
  setLogSource(source: ContainerLogSource | null): void {
    this.logSource = source;
  }

  setUsage(nodeName: string, usage: NodeUsage): void {
    this.usage.set(nodeName, { ...this.usage.get(nodeName), ...usage });
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.endpoints.values()].map(
        (e) =>
          new Promise<void>((r) => {
            e.server.closeAllConnections?.();
            e.server.close(() => r());
          }),
      ),
    );
    this.endpoints.clear();
  }

  private async handle(nodeName: string, startTime: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sock = req.socket as TLSSocket;
    if (!sock.authorized) {
      // A kubelet with anonymous auth disabled answers 401 to a request without a valid client certificate.
      res.writeHead(401, { 'content-type': 'text/plain' }).end('Unauthorized');
      return;
    }
    const url = new URL(req.url ?? '/', 'https://kubelet');
    this.requests.push(`${nodeName} ${url.pathname}`);
    if (req.method !== 'GET') {
      res.writeHead(405).end();
      return;
    }
    if (url.pathname === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    const logs = /^\/containerLogs\/([a-z0-9.-]+)\/([a-z0-9.-]+)\/([a-z0-9-]+)$/.exec(url.pathname);
    if (logs) {
      const tail = url.searchParams.get('tailLines');
      const text = this.logSource?.(logs[1], logs[2], logs[3], { previous: url.searchParams.get('previous') === 'true', tailLines: tail && /^\d+$/.test(tail) ? Number(tail) : null }) ?? null;
      if (text === null) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`container ${logs[3]} is not found in pod ${logs[2]}`);
        return;
      }
      const lines = text.split('\n');
      const last = tail && /^\d+$/.test(tail) ? lines.slice(-(Number(tail) + (text.endsWith('\n') ? 1 : 0))).join('\n') : text;
      res.writeHead(200, { 'content-type': 'text/plain' }).end(last);
      return;
    }
    if (url.pathname !== '/stats/summary') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found');
      return;
    }
    try {
      const pods = (await this.opts.podsForNode?.(nodeName)) ?? [];
      const body = buildSummary(nodeName, startTime, pods, this.usage.get(nodeName) ?? {}, new Date());
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } catch (e) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String((e as Error).message));
    }
  }
}

/** A number in [0,1) fixed by the seed, so summaries are stable between scrapes. */
function unit(seed: string): number {
  return createHash('sha256').update(seed).digest().readUInt32BE(0) / 2 ** 32;
}

const GiB = 2 ** 30;

/** Builds a stats/v1alpha1 Summary with the fields and names the kubelet uses. */
export function buildSummary(
  nodeName: string,
  startTime: string,
  pods: SummaryPodRef[],
  usage: NodeUsage,
  now: Date,
): Record<string, unknown> {
  const time = now.toISOString();
  const uptimeSec = Math.max(1, (now.getTime() - Date.parse(startTime)) / 1000);
  const podStats = pods.map((p) => {
    const containers = p.containers.map((c) => {
      const cpu = Math.round(5e6 + unit(`${p.uid}/${c}/cpu`) * 200e6); // 5m..205m
      const mem = Math.round(32 * 2 ** 20 + unit(`${p.uid}/${c}/mem`) * 480 * 2 ** 20);
      return {
        name: c,
        startTime: p.startTime ?? startTime,
        cpu: { time, usageNanoCores: cpu, usageCoreNanoSeconds: Math.round(cpu * uptimeSec) },
        memory: {
          time,
          availableBytes: 4 * GiB - mem,
          usageBytes: Math.round(mem * 1.2),
          workingSetBytes: mem,
          rssBytes: Math.round(mem * 0.8),
          pageFaults: 1000,
          majorPageFaults: 0,
        },
        rootfs: { time, availableBytes: 80 * GiB, capacityBytes: 100 * GiB, usedBytes: 40960, inodesFree: 6e6, inodes: 6.5e6, inodesUsed: 12 },
        logs: { time, availableBytes: 80 * GiB, capacityBytes: 100 * GiB, usedBytes: 8192, inodesFree: 6e6, inodes: 6.5e6, inodesUsed: 1 },
      };
    });
    const cpu = containers.reduce((s, c) => s + c.cpu.usageNanoCores, 0);
    const mem = containers.reduce((s, c) => s + c.memory.workingSetBytes, 0);
    return {
      podRef: { name: p.name, namespace: p.namespace, uid: p.uid },
      startTime: p.startTime ?? startTime,
      containers,
      cpu: { time, usageNanoCores: cpu, usageCoreNanoSeconds: Math.round(cpu * uptimeSec) },
      memory: { time, usageBytes: Math.round(mem * 1.2), workingSetBytes: mem, rssBytes: Math.round(mem * 0.8), pageFaults: 1000, majorPageFaults: 0 },
      network: { time, name: 'eth0', rxBytes: 1_000_000, rxErrors: 0, txBytes: 500_000, txErrors: 0, interfaces: [{ name: 'eth0', rxBytes: 1_000_000, rxErrors: 0, txBytes: 500_000, txErrors: 0 }] },
      volume: [],
      'ephemeral-storage': { time, availableBytes: 80 * GiB, capacityBytes: 100 * GiB, usedBytes: 49152, inodesFree: 6e6, inodes: 6.5e6, inodesUsed: 13 },
      process_stats: { process_count: containers.length },
    };
  });
  const podCpu = podStats.reduce((s, p) => s + p.cpu.usageNanoCores, 0);
  const podMem = podStats.reduce((s, p) => s + p.memory.workingSetBytes, 0);
  const nodeCpu = usage.cpuNanoCores ?? Math.round(250e6 + unit(`${nodeName}/cpu`) * 750e6 + podCpu);
  const nodeMem = usage.memoryWorkingSetBytes ?? Math.round(2 * GiB + unit(`${nodeName}/mem`) * 6 * GiB + podMem);
  const memCapacity = 64 * GiB;
  const fs = { time, availableBytes: 300 * GiB, capacityBytes: 450 * GiB, usedBytes: 150 * GiB, inodesFree: 28e6, inodes: 30e6, inodesUsed: 2e6 };
  return {
    node: {
      nodeName,
      systemContainers: ['kubelet', 'runtime', 'pods'].map((name) => ({
        name,
        startTime,
        cpu: { time, usageNanoCores: name === 'pods' ? podCpu : 20e6, usageCoreNanoSeconds: Math.round(20e6 * uptimeSec) },
        memory: { time, usageBytes: name === 'pods' ? podMem : 100 * 2 ** 20, workingSetBytes: name === 'pods' ? podMem : 80 * 2 ** 20, rssBytes: 60 * 2 ** 20, pageFaults: 0, majorPageFaults: 0 },
      })),
      startTime,
      cpu: { time, usageNanoCores: nodeCpu, usageCoreNanoSeconds: Math.round(nodeCpu * uptimeSec) },
      memory: {
        time,
        availableBytes: usage.memoryAvailableBytes ?? memCapacity - nodeMem,
        usageBytes: Math.round(nodeMem * 1.3),
        workingSetBytes: nodeMem,
        rssBytes: Math.round(nodeMem * 0.7),
        pageFaults: 120_000,
        majorPageFaults: 40,
      },
      network: {
        time,
        name: 'eth0',
        rxBytes: 9_000_000_000,
        rxErrors: 0,
        txBytes: 4_000_000_000,
        txErrors: 0,
        interfaces: [{ name: 'eth0', rxBytes: 9_000_000_000, rxErrors: 0, txBytes: 4_000_000_000, txErrors: 0 }],
      },
      fs,
      runtime: { imageFs: { ...fs, usedBytes: 40 * GiB }, containerFs: { ...fs, usedBytes: 40 * GiB } },
      rlimit: { time, maxpid: 4_194_304, curproc: 300 + pods.length * 3 },
    },
    pods: podStats,
  };
}
