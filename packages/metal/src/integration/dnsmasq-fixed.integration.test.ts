/**
 * Issue 24, leases and addresses: a real dnsmasq (Debian dnsmasq-base, `--no-ping` as in the
 * netboot test) reading the hosts file ironlens renders, and two real DHCP clients (busybox
 * udhcpc) on two interfaces of a client namespace, started at the same moment. Their MACs are
 * chosen so that dnsmasq's own address hash (SDBM over the MAC, modulo the range) picks the same
 * dynamic address for both: the case two iPXE machines ended in "address in use". With a fixed
 * address per worker each gets its own at once, and the lease never runs out.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@ironlens/core';
import { waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PidFileReloader } from '../adapters/dnsmasq.adapter';
import { type MetalFixture, newMetalFixture } from '../testing/fixture';

const id = process.pid % 10000;
const SRV_NS = `ilt-fxs-${id}`;
const CLI_NS = `ilt-fxc-${id}`;
const BR = `fxb${id}`;
const NET = '192.168.217';
const RANGE = { first: 100, last: 200 };

/** dnsmasq's address_allocate() seed: SDBM hash of the MAC, as an unsigned 32-bit int, modulo the range. */
function dnsmasqSlot(mac: string): number {
  let j = 0;
  for (const b of mac.split(':').map((h) => Number.parseInt(h, 16))) j = (b + (j << 6) + (j << 16) - j) >>> 0;
  if (j === 0) j = 1;
  return j % (1 + RANGE.last - RANGE.first);
}

/** Two MACs dnsmasq would offer the same dynamic address. */
function collidingMacs(): [string, string] {
  const seen = new Map<number, string>();
  for (let n = 1; ; n++) {
    const mac = `52:54:00:24:${((n >> 8) & 255).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`;
    const slot = dnsmasqSlot(mac);
    const other = seen.get(slot);
    if (other) return [other, mac];
    seen.set(slot, mac);
  }
}
const [MAC1, MAC2] = collidingMacs();

let dir: string;
let dnsmasq: ChildProcess | undefined;
let f: MetalFixture;
const ip = (...args: string[]) => exec(['ip', ...args]);
const log = () => (existsSync(join(dir, 'dnsmasq.log')) ? readFileSync(join(dir, 'dnsmasq.log'), 'utf8') : '');
const readsOfHostsFile = () => log().split('\n').filter((l) => l.includes(`: read ${join(dir, 'dhcp-hosts.conf')}`)).length;

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test needs root (network namespaces); CI runs as root');
  dir = mkdtempSync(join(tmpdir(), `ironlens-dnsmasq-fixed-${process.pid}-`));
  chmodSync(dir, 0o755);
  for (const ns of [SRV_NS, CLI_NS]) {
    await exec(['ip', 'netns', 'del', ns], { allowFailure: true });
    await ip('netns', 'add', ns);
  }
  await ip('-n', SRV_NS, 'link', 'add', BR, 'type', 'bridge');
  await ip('-n', SRV_NS, 'addr', 'add', `${NET}.1/24`, 'dev', BR);
  await ip('-n', SRV_NS, 'link', 'set', BR, 'up');
  for (const [i, mac] of [MAC1, MAC2].entries()) {
    const srv = `fxs${id}${i}`;
    const cli = `fxc${id}${i}`;
    await ip('link', 'add', srv, 'type', 'veth', 'peer', 'name', cli);
    await ip('link', 'set', srv, 'netns', SRV_NS);
    await ip('link', 'set', cli, 'netns', CLI_NS);
    await ip('-n', SRV_NS, 'link', 'set', srv, 'master', BR);
    await ip('-n', SRV_NS, 'link', 'set', srv, 'up');
    await ip('-n', CLI_NS, 'link', 'set', cli, 'address', mac);
    await ip('-n', CLI_NS, 'link', 'set', cli, 'up');
  }
  writeFileSync(join(dir, 'dhcp-hosts.conf'), '');
  dnsmasq = spawn(
    'ip',
    [
      'netns', 'exec', SRV_NS, 'dnsmasq', '--keep-in-foreground', '--conf-file=/dev/null', '--port=0',
      `--interface=${BR}`, '--bind-interfaces', '--no-ping', `--dhcp-range=${NET}.${RANGE.first},${NET}.${RANGE.last},255.255.255.0,1h`,
      `--dhcp-hostsfile=${join(dir, 'dhcp-hosts.conf')}`, `--dhcp-leasefile=${join(dir, 'leases')}`,
      `--pid-file=${join(dir, 'dnsmasq.pid')}`, '--log-dhcp', `--log-facility=${join(dir, 'dnsmasq.log')}`,
    ],
    { stdio: 'ignore' },
  );
  await waitUntil('dnsmasq pid file', () => existsSync(join(dir, 'dnsmasq.pid')) && readFileSync(join(dir, 'dnsmasq.pid'), 'utf8').trim() !== '');
  await waitUntil('dnsmasq to read its hosts file', () => readsOfHostsFile() >= 1);
  f = await newMetalFixture({ IPXE_CP_DNSMASQ_HOSTS_FILE: join(dir, 'dhcp-hosts.conf') }, { reloader: new PidFileReloader(join(dir, 'dnsmasq.pid')) });
}, 60_000);

