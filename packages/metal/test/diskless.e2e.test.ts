import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildMaster, type MasterBuildResult, planMasterBuild } from '@ironlens/agent/master';
import { type RunningTgtd, startTgtd, unusedControlPort } from '@ironlens/agent/testing';
import { KUBESPRAY_VERSION } from '@ironlens/clusters';
import { GitHttpServer, makeBareRepo, newKey, requireTool, standInControl } from '@ironlens/clusters/bootstrap-testing';
import { exec } from '@ironlens/core';
import { artifactPath, sleep, waitFor } from '@ironlens/core/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { kubesprayStandInFiles } from '../../clusters/src/bootstrap/testing/kubespray-standin';
import { BridgedNetns, bootPhases, Daemon, FORWARDER_JS, httpOverSocket, killAllSync, type MachineFirmware, markerBootSector, phaseTable, qemuArgv, requireNetbootTools, stampedArgv, stepper, TCP_TO_SOCKET_JS, timedLines } from './netboot.harness';

/**
 * Issue 24 end to end: power on → diskless Debian → Kubernetes node, with nothing typed.
 *
 * Two qemu machines (TCG; 1.7 GiB for the control-plane node, BIOS; 1.2 GiB for the worker,
 * UEFI: OVMF and iPXE's UEFI ROM, issue 30) boot, from the same `--firmware both` master,
 * through the shipped `boot.ipxe`, dnsmasq, `ironlens serve`, `ironlens agent` and tgtd, with
 * CHAP on, from disks the agent cloned from the master `ironlens master build` made (the root
 * filesystem from the cache scripts/build-test-master.sh filled; ironlens' own SSH key added
 * when the disk is assembled). Linux mounts its root over iSCSI, the host reporter reports, the
 * reported host keys are what ssh-keyscan reads, preflight and a bootstrap by workerId run the
 * stand-in Kubespray with the real ansible-playbook over SSH into both machines, and the job
 * ends with the cluster registered. A third machine that claims a bound worker's hostname gets
 * no disk; a report signed with a wrong secret, or replayed, is refused. Beside it, the
 * boot-sector run of the netboot test (same chain, a disk whose boot sector prints a marker)
 * is timed in the same invocation: the phase table shows where a Debian boot spends its time.
 */

const here = dirname(fileURLToPath(import.meta.url));
const BOOT_IPXE = join(here, '..', 'assets', 'boot.ipxe');
const IRONLENS = join(here, '..', '..', 'cli', 'bin', 'ironlens.mjs');

const NS = `ironlens-dl-${process.pid}`;
const SRV = '192.168.214.1';
const CP_URL = `http://${SRV}:4839`;
const BASE_IQN = 'iqn.2026-07.io.ironlens.diskless';
const TOKEN = `cp-${randomBytes(8).toString('hex')}`;
const CONSOLE_TOKEN = `console-${randomBytes(8).toString('hex')}`;
const AGENT_TOKEN = `agent-${randomBytes(8).toString('hex')}`;
const CP = { id: 'node-cp', mac: '52:54:00:d4:00:01', memory: 1700, tap: 'tap1', firmware: 'bios' as MachineFirmware };
/** The worker boots UEFI (OVMF, iPXE's UEFI ROM) from the same master as the BIOS control-plane node (issue 30). */
const WK = { id: 'node-wk', mac: '52:54:00:d4:00:02', memory: 1200, tap: 'tap2', firmware: 'uefi' as MachineFirmware };
/** The machine that claims node-cp's hostname from a first stage of its own. */
const FORGER = { mac: '52:54:00:d4:00:66', tap: 'tap3' };
/** The boot-sector reference run (the netboot test's marker disk, same chain). */
const MARK = { id: 'node-marker', mac: '52:54:00:d4:00:03', tap: 'tap3' };
const MARKER = `DISKLESS-REF-OK ${randomBytes(4).toString('hex')}`;

