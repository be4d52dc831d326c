import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { partOf, SecretBox } from '@ironlens/core';
import { sleep, testDatabaseEnv } from '@ironlens/core/testing';
import { ChapRepository, createMetalServices, type MetalStore, metalConfigFromEnv, signReport } from '@ironlens/metal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Running, serve } from './serve';

// biome-ignore lint/suspicious/noExplicitAny: JSON answers of several shapes, read by the assertions
type Json = any;

/**
 * The host reporter (packages/metal/assets/host-reporter, the program the master image runs,
 * issue 24) run for real with python3 against fake sysfs, iBFT, /proc and /etc trees and the
 * documented outputs of lspci, nvidia-smi and xpu-smi, reporting to a real `ironlens serve`.
 */
const here = dirname(fileURLToPath(import.meta.url));
const REPORTER = resolve(here, '../../metal/assets/host-reporter/ironlens-host-reporter');
const FIXTURES = resolve(here, '../../metal/test/fixtures/host-reporter');

const MAC1 = '52:54:00:24:00:01';
const MAC2 = '52:54:00:24:00:02';

let dir: string;
let running: Running;
let boot: string;
let secret: string;

function write(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/** One machine's roots: iBFT, sysfs, /proc, /etc, /run, the state dir and the stand-in tools. */
function machine(name: string, opts: { mac: string; hostname: string; chapSecret?: string; controlPlane?: string | null; dhcp?: string; marker?: string; targetName?: string }): Record<string, string> {
  const root = join(dir, name);
  const ibft = join(root, 'ibft');
  write(join(ibft, 'ethernet0', 'mac'), `${opts.mac}\n`);
  write(join(ibft, 'ethernet0', 'hostname'), `${opts.hostname}\n`);
  write(join(ibft, 'ethernet0', 'dhcp'), `${opts.dhcp ?? '192.0.2.1'}\n`);
  write(join(ibft, 'target0', 'chap-type'), opts.chapSecret ? '1\n' : '0\n');
  if (opts.chapSecret) write(join(ibft, 'target0', 'chap-secret'), `${opts.chapSecret}\n`);
  if (opts.targetName !== undefined) write(join(ibft, 'target0', 'target-name'), `${opts.targetName}\n`);
  const sys = join(root, 'sys');
  const net = join(sys, 'class', 'net');
  for (const [ifname, mac, speed] of [
    ['eth0', opts.mac, '25000'],
    ['eth1', '52:54:00:24:ff:01', '-1'],
  ]) {
    write(join(net, ifname, 'address'), `${mac}\n`);
    write(join(net, ifname, 'speed'), `${speed}\n`);
    mkdirSync(join(sys, 'devices', ifname, 'drv', 'virtio_net'), { recursive: true });
    symlinkSync(join(sys, 'devices', ifname), join(net, ifname, 'device'));
    symlinkSync(join(sys, 'devices', ifname, 'drv', 'virtio_net'), join(sys, 'devices', ifname, 'driver'));
  }
  // A veth (no device link) is not reported: CNI plugins make and remove them all the time.
  write(join(net, 'veth1234', 'address'), '66:00:00:00:00:01\n');
  write(join(net, 'lo', 'address'), '00:00:00:00:00:00\n');
  write(join(sys, 'block', 'sda', 'size'), '8388608\n');
  write(join(sys, 'block', 'sda', 'device', 'vendor'), 'LIO-ORG\n');
  write(join(sys, 'block', 'sda', 'device', 'model'), 'disk\n');
  write(join(sys, 'block', 'loop0', 'size'), '100\n');
  const pci = join(sys, 'bus', 'pci', 'devices');
  for (const [slot, cls, vendor, device] of [
    ['0000:00:00.0', '0x060000', '0x8086', '0x1237'],
    ['0000:00:02.0', '0x030000', '0x1234', '0x1111'],
    ['0000:18:00.0', '0x030200', '0x10de', '0x2330'],
    ['0000:2a:00.0', '0x030200', '0x10de', '0x2330'],
    ['0000:4b:00.0', '0x038000', '0x8086', '0x0bd5'],
  ]) {
    write(join(pci, slot, 'class'), `${cls}\n`);
    write(join(pci, slot, 'vendor'), `${vendor}\n`);
    write(join(pci, slot, 'device'), `${device}\n`);
  }
  const proc = join(root, 'proc');
  write(join(proc, 'cpuinfo'), 'processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\n');
  write(join(proc, 'meminfo'), 'MemTotal:        1160000 kB\nMemFree:          900000 kB\n');
  write(join(proc, 'sys', 'kernel', 'osrelease'), '6.1.0-28-amd64\n');
  const etc = join(root, 'etc');
  write(join(etc, 'os-release'), 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n');
  mkdirSync(join(etc, 'ssh'), { recursive: true });
  for (const t of ['ed25519', 'ecdsa']) execFileSync('ssh-keygen', ['-q', '-t', t, '-N', '', '-C', '', '-f', join(etc, 'ssh', `ssh_host_${t}_key`)]);
  // issue 31: the image identity `ironlens master build` writes
  if (opts.marker !== undefined) write(join(etc, 'ironlens-master'), opts.marker);
  if (opts.controlPlane) write(join(etc, 'ironlens', 'host-reporter.conf'), `# written by ironlens master build\nCONTROL_PLANE=${opts.controlPlane}\n`);
  write(
    join(root, 'ip-addr.json'),
    JSON.stringify([
      { ifindex: 1, ifname: 'lo', address: '00:00:00:00:00:00', addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8, scope: 'host' }] },
      {
        ifindex: 2,
        ifname: 'eth0',
        address: opts.mac,
        addr_info: [
          { family: 'inet', local: '192.0.2.24', prefixlen: 24, scope: 'global' },
          { family: 'inet6', local: 'fd00:81::24', prefixlen: 64, scope: 'global' },
          { family: 'inet6', local: 'fe80::5054:ff:fe24:1', prefixlen: 64, scope: 'link' },
        ],
      },
      { ifindex: 3, ifname: 'eth1', address: '52:54:00:24:ff:01', addr_info: [] },
    ]),
  );
  // Stand-ins of the vendor tools: they answer only the exact invocation the reporter documents.
  const tools = join(root, 'tools');
  const standIn = (tool: string, args: string, fixture: string) => {
    write(join(tools, tool), `#!/bin/sh\n[ "$*" = "${args}" ] || { echo "unexpected arguments: $*" >&2; exit 2; }\ncat '${join(FIXTURES, fixture)}'\n`);
    chmodSync(join(tools, tool), 0o755);
  };
  standIn('lspci', '-vmm -nn', 'lspci-vmm-nn.txt');
  standIn('nvidia-smi', '--query-gpu=name,memory.total --format=csv,noheader,nounits', 'nvidia-smi-query-gpu.csv');
  standIn('xpu-smi', 'discovery -j', 'xpu-smi-discovery.json');
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    IRONLENS_IBFT_DIR: ibft,
    IRONLENS_SYS_DIR: sys,
    IRONLENS_PROC_DIR: proc,
    IRONLENS_ETC_DIR: etc,
    IRONLENS_RUN_DIR: join(root, 'run'),
    IRONLENS_STATE_DIR: join(root, 'state'),
    IRONLENS_IP_ADDR_JSON: join(root, 'ip-addr.json'),
    IRONLENS_TOOLS_PATH: tools,
    IRONLENS_REPORT_ATTEMPTS: '2',
  };
}

