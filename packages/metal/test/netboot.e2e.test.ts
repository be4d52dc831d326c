import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exec } from '@ironlens/core';
import { artifactPath, sleep } from '@ironlens/core/testing';
import { parseTgtadmShow } from '@ironlens/agent';
import { type RunningTgtd, startTgtd, unusedControlPort } from '@ironlens/agent/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ironlens/core/testing';
import { Daemon, FORWARDER_JS, flatConsole, httpOverSocket, killAllSync, markerBootSector, Netns, requireNetbootTools } from './netboot.harness';

/**
 * A real machine boots diskless through ironlens, end to end: `ironlens serve` and
 * `ironlens agent` (stgt, a real tgtd), a real dnsmasq reloaded by ironlens through its
 * pid file, and qemu machines running Debian's iPXE ROM that chain the shipped
 * `assets/boot.ipxe`. Everything network-facing lives in a private namespace on a tap
 * device. The steps follow an operator's day; each prints what it saw and how long it took.
 */

const here = dirname(fileURLToPath(import.meta.url));
const BOOT_IPXE = join(here, '..', 'assets', 'boot.ipxe');
const IRONLENS = join(here, '..', '..', 'cli', 'bin', 'ironlens.mjs');

const NS = `ironlens-e2e-${process.pid}`;
const SRV = '192.168.213.1';
/** A second address of the control plane: the claiming machine's first stage injects it as cp-url. */
const SRV_ALT = '192.168.213.2';
const CP_URL_ALT = `http://${SRV_ALT}:4839`;
const BASE_IQN = 'iqn.2026-07.io.ironlens.e2e';
const TOKEN = `cp-${randomBytes(8).toString('hex')}`;
const AGENT_TOKEN = `agent-${randomBytes(8).toString('hex')}`;
const MAC1 = '52:54:00:e2:e0:01';
const MAC2 = '52:54:00:e2:e0:02';
/** A third machine that knows (guesses) worker-01's disk IQN and sanboots it under its own initiator name. */
const MAC3 = '52:54:00:e2:e0:03';
const GUESSER_INITIATOR = `iqn.2026-07.io.ironlens.e2e:worker-02`;
/**
 * A fourth machine that forges worker-01's initiator name from what the open, hostname-only
 * `/boot-vars?hostname=worker-01` shows, and sanboots its disk: CHAP (IRONLENS_ISCSI_CHAP)
 * refuses it, since only the worker's bound MAC is given the secret.
 */
const MAC4 = '52:54:00:e2:e0:04';
const UUID1 = randomUUID();
const MARKER = `DISKLESS-BOOT-OK ${randomBytes(4).toString('hex')}`;
const WORKER = 'worker-01';
/** The CHAP user ironlens makes for the worker (`il-<worker id>`). */
const CHAP_USER = `il-${WORKER}`;
/** SMBIOS the first machine declares: what /devices/report must bring into the pool. */
const SMBIOS1 = { manufacturer: 'ironlens-lab', product: 'E2E Board (rev 2)', serial: 'SN-E2E-0001', speed: 3200 };

/** qemu options of the first machine, the same at every boot. */
const MACHINE1 = [
  '-uuid',
  UUID1,
  '-smbios',
  `type=1,manufacturer=${SMBIOS1.manufacturer},product=${SMBIOS1.product},serial=${SMBIOS1.serial}`,
  '-smbios',
  `type=17,speed=${SMBIOS1.speed}`,
];

/**
 * What ends a guessing or forging machine's run: the refusal line printed whole (up to the
 * error number's closing parenthesis, so the console read at that moment holds it), its
 * final prompt, or the marker of a boot that should not have happened.
 */
const REFUSED_OR_DONE = /ironlens-e2e: sanboot refused \(error 0x[0-9a-f]+\)|ironlens-e2e: done|DISKLESS-BOOT-OK/;

const TGTD_NOISE = /target_cmd|iscsi_task|__cmd_done|bs_rdwr|iscsi_scsi_cmd|iscsi_data_rsp|mtask_/;

const t0 = Date.now();
const say = (msg: string) => console.log(`[e2e ${Date.now() - t0} ms] ${msg}`);

interface Device {
  mac: string;
  uuid: string | null;
  state: string;
  bound_worker_id: string | null;
  source: string;
  fingerprint: Record<string, unknown>;
}
interface Operation {
  id: number;
  op: string;
  mac?: string;
  worker_id?: string;
  [k: string]: unknown;
}