const t0 = Date.now();
const say = (msg: string) => console.log(`[diskless ${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);

interface Worker {
  worker_id: string;
  host?: {
    addresses: Array<{ interface: string; mac: string; ipv4: string[]; ipv6: string[] }>;
    ssh_host_keys: Array<{ algorithm: string; fingerprint: string }>;
    os: { id: string; version_id: string; pretty_name: string };
    kernel: string;
    hardware: { cpu_model: string; cpus: number; memory_bytes: number; disks: unknown[]; nics: Array<{ name: string; mac: string }>; accelerators: unknown[] };
    reported_at: string;
  } | null;
  boot_timeline?: { report_at: string | null; boot_vars_at: string | null; iscsi_login_at: string | null; host_report_at: string | null; seconds: number | null } | null;
  address?: string | null;
  [k: string]: unknown;
}

describe('diskless end to end: two machines boot Debian from iSCSI disks cloned from the built master and become a cluster', () => {
  let work: string;
  let netns: BridgedNetns | undefined;
  let tgtd: RunningTgtd | undefined;
  let git: GitHttpServer | undefined;
  let master: MasterBuildResult;
  const daemons: Daemon[] = [];
  let failed = false;
  const paths = { tftp: '', disks: '', hosts: '', dnsmasqPid: '', dnsmasqLog: '', apiSocket: '', consoleSocket: '', testKey: '', control: '' };
  const onExit = () => {
    killAllSync();
    netns?.destroySync();
  };
  const api = (method: string, path: string, body?: unknown) => httpOverSocket(paths.apiSocket, method, path, { token: TOKEN, body });
  const consoleApi = (method: string, path: string, body?: unknown) => httpOverSocket(paths.consoleSocket, method, path, { token: CONSOLE_TOKEN, body });
  const dnsmasqLog = () => (existsSync(paths.dnsmasqLog) ? readFileSync(paths.dnsmasqLog, 'utf8') : '');
  const tgtdLog = () => (tgtd ? readFileSync(tgtd.logFile, 'utf8') : '');
  const tgtdLogins = () => [...tgtdLog().matchAll(/session_find_name: (\S+)/g)].map((m) => m[1]);
  const serveLog = () => daemons.find((d) => d.name === 'ironlens-serve')?.log() ?? '';
  /** Times (ms) the provisioning listener received a request whose URL starts with `prefix`. */
  const served = (prefix: string) =>
    serveLog()
      .split('\n')
      .filter((l) => l.includes(`"url":"${prefix}`))
      .map((l) => (JSON.parse(l) as { time: number }).time);

  let keptLogs: string | undefined;
  const logsDir = () => (keptLogs ??= artifactPath('diskless-e2e-logs'));

  const { step } = stepper(say, () => {
    failed = true;
    const tail = (n: string, text: string) => `\n--- ${n} (tail) ---\n${text.slice(-3000)}`;
    let more = `\nlogs kept in: ${logsDir()}`;
    for (const vm of [CP, WK]) more += tail(`${vm.id} serial`, timedLines(join(work, `${vm.id}.serial.log`)).map((l) => l.text).join('\n'));
    return more + tail('dnsmasq', dnsmasqLog()) + tail('serve', serveLog());
  });

  /** Powers a machine on: qemu (TCG) in its own process group, serial lines time-stamped. */
  function powerOn(name: string, mac: string, tap: string, memory: number, firmware: MachineFirmware = 'bios'): Daemon {
    const d = Daemon.start(name, stampedArgv([...netns!.wrap, ...qemuArgv({ mac, tap, memory, firmware })]), join(work, `${name}.serial.log`));
    daemons.push(d);
    return d;
  }

  const ssh = (ip: string, command: string) =>
    exec(
      [
        ...netns!.wrap,
        'ssh',
        '-i',
        paths.testKey,
        '-o',
        'BatchMode=yes',
        '-o',
        `UserKnownHostsFile=${join(work, 'known_hosts')}`,
        '-o',
        'StrictHostKeyChecking=yes',
        '-o',
        'GlobalKnownHostsFile=/dev/null',
        '-o',
        'ConnectTimeout=20',
        '-o',
        'LogLevel=ERROR',
        `root@${ip}`,
        command,
      ],
      { timeoutMs: 60_000 },
    );

  beforeAll(async () => {
    requireNetbootTools({ uefi: true });
    requireTool('/usr/bin/ansible-playbook', 'Debian ansible-core');
    const plan = planMasterBuild({ os: 'debian-12', diskDir: tmpdir() });
    if (!existsSync(join(plan.rootfsDir, 'done'))) {
      throw new Error(`no cached master root filesystem (${plan.rootfsDir}): run scripts/build-test-master.sh first (test-all.sh does)`);
    }
    process.once('exit', onExit);
    work = mkdtempSync(join(tmpdir(), 'ironlens-diskless-e2e-'));
    chmodSync(work, 0o755);
    Object.assign(paths, {
      tftp: join(work, 'tftp'),
      disks: join(work, 'disks'),
      hosts: join(work, 'dnsmasq', 'dhcp-hosts.conf'),
      dnsmasqPid: join(work, 'dnsmasq', 'dnsmasq.pid'),
      dnsmasqLog: join(work, 'dnsmasq', 'dnsmasq.log'),
      apiSocket: join(work, 'api.sock'),
      consoleSocket: join(work, 'console.sock'),
      testKey: newKey(join(work, 'test-key')),
      control: join(work, 'control'),
    });
    for (const d of [paths.tftp, paths.disks, dirname(paths.hosts), join(work, 'cp')]) mkdirSync(d, { recursive: true });
    writeFileSync(join(work, 'known_hosts'), '');

    await step('setup', async () => {
      copyFileSync(BOOT_IPXE, join(paths.tftp, 'boot.ipxe'));
      writeFileSync(join(paths.tftp, 'claim.ipxe'), `#!ipxe\nset hostname ${CP.id}\nchain boot.ipxe\n`);
      writeFileSync(join(paths.disks, '_tpl_marker.img'), markerBootSector(MARKER));
      await exec(['truncate', '-s', '8M', join(paths.disks, '_tpl_marker.img')]);
      writeFileSync(paths.hosts, '');

      const ns = new BridgedNetns(NS, SRV, 'fd00:214::1', 3);
      netns = ns;
      await ns.create();
      tgtd = await startTgtd({ controlPort: unusedControlPort(), portal: `${SRV}:3260`, wrapper: ns.wrap, logFile: join(work, 'tgtd.log') });
      await exec(['tgtadm', '-C', String(tgtd.controlPort), '--mode', 'system', '--op', 'update', '--name', 'debug', '--value', 'on']);

      const dnsmasq = Daemon.start(
        'dnsmasq',
        [
          ...ns.wrap,
          'dnsmasq',
          '--keep-in-foreground',
          '--conf-file=/dev/null',
          '--port=0',
          '--interface=br0',
          '--bind-interfaces',
          '--no-ping',
          '--dhcp-range=192.168.214.100,192.168.214.200,255.255.255.0,1h',
          '--enable-ra',
          '--dhcp-range=::,constructor:br0,ra-only',
          `--dhcp-hostsfile=${paths.hosts}`,
          `--dhcp-leasefile=${join(work, 'dnsmasq', 'leases')}`,
          '--enable-tftp',
          `--tftp-root=${paths.tftp}`,
          `--dhcp-mac=set:claim,${FORGER.mac}`,
          '--dhcp-boot=tag:claim,claim.ipxe',
          '--dhcp-boot=tag:!claim,boot.ipxe',
          `--pid-file=${paths.dnsmasqPid}`,
          '--log-dhcp',
          `--log-facility=${paths.dnsmasqLog}`,
        ],
        join(work, 'dnsmasq', 'stdout.log'),
      );
      daemons.push(dnsmasq);
      await waitFor('dnsmasq to read its hosts file', dnsmasqLog, (l) => l.includes(`read ${paths.hosts}`) || !dnsmasq.running);

      // The stand-in Kubespray (real ansible-playbook), with one more play that changes each node;
      // its git server on this side of the namespace, reached through a socket pair of forwarders.
      const control = standInControl(paths.control, kubeconfigFor(SRV));
      const files = kubesprayStandInFiles(control);
      files['cluster.yml'] += `
- name: Change something on every node (the test reads it back over ssh)
  hosts: k8s_cluster
  gather_facts: false
  tasks:
    - name: Leave a mark
      ansible.builtin.raw: echo "bootstrapped {{ inventory_hostname }} $(hostname)" > /etc/ironlens-standin-mark
`;
      makeBareRepo(join(work, 'git'), 'kubernetes-sigs/kubespray', join(work, 'kubespray-work'), files, KUBESPRAY_VERSION);
      git = await GitHttpServer.start(join(work, 'git'));
      const gitPort = Number(new URL(git.url).port);
      const gitSock = join(work, 'git.sock');
      daemons.push(Daemon.start('git-forwarder-out', [process.execPath, '-e', FORWARDER_JS, gitSock, '127.0.0.1', String(gitPort)], join(work, 'git-out.log')));
      daemons.push(Daemon.start('git-forwarder-in', [...ns.wrap, process.execPath, '-e', TCP_TO_SOCKET_JS, '127.0.0.1', '9418', gitSock], join(work, 'git-in.log')));

      const baseEnv = { ...process.env, IRONLENS_LOG: '1', IRONLENS_FROM_SOURCE: '1' };
      const serve = Daemon.start('ironlens-serve', [...ns.wrap, process.execPath, IRONLENS, 'serve'], join(work, 'serve.log'), {
        ...baseEnv,
        IRONLENS_DATA_DIR: join(work, 'cp'),
        IRONLENS_BOOT_LISTEN: '0.0.0.0:4839',
        IRONLENS_CONSOLE_LISTEN: '127.0.0.1:8080',
        IRONLENS_CONSOLE_TOKEN: CONSOLE_TOKEN,
        // The test reaches the console through a forwarded socket, naming it `ironlens` (httpOverSocket).
        IRONLENS_CONSOLE_HOSTS: 'ironlens',
        IPXE_CP_TOKEN: TOKEN,
        IPXE_CP_DNSMASQ_HOSTS_FILE: paths.hosts,
        IPXE_CP_DNSMASQ_PID_FILE: paths.dnsmasqPid,
        IRONLENS_ISCSI_CHAP: 'true',
        IRONLENS_GITHUB_MIRROR: 'http://127.0.0.1:9418',
      });
      daemons.push(serve);
      const fwd = Daemon.start('api-forwarder', [...ns.wrap, process.execPath, '-e', FORWARDER_JS, paths.apiSocket, SRV, '4839'], join(work, 'forwarder.log'));
      const cfwd = Daemon.start('console-forwarder', [...ns.wrap, process.execPath, '-e', FORWARDER_JS, paths.consoleSocket, '127.0.0.1', '8080'], join(work, 'console-forwarder.log'));
      daemons.push(fwd, cfwd);
      for (const [d, ready] of [
        [serve, /provisioning API on[\s\S]*console on|console on[\s\S]*provisioning API on/],
        [fwd, /forwarding/],
        [cfwd, /forwarding/],
        [daemons.find((x) => x.name === 'git-forwarder-in')!, /forwarding/],
        [daemons.find((x) => x.name === 'git-forwarder-out')!, /forwarding/],
      ] as const) {
        await waitFor(`${d.name} to start`, () => d.log(), (l) => ready.test(l) || !d.running, 60_000, 100);
        if (!d.running) throw new Error(`${d.name} exited with code ${d.code}: ${d.log().slice(-2000)}`);
      }

      // The master, into the agent's DISK_DIR, with ironlens' own key (a new key: only the disk is assembled).
      const pub = await consoleApi('GET', '/api/cluster/bootstrap/ssh-public-key');
      expect(pub.status, pub.text).toBe(200);
      const ironlensKey = pub.json<{ publicKey: string }>().publicKey.trim();
      master = await buildMaster({
        os: 'debian-12',
        diskDir: paths.disks,
        authorizedKeys: [ironlensKey, `${paths.testKey}.pub`],
        controlPlane: CP_URL,
        log: (l) => say(l),
      });
      expect(master.cached, 'the root filesystem came from the cache').toBe(true);
      say(`setup: master ${master.path} assembled in ${master.seconds.toFixed(1)} s (root filesystem ${master.key} cached) with ironlens' key ${ironlensKey.slice(0, 30)}…`);

      // The agent after the master exists: it lists DISK_DIR's masters at start.
      const agent = Daemon.start('ironlens-agent', [...ns.wrap, process.execPath, IRONLENS, 'agent'], join(work, 'agent.log'), {
        ...baseEnv,
        DISK_DIR: paths.disks,
        IPXE_AGENT_TOKEN: AGENT_TOKEN,
        IPXE_AGENT_BACKEND: 'stgt',
        IPXE_AGENT_BASE_IQN: BASE_IQN,
        IPXE_AGENT_TGT_CONTROL_PORT: String(tgtd.controlPort),
        IRONLENS_AGENT_LISTEN: '127.0.0.1:4840',
      });
      daemons.push(agent);
      await waitFor('agent to start', () => agent.log(), (l) => /Server listening at/.test(l) || !agent.running, 60_000, 100);
      if (!agent.running) throw new Error(`agent exited: ${agent.log().slice(-2000)}`);
    });
  }, 600_000);

  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      failed = true;
    });
  });

  afterAll(async () => {
    for (const d of [...daemons].reverse()) await d.stop();
    await tgtd?.stop();
    await git?.stop();
    await netns?.destroy();
    process.removeListener('exit', onExit);
    const kept = work && failed ? logsDir() : undefined;
    if (kept) cpSync(work, kept, { recursive: true, filter: (src) => statSync(src).isDirectory() || src.endsWith('.log') || src.endsWith('.conf') });
    if (work) rmSync(work, { recursive: true, force: true });
    say(`cleanup done${kept ? `; logs kept in ${kept}` : ''}`);
  }, 120_000);

  const booted: Record<string, { qemu: Daemon; poweredOn: number; ip?: string; worker?: Worker }> = {};

  it('binds two machines to workers with disks cloned from the built master, CHAP on', async () => {
    await step('operator', async () => {
      const agent = await api('POST', '/agents', { id: 'storage', base_url: 'http://127.0.0.1:4840', token: AGENT_TOKEN, iscsi_server: SRV, role: { disk: true, cd: false }, tags: ['stgt'] });
      expect(agent.status, agent.text).toBe(201);
      const masters = await api('GET', '/masters');
      expect(masters.text).toContain('_tpl_debian_12.img');
      for (const [vm, name] of [
        [CP, '_tpl_debian_12.img'],
        [WK, '_tpl_debian_12.img'],
        [MARK, '_tpl_marker.img'],
      ] as const) {
        expect((await api('POST', '/devices', { mac: vm.mac })).status).toBe(201);
        expect((await api('POST', '/workers', { worker_id: vm.id })).status).toBe(200);
        const bind = await api('POST', `/devices/${vm.mac}/bind?worker_id=${vm.id}`);
        expect(bind.status, bind.text).toBe(200);
        const disk = await api('POST', `/workers/${vm.id}/luns/disk`, { type: 'master', os: 'debian', name });
        expect(disk.status, disk.text).toBe(200);
        expect((await api('PUT', `/workers/${vm.id}/default-os`, { os: 'debian', menu_timeout: 1 })).status).toBe(200);
      }
      const show = await exec(['tgtadm', '-C', String(tgtd!.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show']);
      for (const vm of [CP, WK]) expect(show.stdout).toContain(`${BASE_IQN}:${vm.id}.debian`);
      expect(show.stdout).toMatch(/Account information:\s+il-node-cp/);
      say(`operator: ${CP.id} (${CP.mac}), ${WK.id} (${WK.mac}) and ${MARK.id} bound; disks cloned from _tpl_debian_12.img / _tpl_marker.img, each bound to its CHAP account`);
    });
  });

  it('times the boot-sector run of the netboot test through the same chain (the reference)', async () => {
    await step('boot-sector reference', async () => {
      const qemu = powerOn('node-marker', MARK.mac, MARK.tap, 256);
      const start = Date.now();
      expect(await qemu.waitExit(120_000), 'the marker machine ends (isa-debug-exit)').toBe(true);
      booted[MARK.id] = { qemu, poweredOn: start };
      const lines = timedLines(join(work, 'node-marker.serial.log'));
      expect(lines.some((l) => l.text.includes(MARKER)), 'the marker on the console').toBe(true);
      expect(qemu.code).toBe(33);
    });
  }, 180_000);

  it('boots both machines from iSCSI with CHAP: Linux mounts its root over iSCSI and the host reporter reports', async () => {
    await step('diskless boot', async () => {
      booted[CP.id] = { qemu: powerOn(CP.id, CP.mac, CP.tap, CP.memory, CP.firmware), poweredOn: Date.now() };
      // Two iPXE machines DHCPing at the same moment get the same offer (recipe pitfall 11): 8 s
      // apart. The UEFI machine's firmware takes ~10 s longer to reach iPXE.
      await sleep(8_000);
      booted[WK.id] = { qemu: powerOn(WK.id, WK.mac, WK.tap, WK.memory, WK.firmware), poweredOn: Date.now() };
      for (const vm of [CP, WK]) {
        const w = await waitFor(
          `${vm.id}'s host report`,
          async () => {
            if (!booted[vm.id].qemu.running) throw new Error(`${vm.id}'s qemu exited (code ${booted[vm.id].qemu.code})`);
            return (await api('GET', `/workers/${vm.id}`)).json<Worker>();
          },
          (x) => !!x.host,
          420_000,
          1000,
        );
        booted[vm.id].worker = w;
        booted[vm.id].ip = w.address ?? undefined;
        say(`${vm.id}: reported ${((Date.parse(w.host!.reported_at) - booted[vm.id].poweredOn) / 1000).toFixed(1)} s after power-on: ${w.address}, ${w.host!.os.pretty_name}, kernel ${w.host!.kernel}, ${w.host!.hardware.cpus} cpu ${w.host!.hardware.cpu_model}, ${(w.host!.hardware.memory_bytes / 1024 ** 2).toFixed(0)} MiB; keys ${w.host!.ssh_host_keys.map((k) => k.algorithm).join(', ')}`);
      }
      for (const vm of [CP, WK]) {
        const w = booted[vm.id].worker!;
        expect(w.host!.os).toMatchObject({ id: 'debian', version_id: '12' });
        expect(w.host!.addresses.some((a) => a.mac.toLowerCase() === vm.mac && a.ipv4.includes(w.address!))).toBe(true);
        expect(w.address).toMatch(/^192\.168\.214\.\d+$/);
        // preflight's minimums: 1500 MiB for the control plane, 1024 MiB for a worker
        expect(w.host!.hardware.memory_bytes).toBeGreaterThan((vm === CP ? 1500 : 1024) * 1024 ** 2);
        const ack = dnsmasqLog().match(new RegExp(`DHCPACK\\(br0\\) (\\S+) ${vm.mac} ${vm.id}`));
        expect(ack?.[1], `dnsmasq gave ${vm.id} the reported address`).toBe(w.address);
      }
      // Each logged in to its own disk under its own name (tgtd's log: CHAP passed, or no session).
      expect(new Set(tgtdLogins())).toEqual(new Set([`${BASE_IQN}:${CP.id}`, `${BASE_IQN}:${WK.id}`, `${BASE_IQN}:${MARK.id}`]));
    });
  }, 600_000);

  it('reports the host keys that ssh-keyscan reads from each machine, whose root is the iSCSI disk', async () => {
    await step('host keys', async () => {
      for (const vm of [CP, WK]) {
        const { ip, worker } = booted[vm.id];
        const scan = await exec([...netns!.wrap, 'ssh-keyscan', '-T', '20', ip!], { timeoutMs: 60_000 });
        const known = scan.stdout.split('\n').filter((l) => l && !l.startsWith('#'));
        writeFileSync(join(work, 'known_hosts'), `${readFileSync(join(work, 'known_hosts'), 'utf8')}${known.join('\n')}\n`);
        const fps = execFileSync('ssh-keygen', ['-lf', '-'], { input: `${known.join('\n')}\n`, encoding: 'utf8' })
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' ')[1])
          .sort();
        expect(fps.length).toBeGreaterThanOrEqual(2);
        expect(worker!.host!.ssh_host_keys.map((k) => k.fingerprint).sort()).toEqual(fps);
        const facts = await ssh(ip!, 'hostname; findmnt -no SOURCE,FSTYPE /; iscsiadm -m session; cat /sys/firmware/ibft/target0/chap-name; if [ -d /sys/firmware/efi ]; then echo efi; else echo bios; fi');
        const [hostname, root, session, chapName, firmware] = facts.stdout.split('\n');
        expect(hostname).toBe(vm.id);
        // Booted as its firmware says: the UEFI machine's kernel runs on UEFI, its iBFT came from iPXE's EFI build (an ACPI table).
        expect(firmware).toBe(vm.firmware === 'bios' ? 'bios' : 'efi');
        expect((await api('GET', `/devices/${vm.mac}`)).json<{ fingerprint: { platform?: string } }>().fingerprint.platform).toBe(vm.firmware === 'bios' ? 'pcbios' : 'efi');
        expect(root).toMatch(/^\/dev\/sd[a-z]1 ext4$/);
        expect(session).toContain(`${BASE_IQN}:${vm.id}.debian`);
        expect(chapName).toBe(`il-${vm.id}`);
        say(`${vm.id} (${ip}, ${firmware}): ssh-keyscan ${fps.join(' ')} = the report; root ${root}; ${session.trim()}`);
      }
      // Every clone made its own keys at first boot: the two machines share none.
      const a = booted[CP.id].worker!.host!.ssh_host_keys.map((k) => k.fingerprint);
      expect(booted[WK.id].worker!.host!.ssh_host_keys.some((k) => a.includes(k.fingerprint))).toBe(false);
    });
  }, 180_000);

  it("refuses a report signed with a wrong secret, and one replayed; counts them in the operations log", async () => {
    await step('forged reports', async () => {
      const ip = booted[WK.id].ip!;
      // What the reporter itself would send, and the secret only the bound MAC got (in the iBFT).
      const body = (await ssh(ip, '/usr/local/sbin/ironlens-host-reporter --print')).stdout.trim();
      const secret = (await ssh(ip, 'cat /sys/firmware/ibft/target0/chap-secret')).stdout.trim();
      expect(JSON.parse(body)).toMatchObject({ mac: WK.mac, hostname: WK.id });
      const post = (ts: string, sig: string) => postReport(paths.apiSocket, body, { 'x-ironlens-timestamp': ts, 'x-ironlens-signature': sig });
      const sign = (key: string, ts: string) => `v1=${createHmac('sha256', key).update(`${ts}.${body}`).digest('hex')}`;
      const now = String(Math.floor(Date.now() / 1000) + 1);
      const wrong = await post(now, sign('WrongSecret12345', now));
      expect(wrong.status, wrong.text).toBe(401);
      const stale = String(Math.floor(Date.now() / 1000) - 600);
      const old = await post(stale, sign(secret, stale));
      expect(old.status, old.text).toBe(401);
      const good = await post(now, sign(secret, now));
      expect(good.status, `a correctly signed report is accepted: ${good.text}`).toBe(200);
      const again = await post(now, sign(secret, now));
      expect(again.status, `the same signed report again: ${again.text}`).toBe(401);
      const ops = (await api('GET', '/operations')).json<{ entries: Array<{ op: string; [k: string]: unknown }> }>().entries;
      // Refusals are written once a minute per reason and client, with a count.
      const refused = ops.filter((o) => o.op === 'host.report' && o.status === 'refused');
      expect(refused.map((o) => o.reason).sort(), JSON.stringify(refused)).toEqual(expect.arrayContaining(['replay', 'signature']));
      expect(JSON.stringify(ops)).not.toContain(secret);
      say(`forged reports: wrong secret ${wrong.status}, 600 s old ${old.status}, valid ${good.status}, the same again ${again.status}; operations log: ${refused.map((o) => `host.report refused ${o.reason} ×${o.count}`).join(', ')}`);
    });
  }, 120_000);

  it('gives no disk to a third machine that claims a bound worker\'s hostname', async () => {
    await step('claiming machine', async () => {
      const logins = tgtdLogins().length;
      const qemu = powerOn('forger', FORGER.mac, FORGER.tap, 256);
      const serial = join(work, 'forger.serial.log');
      await waitFor('the claiming machine to stop at the menu', () => timedLines(serial).map((l) => l.text).join('\n'), (c) => /no boot variables for/.test(c) || !qemu.running, 90_000, 250);
      await sleep(1500);
      await qemu.kill();
      const shown = timedLines(serial).map((l) => l.text).join('\n');
      expect(shown).toContain(`ironlens: ${FORGER.mac} hostname=${CP.id}`);
      expect(shown).toContain(`ironlens: no boot variables for ${FORGER.mac} hostname=${CP.id}`);
      expect(shown).not.toContain('ironlens: sanboot');
      expect(tgtdLogins().length, 'no iSCSI login from the claiming machine').toBe(logins);
      say(`claiming machine ${FORGER.mac} as ${CP.id}: no boot variables, no sanboot, no iSCSI login`);
    });
  }, 150_000);

  it('passes preflight by workerId against the real sshd of each machine, and bootstraps them by workerId, registered', async () => {
    await step('preflight and bootstrap', async () => {
      const nodes = [
        { workerId: CP.id, roles: ['control-plane', 'worker'] },
        { workerId: WK.id, roles: ['worker'] },
      ];
      const pre = await consoleApi('POST', '/api/cluster/bootstrap/preflight', { nodes, hostKeys: [] });
      expect(pre.status, pre.text).toBe(200);
      const preJson = pre.json<{ allPassed: boolean; items: Array<{ host: string; state: string; checks: Array<{ id: string; status: string; detail?: string }> }> }>();
      expect(preJson.allPassed, pre.text).toBe(true);
      expect(preJson.items.map((i) => i.host).sort()).toEqual([booted[CP.id].ip, booted[WK.id].ip].sort());
      say(`preflight: ${preJson.items.map((i) => `${i.host} ${i.state} (${i.checks.map((c) => `${c.id}=${c.status}`).join(', ')})`).join('; ')}`);

      const start = await consoleApi('POST', '/api/cluster/bootstrap', { nodes, hostKeys: [], register: { name: 'diskless-e2e', description: 'two diskless Debian machines' } });
      expect(start.status, start.text).toBe(200);
      const id = start.json<{ bootstrapId: string }>().bootstrapId;
      const status = await waitFor(
        'the bootstrap job to end',
        async () => (await consoleApi('GET', `/api/cluster/bootstrap/${id}`)).json<{ phase: string; error: string | null; logTail: string; clusterId: string | null }>(),
        (s) => ['succeeded', 'failed', 'cancelled'].includes(s.phase),
        300_000,
        1000,
      );
      expect(status.phase, `${status.error}\n${status.logTail}`).toBe('succeeded');
      expect(status.clusterId).toMatch(/^[0-9a-f]{8}$/);
      expect(status.logTail).toContain(`reached ${CP.id} as root`);
      expect(status.logTail).toContain(`reached ${WK.id} as root`);
      for (const vm of [CP, WK]) {
        const mark = await ssh(booted[vm.id].ip!, 'cat /etc/ironlens-standin-mark');
        expect(mark.stdout.trim()).toMatch(new RegExp(`^bootstrapped \\S+ ${vm.id}$`));
        const w = (await api('GET', `/workers/${vm.id}`)).json<Worker>();
        expect(w.cluster_id ?? w.clusterId, `${vm.id} shows the cluster it joined`).toBe(status.clusterId);
      }
      const clusters = (await consoleApi('GET', '/api/cluster/clusters')).json<{ items: Array<{ id: string; name: string }> }>();
      expect(clusters.items.find((c) => c.id === status.clusterId)).toMatchObject({ name: 'diskless-e2e' });
      say(`bootstrap ${id}: succeeded, cluster ${status.clusterId} registered; the playbook's mark read back over ssh on both machines`);
    });
  }, 420_000);

  it('keeps a boot timeline and a boot-duration metric that match the run, and prints the phases beside the boot-sector run', async () => {
    await step('timeline and phases', async () => {
      const rows: Array<Record<string, number | undefined>> = [];
      for (const vm of [CP, WK, MARK]) {
        // What the worker view said right after its first report (later reports move host_report_at).
        const w = booted[vm.id].worker ?? (await api('GET', `/workers/${vm.id}`)).json<Worker>();
        const lines = timedLines(join(work, `${vm.id}.serial.log`));
        const on = booted[vm.id].poweredOn;
        const bootVars = served(`/boot-vars?mac=${encodeURIComponent(vm.mac)}`).at(-1);
        const row = bootPhases(lines, { poweredOn: on, bootVars, hostReport: w.host ? Date.parse(w.host.reported_at) : undefined, marker: vm === MARK ? MARKER : undefined });
        rows.push(row);
        if (vm !== MARK) {
          const tl = w.boot_timeline!;
          expect(tl.report_at && tl.boot_vars_at && tl.host_report_at, JSON.stringify(tl)).toBeTruthy();
          // The timeline's times are the ones the serve log shows for this machine's requests.
          const deviceReport = served(`/devices/report?mac=${encodeURIComponent(vm.mac)}`).at(-1)!;
          expect(Math.abs(Date.parse(tl.report_at!) - deviceReport), 'report_at').toBeLessThan(2000);
          expect(Math.abs(Date.parse(tl.boot_vars_at!) - bootVars!), 'boot_vars_at').toBeLessThan(2000);
          expect(Math.abs(Date.parse(tl.host_report_at!) - Date.parse(w.host!.reported_at)), 'host_report_at').toBeLessThan(2000);
          expect(tl.seconds!).toBeCloseTo((Date.parse(tl.host_report_at!) - Date.parse(tl.report_at!)) / 1000, 0);
          // …and the boot it measures lies inside this run: after power-on, before the report.
          expect(tl.seconds!).toBeGreaterThan(10);
          expect(tl.seconds!).toBeLessThan((Date.parse(tl.host_report_at!) - on) / 1000 + 1);
          // The first iSCSI login (iPXE's sanboot, or the initramfs') as the agent saw it: after /boot-vars, before the report.
          expect(tl.iscsi_login_at, 'iscsi_login_at').not.toBeNull();
          expect(Date.parse(tl.iscsi_login_at!)).toBeGreaterThanOrEqual(Date.parse(tl.boot_vars_at!));
          expect(Date.parse(tl.iscsi_login_at!)).toBeLessThanOrEqual(Date.parse(tl.host_report_at!));
          say(`${vm.id}: boot_timeline ${JSON.stringify(tl)}`);
        }
      }
      const metrics = await api('GET', '/metrics');
      const count = Number(/^ironlens_\w*boot\w*_seconds_count(\{[^}]*\})? (\d+)/m.exec(metrics.text)?.[2] ?? 'NaN');
      expect(count, 'boot-duration histogram samples').toBeGreaterThanOrEqual(2);

      const table = phaseTable([
        { title: `${CP.id} (${CP.firmware.toUpperCase()}, Debian, ${CP.memory} MiB)`, row: rows[0] },
        { title: `${WK.id} (${WK.firmware.toUpperCase()}, Debian, ${WK.memory} MiB)`, row: rows[1] },
        { title: 'boot sector (BIOS, reference)', row: rows[2] },
      ]);
      console.log(`[diskless] boot phases, this run (TCG, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}):\n${table}`);
      writeFileSync(artifactPath('diskless-boot-phases', '.md'), `${table}\n`);
    });
  }, 60_000);
});


/** The stand-in's admin kubeconfig: a token kubeconfig naming the control-plane machine's API address. */
function kubeconfigFor(server: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: diskless
  cluster:
    server: https://${server}:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: diskless-e2e-token
contexts:
- name: admin@diskless
  context:
    cluster: diskless
    user: admin
current-context: admin@diskless
`;
}

/** A raw POST /hosts/report with the reporter's headers (the body's bytes exactly as signed). */
async function postReport(socketPath: string, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, method: 'POST', path: '/hosts/report', headers: { host: 'ironlens', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
