import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildMaster, planMasterBuild } from '@ironlens/agent/master';
import { type RunningTgtd, startTgtd, unusedControlPort } from '@ironlens/agent/testing';
import { newKey } from '@ironlens/clusters/bootstrap-testing';
import { exec } from '@ironlens/core';
import { artifactPath, freeTcpPort, waitFor } from '@ironlens/core/testing';
import { type KubeHarness, startKubeCluster } from '@ironlens/kube-harness';
import { CoreV1Api, type V1Pod, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { modelServerObjects } from '../../clusters/src/testing/model-server';
import { upstreamInferenceExtensionCrds } from '../../clusters/src/testing/upstream-crd-bundles';
import type { RolloutView } from '../src/api/schemas';
import { requireIpmiTools, type RunningIpmiSim, startIpmiSim } from './bmc.harness';
import { BridgedNetns, Daemon, FORWARDER_JS, flatConsole, killAllSync, requireNetbootTools, startNetbootDnsmasq, TCP_TO_SOCKET_JS } from './netboot.harness';

/**
 * Issue 31 end to end: a new master rolled across two running diskless Debian workers, batch by
 * batch, with the service up and a way back.
 *
 * Two qemu machines (TCG) behind two OpenIPMI `ipmi_sim` BMCs (their chassis wiring starts and
 * stops qemu in the netboot network namespace; a power-on asked with a one-time network boot is
 * recorded), booting Debian through the shipped `boot.ipxe`, dnsmasq, a real `ironlens serve` and
 * `ironlens agent`, tgtd, CHAP on, from disks cloned from the cached master A. They are nodes of
 * a kube-harness cluster registered in the cluster manager (kwok nodes named like them, a
 * two-replica model server behind an InferencePool, a PodDisruptionBudget of minAvailable 1).
 *
 *  1. A master with a broken boot sector (A's disk with its MBR signature cleared: iPXE's sanboot
 *     refuses it, the machine netboots again): node-cp is drained, re-cloned, power-cycled, fails,
 *     is rolled back and boots A again; the rollout pauses with that reason, node-wk untouched.
 *  2. Master B (the same build, its own name in /etc/ironlens-master), max_unavailable 1: the
 *     nodes are cordoned and drained one at a time, each VM really reboots into B (its host report
 *     and `/etc/ironlens-master` read over SSH), the budget is never violated (a watch sees every
 *     pod change), the old disks stay until each worker is proven.
 *  3. Drift: a binding removed from the hosts file by hand and a target deleted on tgtd are
 *     reported, and reconciled.
 *
 * Boots: two of A (first), one short failed one of the broken master and one of A (the rollback),
 * two of B: four Debian boots and a failed one.
 */

const here = dirname(fileURLToPath(import.meta.url));
const BOOT_IPXE = join(here, '..', 'assets', 'boot.ipxe');
const IRONLENS = join(here, '..', '..', 'cli', 'bin', 'ironlens.mjs');

const NS = `ironlens-ro-${process.pid}`;
const SRV = '192.168.231.1';
const CP_URL = `http://${SRV}:4839`;
const BASE_IQN = 'iqn.2026-07.io.ironlens.rollout';
const TOKEN = `cp-${randomBytes(8).toString('hex')}`;
const CONSOLE_TOKEN = `console-${randomBytes(8).toString('hex')}`;
const AGENT_TOKEN = `agent-${randomBytes(8).toString('hex')}`;
const A = '_tpl_debian_12.img';
const B = '_tpl_debian_12_b.img';
const BROKEN = '_tpl_debian_12_broken.img';
const VMS = [
  { id: 'node-cp', mac: '52:54:00:31:e0:01', tap: 'tap1', ip: '192.168.231.11' },
  { id: 'node-wk', mac: '52:54:00:31:e0:02', tap: 'tap2', ip: '192.168.231.12' },
] as const;
const KNS = 'serving';

const t0 = Date.now();
const say = (msg: string) => console.log(`[rollout-e2e ${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);

interface HostView {
  image?: { master: string; build: string } | null;
  boot_disk?: { iqn: string } | null;
  ssh_host_keys: Array<{ algorithm: string; fingerprint: string }>;
  reported_at: string;
}
interface WorkerView {
  worker_id: string;
  disks: Array<{ iqn: string; os: string; source: { name?: string } }>;
  host?: HostView | null;
  address?: string | null;
  image_history?: Array<{ master: string | null; outcome: string; rollout_id: string | null }>;
}

/**
 * The board wiring of a diskless machine behind ipmi_sim (its `chassis_control` program): power on
 * starts qemu (in its own session, in the namespace); off kills its group; `set boot pxe` is kept
 * and used by the next power-on (as a BMC's one-time boot). The machine is diskless: it boots
 * from the network either way (iPXE first), and a guest reboot stays in the same qemu (so a
 * failed sanboot comes back to the network boot, as real firmware retries).
 */
function chassisScript(dir: string, vm: (typeof VMS)[number]): string {
  const file = join(dir, 'chassis.sh');
  writeFileSync(
    file,
    `#!/bin/sh
dir='${dir}'
shift
op="$1"; shift
echo "$(date +%s.%N) $op $*" >> "$dir/chassis.log"
running() { [ -f "$dir/qemu.pid" ] && kill -0 "$(cat "$dir/qemu.pid")" 2>/dev/null; }
start() {
  echo "$(date +%s.%N) power-on boot=$(cat "$dir/bootdev" 2>/dev/null || echo default)" >> "$dir/chassis.log"
  echo default > "$dir/bootdev"
  setsid ip netns exec ${NS} qemu-system-x86_64 -accel tcg,thread=multi -m 1200 -smp 2 -nodefaults -vga std -nographic -serial mon:stdio \\
    -boot order=n,strict=on,reboot-timeout=1000 \\
    -netdev tap,id=n0,ifname=${vm.tap},script=no,downscript=no -device virtio-net-pci,netdev=n0,mac=${vm.mac} \\
    < /dev/null >> "$dir/serial.log" 2>&1 &
  echo $! > "$dir/qemu.pid"
}
stop() { if running; then kill -9 -- "-$(cat "$dir/qemu.pid")" 2>/dev/null || kill -9 "$(cat "$dir/qemu.pid")"; fi; rm -f "$dir/qemu.pid"; }
case "$op" in
get)
  for p in "$@"; do
    case "$p" in
      power) if running; then echo "power:1"; else echo "power:0"; fi ;;
      boot) echo "boot:$(cat "$dir/bootdev" 2>/dev/null || echo default)" ;;
    esac
  done ;;
