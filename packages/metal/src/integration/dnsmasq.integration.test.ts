/**
 * A real dnsmasq (Debian dnsmasq-base) reading the hosts file ironlens renders, reloaded by
 * ironlens through its pid file, and a real DHCP client (busybox udhcpc) in a second
 * network namespace that receives the hostname of the worker its MAC is bound to.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { waitUntil } from '@ironlens/core/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PidFileReloader } from '../adapters/dnsmasq.adapter';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const id = process.pid % 10000;
const SRV_NS = `ilt-dns-${id}`;
const CLI_NS = `ilt-cli-${id}`;
const SRV_IF = `vds${id}`;
const CLI_IF = `vdc${id}`;
const CLIENT_MAC = '52:54:00:d4:0c:07';
const NET = '192.168.214';

let dir: string;
let dnsmasq: ChildProcess | undefined;
let f: MetalFixture;
const ip = (...args: string[]) => exec(['ip', ...args]);

const log = () => (existsSync(join(dir, 'dnsmasq.log')) ? readFileSync(join(dir, 'dnsmasq.log'), 'utf8') : '');
// dnsmasq's line for a successful read is `…: read /path/dhcp-hosts.conf`; a failure says `cannot read …`.
const readsOfHostsFile = () => log().split('\n').filter((l) => l.includes(`: read ${join(dir, 'dhcp-hosts.conf')}`)).length;

/** One DHCP exchange from the client namespace; returns the options udhcpc saw. */
async function dhcpClient(): Promise<Record<string, string>> {
  const out = join(dir, `udhcpc-${Date.now()}.env`);
  const script = join(dir, 'udhcpc.sh');
  writeFileSync(script, `#!/bin/sh\n[ "$1" = bound ] && env > ${out}\nexit 0\n`);
  chmodSync(script, 0o755);
  await exec(['ip', 'netns', 'exec', CLI_NS, 'udhcpc', '-i', CLI_IF, '-n', '-q', '-f', '-t', '5', '-T', '1', '-s', script], { timeoutMs: 20_000, allowFailure: true });
  if (!existsSync(out)) return {};
  return Object.fromEntries(
    readFileSync(out, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test needs root (network namespaces); CI runs as root');
  dir = mkdtempSync(join(tmpdir(), 'ironlens-dnsmasq-'));
  // dnsmasq drops root for its own user: the hosts file must be readable by it.
  chmodSync(dir, 0o755);
  await exec(['ip', 'netns', 'del', SRV_NS], { allowFailure: true });
  await exec(['ip', 'netns', 'del', CLI_NS], { allowFailure: true });
  await ip('netns', 'add', SRV_NS);
  await ip('netns', 'add', CLI_NS);
  await ip('link', 'add', SRV_IF, 'type', 'veth', 'peer', 'name', CLI_IF);
  await ip('link', 'set', SRV_IF, 'netns', SRV_NS);
  await ip('link', 'set', CLI_IF, 'netns', CLI_NS);
  await ip('-n', SRV_NS, 'addr', 'add', `${NET}.1/24`, 'dev', SRV_IF);
  await ip('-n', SRV_NS, 'link', 'set', SRV_IF, 'up');
  await ip('-n', CLI_NS, 'link', 'set', CLI_IF, 'address', CLIENT_MAC);
  await ip('-n', CLI_NS, 'link', 'set', CLI_IF, 'up');
  writeFileSync(join(dir, 'dhcp-hosts.conf'), '');
  dnsmasq = spawn(
    'ip',
    [
      'netns', 'exec', SRV_NS, 'dnsmasq', '--keep-in-foreground', '--conf-file=/dev/null', '--port=0',
      `--interface=${SRV_IF}`, '--bind-interfaces', '--no-ping', `--dhcp-range=${NET}.100,${NET}.200,255.255.255.0,1h`,
      `--dhcp-hostsfile=${join(dir, 'dhcp-hosts.conf')}`, `--dhcp-leasefile=${join(dir, 'leases')}`,
      `--pid-file=${join(dir, 'dnsmasq.pid')}`, '--log-dhcp', `--log-facility=${join(dir, 'dnsmasq.log')}`,
    ],
    { stdio: 'ignore' },
  );
  await waitUntil('dnsmasq pid file', () => existsSync(join(dir, 'dnsmasq.pid')) && readFileSync(join(dir, 'dnsmasq.pid'), 'utf8').trim() !== '');
  await waitUntil('dnsmasq to read its hosts file', () => readsOfHostsFile() >= 1);
}, 60_000);

// Each test gets its own ledger (a new store), rendered to the hosts file dnsmasq reads.
beforeEach(async () => {
  f = await newMetalFixture(
    { IPXE_CP_DNSMASQ_HOSTS_FILE: join(dir, 'dhcp-hosts.conf') },
    { reloader: new PidFileReloader(join(dir, 'dnsmasq.pid')) },
  );
});
afterEach(async () => {
  await f?.close();
});

afterAll(async () => {
  if (dnsmasq?.pid) {
    const pid = Number(readFileSync(join(dir, 'dnsmasq.pid'), 'utf8').trim());
    if (pid > 1) process.kill(pid, 'SIGTERM');
    dnsmasq.kill('SIGTERM');
  }
  await exec(['ip', 'netns', 'del', SRV_NS], { allowFailure: true });
  await exec(['ip', 'netns', 'del', CLI_NS], { allowFailure: true });
  rmSync(dir, { recursive: true, force: true });
});

/** Binds the client's MAC to `worker` and waits until dnsmasq has read the new hosts file. */
async function bindClientTo(worker: string): Promise<void> {
  const before = readsOfHostsFile();
  const ctx = { client: 'test' };
  await f.services.devices.register({ mac: CLIENT_MAC }, ctx);
  await f.services.workers.create({ worker_id: worker }, ctx);
  await f.services.devices.bind(CLIENT_MAC, worker, false, ctx);
  expect(readFileSync(join(dir, 'dhcp-hosts.conf'), 'utf8')).toBe(`${CLIENT_MAC},${worker},infinite\n`);
  await waitUntil('dnsmasq to re-read the hosts file', () => readsOfHostsFile() > before);
}

describe('real dnsmasq and a DHCP client', () => {
  it('re-reads dhcp-hosts.conf after a bind, and the client receives the bound hostname', async () => {
    await bindClientTo('rack1-node07');
    const opts = await dhcpClient();
    expect(opts.hostname).toBe('rack1-node07');
    expect(opts.ip).toMatch(new RegExp(`^${NET.replace(/\./g, '\\.')}\\.\\d+$`));
    expect(log()).toMatch(new RegExp(`DHCPACK\\(${SRV_IF}\\) \\S+ ${CLIENT_MAC} rack1-node07`));
  });

  it('stops handing out the hostname once the device is unbound', async () => {
    await bindClientTo('rack1-node08');
    expect((await dhcpClient()).hostname).toBe('rack1-node08');
    const before = readsOfHostsFile();
    await f.services.devices.unbind(CLIENT_MAC, { client: 'test' });
    expect(readFileSync(join(dir, 'dhcp-hosts.conf'), 'utf8')).toBe('');
    await waitUntil('dnsmasq to re-read the hosts file', () => readsOfHostsFile() > before);
    const opts = await dhcpClient();
    expect(opts.ip).toBeDefined();
    expect(opts.hostname).toBeUndefined();
  });
});
