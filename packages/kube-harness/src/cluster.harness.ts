/**
 * A real Kubernetes control plane on 127.0.0.x for tests:
 * etcd + kube-apiserver + kube-controller-manager + kube-scheduler (all of the
 * pinned version, built by binaries.builder.ts) + kwok for fake nodes and pods,
 * plus the two stand-ins for what nothing here can serve: the kubelet Summary
 * API (FakeKubeletSummary, reached through the API server's node proxy) and a
 * Prometheus instant-query endpoint (FakePrometheus).
 *
 * Every process gets random free ports on the chosen loopback IP, a data dir under
 * a temp dir (removed on stop), and is stopped by pid on stop() or when the Node
 * process exits.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type KubernetesObject, type V1Node } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { ensureKubeBinaries, type BuildOptions, type KubeBinaries } from './binaries.builder';
import { FakeKubeletSummary, type SummaryPodRef } from './kubelet-summary.stand-in';
import { FakeKonnectivityServer } from './konnectivity.stand-in';
import { FakePrometheus, type Sample } from './prometheus.stand-in';
import { Pki, type CertPair } from './pki.generator';
import { RawApplyClient, type ApplyTarget } from './raw-apply.client';
import { freeTcpPort } from '@ironlens/core/testing';
import { Supervisor, waitForServing, type Managed } from './process.supervisor';
import {
  deviceClasses,
  nodeCount,
  nodeObject,
  nvidiaGpuUuid,
  nvidiaPciBusId,
  planNodes,
  resourceSlice,
  type FixtureNode,
  type FixtureSize,
} from './gpu.fixtures';

export interface StartKubeClusterOptions {
  /** Fake nodes to load at start: 'test' (3), 'bench' (1,000), a number, or 0 for none. Default 'test'. */
  nodes?: FixtureSize;
  /** GPU fixtures (NVIDIA/Intel nodes, DeviceClasses, ResourceSlices, DCGM series). Default true. */
  gpu?: boolean;
  /** Loopback IP for the control plane. Default 127.0.0.1. */
  ip?: string;
  /** Progress lines; default `[kube-harness] ...` on stderr. */
  log?: (line: string) => void;
  /** Keep the data dir (logs, certs, etcd) after stop; also IRONLENS_KUBE_KEEP=1. */
  keepDataDir?: boolean;
  /** Use this dir instead of a fresh temp dir (the CLI's `up`). */
  dataDir?: string;
  build?: BuildOptions;
  /**
   * kwok Stage objects added to the default ones (`kwok.x-k8s.io/v1alpha1`): pod states a test
   * needs that the default stages never reach (a container that cannot start…). Default: none.
   */
  extraStages?: object[];
  /** The pod IPs kwok gives (`--cidr`). Default `10.244.0.1/16`. */
  podCidr?: string;
}

export interface LoadedFixtures {
  nodes: FixtureNode[];
  /** ms from first create to all nodes Ready. */
  readyMs: number;
}

export interface KubeHarness {
  /** https://<ip>:<port> */
  server: string;
  kubeconfigPath: string;
  /** Admin kubeconfig (YAML) with embedded CA and client certificate. */
  kubeconfig: string;
  dataDir: string;
  binaries: KubeBinaries;
  pids: Record<string, number>;
  kubelet: FakeKubeletSummary;
  /** The API server's egress to node addresses (CONNECT over a Unix socket). */
  konnectivity: FakeKonnectivityServer;
  prometheus: FakePrometheus;
  /** A fresh @kubernetes/client-node KubeConfig for the admin user. */
  kubeConfig(): KubeConfig;
  loadGpuFixtures(size: FixtureSize, opts?: { gpu?: boolean }): Promise<LoadedFixtures>;
  /**
   * Server-side apply of objects sent verbatim (fieldManager default 'kube-harness', force true).
   * Rejections throw an ApiError with `.code` (HTTP status) and `.body`.
   */
  apply(objects: Array<KubernetesObject | ApplyTarget>, opts?: { fieldManager?: string; force?: boolean }): Promise<KubernetesObject[]>;
  /**
   * Makes the Prometheus stand-in reachable the way a cluster's own Prometheus is: through the
   * API server's service proxy (`/api/v1/namespaces/{ns}/services/{name}:web/proxy/api/v1/query`).
   * A one-replica Deployment (kwok "runs" it and gives it a pod IP) behind a Service labelled
   * `app.kubernetes.io/name=prometheus` (port `web`, 9090); the endpoints controller fills the
   * Endpoints, and the API server's egress splices `<pod IP>:9090` to the stand-in on loopback.
   */
  exposePrometheus(opts?: { namespace?: string; name?: string }): Promise<{ namespace: string; name: string; port: string; podIP: string }>;
  stop(): Promise<void>;
}