set)
  while [ $# -ge 2 ]; do
    case "$1" in
      power) if [ "$2" = 1 ]; then running || start; else stop; fi ;;
      reset) stop; start ;;
      shutdown) stop ;;
      boot) echo "$2" > "$dir/bootdev" ;;
    esac
    shift 2
  done ;;
esac
exit 0
`,
    { mode: 0o755 },
  );
  return file;
}

describe('rollout end to end: two diskless Debian workers rolled from master A to B, one at a time, with a broken master rolled back', () => {
  let work: string;
  let netns: BridgedNetns | undefined;
  let tgtd: RunningTgtd | undefined;
  let kube: KubeHarness | undefined;
  let failed = false;
  const daemons: Daemon[] = [];
  const sims: Record<string, RunningIpmiSim> = {};
  const ports = { boot: 0, console: 0, agent: 0 };
  const paths = { tftp: '', disks: '', hosts: '', dnsmasqPid: '', dnsmasqLog: '', testKey: '' };
  const podEvents: Array<{ at: number; type: string; name: string; ready: boolean; deleting: boolean }> = [];
  const nodeEvents: Array<{ at: number; name: string; unschedulable: boolean }> = [];
  const stops: Array<() => void> = [];
  let clusterId = '';

  const vmDir = (id: string) => join(work, id);
  const qemuPid = (id: string) => (existsSync(join(vmDir(id), 'qemu.pid')) ? Number(readFileSync(join(vmDir(id), 'qemu.pid'), 'utf8')) : 0);
  const serial = (id: string) => (existsSync(join(vmDir(id), 'serial.log')) ? flatConsole(readFileSync(join(vmDir(id), 'serial.log'), 'latin1')) : '');
  const chassis = (id: string) => (existsSync(join(vmDir(id), 'chassis.log')) ? readFileSync(join(vmDir(id), 'chassis.log'), 'utf8') : '');
  const onExit = () => {
    for (const vm of VMS) {
      const pid = work ? qemuPid(vm.id) : 0;
      if (pid > 1) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {}
      }
    }
    killAllSync();
    netns?.destroySync();
  };

  async function call(base: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string; json<T = unknown>(): T }> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'x-ironlens-request': '1', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    return { status: res.status, text, json: <T>() => JSON.parse(text) as T };
  }
  const api = (method: string, path: string, body?: unknown) => call(`http://127.0.0.1:${ports.boot}`, TOKEN, method, path, body);
  const worker = async (id: string) => (await api('GET', `/workers/${id}`)).json<WorkerView>();
  const rollout = async (id: string) => (await api('GET', `/rollouts/${id}`)).json<RolloutView>();
  const targets = async () => (await exec(['tgtadm', '-C', String(tgtd!.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show'])).stdout;

  /** SSH to a worker after checking that the keys its sshd offers are the ones it reported. */
  async function ssh(id: string, command: string): Promise<string> {
    const w = await worker(id);
    const ip = w.address!;
    const scan = await exec([...netns!.wrap, 'ssh-keyscan', '-T', '20', ip], { timeoutMs: 60_000 });
    const known = scan.stdout.split('\n').filter((l) => l && !l.startsWith('#'));
    const fps = execFileSync('ssh-keygen', ['-lf', '-'], { input: `${known.join('\n')}\n`, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ')[1])
      .sort();
    expect(fps, `${id}'s sshd offers the keys it reported`).toEqual(w.host!.ssh_host_keys.map((k) => k.fingerprint).sort());
    const kh = join(work, `known_hosts.${id}`);
    writeFileSync(kh, `${known.join('\n')}\n`);
    const r = await exec(
      [...netns!.wrap, 'ssh', '-i', paths.testKey, '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${kh}`, '-o', 'StrictHostKeyChecking=yes', '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'ConnectTimeout=20', '-o', 'LogLevel=ERROR', `root@${ip}`, command],
      { timeoutMs: 60_000 },
    );
    return r.stdout;
  }

  async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const start = Date.now();
    say(`${name}: start`);
    try {
      const v = await fn();
      say(`${name}: done in ${((Date.now() - start) / 1000).toFixed(1)} s`);
      return v;
    } catch (err) {
      failed = true;
      const e = err as Error;
      const tail = (n: string, text: string) => `\n--- ${n} (tail) ---\n${text.slice(-2500)}`;
      for (const vm of VMS) e.message += tail(`${vm.id} serial`, serial(vm.id)) + tail(`${vm.id} chassis`, chassis(vm.id));
      e.message += tail('serve', daemons.find((d) => d.name === 'ironlens-serve')?.log() ?? '');
      throw e;
    }
  }

  /** Waits for a rollout to leave `running` (and `pausing`/`aborting`), within `ms`. */
  const settled = (id: string, ms: number) =>
    waitFor(
      `rollout ${id} to end its run`,
      () => rollout(id),
      (r) => !['running', 'pausing', 'aborting'].includes(r.state),
      ms,
      2000,
    );

  beforeAll(async () => {
    requireNetbootTools();
    requireIpmiTools();
    const plan = planMasterBuild({ os: 'debian-12', diskDir: tmpdir() });
    if (!existsSync(join(plan.rootfsDir, 'done'))) throw new Error(`no cached master root filesystem (${plan.rootfsDir}): run scripts/build-test-master.sh first (test-all.sh does)`);
    process.once('exit', onExit);
    work = mkdtempSync(join(tmpdir(), 'ironlens-rollout-e2e-'));
    chmodSync(work, 0o755);
    Object.assign(paths, {
      tftp: join(work, 'tftp'),
      disks: join(work, 'disks'),
      hosts: join(work, 'dnsmasq', 'dhcp-hosts.conf'),
      dnsmasqPid: join(work, 'dnsmasq', 'dnsmasq.pid'),
      dnsmasqLog: join(work, 'dnsmasq', 'dnsmasq.log'),
      testKey: newKey(join(work, 'test-key')),
    });
    for (const d of [paths.tftp, paths.disks, dirname(paths.hosts), join(work, 'cp'), ...VMS.map((v) => vmDir(v.id))]) mkdirSync(d, { recursive: true });

    await step('setup', async () => {
      copyFileSync(BOOT_IPXE, join(paths.tftp, 'boot.ipxe'));
      writeFileSync(paths.hosts, '');
      // Masters: A (the cached build), B (the same build under its own name: its own identity), and A with a broken boot sector.
      const a = await buildMaster({ os: 'debian-12', diskDir: paths.disks, authorizedKeys: [`${paths.testKey}.pub`], controlPlane: CP_URL, log: () => {} });
      const b = await buildMaster({ os: 'debian-12', name: 'debian_12_b', diskDir: paths.disks, authorizedKeys: [`${paths.testKey}.pub`], controlPlane: CP_URL, log: () => {} });
      expect([a.cached, b.cached]).toEqual([true, true]);
      await exec(['cp', '--sparse=always', join(paths.disks, A), join(paths.disks, BROKEN)]);
      const fd = openSync(join(paths.disks, BROKEN), 'r+');
      writeSync(fd, Buffer.from([0, 0]), 0, 2, 510); // no 0x55aa: not a boot sector any more
      closeSync(fd);
      say(`setup: masters ${A} (build ${a.build}), ${B} (build ${b.build}), ${BROKEN} (A without its boot signature)`);

      const ns = new BridgedNetns(NS, SRV, 'fd00:231::1', 2);
      netns = ns;
      await ns.create();
      tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `${SRV}:3260`, wrapper: ns.wrap, logFile: join(work, 'tgtd.log') });
      const dnsmasq = startNetbootDnsmasq({ wrap: ns.wrap, iface: 'br0', range: '192.168.231.100,192.168.231.200,255.255.255.0,1h', dir: join(work, 'dnsmasq'), tftpRoot: paths.tftp, hostsFile: paths.hosts });
      daemons.push(dnsmasq);

      // The cluster the workers are nodes of: kwok nodes named like them, a model server behind an InferencePool, its budget.
      kube = await startKubeCluster({ nodes: 0, gpu: false, log: () => {} });
      const crds = parseAllDocuments(upstreamInferenceExtensionCrds('v1.5.0'))
        .map((d) => d.toJSON())
        .filter((o) => o && o.kind === 'CustomResourceDefinition');
      await kube.apply(crds);
      await kube.apply([
        ...VMS.map((v) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: v.id, labels: { 'kubernetes.io/hostname': v.id } } })),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KNS } },
      ]);
      await kube.apply(modelServerObjects(KNS, 1));
      const core = kube.kubeConfig().makeApiClient(CoreV1Api);
      await waitFor('two model pods Ready', async () => (await core.listNamespacedPod({ namespace: KNS })).items.filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length, (n) => n === 2, 60_000, 250);
      const watch = new Watch(kube.kubeConfig());
      const pw = await watch.watch(
        `/api/v1/namespaces/${KNS}/pods`,
        {},
        (type: string, p: V1Pod) => podEvents.push({ at: Date.now(), type, name: p.metadata?.name ?? '', ready: !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'), deleting: !!p.metadata?.deletionTimestamp }),
        () => {},
      );
      const nw = await watch.watch('/api/v1/nodes', {}, (_t: string, n: { metadata?: { name?: string }; spec?: { unschedulable?: boolean } }) => nodeEvents.push({ at: Date.now(), name: n.metadata?.name ?? '', unschedulable: !!n.spec?.unschedulable }), () => {});
      stops.push(() => pw.abort(), () => nw.abort());

      // ironlens: the agent and serve on this side, the machines' HTTP forwarded into the namespace.
      [ports.boot, ports.console, ports.agent] = [await freeTcpPort(), await freeTcpPort(), await freeTcpPort()];
      const baseEnv = { ...process.env, IRONLENS_LOG: '1', IRONLENS_FROM_SOURCE: '1' };
      const agent = Daemon.start('ironlens-agent', [process.execPath, IRONLENS, 'agent'], join(work, 'agent.log'), {
        ...baseEnv,
        DISK_DIR: paths.disks,
        IPXE_AGENT_TOKEN: AGENT_TOKEN,
        IPXE_AGENT_BACKEND: 'stgt',
        IPXE_AGENT_BASE_IQN: BASE_IQN,
        IPXE_AGENT_TGT_CONTROL_PORT: String(tgtd.controlPort),
        IRONLENS_AGENT_LISTEN: `127.0.0.1:${ports.agent}`,
      });
      const serve = Daemon.start('ironlens-serve', [process.execPath, IRONLENS, 'serve'], join(work, 'serve.log'), {
        ...baseEnv,
        IRONLENS_DATA_DIR: join(work, 'cp'),
        IRONLENS_BOOT_LISTEN: `127.0.0.1:${ports.boot}`,
        IRONLENS_CONSOLE_LISTEN: `127.0.0.1:${ports.console}`,
        IRONLENS_CONSOLE_TOKEN: CONSOLE_TOKEN,
        IPXE_CP_TOKEN: TOKEN,
        IPXE_CP_DNSMASQ_HOSTS_FILE: paths.hosts,
        IPXE_CP_DNSMASQ_PID_FILE: paths.dnsmasqPid,
        IRONLENS_ISCSI_CHAP: 'true',
      });
      const sock = join(work, 'boot.sock');
      const out = Daemon.start('boot-forwarder-out', [process.execPath, '-e', FORWARDER_JS, sock, '127.0.0.1', String(ports.boot)], join(work, 'forward-out.log'));
      const into = Daemon.start('boot-forwarder-in', [...ns.wrap, process.execPath, '-e', TCP_TO_SOCKET_JS, SRV, '4839', sock], join(work, 'forward-in.log'));
      daemons.push(agent, serve, out, into);
      for (const [d, ready] of [
        [agent, /Server listening at/],
        [serve, /provisioning API on[\s\S]*console on|console on[\s\S]*provisioning API on/],
        [out, /forwarding/],
        [into, /forwarding/],
      ] as const) {
        await waitFor(`${d.name} to start`, () => d.log(), (l) => ready.test(l) || !d.running, 60_000, 100);
        if (!d.running) throw new Error(`${d.name} exited with code ${d.code}: ${d.log().slice(-2000)}`);
      }
      for (const vm of VMS) sims[vm.id] = await startIpmiSim(vmDir(vm.id), chassisScript(vmDir(vm.id), vm));
      for (const s of Object.values(sims)) daemons.push(s.daemon);
      if (!dnsmasq.running) throw new Error(`dnsmasq exited: ${dnsmasq.log()}`);
    });
  }, 600_000);

  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      failed = true;
    });
  });

  afterAll(async () => {
    for (const s of stops) s();
    onExit();
    for (const d of [...daemons].reverse()) await d.stop();
    await tgtd?.stop();
    await kube?.stop();
    await netns?.destroy();
    process.removeListener('exit', onExit);
    if (work && failed) {
      const kept = artifactPath('rollout-e2e-logs');
      cpSync(work, kept, { recursive: true, filter: (src) => statSync(src).isDirectory() || /\.(log|conf|sh)$/.test(src) });
      say(`logs kept in ${kept}`);
    }
    if (work) rmSync(work, { recursive: true, force: true });
  }, 120_000);

  it('binds both machines with BMCs and disks cloned from A, registers the cluster, and boots them through their BMCs', async () => {
    await step('boot A', async () => {
      expect((await api('POST', '/agents', { id: 'storage', base_url: `http://127.0.0.1:${ports.agent}`, token: AGENT_TOKEN, iscsi_server: SRV, role: { disk: true, cd: false }, tags: ['stgt'] })).status).toBe(201);
      for (const vm of VMS) {
        const sim = sims[vm.id];
        const dev = await api('POST', '/devices', { mac: vm.mac, bmc: { driver: 'ipmi', host: '127.0.0.1', port: sim.port, username: sim.username, password: sim.password } });
        expect(dev.status, dev.text).toBe(201);
        expect((await api('POST', '/workers', { worker_id: vm.id, mac: vm.mac })).status).toBe(200);
        // Fixed addresses: two machines that DHCP together are never offered one address.
        expect((await api('PUT', `/workers/${vm.id}/address`, { fixed_address: vm.ip })).status).toBe(200);
        const disk = await api('POST', `/workers/${vm.id}/luns/disk`, { type: 'master', os: 'debian', name: A });
        expect(disk.status, disk.text).toBe(200);
        expect((await api('PUT', `/workers/${vm.id}/default-os`, { os: 'debian', menu_timeout: 1 })).status).toBe(200);
      }
      // The kube-harness cluster, registered like any other.
      const boundary = `----ironlens${randomBytes(8).toString('hex')}`;
      const form = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nrollout-e2e\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="kubeconfig.yaml"\r\nContent-Type: application/octet-stream\r\n\r\n${kube!.kubeconfig}\r\n--${boundary}--\r\n`,
      );
      const reg = await fetch(`http://127.0.0.1:${ports.console}/api/cluster/clusters`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CONSOLE_TOKEN}`, 'x-ironlens-request': '1', 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: form,
      });
      const regText = await reg.text();
      expect(reg.status, regText).toBeLessThan(300);
      clusterId = (JSON.parse(regText) as { id: string }).id;
      const on = await api('POST', '/devices/power', { macs: VMS.map((v) => v.mac), action: 'on', boot: 'network' });
      expect(on.status, on.text).toBe(200);
      expect(on.json<{ failed: unknown[] }>().failed).toEqual([]);
      for (const vm of VMS) {
        const w = await waitFor(`${vm.id}'s host report`, () => worker(vm.id), (x) => !!x.host, 420_000, 2000);
        expect(w.host!.image).toMatchObject({ master: A });
        expect(w.host!.boot_disk).toEqual({ iqn: `${BASE_IQN}:${vm.id}.debian` });
        expect(chassis(vm.id)).toMatch(/power-on boot=pxe/);
        say(`${vm.id}: booted A (${w.host!.image?.build}) from ${w.host!.boot_disk?.iqn}, ${w.address}`);
      }
    });
  }, 600_000);

  it('rolls back a worker whose new master does not boot (broken boot sector): it boots A again, and the rollout pauses with the reason', async () => {
    await step('broken master', async () => {
      const cpBefore = (await worker('node-cp')).host!;
      const created = await api('POST', '/rollouts', { workers: VMS.map((v) => v.id), master: BROKEN, max_unavailable: 1, boot_timeout_s: 600, drain_timeout_s: 120, pool_leave_s: 2 });
      expect(created.status, created.text).toBe(201);
      const id = created.json<RolloutView>().id;
      const paused = await settled(id, 600_000);
      expect(paused.state, JSON.stringify(paused.workers.map((w) => [w.worker_id, w.phase, w.reason]))).toBe('paused');
      expect(paused.reason).toMatch(/^batch 1: node-cp was rolled back: the machine came back to the network boot at \S+ without a host report: _tpl_debian_12_broken\.img on iqn\.2026-07\.io\.ironlens\.rollout:r\d+:node-cp\.debian did not boot$/);
      expect(paused.workers.map((w) => [w.worker_id, w.phase])).toEqual([
        ['node-cp', 'rolled_back'],
        ['node-wk', 'queued'],
      ]);
      expect(serial('node-cp')).toMatch(/ironlens: sanboot failed/);
      // Back on A, proven by a new report after the rollback's power-cycle, and read over SSH.
      const cp = await worker('node-cp');
      expect(cp.host!.image).toEqual(cpBefore.image);
      expect(cp.host!.boot_disk).toEqual({ iqn: `${BASE_IQN}:node-cp.debian` });
      expect(Date.parse(cp.host!.reported_at)).toBeGreaterThan(Date.parse(cpBefore.reported_at));
      expect(await ssh('node-cp', 'cat /etc/ironlens-master')).toMatch(new RegExp(`^master=${A.replace(/\./g, '\\.')}$`, 'm'));
      expect(cp.image_history?.[0]).toMatchObject({ master: A, outcome: 'rolled_back', rollout_id: id });
      expect(await targets()).not.toMatch(/:r\d+:node-cp\.debian/);
      expect(nodeEvents.filter((e) => e.name === 'node-wk' && e.unschedulable)).toEqual([]);
      expect(nodeEvents.at(-1)).toBeDefined();
      const cpNode = (await kube!.kubeConfig().makeApiClient(CoreV1Api).readNode({ name: 'node-cp' })).spec?.unschedulable;
      expect(cpNode).toBeFalsy();
      const aborted = await api('POST', `/rollouts/${id}/abort`);
      expect(aborted.status, aborted.text).toBe(200);
      expect((await settled(id, 60_000)).state).toBe('aborted');
      say(`broken master: ${paused.reason}`);
    });
  }, 900_000);

  it('rolls both to B with max_unavailable 1: one node at a time cordoned and drained, each VM reboots into B, the budget never violated, the old disks kept until each is proven', async () => {
    await step('roll to B', async () => {
      const before = Object.fromEntries(await Promise.all(VMS.map(async (v) => [v.id, await worker(v.id)] as const)));
      const fromEvents = podEvents.length;
      const created = await api('POST', '/rollouts', { workers: VMS.map((v) => v.id), master: B, max_unavailable: 1, boot_timeout_s: 600, drain_timeout_s: 120, pool_leave_s: 2 });
      expect(created.status, created.text).toBe(201);
      const id = created.json<RolloutView>().id;
      // While node-cp proves its new image: both of its disks exist, node-wk is untouched.
      const proving = await waitFor('node-cp to prove its new image', () => rollout(id), (r) => r.workers[0].phase === 'proving' || r.state !== 'running', 300_000, 1000);
      expect(proving.workers.map((w) => w.phase)).toEqual(['proving', 'queued']);
      const shown = await targets();
      expect(shown).toContain(`${BASE_IQN}:node-cp.debian`);
      expect(shown).toMatch(new RegExp(`${BASE_IQN.replace(/\./g, '\\.')}:r\\d+:node-cp\\.debian`));
      const done = await settled(id, 900_000);
      expect(done.state, JSON.stringify(done.workers.map((w) => [w.worker_id, w.phase, w.reason]))).toBe('succeeded');
      for (const vm of VMS) {
        const w = await worker(vm.id);
        expect(w.host!.image).toMatchObject({ master: B });
        expect(w.host!.boot_disk?.iqn).toMatch(new RegExp(`:r\\d+:${vm.id}\\.debian$`));
        expect(w.disks[0].iqn).toBe(w.host!.boot_disk?.iqn);
        expect(Date.parse(w.host!.reported_at)).toBeGreaterThan(Date.parse(before[vm.id].host!.reported_at));
        const facts = await ssh(vm.id, 'cat /etc/ironlens-master; iscsiadm -m session');
        expect(facts).toMatch(new RegExp(`^master=${B.replace(/\./g, '\\.')}$`, 'm'));
        expect(facts).toContain(w.host!.boot_disk!.iqn);
        expect(w.image_history?.[0]).toMatchObject({ master: B, outcome: 'rolled_out', rollout_id: id });
        // Proven: the old disk is gone.
        expect(await targets()).not.toContain(`${BASE_IQN}:${vm.id}.debian\n`);
      }
      // One node at a time: node-wk was cordoned only after node-cp was uncordoned.
      const cordons = nodeEvents.filter((e) => e.unschedulable);
      const wkCordon = nodeEvents.findIndex((e) => e.name === 'node-wk' && e.unschedulable);
      expect(cordons.length).toBeGreaterThan(0);
      expect(wkCordon).toBeGreaterThan(nodeEvents.findIndex((e) => e.name === 'node-cp' && e.unschedulable));
      expect(nodeEvents.slice(0, wkCordon).findLastIndex((e) => e.name === 'node-cp' && !e.unschedulable)).toBeGreaterThan(-1);
      // The budget (minAvailable 1) held at every pod change: never fewer than one model pod Ready and not deleting.
      const ready = new Map<string, boolean>();
      for (const [i, e] of podEvents.entries()) {
        if (e.type === 'DELETED' || e.deleting) ready.delete(e.name);
        else ready.set(e.name, e.ready);
        if (i >= fromEvents) expect([...ready.values()].filter(Boolean).length, `after pod event ${i}: ${JSON.stringify(e)}`).toBeGreaterThanOrEqual(1);
      }
      expect(podEvents.slice(fromEvents).some((e) => e.deleting)).toBe(true);
      const steps = done.workers.map((w) => w.steps.map((s) => `${s.step} ${s.status}`));
      say(`rolled to B: ${done.workers.map((w) => `${w.worker_id} ${w.started_at} → ${w.finished_at}`).join('; ')}; steps ${JSON.stringify(steps[0])}`);
      const metrics = (await api('GET', '/metrics')).text;
      expect(metrics).toMatch(/^ironlens_workers_by_image\{master="_tpl_debian_12_b\.img"\} 2$/m);
      expect(chassis('node-wk').match(/power-on boot=pxe/g)?.length).toBe(2);
    });
  }, 900_000);

  it('reports a binding removed from the hosts file by hand and a target deleted on tgtd, and reconciles both', async () => {
    await step('drift', async () => {
      const wk = await worker('node-wk');
      const iqn = wk.disks[0].iqn;
      const text = readFileSync(paths.hosts, 'utf8');
      expect(text).toContain(VMS[1].mac);
      writeFileSync(paths.hosts, text.split('\n').filter((l) => !l.startsWith(VMS[1].mac)).join('\n'));
      const tid = new RegExp(`Target (\\d+): ${iqn.replace(/\./g, '\\.')}$`, 'm').exec(await targets())?.[1];
      expect(tid).toBeDefined();
      await exec(['tgtadm', '-C', String(tgtd!.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'delete', '--force', '--tid', tid!]);
      const status = (await api('GET', '/workers/node-wk/status')).json<{ drift: Array<{ kind: string; fixable: boolean }> }>();
      expect(status.drift.map((d) => [d.kind, d.fixable])).toEqual([
        ['hosts_file_missing', true],
        ['target_missing', true],
      ]);
      const fleet = (await api('GET', '/drift')).json<{ workers: Array<{ worker_id: string }> }>();
      expect(fleet.workers.map((w) => w.worker_id)).toEqual(['node-wk']);
      const r = (await api('POST', '/drift/reconcile')).json<{ actions: Array<{ action: string; ok: boolean }>; remaining: unknown[] }>();
      expect(r.actions.map((a) => [a.action, a.ok])).toEqual([
        ['hosts_file_rendered', true],
        ['agent_scanned', true],
      ]);
      expect(r.remaining).toEqual([]);
      expect(readFileSync(paths.hosts, 'utf8')).toContain(VMS[1].mac);
      expect(await targets()).toContain(iqn);
      // The worker's session came back to the target made again: it still answers.
      await waitFor('node-wk to answer over SSH', () => ssh('node-wk', 'echo alive').catch(() => ''), (o) => o.trim() === 'alive', 120_000, 2000);
      say(`drift: reported and reconciled (${r.actions.map((a) => a.action).join(', ')})`);
    });
  }, 300_000);
});

