/**
 * Which dnsmasq is reloaded out of the box: the seed's behaviour when reload is configured,
 * detection when nothing is. A real dnsmasq (Debian's dnsmasq-base, in a network namespace of
 * the test's own so its DHCP socket faces nothing) is found by its pid file and by its command
 * line, and re-reads the hosts file on the reload; `docker` is a stand-in executable (Docker
 * does not run here) that answers `docker inspect` and records `docker exec`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Exec, exec } from '@ironlens/core';
import { waitUntil } from '@ironlens/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metalConfigFromEnv } from '../config';
import { newMetalFixture } from '../testing/fixture';
import { DetectingReloader, detectDnsmasq } from './dnsmasq-detect.adapter';

const NS = `ilt-detect-${process.pid % 10000}`;
const IF = `vdt${process.pid % 10000}`;
let dir: string;
let hosts: string;
let dnsmasq: ChildProcess | undefined;
let dnsmasqPid: number;
const reads = () => (existsSync(join(dir, 'dnsmasq.log')) ? readFileSync(join(dir, 'dnsmasq.log'), 'utf8').split('\n').filter((l) => l.includes(`: read ${hosts}`)).length : 0);

/** An empty /proc, no pid files, no docker: a machine without any dnsmasq. */
const nothing = () => ({ container: 'ipxe-dnsmasq', hostsFile: hosts, exec, procDir: join(dir, 'empty-proc'), pidFiles: [join(dir, 'no.pid')], path: join(dir, 'empty-bin') });

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('this test needs root (a network namespace for dnsmasq); CI runs as root');
  dir = mkdtempSync(join(tmpdir(), 'ironlens-dnsmasq-detect-'));
  chmodSync(dir, 0o755); // dnsmasq drops root for its own user
  hosts = join(dir, 'dhcp-hosts.conf');
  writeFileSync(hosts, '');
  for (const d of ['empty-proc', 'empty-bin', 'bin']) mkdirSync(join(dir, d));
  await exec(['ip', 'netns', 'del', NS], { allowFailure: true });
  await exec(['ip', 'netns', 'add', NS]);
  await exec(['ip', '-n', NS, 'link', 'add', IF, 'type', 'veth', 'peer', 'name', `${IF}p`]);
  await exec(['ip', '-n', NS, 'addr', 'add', '192.168.215.1/24', 'dev', IF]);
  await exec(['ip', '-n', NS, 'link', 'set', IF, 'up']);
  dnsmasq = spawn(
    'ip',
    [
      'netns', 'exec', NS, 'dnsmasq', '--keep-in-foreground', '--conf-file=/dev/null', '--port=0', `--interface=${IF}`, '--bind-interfaces',
      '--dhcp-range=192.168.215.100,192.168.215.200,255.255.255.0,1h', `--dhcp-hostsfile=${hosts}`, `--dhcp-leasefile=${join(dir, 'leases')}`,
      `--pid-file=${join(dir, 'dnsmasq.pid')}`, `--log-facility=${join(dir, 'dnsmasq.log')}`,
    ],
    { stdio: 'ignore' },
  );
  await waitUntil('dnsmasq pid file', () => existsSync(join(dir, 'dnsmasq.pid')) && readFileSync(join(dir, 'dnsmasq.pid'), 'utf8').trim() !== '');
  dnsmasqPid = Number(readFileSync(join(dir, 'dnsmasq.pid'), 'utf8').trim());
  await waitUntil('dnsmasq to read its hosts file', () => reads() >= 1);
}, 60_000);