/** The port every fake node advertises for its kubelet, as real kubelets do. */
const KUBELET_PORT = 10250;

const defaultLog = (l: string) => process.stderr.write(`[kube-harness] ${l}\n`);

interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

function get(url: string, tls?: TlsFiles, timeoutMs = 3000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const opts = tls
      ? { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) }
      : { rejectUnauthorized: false };
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      { method: 'GET', timeout: timeoutMs, ...(u.protocol === 'https:' ? opts : {}) },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function kubeconfigYaml(server: string, ca: string, user: string, client: CertPair): string {
  const b64 = (p: string) => readFileSync(p).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'ironlens-harness', cluster: { server, 'certificate-authority-data': b64(ca) } }],
    users: [{ name: user, user: { 'client-certificate-data': b64(client.cert), 'client-key-data': b64(client.key) } }],
    contexts: [{ name: 'ironlens-harness', context: { cluster: 'ironlens-harness', user } }],
    'current-context': 'ironlens-harness',
    preferences: {},
  });
}

/**
 * Starts a cluster. Ports are picked free just before use, so another process can
 * take one in between: a start that failed on "address already in use" is retried
 * (up to 3 attempts) with new ports.
 */
export async function startKubeCluster(opts: StartKubeClusterOptions = {}): Promise<KubeHarness> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (e) {
      const msg = (e as Error).message;
      if (attempt >= 3 || !/address already in use|bind: /i.test(msg)) throw e;
      (opts.log ?? defaultLog)(`port collision on start (attempt ${attempt}); retrying with new ports`);
    }
  }
}