describe('netboot end to end: a diskless machine boots through ironlens', () => {
  let work: string;
  let netns: Netns | undefined;
  let tgtd: RunningTgtd | undefined;
  const daemons: Daemon[] = [];
  let failed = false;
  const paths = {
    tftp: '',
    disks: '',
    hosts: '',
    dnsmasqPid: '',
    dnsmasqLog: '',
    apiSocket: '',
  };
  const onExit = () => {
    killAllSync();
    netns?.destroySync();
  };

  const api = (method: string, path: string, body?: unknown) => httpOverSocket(paths.apiSocket, method, path, { token: TOKEN, body });
  const dnsmasqLog = () => {
    try {
      return readFileSync(paths.dnsmasqLog, 'utf8');
    } catch {
      return '';
    }
  };
  const hostsReads = () => dnsmasqLog().split('\n').filter((l) => l.includes(`read ${paths.hosts}`)).length;
  const tgtdLog = () => (tgtd ? readFileSync(tgtd.logFile, 'utf8') : '');
  /** Initiator names of the iSCSI logins tgtd has seen (its debug output). */
  const tgtdLogins = () => [...tgtdLog().matchAll(/session_find_name: (\S+)/g)].map((m) => m[1]);

  /** Where the logs are copied after a failure (`.artifacts/`), named once. */
  let keptLogs: string | undefined;
  const logsDir = () => (keptLogs ??= artifactPath('netboot-e2e-logs'));

  /** Diagnostics appended to a failing step's error: the tail of every log. */
  const diagnostics = (serialFile?: string) => {
    const tail = (name: string, text: string) => `\n--- ${name} (tail) ---\n${text.slice(-2500)}`;
    let out = `\nlogs kept in: ${logsDir()}`;
    if (serialFile) out += tail('serial console', flatConsole(readFileSync(serialFile, 'latin1')));
    out += tail('dnsmasq', dnsmasqLog());
    for (const d of daemons) if (!d.name.startsWith('machine-') && d.log().trim()) out += tail(d.name, d.log());
    // Without the per-command debug noise: logins, sessions, targets, errors.
    out += tail('tgtd', tgtdLog().split('\n').filter((l) => !TGTD_NOISE.test(l)).join('\n'));
    return out;
  };

  /** Runs one step, prints its duration, and on failure attaches every log. */
  async function step<T>(name: string, fn: () => Promise<T>, serialFile?: string): Promise<T> {
    const start = Date.now();
    say(`${name}: start`);
    try {
      const v = await fn();
      say(`${name}: done in ${Date.now() - start} ms`);
      return v;
    } catch (err) {
      failed = true;
      const e = err as Error;
      e.message += diagnostics(serialFile);
      throw e;
    }
  }

  /** Powers on a machine; resolves when qemu exits (or `until` matched, then it is killed). */
  async function boot(opts: { name: string; mac: string; extra?: string[]; until?: RegExp; timeoutMs?: number }) {
    const serial = join(work, `${opts.name}.serial.log`);
    const argv = [
      ...netns!.wrap,
      'qemu-system-x86_64',
      '-accel',
      'tcg',
      '-m',
      '256',
      '-nographic',
      '-no-reboot',
      '-boot',
      'n,strict=on,reboot-timeout=0',
      '-netdev',
      'tap,id=n0,ifname=tap0,script=no,downscript=no',
      '-device',
      `virtio-net-pci,netdev=n0,mac=${opts.mac}`,
      '-device',
      'isa-debug-exit,iobase=0xf4,iosize=0x04',
      ...(opts.extra ?? []),
    ];
    const start = Date.now();
    const qemu = Daemon.start(opts.name, argv, serial);
    daemons.push(qemu);
    const screen = () => flatConsole(qemu.log());
    try {
      if (opts.until) {
        await waitFor(`${opts.until} on ${opts.name}'s console`, screen, (c) => opts.until!.test(c) || !qemu.running, opts.timeoutMs ?? 40_000, 100);
        if (!qemu.running) throw new Error(`${opts.name} exited (code ${qemu.code}) before ${opts.until} appeared`);
        return { serial, console: screen(), code: null as number | null, ms: Date.now() - start, qemu };
      }
      if (!(await qemu.waitExit(opts.timeoutMs ?? 40_000))) throw new Error(`${opts.name} still running after ${opts.timeoutMs ?? 40_000} ms`);
      return { serial, console: screen(), code: qemu.code, ms: Date.now() - start, qemu };
    } catch (err) {
      await qemu.kill();
      (err as Error).message += `\n--- ${opts.name} serial console (tail) ---\n${screen().slice(-2500)}`;
      throw err;
    }
  }

  /** The TFTP root (the product's boot.ipxe and the two attackers' first stages), the master image, an empty hosts file. */
  async function writeBootFiles(): Promise<void> {
    // The product's script, unchanged, is the DHCP boot file. The second machine gets a
    // first stage that claims another worker's hostname (the spoofing attempt).
    copyFileSync(BOOT_IPXE, join(paths.tftp, 'boot.ipxe'));
    writeFileSync(join(paths.tftp, 'claim-worker-01.ipxe'), `#!ipxe\nset cp-url ${CP_URL_ALT}\nset hostname ${WORKER}\nchain boot.ipxe\n`);
    // The guessing machine skips the control plane: it sanboots worker-01's disk directly.
    writeFileSync(
      join(paths.tftp, 'guess-worker-01.ipxe'),
      `#!ipxe\nset initiator-iqn ${GUESSER_INITIATOR}\necho ironlens-e2e: guessing as \${initiator-iqn}\n` +
        `sanboot iscsi:${SRV}:::1:${BASE_IQN}:${WORKER}.ubuntu || echo ironlens-e2e: sanboot refused (error \${errno})\n` +
        'prompt --timeout 60000 ironlens-e2e: done ||\n',
    );
    // The forging machine asks the control plane as anyone may (hostname only), then logs in
    // under the worker's own initiator name, exactly as boot.ipxe would compose it.
    writeFileSync(
      join(paths.tftp, 'forge-worker-01.ipxe'),
      `#!ipxe\nchain --autofree http://${SRV}:4839/boot-vars?hostname=${WORKER} || echo ironlens-e2e: no boot vars\n` +
        `set initiator-iqn \${base-iqn}:${WORKER}\n` +
        `echo ironlens-e2e: forging \${initiator-iqn} base-iqn=\${base-iqn} iscsi-server=\${iscsi-server} username=[\${username}]\n` +
        `sanboot iscsi:\${iscsi-server}\${iscsi-sep}\${base-iqn}:${WORKER}.ubuntu || echo ironlens-e2e: sanboot refused (error \${errno})\n` +
        'prompt --timeout 60000 ironlens-e2e: done ||\n',
    );
    // The master image: a sparse disk whose boot sector prints the marker.
    const master = join(paths.disks, '_tpl_marker.img');
    writeFileSync(master, markerBootSector(MARKER));
    await exec(['truncate', '-s', '8M', master]);
    writeFileSync(paths.hosts, '');
  }

  /** The private network namespace with tgtd in it (debug on: its log names every iSCSI login). */
  async function startNetworkAndTgtd(): Promise<{ netns: Netns; tgtd: RunningTgtd }> {
    const ns = new Netns(NS, SRV, 'fd00:213::1');
    netns = ns;
    await ns.create();
    await exec(['ip', '-n', NS, 'addr', 'add', `${SRV_ALT}/24`, 'dev', 'tap0']);

    const t = await startTgtd({ controlPort: unusedControlPort(), portal: `${SRV}:3260`, wrapper: ns.wrap, logFile: join(work, 'tgtd.log') });
    // Debug output names each iSCSI login (initiator and address): the evidence of who reached a disk.
    await exec(['tgtadm', '-C', String(t.controlPort), '--mode', 'system', '--op', 'update', '--name', 'debug', '--value', 'on']);
    tgtd = t;
    return { netns: ns, tgtd: t };
  }

  /** dnsmasq in the namespace: DHCP (v4, and RA for v6), TFTP, per-MAC boot files, the hosts file ironlens renders. */
  async function startDnsmasq(netns: Netns): Promise<Daemon> {
    const dnsmasq = Daemon.start(
      'dnsmasq',
      [
        ...netns.wrap,
        'dnsmasq',
        '--keep-in-foreground',
        '--conf-file=/dev/null',
        '--port=0',
        '--interface=tap0',
        '--bind-interfaces',
        '--no-ping',
        '--dhcp-range=192.168.213.100,192.168.213.200,255.255.255.0,1h',
        '--enable-ra',
        '--dhcp-range=::,constructor:tap0,ra-only',
        `--dhcp-hostsfile=${paths.hosts}`,
        `--dhcp-leasefile=${join(work, 'dnsmasq', 'leases')}`,
        '--enable-tftp',
        `--tftp-root=${paths.tftp}`,
        `--dhcp-mac=set:claim,${MAC2}`,
        '--dhcp-boot=tag:claim,claim-worker-01.ipxe',
        `--dhcp-mac=set:guess,${MAC3}`,
        '--dhcp-boot=tag:guess,guess-worker-01.ipxe',
        `--dhcp-mac=set:forge,${MAC4}`,
        '--dhcp-boot=tag:forge,forge-worker-01.ipxe',
        '--dhcp-boot=tag:!claim,tag:!guess,tag:!forge,boot.ipxe',
        `--pid-file=${paths.dnsmasqPid}`,
        '--log-dhcp',
        `--log-facility=${paths.dnsmasqLog}`,
      ],
      join(work, 'dnsmasq', 'stdout.log'),
    );
    daemons.push(dnsmasq);
    await waitFor('dnsmasq to read its hosts file', hostsReads, (n) => n >= 1 || !dnsmasq.running);
    if (!dnsmasq.running) throw new Error(`dnsmasq exited with code ${dnsmasq.code}`);
    return dnsmasq;
  }

  /** `ironlens serve`, `ironlens agent` and the API forwarder in the namespace; resolves when all three listen. */
  async function startIronlens(netns: Netns, tgtd: RunningTgtd): Promise<{ serve: Daemon; agent: Daemon }> {
    // IRONLENS_FROM_SOURCE: the command runs the TypeScript under test, never a stale packages/cli/dist.
    const baseEnv = { ...process.env, IRONLENS_LOG: '1', IRONLENS_FROM_SOURCE: '1' };
    const serve = Daemon.start(
      'ironlens-serve',
      [...netns.wrap, process.execPath, IRONLENS, 'serve'],
      join(work, 'serve.log'),
      {
        ...baseEnv,
        IRONLENS_DATA_DIR: join(work, 'cp'),
        // Every address of the private namespace: the machines' default (next-server) and SRV_ALT.
        IRONLENS_BOOT_LISTEN: '0.0.0.0:4839',
        IRONLENS_CONSOLE_LISTEN: 'off',
        IPXE_CP_TOKEN: TOKEN,
        IPXE_CP_AUTO_REGISTER: 'true',
        // The second boot comes seconds after the first: let its report move last_seen (default: once a minute).
        IRONLENS_REPORT_LAST_SEEN_SECONDS: '1',
        IPXE_CP_DNSMASQ_HOSTS_FILE: paths.hosts,
        IPXE_CP_DNSMASQ_PID_FILE: paths.dnsmasqPid,
        // Each worker's disk is bound to its own CHAP account; /boot-vars gives it to the bound MAC only.
        IRONLENS_ISCSI_CHAP: 'true',
      },
    );
    daemons.push(serve);
    const agent = Daemon.start('ironlens-agent', [...netns.wrap, process.execPath, IRONLENS, 'agent'], join(work, 'agent.log'), {
      ...baseEnv,
      DISK_DIR: paths.disks,
      IPXE_AGENT_TOKEN: AGENT_TOKEN,
      IPXE_AGENT_BACKEND: 'stgt',
      IPXE_AGENT_BASE_IQN: BASE_IQN,
      IPXE_AGENT_TGT_CONTROL_PORT: String(tgtd.controlPort),
      IRONLENS_AGENT_LISTEN: '127.0.0.1:4840',
    });
    daemons.push(agent);
    const forwarder = Daemon.start('api-forwarder', [...netns.wrap, process.execPath, '-e', FORWARDER_JS, paths.apiSocket, SRV, '4839'], join(work, 'forwarder.log'));
    daemons.push(forwarder);

    for (const d of [serve, agent, forwarder]) {
      const ready = d === serve ? /provisioning API on/ : d === agent ? /Server listening at/ : /forwarding/;
      await waitFor(`${d.name} to start`, () => d.log(), (l) => ready.test(l) || !d.running, 30_000, 50);
      if (!d.running) throw new Error(`${d.name} exited with code ${d.code}`);
    }
    return { serve, agent };
  }

  beforeAll(async () => {
    requireNetbootTools();
    process.once('exit', onExit);
    work = mkdtempSync(join(tmpdir(), 'ironlens-netboot-e2e-'));
    // dnsmasq drops to an unprivileged user, then serves TFTP and re-reads the hosts file from here.
    chmodSync(work, 0o755);
    paths.tftp = join(work, 'tftp');
    paths.disks = join(work, 'disks');
    paths.hosts = join(work, 'dnsmasq', 'dhcp-hosts.conf');
    paths.dnsmasqPid = join(work, 'dnsmasq', 'dnsmasq.pid');
    paths.dnsmasqLog = join(work, 'dnsmasq', 'dnsmasq.log');
    paths.apiSocket = join(work, 'api.sock');
    for (const d of [paths.tftp, paths.disks, dirname(paths.hosts), join(work, 'cp')]) mkdirSync(d, { recursive: true });

    await step('setup', async () => {
      await writeBootFiles();
      const started = await startNetworkAndTgtd();
      const dnsmasq = await startDnsmasq(started.netns);
      const { serve, agent } = await startIronlens(started.netns, started.tgtd);
      const health = await api('GET', '/healthz');
      expect(health.status).toBe(200);
      say(`setup: netns ${NS} tap0 ${SRV}/24, tgtd control port ${started.tgtd.controlPort}, dnsmasq pid ${dnsmasq.pid}, serve pid ${serve.pid}, agent pid ${agent.pid}; /healthz ${health.text}`);
    });
  }, 90_000);

  // A test that fails outside a step (a timeout, say) keeps the logs too.
  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      failed = true;
    });
  });

  afterAll(async () => {
    const start = Date.now();
    for (const d of [...daemons].reverse()) await d.stop();
    await tgtd?.stop();
    await netns?.destroy();
    process.removeListener('exit', onExit);
    // On failure the logs (not the disk images) are kept under .artifacts/; nothing stays in the temp dir.
    const kept = work && failed ? logsDir() : undefined;
    if (kept) cpSync(work, kept, { recursive: true, filter: (src) => statSync(src).isDirectory() || src.endsWith('.log') });
    if (work) rmSync(work, { recursive: true, force: true });
    say(`cleanup: processes, tgtd and namespace ${NS} gone in ${Date.now() - start} ms${kept ? `; logs kept in ${kept}` : ''}`);
  }, 60_000);

  it('pools an unknown machine on its first boot and sends it into the reboot loop', async () => {
    const run = await step('first boot', () => boot({ name: 'machine-1-first', mac: MAC1, extra: MACHINE1 }));
    await step('first boot: checks', async () => {
      say(`first boot: qemu exited with code ${run.code} after ${run.ms} ms`);
      // The reboot item ran (this iPXE reboots; qemu -no-reboot turns that into exit 0).
      // Without a first stage, cp-url defaults to the TFTP server (next-server) on 4839.
      expect(run.console).toContain(`ironlens: ${MAC1} hostname= control plane http://${SRV}:4839`);
      expect(run.console).toContain('ironlens: menu-default=reboot menu-timeout=1');
      expect(run.console).toContain('ironlens: reboot (menu item');
      expect(run.console).not.toContain('ironlens: sanboot');
      expect(run.code).toBe(0);
      const ack = dnsmasqLog().match(new RegExp(`DHCPACK\\(tap0\\) (\\S+) ${MAC1}(.*)`));
      expect(ack, 'dnsmasq DHCPACK for the first machine').not.toBeNull();
      expect(ack![2].trim(), 'no hostname before it is bound').toBe('');
      say(`first boot: dnsmasq DHCPACK(tap0) ${ack![1]} ${MAC1} (no hostname); console: "menu-default=reboot menu-timeout=1", "reboot (menu item reboot)"`);

      const dev = await api('GET', `/devices/${MAC1}`);
      expect(dev.status).toBe(200);
      const d = dev.json<Device>();
      expect(d).toMatchObject({ mac: MAC1, state: 'pooled', bound_worker_id: null, source: 'ipxe', uuid: UUID1 });
      expect(d.fingerprint).toMatchObject({
        manufacturer: SMBIOS1.manufacturer,
        product: SMBIOS1.product,
        serial: SMBIOS1.serial,
        mem_type: 'RAM',
        mem_speed: SMBIOS1.speed,
        chip: 'virtio-net',
        busid: '011af41000',
      });
      // mem_total and cpumodel are not checked here: iPXE reports them only when built with
      // MEMMAP_SETTINGS / CPUID_SETTINGS, and Debian's ROM has neither, so boot.ipxe sends them
      // empty. Their parsing (`mem-total=0x8000` → 32768) is tested in routes/metal.routes.test.ts.
      say(`first boot: device ${MAC1} ${d.state} (source ${d.source}), uuid ${d.uuid}, fingerprint ${JSON.stringify(d.fingerprint)}`);

      const pool = (await api('GET', '/devices?state=pooled')).json<Device[]>();
      expect(pool.map((x) => x.mac)).toEqual([MAC1]);
      const ops = (await api('GET', `/operations?mac=${MAC1}`)).json<{ entries: Operation[] }>().entries;
      expect(ops).toEqual([expect.objectContaining({ op: 'device.register', mac: MAC1, source: 'ipxe' })]);
      say(`first boot: operations for ${MAC1}: ${ops.map((o) => `${o.op}(source=${o.source})`).join(', ')}`);
    }, run.serial);
  });

  it('lets the operator bind the machine to a worker with a system disk cloned from a master', async () => {
    await step('operator', async () => {
      const readsBefore = hostsReads();
      const agent = await api('POST', '/agents', {
        id: 'storage-e2e',
        base_url: 'http://127.0.0.1:4840',
        token: AGENT_TOKEN,
        iscsi_server: SRV,
        role: { disk: true, cd: false },
        tags: ['storage', 'stgt'],
      });
      expect(agent.status, agent.text).toBe(201);
      const masters = await api('GET', '/masters');
      expect(masters.status, masters.text).toBe(200);
      expect(masters.text).toContain('_tpl_marker.img');

      const worker = await api('POST', '/workers', { worker_id: WORKER });
      expect(worker.status, worker.text).toBe(200);
      const bind = await api('POST', `/devices/${MAC1}/bind?worker_id=${WORKER}`);
      expect(bind.status, bind.text).toBe(200);
      expect(bind.json()).toMatchObject({ mac: MAC1, state: 'bound', bound_worker_id: WORKER });
      // ironlens rendered the hosts file and sent dnsmasq SIGHUP through the pid file.
      expect(readFileSync(paths.hosts, 'utf8')).toBe(`${MAC1},${WORKER},infinite\n`);
      const reads = await waitFor('dnsmasq to re-read the hosts file after the bind', hostsReads, (n) => n > readsBefore, 5_000);
      say(`operator: agent registered, ${WORKER} created and bound to ${MAC1}; dhcp-hosts.conf "${MAC1},${WORKER}", dnsmasq re-read it (${reads} reads so far)`);

      const disk = await api('POST', `/workers/${WORKER}/luns/disk`, { type: 'master', os: 'ubuntu', name: '_tpl_marker.img' });
      expect(disk.status, disk.text).toBe(200);
      const iqn = `${BASE_IQN}:${WORKER}.ubuntu`;
      expect(disk.json()).toMatchObject({ state: 'ready', disks: [expect.objectContaining({ agent: 'storage-e2e', iqn, os: 'ubuntu' })] });
      const show = await exec(['tgtadm', '-C', String(tgtd!.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show']);
      expect(show.stdout).toContain(iqn);
      expect(show.stdout).toContain(join(paths.disks, `${WORKER}.ubuntu.img`));
      // The disk admits only the worker's initiator name, the one boot.ipxe sets (${base-iqn}:${hostname}).
      const initiator = `${BASE_IQN}:${WORKER}`;
      expect(parseTgtadmShow(show.stdout).find((t) => t.iqn === iqn)?.acl, 'tgtadm ACL information').toEqual([initiator]);
      const luns = (await api('GET', '/agents/storage-e2e/luns')).json<{ iqn: string; acl: string[]; accounts?: string[] }[]>();
      expect(luns.find((t) => t.iqn === iqn)?.acl, 'GET /agents/storage-e2e/luns').toEqual([initiator]);
      // And to the worker's CHAP account (IRONLENS_ISCSI_CHAP): tgtd asks every login to prove it.
      expect(parseTgtadmShow(show.stdout).find((t) => t.iqn === iqn)?.accounts, 'tgtadm Account information').toEqual([CHAP_USER]);
      expect(luns.find((t) => t.iqn === iqn)?.accounts, 'GET /agents/storage-e2e/luns accounts').toEqual([CHAP_USER]);
      // Any other initiator name, on the machines' network, neither discovers nor reads it.
      for (const other of [`${BASE_IQN}:worker-02`, 'iqn.2010-04.org.ipxe:00000000-0000-0000-0000-000000000000']) {
        const ls = await exec([...netns!.wrap, 'iscsi-ls', '-i', other, `iscsi://${SRV}:3260`]);
        expect(ls.stdout, `iscsi-ls as ${other}`).not.toContain(iqn);
        const cap = await exec([...netns!.wrap, 'iscsi-readcapacity16', '-i', other, `iscsi://${SRV}:3260/${iqn}/1`], { allowFailure: true });
        expect(cap.code, `iscsi-readcapacity16 as ${other}`).not.toBe(0);
      }
      say(`operator: tgtd's ACL for ${iqn} is [${initiator}]; iscsi-ls and iscsi-readcapacity16 under other initiator names see nothing`);

      // The worker's own name is not enough: the secret is what the bound MAC's /boot-vars carries, and nothing else.
      const bound = await api('GET', `/boot-vars?mac=${MAC1}&hostname=${WORKER}`);
      const secret = bound.text.match(/^set password ([A-Za-z0-9]{16})$/m)?.[1];
      expect(bound.text).toContain(`\nset username ${CHAP_USER}\n`);
      expect(secret, 'set password in the bound answer').toBeDefined();
      const byName = await api('GET', `/boot-vars?hostname=${WORKER}`);
      expect(byName.text).toContain(`set base-iqn ${BASE_IQN}`);
      expect(byName.text).not.toMatch(/username|password/);
      const read = (cred: string) => exec([...netns!.wrap, 'iscsi-readcapacity16', '-i', initiator, `iscsi://${cred}${SRV}:3260/${iqn}/1`], { allowFailure: true });
      const nameOnly = await read('');
      expect(nameOnly.code, 'iscsi-readcapacity16 under the worker name, no secret').not.toBe(0);
      expect(nameOnly.stdout + nameOnly.stderr).toMatch(/Authentication failure/);
      expect((await read(`${CHAP_USER}%${secret}@`)).code, 'iscsi-readcapacity16 with the bound answer secret').toBe(0);
      for (const text of [(await api('GET', `/workers/${WORKER}`)).text, (await api('GET', '/operations')).text, (await api('GET', '/agents/storage-e2e/luns')).text]) {
        expect(text).not.toContain(secret);
      }
      say(`operator: CHAP account ${CHAP_USER} bound to ${iqn}; the worker's initiator name without the secret: "Authentication failure"; with the secret from /boot-vars?mac=${MAC1}: read; /boot-vars?hostname=${WORKER} carries no username/password`);
      const os = await api('PUT', `/workers/${WORKER}/default-os`, { os: 'ubuntu', menu_timeout: 1000 });
      expect(os.status, os.text).toBe(200);

      const vars = await api('GET', `/boot-vars?mac=${MAC1}&hostname=${WORKER}&format=json`);
      expect(vars.json()).toEqual({ base_iqn: BASE_IQN, iscsi_server: SRV, iscsi_sep: ':::1:', menu_default: 'ubuntu', menu_timeout: 1000 });
      say(`operator: disk ${iqn} cloned from _tpl_marker.img (tgtd serves ${WORKER}.ubuntu.img), default_os ubuntu; /boot-vars ${vars.text}`);
    });
  });

  it('boots the bound machine from its iSCSI system disk on the second boot', async () => {
    const run = await step('second boot', () => boot({ name: 'machine-1-second', mac: MAC1, extra: MACHINE1 }));
    await step('second boot: checks', async () => {
      const rootPath = `iscsi:${SRV}:::1:${BASE_IQN}:${WORKER}.ubuntu`;
      say(`second boot: qemu exited with code ${run.code} after ${run.ms} ms`);
      const ack = dnsmasqLog().match(new RegExp(`DHCPACK\\(tap0\\) (\\S+) ${MAC1} ${WORKER}`));
      expect(ack, `dnsmasq DHCPACK(tap0) … ${MAC1} ${WORKER}`).not.toBeNull();
      expect(run.console).toContain(`ironlens: ${MAC1} hostname=${WORKER}`);
      expect(run.console).toContain('ironlens: menu-default=ubuntu menu-timeout=1000');
      expect(run.console).toContain(`ironlens: sanboot ${rootPath}`);
      expect(run.console).toContain(MARKER);
      expect(run.code).toBe(33);
      say(`second boot: ${ack![0].trim()}; console: "sanboot ${rootPath}", "${MARKER}"; qemu exit code 33 (isa-debug-exit)`);

      const dev = (await api('GET', `/devices/${MAC1}`)).json<Device & { first_seen: string; last_seen: string }>();
      expect(dev).toMatchObject({ state: 'bound', bound_worker_id: WORKER, fingerprint: expect.objectContaining({ serial: SMBIOS1.serial }) });
      expect(Date.parse(dev.last_seen)).toBeGreaterThan(Date.parse(dev.first_seen));
      say(`second boot: device ${MAC1} ${dev.state} to ${dev.bound_worker_id}, reported again (first_seen ${dev.first_seen}, last_seen ${dev.last_seen})`);

      const logins = tgtdLogins();
      expect(logins).toContain(`${BASE_IQN}:${WORKER}`);
      const ops = (await api('GET', '/operations')).json<{ entries: Operation[] }>().entries.map((o) => o.op);
      expect(ops).toEqual(expect.arrayContaining(['device.register', 'device.bind']));
      say(`second boot: tgtd logins ${JSON.stringify([...new Set(logins)])}; operations log: ${ops.join(', ')}`);
    }, run.serial);
  });

  it("refuses a second machine that claims the worker's hostname: empty boot vars, no disk", async () => {
    const loginsBefore = tgtdLogins().length;
    const run = await step('claiming machine', () => boot({ name: 'machine-2-claim', mac: MAC2, until: /no boot variables for .*waiting at the menu.*ironlens --/ }));
    await step('claiming machine: checks', async () => {
      // It sits at the menu with no default; give it time to do anything it would do.
      await sleep(1500);
      const shown = flatConsole(run.qemu.log());
      expect(run.qemu.running, 'waits at the menu').toBe(true);
      const show = await exec(['tgtadm', '-C', String(tgtd!.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show']);
      await run.qemu.kill();
      // The first stage's cp-url won over the default (next-server): the requests went to SRV_ALT.
      expect(shown).toContain(`ironlens: ${MAC2} hostname=${WORKER} control plane ${CP_URL_ALT}`);
      const asked = daemons
        .find((d) => d.name === 'ironlens-serve')!
        .log()
        .split('\n')
        .filter((l) => l.includes(`"host":"${SRV_ALT}:4839"`))
        .map((l) => (JSON.parse(l) as { req: { url: string } }).req.url.split('?')[0]);
      expect(asked).toEqual(['/devices/report', '/boot-vars']);
      expect(shown).toContain(`ironlens: no boot variables for ${MAC2} hostname=${WORKER}`);
      expect(shown).not.toContain('ironlens: sanboot');
      expect(shown).not.toContain(MARKER);
      const ack = dnsmasqLog().match(new RegExp(`DHCPACK\\(tap0\\) (\\S+) ${MAC2}(.*)`));
      expect(ack).not.toBeNull();
      const ip = ack![1];
      const sessions = [...show.stdout.matchAll(/IP Address: (\S+)/g)].map((m) => m[1]);
      expect(show.stdout, 'no iSCSI session from the claiming machine').not.toMatch(new RegExp(`IP Address: ${ip.replace(/\./g, '\\.')}\\b`));
      expect(tgtdLogins().length, 'no iSCSI login since the claiming machine powered on').toBe(loginsBefore);

      const d = (await api('GET', `/devices/${MAC2}`)).json<Device>();
      expect(d).toMatchObject({ mac: MAC2, state: 'pooled', bound_worker_id: null, source: 'ipxe' });
      const direct = await api('GET', `/boot-vars?mac=${MAC2}&hostname=${WORKER}`);
      expect(direct.text).toBe('#!ipxe\n# no per-worker boot vars found\n');
      const ops = (await api('GET', `/operations?mac=${MAC2}`)).json<{ entries: Operation[] }>().entries.map((o) => o.op);
      expect(ops).toEqual(['device.register']);
      say(`claiming machine: ${MAC2} (${ip}) asked ${CP_URL_ALT} (${asked.join(', ')}) as ${WORKER} after ${run.ms} ms: console "no boot variables … waiting at the menu", no sanboot, no marker; device ${d.state}, unbound; tgtd: no new login (${loginsBefore} in all, all from the first machine), no session from ${ip} (open sessions: ${JSON.stringify(sessions)}); /boot-vars answers ${JSON.stringify(direct.text)}; operations for ${MAC2}: ${ops.join(', ')}`);
    }, run.serial);
  });
  it("refuses a machine that guesses the worker's disk IQN and sanboots it under another initiator name", async () => {
    const run = await step('guessing machine', () => boot({ name: 'machine-3-guess', mac: MAC3, until: REFUSED_OR_DONE }));
    await step('guessing machine: checks', async () => {
      const shown = run.console;
      const show = await exec(['tgtadm', '-C', String(tgtd!.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show']);
      await run.qemu.kill();
      expect(shown).toContain(`ironlens-e2e: guessing as ${GUESSER_INITIATOR}`);
      expect(shown).toMatch(/ironlens-e2e: sanboot refused \(error 0x[0-9a-f]+\)/);
      expect(shown).not.toContain(MARKER);
      const ack = dnsmasqLog().match(new RegExp(`DHCPACK\\(tap0\\) (\\S+) ${MAC3}`));
      expect(ack).not.toBeNull();
      const ip = ack![1];
      expect(show.stdout, 'no iSCSI session from the guessing machine').not.toMatch(new RegExp(`IP Address: ${ip.replace(/\./g, '\\.')}\\b`));
      expect(parseTgtadmShow(show.stdout).find((t) => t.iqn === `${BASE_IQN}:${WORKER}.ubuntu`)?.acl).toEqual([`${BASE_IQN}:${WORKER}`]);
      const refused = shown.match(/ironlens-e2e: sanboot refused \(error (0x[0-9a-f]+)\)/)![1];
      say(`guessing machine: ${MAC3} (${ip}) sanbooted ${BASE_IQN}:${WORKER}.ubuntu as ${GUESSER_INITIATOR}: refused (iPXE error ${refused}), no marker, no session from ${ip}`);
    }, run.serial);
  });

  it("refuses a machine that forges the worker's initiator name from the hostname-only boot vars: no secret, no login", async () => {
    const run = await step('forging machine', () => boot({ name: 'machine-4-forge', mac: MAC4, until: REFUSED_OR_DONE }));
    await step('forging machine: checks', async () => {
      const shown = run.console;
      const show = await exec(['tgtadm', '-C', String(tgtd!.controlPort), '--lld', 'iscsi', '--mode', 'target', '--op', 'show']);
      await run.qemu.kill();
      const forged = `${BASE_IQN}:${WORKER}`;
      // It got the public variables and composed exactly the worker's name and root path, with no CHAP user.
      expect(shown).toContain(`ironlens-e2e: forging ${forged} base-iqn=${BASE_IQN} iscsi-server=${SRV} username=[]`);
      expect(shown).toMatch(/ironlens-e2e: sanboot refused \(error 0x[0-9a-f]+\)/);
      expect(shown).not.toContain(MARKER);
      const ack = dnsmasqLog().match(new RegExp(`DHCPACK\\(tap0\\) (\\S+) ${MAC4}`));
      expect(ack).not.toBeNull();
      const ip = ack![1];
      // tgtd saw the forged name ask for the disk, and admitted no session from that machine.
      expect(show.stdout, 'no iSCSI session from the forging machine').not.toMatch(new RegExp(`IP Address: ${ip.replace(/\./g, '\\.')}\\b`));
      const target = parseTgtadmShow(show.stdout).find((t) => t.iqn === `${BASE_IQN}:${WORKER}.ubuntu`);
      expect(target).toMatchObject({ acl: [forged], accounts: [CHAP_USER] });
      const served = daemons
        .find((d) => d.name === 'ironlens-serve')!
        .log()
        .split('\n')
        .filter((l) => l.includes(`/boot-vars?hostname=${WORKER}`)).length;
      expect(served, 'the forging machine asked /boot-vars by hostname').toBeGreaterThan(0);
      const refused = shown.match(/ironlens-e2e: sanboot refused \(error (0x[0-9a-f]+)\)/)![1];
      // iPXE's error number: POSIX class in bits 24-31, its per-file reason in bits 8-12. The
      // forged name passed the ACL (a name tgtd does not admit gets ENODEV 0x2c, as the guessing
      // machine did) and the login stopped at authentication: tgtd rejected AuthMethod=None,
      // iPXE's EPROTO (0x43) reason 6 "Parameter rejected" (EPROTO_VALUE_REJECTED in iscsi.c).
      const errno = Number.parseInt(refused, 16);
      expect({ posix: errno >>> 24, reason: (errno >>> 8) & 0x1f }, `iPXE error ${refused}`).toEqual({ posix: 0x43, reason: 6 });
      say(`forging machine: ${MAC4} (${ip}) took /boot-vars?hostname=${WORKER}, logged in as ${forged} without a CHAP secret: refused at authentication (iPXE error ${refused}: EPROTO, parameter rejected), no marker, no session from ${ip}`);
    }, run.serial);
  });
});