afterAll(async () => {
  if (dnsmasqPid > 1) process.kill(dnsmasqPid, 'SIGTERM');
  dnsmasq?.kill('SIGTERM');
  await exec(['ip', 'netns', 'del', NS], { allowFailure: true });
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('reload configuration', () => {
  it('keeps the seed’s docker exec when reload is configured in any way, and detects when nothing is', () => {
    const reload = (env: Record<string, string>) => metalConfigFromEnv(env, '/data').reload;
    expect(reload({})).toEqual({ kind: 'detect', container: 'ipxe-dnsmasq' });
    expect(reload({ IPXE_CP_DNSMASQ_RELOAD: 'true' })).toEqual({ kind: 'docker', container: 'ipxe-dnsmasq' });
    expect(reload({ IPXE_CP_DNSMASQ_CONTAINER: 'my-dnsmasq' })).toEqual({ kind: 'docker', container: 'my-dnsmasq' });
    expect(reload({ IPXE_CP_DNSMASQ_PID_FILE: '/run/x.pid' })).toEqual({ kind: 'pid', file: '/run/x.pid' });
    expect(reload({ IPXE_CP_DNSMASQ_RELOAD_COMMAND: 'systemctl reload dnsmasq' })).toEqual({ kind: 'command', argv: ['systemctl', 'reload', 'dnsmasq'] });
    expect(reload({ IPXE_CP_DNSMASQ_RELOAD: 'false', IPXE_CP_DNSMASQ_PID_FILE: '/run/x.pid' })).toEqual({ kind: 'none' });
  });
});

describe('dnsmasq detection', () => {
  it('finds nothing on a machine without dnsmasq, says what it looked for and which settings to use', async () => {
    const d = await detectDnsmasq(nothing());
    expect(d.reloader).toBeNull();
    expect(d.summary).toBe(
      `dnsmasq reload: none found (no docker, no dnsmasq pid file, no running dnsmasq); binds write ${hosts} and reload nothing. ` +
        'Set IPXE_CP_DNSMASQ_PID_FILE, IPXE_CP_DNSMASQ_RELOAD_COMMAND or IPXE_CP_DNSMASQ_CONTAINER to reload one, IPXE_CP_DNSMASQ_RELOAD=false to silence this',
    );
  });

  it('lets a bind succeed and write the hosts file when no dnsmasq is found', async () => {
    const f = await newMetalFixture({ IPXE_CP_DNSMASQ_HOSTS_FILE: join(dir, 'bind-hosts.conf') }, { reloader: new DetectingReloader({ ...nothing(), hostsFile: join(dir, 'bind-hosts.conf') }) });
    try {
      const ctx = { client: 'test' };
      await f.services.devices.register({ mac: '52:54:00:00:00:21' }, ctx);
      await f.services.workers.create({ worker_id: 'w21' }, ctx);
      await f.services.devices.bind('52:54:00:00:00:21', 'w21', false, ctx);
      expect(readFileSync(join(dir, 'bind-hosts.conf'), 'utf8')).toBe('52:54:00:00:00:21,w21,infinite\n');
    } finally {
      await f.close();
    }
  });

  it('finds a running dnsmasq by its command line naming the hosts file, and its reload makes dnsmasq re-read the file', async () => {
    const d = await detectDnsmasq({ ...nothing(), procDir: '/proc' });
    expect(d.reloader?.describe).toBe(`running dnsmasq pid ${dnsmasqPid}`);
    expect(d.summary).toBe(`dnsmasq reload: running dnsmasq pid ${dnsmasqPid} (found running with ${hosts})`);
    const before = reads();
    await d.reloader?.reload();
    await waitUntil('dnsmasq to re-read the hosts file', () => reads() > before);
  });

  it('leaves alone a running dnsmasq that does not name the hosts file', async () => {
    const d = await detectDnsmasq({ ...nothing(), procDir: '/proc', hostsFile: join(dir, 'another-hosts.conf') });
    expect(d.reloader).toBeNull();
    expect(d.summary).toContain('no running dnsmasq naming the hosts file');
    expect(d.summary).toContain(String(dnsmasqPid));
  });

  it('prefers a pid file naming a live dnsmasq', async () => {
    const d = await detectDnsmasq({ ...nothing(), procDir: '/proc', pidFiles: [join(dir, 'no.pid'), join(dir, 'dnsmasq.pid')] });
    expect(d.reloader?.describe).toBe(`pid file ${join(dir, 'dnsmasq.pid')}`);
    const before = reads();
    await d.reloader?.reload();
    await waitUntil('dnsmasq to re-read the hosts file', () => reads() > before);
  });

  it('prefers the seed’s container when docker runs it, and reloads it the seed’s way', async () => {
    const bin = join(dir, 'bin');
    const calls = join(dir, 'docker-calls');
    // DockerStandIn: `docker inspect --format {{.State.Running}} ipxe-dnsmasq` answers true; every call is recorded.
    writeFileSync(join(bin, 'docker'), `#!/bin/sh\necho "$*" >> ${calls}\n[ "$1" = inspect ] && [ "$4" = ipxe-dnsmasq ] && { echo true; exit 0; }\n[ "$1" = exec ] && exit 0\nexit 1\n`);
    chmodSync(join(bin, 'docker'), 0o755);
    const withStandIn: Exec = (argv, o) => exec(argv, { ...o, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    const r = new DetectingReloader({ ...nothing(), procDir: '/proc', path: bin, exec: withStandIn });
    expect((await r.detect()).summary).toBe('dnsmasq reload: docker container ipxe-dnsmasq (found running)');
    await r.reload();
    expect(readFileSync(calls, 'utf8')).toBe('inspect --format {{.State.Running}} ipxe-dnsmasq\nexec ipxe-dnsmasq killall -HUP dnsmasq\n');
    expect(r.describe).toBe('docker container ipxe-dnsmasq');
  });
});