async function startOnce(opts: StartKubeClusterOptions): Promise<KubeHarness> {
  const log = opts.log ?? defaultLog;
  const ip = opts.ip ?? '127.0.0.1';
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ip)) throw new Error(`kube-harness binds to loopback only; ip must be 127.x.y.z, got ${ip}`);
  const binaries = await ensureKubeBinaries({ log, ...opts.build });

  const t0 = Date.now();
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'ironlens-kube-')));
  const keep = opts.keepDataDir || process.env.IRONLENS_KUBE_KEEP === '1';
  const dirs = { pki: join(dataDir, 'pki'), etcd: join(dataDir, 'etcd'), logs: join(dataDir, 'logs') };
  for (const d of Object.values(dirs)) await mkdir(d, { recursive: true });
  const sup = new Supervisor(dirs.logs);
  let prometheus: FakePrometheus | undefined;
  let kubelet: FakeKubeletSummary | undefined;
  const konnectivity = new FakeKonnectivityServer(join(dataDir, 'konnectivity.sock'));

  const cleanup = async () => {
    await sup.stopAll();
    await kubelet?.close();
    await konnectivity.close();
    await prometheus?.close();
    if (!keep && !opts.dataDir) await rm(dataDir, { recursive: true, force: true });
  };

  try {
    const certs = await issueCertificates(dirs.pki, ip);
    const cp = await startControlPlane({ sup, binaries, ip, dataDir, dirs, konnectivity, log, t0, extraStages: opts.extraStages, podCidr: opts.podCidr }, certs);
    kubelet = new FakeKubeletSummary({
      cert: certs.serving.cert, // replaced per fixture load by a cert whose SANs are the node IPs
      key: certs.serving.key,
      clientCa: certs.pki.ca.cert,
      podsForNode: runningPodsByNode(cp.core),
    });
    prometheus = new FakePrometheus();
    await prometheus.listen(ip);

    const raw = new RawApplyClient(cp.server, certs.adminTls);
    const apply: KubeHarness['apply'] = async (objs, o = {}) => {
      const out: KubernetesObject[] = [];
      for (const obj of objs) out.push(await raw.apply<KubernetesObject>(obj as ApplyTarget, o.fieldManager ?? 'kube-harness', o.force ?? true));
      return out;
    };
    const ctx: ClusterContext = { ip, log, binaries, pki: certs.pki, core: cp.core, kwok: cp.procs.kwok, sup, kubelet, konnectivity, prometheus, apply };
    let loadSeq = 0;

    const harness: KubeHarness = {
      server: cp.server,
      kubeconfigPath: cp.kubeconfigPath,
      kubeconfig: cp.kubeconfig,
      dataDir,
      binaries,
      pids: Object.fromEntries(Object.values(cp.procs).map((p) => [p.name, p.pid])),
      kubelet,
      konnectivity,
      prometheus,
      kubeConfig() {
        const k = new KubeConfig();
        k.loadFromString(cp.kubeconfig);
        return k;
      },
      apply,
      loadGpuFixtures: (size, fo = {}) => loadGpuFixtures(ctx, size, fo.gpu ?? opts.gpu ?? true, loadSeq++),
      exposePrometheus: (o = {}) => exposePrometheus(ctx, o.namespace ?? 'monitoring', o.name ?? 'prometheus'),
      async stop() {
        raw.close();
        await cleanup();
        log(`stopped${keep || opts.dataDir ? `; data kept in ${dataDir}` : ''}`);
      },
    };

    const size = opts.nodes ?? 'test';
    if (nodeCount(size) > 0) await harness.loadGpuFixtures(size, { gpu: opts.gpu ?? true });
    log(`cluster up in ${Date.now() - t0} ms`);
    return harness;
  } catch (e) {
    log(`start failed; logs in ${dirs.logs}${keep ? '' : ' (removed; set IRONLENS_KUBE_KEEP=1 to keep them)'}`);
    await cleanup();
    throw e;
  }
}

type Certificates = Awaited<ReturnType<typeof issueCertificates>>;

/** The cluster's PKI, as kubeadm lays it out: serving, admin and component client certs, SA keys, front-proxy CA. */
async function issueCertificates(pkiDir: string, ip: string) {
  const pki = await Pki.create(pkiDir);
  const serving = await pki.issue({
    name: 'apiserver',
    cn: 'kube-apiserver',
    usage: 'server',
    ips: [ip, '10.96.0.1'],
    dns: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
  });
  const admin = await pki.issue({ name: 'admin', cn: 'kubernetes-admin', orgs: ['system:masters'], usage: 'client' });
  const kcm = await pki.issue({ name: 'controller-manager', cn: 'system:kube-controller-manager', usage: 'client' });
  const scheduler = await pki.issue({ name: 'scheduler', cn: 'system:kube-scheduler', usage: 'client' });
  const kubeletClient = await pki.issue({
    name: 'apiserver-kubelet-client',
    cn: 'kube-apiserver-kubelet-client',
    orgs: ['kubeadm:cluster-admins'],
    usage: 'client',
  });
  const sa = await pki.serviceAccountKeys();
  // Front-proxy (request-header) CA and client, as kubeadm sets them up; without them
  // the controller-manager and scheduler log a missing requestheader CA bundle.
  await mkdir(join(pkiDir, 'front-proxy'), { recursive: true });
  const frontProxy = await Pki.create(join(pkiDir, 'front-proxy'), 'front-proxy-ca');
  const proxyClient = await frontProxy.issue({ name: 'front-proxy-client', cn: 'front-proxy-client', usage: 'client' });
  const adminTls: TlsFiles = { ca: pki.ca.cert, ...admin };
  return { pki, serving, admin, kcm, scheduler, kubeletClient, sa, frontProxy, proxyClient, adminTls };
}

interface StartContext {
  sup: Supervisor;
  binaries: KubeBinaries;
  ip: string;
  dataDir: string;
  dirs: { pki: string; etcd: string; logs: string };
  konnectivity: FakeKonnectivityServer;
  log: (line: string) => void;
  t0: number;
  extraStages?: object[];
  podCidr?: string;
}

/** etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, each waited for in turn. */
async function startControlPlane(c: StartContext, certs: Certificates) {
  const { sup, binaries, ip, dataDir, dirs, log, t0 } = c;
  let stages = binaries.kwokStages;
  if (c.extraStages?.length) {
    stages = join(dataDir, 'kwok-stages.yaml');
    await writeFile(stages, `${readFileSync(binaries.kwokStages, 'utf8').trimEnd()}\n${c.extraStages.map((o) => `---\n${stringify(o)}`).join('')}`);
  }
  const podCidr = c.podCidr ?? '10.244.0.1/16';
  if (!/^10\.\d{1,3}\.\d{1,3}\.\d{1,3}\/(1[6-9]|2[0-4])$/.test(podCidr)) throw new Error(`podCidr must be an address in 10.0.0.0/8 with a /16 to /24 prefix, got ${podCidr}`);
  const [etcdPort, etcdPeer, apiPort, kcmPort, schedPort] = await Promise.all([freeTcpPort(ip), freeTcpPort(ip), freeTcpPort(ip), freeTcpPort(ip), freeTcpPort(ip)]);

  const etcdUrl = `http://${ip}:${etcdPort}`;
  const etcd = sup.start('etcd', binaries.etcd, etcdArgs(ip, etcdUrl, etcdPeer, dirs.etcd));
  await waitForServing('etcd /health', async () => (await get(`${etcdUrl}/health`)).body.includes('"health":"true"'), { timeoutMs: 30_000, proc: etcd, sup });
  log(`etcd ready on ${etcdUrl} (${Date.now() - t0} ms)`);

  // The API server reaches kubelets through an HTTP CONNECT proxy on a Unix socket.
  await c.konnectivity.listen();
  const egressConfig = join(dataDir, 'egress-selector.yaml');
  await writeFile(egressConfig, egressSelectorYaml(c.konnectivity.socketPath));

  const server = `https://${ip}:${apiPort}`;
  const apiserver = sup.start('kube-apiserver', binaries.kubeApiserver, apiserverArgs({ ip, etcdUrl, apiPort, egressConfig, certDir: dirs.pki, certs }));
  const kubeconfig = kubeconfigYaml(server, certs.pki.ca.cert, 'kubernetes-admin', certs.admin);
  const kubeconfigPath = join(dataDir, 'kubeconfig');
  await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
  const kcmKubeconfig = join(dataDir, 'controller-manager.kubeconfig');
  await writeFile(kcmKubeconfig, kubeconfigYaml(server, certs.pki.ca.cert, 'system:kube-controller-manager', certs.kcm), { mode: 0o600 });
  const schedKubeconfig = join(dataDir, 'scheduler.kubeconfig');
  await writeFile(schedKubeconfig, kubeconfigYaml(server, certs.pki.ca.cert, 'system:kube-scheduler', certs.scheduler), { mode: 0o600 });
  await waitForServing('kube-apiserver /readyz', async () => (await get(`${server}/readyz`, certs.adminTls)).status === 200, { timeoutMs: 120_000, proc: apiserver, sup });
  log(`kube-apiserver ready on ${server} (${Date.now() - t0} ms)`);

  const kcm = sup.start('kube-controller-manager', binaries.kubeControllerManager, [
    ...componentArgs(ip, kcmPort, kcmKubeconfig, join(dirs.pki, 'kcm')),
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${certs.sa.privateKey}`,
    `--root-ca-file=${certs.pki.ca.cert}`,
    `--cluster-signing-cert-file=${certs.pki.ca.cert}`,
    `--cluster-signing-key-file=${certs.pki.ca.key}`,
    '--controllers=*',
  ]);
  const scheduler = sup.start('kube-scheduler', binaries.kubeScheduler, componentArgs(ip, schedPort, schedKubeconfig, join(dirs.pki, 'scheduler')));
  const kwok = sup.start('kwok', binaries.kwok, [
    `--kubeconfig=${kubeconfigPath}`,
    `--config=${stages}`,
    '--manage-all-nodes=true',
    '--node-lease-duration-seconds=40',
    `--cidr=${podCidr}`, // pod IPs kwok writes into pod status (data only, unless a test routes them into a network namespace)
  ]);

  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  // The controller-manager is working once the serviceaccount controller made `default/default`.
  await waitForServing(
    'kube-controller-manager (default ServiceAccount)',
    async () => {
      await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' });
      return true;
    },
    { timeoutMs: 120_000, proc: kcm, sup },
  );
  await waitForServing('kube-scheduler /healthz', async () => (await get(`https://${ip}:${schedPort}/healthz`)).body === 'ok', { timeoutMs: 60_000, proc: scheduler, sup });
  if (kwok.exit !== undefined) throw new Error(`kwok exited (${kwok.exit}):\n${sup.tail(kwok)}`);
  log(`control plane ready (${Date.now() - t0} ms); kubeconfig ${kubeconfigPath}`);
  return { server, kubeconfig, kubeconfigPath, core, procs: { etcd, apiserver, kcm, scheduler, kwok } };
}

function etcdArgs(ip: string, etcdUrl: string, peerPort: number, dataDir: string): string[] {
  return [
    '--name=harness',
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://${ip}:${peerPort}`,
    `--initial-advertise-peer-urls=http://${ip}:${peerPort}`,
    `--initial-cluster=harness=http://${ip}:${peerPort}`,
    '--initial-cluster-state=new',
    '--unsafe-no-fsync=true', // throw-away data; fsync would dominate start-up time
    '--log-level=warn',
  ];
}

function egressSelectorYaml(socketPath: string): string {
  return stringify({
    apiVersion: 'apiserver.k8s.io/v1beta1',
    kind: 'EgressSelectorConfiguration',
    egressSelections: [{ name: 'cluster', connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: socketPath } } } }],
  });
}