function reporter(env: Record<string, string>, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    execFile('python3', [REPORTER, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      res({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function keygenFingerprints(etc: string): Array<{ algorithm: string; fingerprint: string }> {
  const type: Record<string, string> = { ED25519: 'ssh-ed25519', ECDSA: 'ecdsa-sha2-nistp256' };
  return ['ecdsa', 'ed25519'].map((t) => {
    const line = execFileSync('ssh-keygen', ['-lf', join(etc, 'ssh', `ssh_host_${t}_key.pub`)], { encoding: 'utf8' });
    const words = line.trim().split(/\s+/);
    return { algorithm: type[(words.at(-1) ?? '').replace(/[()]/g, '')], fingerprint: words[1] };
  });
}

async function hostReports(): Promise<Array<Record<string, unknown>>> {
  const res = await fetch(`${boot}/operations?limit=1000`);
  const body = (await res.json()) as { entries: Array<Record<string, unknown>> };
  return body.entries.filter((e) => e.op === 'host.report');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), `ironlens-reporter-${process.pid}-`));
  const env = { IRONLENS_DATA_DIR: join(dir, 'data'), IRONLENS_BOOT_LISTEN: '127.0.0.1:0', IRONLENS_CONSOLE_LISTEN: 'off', IPXE_CP_DNSMASQ_RELOAD: 'false', ...(await testDatabaseEnv()) };
  const store = await openStore(env);
  const metalStore: MetalStore = partOf(store);
  const metal = createMetalServices({ store: metalStore, config: metalConfigFromEnv(env, join(dir, 'data')) });
  for (const [id, mac] of [
    ['worker-01', MAC1],
    ['worker-02', MAC2],
  ]) {
    await metal.devices.register({ mac }, {});
    await metal.workers.create({ worker_id: id, mac }, {});
  }
  // worker-01 has a CHAP account (what `/boot-vars` hands its bound MAC); worker-02 none.
  secret = (await new ChapRepository(SecretBox.fromEnv(env, join(dir, 'data'))).ensure(metalStore.db, 'worker-01')).password;
  await store.close();
  running = await serve(env, () => {});
  boot = running.urls.boot;
}, 60_000);

afterAll(async () => {
  await running?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the host reporter against ironlens serve', () => {
  it('reports a CHAP worker signed; the worker view shows its host, address, accelerators and boot timeline', async () => {
    // What iPXE does first: the device report and the bound /boot-vars.
    expect((await fetch(`${boot}/devices/report?mac=${MAC1}`)).status).toBe(200);
    expect(await (await fetch(`${boot}/boot-vars?mac=${MAC1}&hostname=worker-01`)).text()).toContain('boot vars for worker-01');
    const env = machine('m1', {
      mac: MAC1,
      hostname: 'worker-01',
      chapSecret: secret,
      controlPlane: boot,
      marker: '# ironlens master image identity (ironlens master build)\nmaster=_tpl_debian_12.img\nbuild=0123456789abcdef\n',
      targetName: 'iqn.2026-07.com.controller:r3:worker-01.debian',
    });
    const run = await reporter(env);
    expect(run.stderr).toContain('reported to');
    expect(run.code).toBe(0);
    // The secret is in no argument list and no output.
    expect(run.stderr + run.stdout).not.toContain(secret);

    const w = (await (await fetch(`${boot}/workers/worker-01`)).json()) as Record<string, Json>;
    expect(w.mac).toBe(MAC1);
    expect(w.address).toBe('192.0.2.24');
    expect(w.host.addresses).toEqual([
      { interface: 'eth0', mac: MAC1, ipv4: ['192.0.2.24'], ipv6: ['fd00:81::24'] },
      { interface: 'eth1', mac: '52:54:00:24:ff:01', ipv4: [], ipv6: [] },
    ]);
    expect(w.host.ssh_host_keys).toEqual(keygenFingerprints(env.IRONLENS_ETC_DIR));
    expect(w.host.os).toEqual({ id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)' });
    expect(w.host.kernel).toBe('6.1.0-28-amd64');
    // issue 31: the image it runs and the disk it booted, from /etc/ironlens-master and the iBFT
    expect(w.host.image).toEqual({ master: '_tpl_debian_12.img', build: '0123456789abcdef' });
    expect(w.host.boot_disk).toEqual({ iqn: 'iqn.2026-07.com.controller:r3:worker-01.debian' });
    expect(w.host.hardware).toMatchObject({
      cpu_model: 'Intel(R) Xeon(R) Platinum 8480+',
      cpus: 2,
      memory_bytes: 1160000 * 1024,
      disks: [{ name: 'sda', size_bytes: 8388608 * 512, model: 'LIO-ORG disk' }],
      nics: [
        { name: 'eth0', mac: MAC1, speed_mbps: 25000, driver: 'virtio_net' },
        { name: 'eth1', mac: '52:54:00:24:ff:01', speed_mbps: null, driver: 'virtio_net' },
      ],
      accelerators: [
        { vendor: 'NVIDIA Corporation', model: 'NVIDIA H100 80GB HBM3', pci_id: '10de:2330', count: 2, memory_bytes: 81559 * 1048576 },
        { vendor: 'Intel Corporation', model: 'Intel(R) Data Center GPU Max 1550', pci_id: '8086:0bd5', count: 1, memory_bytes: 68719476736 },
      ],
    });
    const t = w.boot_timeline;
    expect(t.report_at).not.toBeNull();
    expect(t.boot_vars_at).not.toBeNull();
    expect(t.iscsi_login_at).toBeNull();
    expect(Date.parse(t.host_report_at)).toBeGreaterThanOrEqual(Date.parse(t.boot_vars_at));
    expect(t.seconds).toBeGreaterThanOrEqual(0);
    expect(t.seconds).toBeLessThan(60);
    const list = (await (await fetch(`${boot}/workers`)).json()) as Array<Record<string, Json>>;
    expect(list.find((x) => x.worker_id === 'worker-01')?.host?.kernel).toBe('6.1.0-28-amd64');
    expect(list.find((x) => x.worker_id === 'worker-02')?.host).toBeNull();

    const metrics = await (await fetch(`${boot}/metrics`)).text();
    expect(metrics).toMatch(/ironlens_host_reports_total\{outcome="accepted"\} 1/);
    expect(metrics).toMatch(/ironlens_boot_duration_seconds_count 1/);

    // The timer's run: nothing changed, nothing sent; a new host key is sent, in the same boot.
    const before = (await hostReports()).length;
    expect((await reporter(env, ['--if-changed'])).code).toBe(0);
    expect((await hostReports()).length).toBe(before);
    await sleep(1100); // the next report needs a newer timestamp
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', '', '-f', join(env.IRONLENS_ETC_DIR, 'ssh', 'ssh_host_extra_key')]);
    expect((await reporter(env, ['--if-changed'])).code).toBe(0);
    const after = await hostReports();
    expect(after.length).toBe(before + 1);
    const w2 = (await (await fetch(`${boot}/workers/worker-01`)).json()) as Record<string, Json>;
    expect(w2.host.ssh_host_keys).toHaveLength(3);
    expect(w2.boot_timeline).toEqual(t);
    expect(await (await fetch(`${boot}/metrics`)).text()).toMatch(/ironlens_boot_duration_seconds_count 1/);
  }, 120_000);

  it('signs again on the control plane\'s clock when this machine\'s clock is 20 minutes off (no NTP yet)', async () => {
    await sleep(1100);
    const env = { ...machine('m-skew', { mac: MAC1, hostname: 'worker-01', chapSecret: secret, controlPlane: boot }), IRONLENS_CLOCK_SKEW_S: '-1200' };
    const run = await reporter(env);
    expect(run.stderr).toMatch(/clock differs from the control plane's by \d+ s/);
    expect(run.code).toBe(0);
  }, 60_000);

  it('refuses a report signed with a wrong secret, counted in the operations log and the metrics', async () => {
    const env = machine('m-wrong', { mac: MAC1, hostname: 'worker-01', chapSecret: 'WrongSecret0001', controlPlane: boot });
    const run = await reporter(env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('401');
    expect(run.stderr).toContain('host_report_signature_invalid');
    const refused = (await hostReports()).filter((e) => e.status === 'refused');
    expect(refused.some((e) => e.reason === 'signature' && e.mac === MAC1)).toBe(true);
    expect(JSON.stringify(refused)).not.toContain('WrongSecret0001');
    expect(await (await fetch(`${boot}/metrics`)).text()).toMatch(/ironlens_host_reports_total\{outcome="refused_signature"\} 1/);
  }, 60_000);

  it('refuses a replayed report, and one whose timestamp is more than 300 s old', async () => {
    const body = Buffer.from(execFileSync('python3', [REPORTER, '--print'], { env: machine('m-replay', { mac: MAC1, hostname: 'worker-01', chapSecret: secret }) }));
    const post = (ts: string) =>
      fetch(`${boot}/hosts/report`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': ts, 'x-ironlens-signature': signReport(secret, ts, body) }, body });
    await sleep(1100);
    const ts = String(Math.floor(Date.now() / 1000));
    expect((await post(ts)).status).toBe(200);
    const replay = await post(ts);
    expect(replay.status).toBe(401);
    expect((await replay.json()).code).toBe('host_report_replayed');
    const old = await post(String(Math.floor(Date.now() / 1000) - 301));
    expect(old.status).toBe(401);
    expect((await old.json()).code).toBe('host_report_replayed');
    // The same body under another timestamp without a new signature: the signature covers the timestamp.
    const moved = await fetch(`${boot}/hosts/report`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(Number(ts) + 1), 'x-ironlens-signature': signReport(secret, ts, body) },
      body,
    });
    expect(moved.status).toBe(401);
    expect((await moved.json()).code).toBe('host_report_signature_invalid');
  }, 60_000);

  it('without CHAP accepts a report only from the bound MAC with its hostname, as /boot-vars decides', async () => {
    // A marker and a target name outside their grammars are left out (null), never sent as they are.
    const ok = await reporter(machine('m2', { mac: MAC2, hostname: 'worker-02', controlPlane: boot, marker: 'master=../x\nbuild=0123456789abcdef\n', targetName: 'iqn.2026-07.x:w2;evil' }));
    expect(ok.code).toBe(0);
    const w2 = (await (await fetch(`${boot}/workers/worker-02`)).json()) as Record<string, Json>;
    expect(w2.address).toBe('192.0.2.24');
    expect([w2.host.image, w2.host.boot_disk]).toEqual([null, null]);
    // worker-02's MAC claiming worker-01's hostname, and an unknown MAC: refused.
    const forged = await reporter(machine('m-forge', { mac: MAC2, hostname: 'worker-01', controlPlane: boot }));
    expect(forged.code).toBe(1);
    expect(forged.stderr).toContain('403');
    const unknown = await reporter(machine('m-unknown', { mac: '52:54:00:24:99:99', hostname: 'worker-02', controlPlane: boot }));
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('host_report_refused');
    expect((await hostReports()).some((e) => e.status === 'refused' && e.reason === 'unknown')).toBe(true);
  }, 60_000);

  it("finds the control plane in the build's conf, else the iBFT's DHCP server, else the initramfs' net config (port 4839)", async () => {
    const conf = machine('cp1', { mac: MAC1, hostname: 'worker-01', controlPlane: 'http://198.51.100.7:4839/' });
    expect((await reporter(conf, ['--print-control-plane'])).stdout.trim()).toBe('http://198.51.100.7:4839');
    const ibft = machine('cp2', { mac: MAC1, hostname: 'worker-01', dhcp: '192.0.2.1' });
    expect((await reporter(ibft, ['--print-control-plane'])).stdout.trim()).toBe('http://192.0.2.1:4839');
    const v6 = machine('cp3', { mac: MAC1, hostname: 'worker-01', dhcp: 'fd00:81::1' });
    expect((await reporter(v6, ['--print-control-plane'])).stdout.trim()).toBe('http://[fd00:81::1]:4839');
    const initramfs = machine('cp4', { mac: MAC1, hostname: 'worker-01', dhcp: '0.0.0.0' });
    write(join(initramfs.IRONLENS_RUN_DIR, 'net-eth0.conf'), "DEVICE='eth0'\nPROTO='dhcp'\nIPV4ADDR='192.0.2.24'\nROOTSERVER='192.0.2.9'\n");
    expect((await reporter(initramfs, ['--print-control-plane'])).stdout.trim()).toBe('http://192.0.2.9:4839');
  }, 60_000);

  it("passes the server's grammars with this machine's own /sys, /proc and /etc (only the identity is not bound here)", async () => {
    const body = execFileSync('python3', [REPORTER, '--print'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', IRONLENS_IBFT_DIR: join(dir, 'no-ibft') } });
    const res = await fetch(`${boot}/hosts/report`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': String(Math.floor(Date.now() / 1000)) }, body });
    // 403 (who is this?), not 400: every value passed the schema and the checks behind it.
    expect(res.status).toBe(403);
    const ts = String(Math.floor(Date.now() / 1000));
    const post = (b: string) => fetch(`${boot}/hosts/report`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-ironlens-timestamp': ts }, body: b });
    const good = JSON.parse(body.toString('utf8'));
    // Values outside their grammar: an interface name with a newline, an IPv6 in the IPv4 list, a tag in the kernel.
    const bad = [
      { ...good, addresses: [{ interface: 'eth0\nx', mac: '', ipv4: [], ipv6: [] }] },
      { ...good, addresses: [{ interface: 'eth0', mac: '', ipv4: ['fd00::1'], ipv6: [] }] },
      { ...good, kernel: '6.1 set:evil' },
      // issue 31: an image identity or a boot disk outside their grammars
      { ...good, image: { master: '../etc/passwd', build: '0123456789abcdef' } },
      { ...good, image: { master: '_tpl_a.img', build: 'not hex' } },
      { ...good, boot_disk: { iqn: 'iqn.2026-07.x:w1\nset evil' } },
      { ...good, ssh_host_keys: Array.from({ length: 17 }, () => ({ algorithm: 'ssh-ed25519', fingerprint: `SHA256:${'A'.repeat(43)}` })) },
    ];
    for (const b of bad) expect((await post(JSON.stringify(b))).status).toBe(422);
    expect((await post('{"mac": ')).status).toBe(400);
    expect((await post(' '.repeat(70 * 1024))).status).toBe(413);
  }, 60_000);
});