afterAll(async () => {
  await f?.close();
  if (dnsmasq?.pid) {
    const pid = Number(readFileSync(join(dir, 'dnsmasq.pid'), 'utf8').trim());
    if (pid > 1) process.kill(pid, 'SIGTERM');
    dnsmasq.kill('SIGTERM');
  }
  await exec(['ip', 'netns', 'del', SRV_NS], { allowFailure: true });
  await exec(['ip', 'netns', 'del', CLI_NS], { allowFailure: true });
  rmSync(dir, { recursive: true, force: true });
});

/** Both clients DHCP at once (one shell starts both); each client's options as udhcpc saw them. */
async function bothAtOnce(): Promise<Array<Record<string, string>>> {
  const outs = [0, 1].map((i) => join(dir, `udhcpc-${i}-${Date.now()}.env`));
  const scripts = outs.map((out, i) => {
    const s = join(dir, `udhcpc-${i}.sh`);
    writeFileSync(s, `#!/bin/sh\n[ "$1" = bound ] && env > ${out}\nexit 0\n`);
    chmodSync(s, 0o755);
    return s;
  });
  const cmd = [0, 1].map((i) => `udhcpc -i fxc${id}${i} -n -q -f -t 5 -T 1 -s ${scripts[i]} >/dev/null 2>&1 &`).join(' ');
  await exec(['ip', 'netns', 'exec', CLI_NS, 'sh', '-c', `${cmd} wait`], { timeoutMs: 30_000, allowFailure: true });
  return outs.map((out) =>
    existsSync(out)
      ? Object.fromEntries(
          readFileSync(out, 'utf8')
            .split('\n')
            .filter((l) => l.includes('='))
            .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
        )
      : {},
  );
}

describe('two machines that DHCP at the same moment', () => {
  // The hazard itself: dnsmasq picks a dynamic address from a hash of the MAC (dnsmasqSlot), so
  // these two MACs are offered the same address when their DISCOVERs cross; whether they cross
  // is timing, so the test asserts the collision of the slots, never the race.
  it('each get their worker\'s fixed address at once, with a lease that never runs out', async () => {
    expect(dnsmasqSlot(MAC1)).toBe(dnsmasqSlot(MAC2));
    const ctx = { client: 'test' };
    for (const [w, mac, addr] of [
      ['node-a', MAC1, `${NET}.11`],
      ['node-b', MAC2, `${NET}.12`],
    ]) {
      await f.services.devices.register({ mac }, ctx);
      await f.services.workers.create({ worker_id: w, mac }, ctx);
      const view = await f.services.workers.setFixedAddress(w, addr, ctx);
      expect(view.fixed_address).toBe(addr);
    }
    expect(readFileSync(join(dir, 'dhcp-hosts.conf'), 'utf8')).toBe(`${MAC1},${NET}.11,node-a,infinite\n${MAC2},${NET}.12,node-b,infinite\n`);
    await waitUntil('dnsmasq to re-read the hosts file', () => readsOfHostsFile() >= 3);
    const before = log().length;
    const [a, b] = await bothAtOnce();
    expect([a.ip, a.hostname, b.ip, b.hostname]).toEqual([`${NET}.11`, 'node-a', `${NET}.12`, 'node-b']);
    // dnsmasq's infinite lease is option 51 = 0xffffffff.
    expect([a.lease, b.lease]).toEqual(['4294967295', '4294967295']);
    expect(log().slice(before)).not.toMatch(/DHCPNAK|address in use/);
  }, 60_000);

  it('refuses an address that is not a unicast IPv4, and one another worker has', async () => {
    const ctx = { client: 'test' };
    await expect(f.services.workers.setFixedAddress('node-a', '224.0.0.1', ctx)).rejects.toMatchObject({ code: 'worker_address_invalid' });
    await expect(f.services.workers.setFixedAddress('node-a', `${NET}.11\nset:evil`, ctx)).rejects.toMatchObject({ code: 'worker_address_invalid' });
    await expect(f.services.workers.setFixedAddress('node-b', `${NET}.11`, ctx)).rejects.toMatchObject({ code: 'worker_address_taken' });
    const res = await f.app.inject({ method: 'PUT', url: '/workers/node-b/address', payload: { fixed_address: null } });
    expect(res.statusCode).toBe(200);
    expect(res.json().fixed_address).toBeNull();
    expect(readFileSync(join(dir, 'dhcp-hosts.conf'), 'utf8')).toBe(`${MAC1},${NET}.11,node-a,infinite\n${MAC2},node-b,infinite\n`);
  }, 30_000);
});