function apiserverArgs(a: { ip: string; etcdUrl: string; apiPort: number; egressConfig: string; certDir: string; certs: Certificates }): string[] {
  const { pki, serving, sa, kubeletClient, frontProxy, proxyClient } = a.certs;
  return [
    `--etcd-servers=${a.etcdUrl}`,
    `--bind-address=${a.ip}`,
    `--advertise-address=${a.ip}`,
    `--secure-port=${a.apiPort}`,
    `--tls-cert-file=${serving.cert}`,
    `--tls-private-key-file=${serving.key}`,
    `--client-ca-file=${pki.ca.cert}`,
    '--authorization-mode=Node,RBAC',
    '--service-cluster-ip-range=10.96.0.0/16',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${sa.publicKey}`,
    `--service-account-signing-key-file=${sa.privateKey}`,
    // apiserver -> kubelet (our FakeKubeletSummary): client cert, and verify the kubelet's serving cert.
    `--kubelet-client-certificate=${kubeletClient.cert}`,
    `--kubelet-client-key=${kubeletClient.key}`,
    `--kubelet-certificate-authority=${pki.ca.cert}`,
    '--kubelet-preferred-address-types=InternalIP',
    `--egress-selector-config-file=${a.egressConfig}`,
    `--requestheader-client-ca-file=${frontProxy.ca.cert}`,
    '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${proxyClient.cert}`,
    `--proxy-client-key-file=${proxyClient.key}`,
    // The `kubernetes` Service's endpoints would be this loopback IP, which Endpoints validation rejects.
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
    '--profiling=false',
    `--cert-dir=${a.certDir}`,
  ];
}

/** What kube-controller-manager and kube-scheduler are both started with. */
function componentArgs(ip: string, port: number, kubeconfig: string, certDir: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    `--bind-address=${ip}`,
    `--secure-port=${port}`,
    '--leader-elect=false',
    '--kube-api-qps=200',
    '--kube-api-burst=400',
    `--cert-dir=${certDir}`,
    '--profiling=false',
  ];
}

/**
 * The kubelet stand-in's pod lookup. One pod list serves every node's summary for a second:
 * a scrape of 1,000 nodes would otherwise make the stand-in send 1,000 list calls (and TLS
 * handshakes) of its own.
 */
