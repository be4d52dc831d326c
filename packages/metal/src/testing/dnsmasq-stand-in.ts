import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Exec } from '@ironlens/core';

/**
 * A stand-in for the dnsmasq ironlens' boot services run (issue 30), faithful where the
 * supervisor looks: it prints `dnsmasq-dhcp[pid]: read <hosts file>` when it reads the hosts
 * file, at start and on every SIGHUP, as dnsmasq does; it ends on SIGTERM. It also writes its
 * arguments, one a line, beside the hosts file ({@link standInArgs}). The real dnsmasq under
 * the supervisor is the boot-services end-to-end test's.
 */
export function writeDnsmasqStandIn(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'dnsmasq-stand-in');
  writeFileSync(
    file,
    `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const hosts = process.argv.find((a) => a.startsWith('--dhcp-hostsfile=')).slice('--dhcp-hostsfile='.length);
fs.writeFileSync(path.join(path.dirname(hosts), 'dnsmasq.args'), process.argv.slice(2).join('\\n'));
const read = () => console.error('dnsmasq-dhcp[' + process.pid + ']: read ' + hosts);
process.on('SIGHUP', read);
process.on('SIGTERM', () => process.exit(0));
read();
setInterval(() => {}, 1000);
`,
    { mode: 0o755 },
  );
  return file;
}

/** The arguments the stand-in started with last for `hostsFile` (empty before it ran). */
export function standInArgs(hostsFile: string): string[] {
  const f = join(dirname(hostsFile), 'dnsmasq.args');
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n') : [];
}

/** A directory with the two iPXE binaries the boot services look for (their contents do not matter here). */
export function writeIpxeDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const f of ['undionly.kpxe', 'snponly.efi']) writeFileSync(join(dir, f), 'x');
  return dir;
}

/** An `Exec` that answers iproute2's `ip -j -4 addr show dev <iface>` with one address (`10.9.0.5/20`), and refuses any other command. */
export function ipAddrExec(iface: string, address = '10.9.0.5', prefixlen = 20): Exec {
  const json = JSON.stringify([{ ifname: iface, addr_info: [{ family: 'inet', local: address, prefixlen, scope: 'global' }] }]);
  return async (argv) => {
    const want = ['ip', '-j', '-4', 'addr', 'show', 'dev', iface];
    if (JSON.stringify(argv) !== JSON.stringify(want)) throw new Error(`unexpected command ${JSON.stringify(argv)}, wanted ${JSON.stringify(want)}`);
    return { code: 0, stdout: json, stderr: '' };
  };
}