function runningPodsByNode(core: CoreV1Api): (nodeName: string) => Promise<SummaryPodRef[]> {
  let podCache: { at: number; byNode: Promise<Map<string, SummaryPodRef[]>> } | undefined;
  return async (nodeName) => {
    if (!podCache || Date.now() - podCache.at > 1000) {
      const at = Date.now();
      const byNode = core.listPodForAllNamespaces({ fieldSelector: 'status.phase=Running' }).then((list) => {
        const m = new Map<string, SummaryPodRef[]>();
        for (const p of list.items) {
          const n = p.spec?.nodeName;
          if (!n) continue;
          const refs = m.get(n) ?? [];
          refs.push({
            name: p.metadata!.name!,
            namespace: p.metadata!.namespace!,
            uid: p.metadata!.uid!,
            containers: (p.spec?.containers ?? []).map((c) => c.name),
            startTime: p.status?.startTime ? new Date(p.status.startTime).toISOString() : undefined,
          });
          m.set(n, refs);
        }
        return m;
      });
      podCache = { at, byNode };
      byNode.catch(() => {
        if (podCache?.byNode === byNode) podCache = undefined;
      });
    }
    return (await podCache.byNode).get(nodeName) ?? [];
  };
}

/** What the harness's fixture and Prometheus helpers use of a running cluster. */
interface ClusterContext {
  ip: string;
  log: (line: string) => void;
  binaries: KubeBinaries;
  pki: Pki;
  core: CoreV1Api;
  kwok: Managed;
  sup: Supervisor;
  kubelet: FakeKubeletSummary;
  konnectivity: FakeKonnectivityServer;
  prometheus: FakePrometheus;
  apply: KubeHarness['apply'];
}

/** `KubeHarness.loadGpuFixtures`: fake nodes (each with a kubelet stand-in), Ready through kwok; GPU DeviceClasses, ResourceSlices, DCGM series. */
async function loadGpuFixtures(c: ClusterContext, size: FixtureSize, gpu: boolean, seq: number): Promise<LoadedFixtures> {
  const plan = planNodes(size, { gpu, block: seq });
  const existing = new Set((await c.core.listNode()).items.map((n) => n.metadata?.name));
  const todo = plan.filter((n) => !existing.has(n.name));
  const started = Date.now();
  c.log(`loading ${todo.length} fixture node(s) (${gpu ? 'GPU' : 'plain'})`);
  if (todo.length) {
    const kubeletCert = await c.pki.issue({
      name: `kubelet-serving-${seq}`,
      cn: `system:node:fixture-${seq}`,
      orgs: ['system:nodes'],
      usage: 'server',
      ips: todo.map((n) => n.ip),
      dns: todo.map((n) => n.name),
    });
    const kubeletVersion = c.binaries.versions.kubernetes;
    await parallel(todo, 16, async (n) => {
      const port = await c.kubelet.addNode(n.name, c.ip, { cert: kubeletCert.cert, key: kubeletCert.key });
      c.konnectivity.route(`${n.ip}:${KUBELET_PORT}`, { host: c.ip, port });
      await c.core.createNode({ body: nodeObject(n, KUBELET_PORT, kubeletVersion) });
    });
  }
  // kwok's node-initialize stage marks them Ready.
  const names = new Set(plan.map((n) => n.name));
  await waitForServing(
    `${plan.length} fixture nodes Ready`,
    async () => {
      const nodes = (await c.core.listNode()).items.filter((n) => names.has(n.metadata?.name ?? ''));
      return nodes.length === plan.length && nodes.every(isReady);
    },
    { timeoutMs: 60_000 + plan.length * 300, proc: c.kwok, sup: c.sup, intervalMs: 500 },
  );
  if (gpu) {
    await c.apply(deviceClasses());
    await parallel(
      plan.map(resourceSlice).filter((s): s is NonNullable<typeof s> => !!s),
      16,
      async (s) => void (await c.apply([s])),
    );
    c.prometheus.set(gpuSeries(plan));
  }
  const readyMs = Date.now() - started;
  c.log(`${plan.length} fixture node(s) Ready in ${readyMs} ms`);
  return { nodes: plan, readyMs };
}

/** `KubeHarness.exposePrometheus`: a kwok-run Deployment and Service whose pod IP the egress splices to the stand-in. */
async function exposePrometheus(c: ClusterContext, namespace: string, name: string): Promise<{ namespace: string; name: string; port: string; podIP: string }> {
  const labels = { 'app.kubernetes.io/name': 'prometheus', 'app.kubernetes.io/instance': name };
  await c.core.createNamespace({ body: { metadata: { name: namespace } } }).catch((e: { code?: number }) => {
    if (e.code !== 409) throw e;
  });
  await c.apply([
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            tolerations: [{ operator: 'Exists' }],
            containers: [{ name: 'prometheus', image: 'quay.io/prometheus/prometheus:v3.5.0', ports: [{ name: 'web', containerPort: 9090 }] }],
          },
        },
      },
    } as ApplyTarget,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace, labels },
      spec: { selector: labels, ports: [{ name: 'web', port: 9090, targetPort: 9090, protocol: 'TCP' }] },
    } as ApplyTarget,
  ]);
  let podIP = '';
  await waitForServing(
    `prometheus pod in ${namespace} Running with an IP and in the Service's Endpoints`,
    async () => {
      const pods = await c.core.listNamespacedPod({ namespace, labelSelector: `app.kubernetes.io/instance=${name}` });
      const pod = pods.items.find((p) => p.status?.phase === 'Running' && p.status?.podIP);
      if (!pod) return false;
      podIP = pod.status!.podIP!;
      const eps = await c.core.readNamespacedEndpoints({ name, namespace }).catch(() => undefined);
      return !!eps?.subsets?.some((ss) => ss.addresses?.some((a) => a.ip === podIP));
    },
    { timeoutMs: 60_000, proc: c.kwok, sup: c.sup, intervalMs: 250 },
  );
  const port = Number(new URL(c.prometheus.url).port);
  c.konnectivity.route(`${podIP}:9090`, { host: c.ip, port });
  return { namespace, name, port: 'web', podIP };
}

function isReady(n: V1Node): boolean {
  return !!n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}

async function parallel<T>(items: T[], width: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]);
    }
  });
  await Promise.all(workers);
}

/** DCGM-exporter-shaped series for each NVIDIA GPU of the plan. Values are fixed per GPU. */
export function gpuSeries(plan: FixtureNode[]): Sample[] {
  const out: Sample[] = [];
  for (const n of plan) {
    const m = n.model;
    if (m?.vendor !== 'nvidia') continue;
    for (let i = 0; i < m.count; i++) {
      const labels = {
        gpu: String(i),
        UUID: nvidiaGpuUuid(n.name, i),
        pci_bus_id: nvidiaPciBusId(i),
        device: `nvidia${i}`,
        modelName: m.product.replace(/-/g, ' '),
        Hostname: n.name,
        instance: `${n.ip}:9400`,
        job: 'nvidia-dcgm-exporter',
        namespace: 'gpu-operator',
        pod: `nvidia-dcgm-exporter-${n.name}`,
        container: 'nvidia-dcgm-exporter',
      };
      const util = (i * 37 + n.name.length * 11) % 100;
      const usedMiB = Math.round((m.memoryMiB * util) / 100);
      const series: Array<[string, number]> = [
        ['DCGM_FI_DEV_GPU_UTIL', util],
        ['DCGM_FI_DEV_FB_USED', usedMiB],
        ['DCGM_FI_DEV_FB_FREE', m.memoryMiB - usedMiB],
        ['DCGM_FI_DEV_GPU_TEMP', 35 + (util % 40)],
        ['DCGM_FI_DEV_POWER_USAGE', 70 + util * 5],
        // A profiling metric (dcgm-exporter's default set): the fraction of cycles the memory interface was busy.
        ['DCGM_FI_PROF_DRAM_ACTIVE', (util % 50) / 100],
      ];
      for (const [name, value] of series) out.push({ metric: { __name__: name, ...labels }, value });
    }
  }
  return out;
}

