/**
 * The supervisor of ironlens' own dnsmasq, against a stand-in process that behaves as dnsmasq
 * does where the supervisor looks (it prints `read <hosts file>` when it reads the file: at
 * start and on every SIGHUP). The real dnsmasq under it is the boot-services end-to-end test's.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@ironlens/core/testing';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DnsmasqService, type DnsmasqStatus, logSafe } from './dnsmasq-service.adapter';

const dir = mkdtempSync(join(tmpdir(), 'ironlens-dnsmasq-service-'));
const HOSTS = join(dir, 'dhcp-hosts.conf');
const GATE = join(dir, 'gate');
const READS = join(dir, 'reads');
/** The stand-in: waits for the gate file (when asked), then "reads" the hosts file; again on SIGHUP; exits on SIGTERM. */
const STAND_IN = join(dir, 'dnsmasq-stand-in.cjs');
writeFileSync(
  STAND_IN,
  `const fs = require('node:fs');
const [hosts, gate, reads] = process.argv.slice(2);
const read = () => { fs.appendFileSync(reads, 'read\\n'); console.error('dnsmasq-dhcp[' + process.pid + ']: read ' + hosts); };
process.on('SIGHUP', read);
process.on('SIGTERM', () => process.exit(0));
console.error('dnsmasq[' + process.pid + ']: started, version stand-in \\x1b[31mred\\x07 DHCP');
console.error('no tag');
const go = () => (gate === '-' || fs.existsSync(gate) ? read() : setTimeout(go, 20));
go();
setInterval(() => {}, 1000);
`,
);
const argv = (gate = '-') => [process.execPath, STAND_IN, HOSTS, gate, READS];
const reads = () => (existsSync(READS) ? readFileSync(READS, 'utf8').split('\n').filter(Boolean).length : 0);

let svc: DnsmasqService | undefined;
afterEach(async () => {
  await svc?.stop();
  rmSync(READS, { force: true });
  rmSync(GATE, { force: true });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function make(log: string[], changes: DnsmasqStatus[] = []) {
  svc = new DnsmasqService({ hostsFile: HOSTS, log: (l) => log.push(l), onChange: (s) => changes.push(s), backoffMs: 50, maxBackoffMs: 200 });
  return svc;
}

describe("ironlens' dnsmasq supervisor", () => {
  it('is running once dnsmasq read the hosts file; its lines reach the log without control characters', async () => {
    const log: string[] = [];
    const s = make(log);
    s.start(argv());
    await waitFor('running', () => s.status(), (x) => x.state === 'running');
    expect(s.status()).toMatchObject({ state: 'running', restarts: 0, last_exit: null });
    expect(s.status().pid).toBeGreaterThan(1);
    const pid = s.status().pid;
    expect(log).toEqual([`dnsmasq[${pid}]: started, version stand-in ?[31mred? DHCP`, 'dnsmasq: no tag', `dnsmasq-dhcp[${pid}]: read ${HOSTS}`]);
  });

  it('sends a reload asked for before dnsmasq read the file once it has, and SIGHUP after', async () => {
    const s = make([]);
    s.start(argv(GATE));
    await waitFor('starting', () => s.status().state, (x) => x === 'starting');
    await s.reload();
    expect(reads(), 'no SIGHUP before dnsmasq is ready (it would end a dnsmasq that has no handler yet)').toBe(0);
    writeFileSync(GATE, '');
    await waitFor('the start read and the deferred reload', reads, (n) => n === 2);
    await s.reload();
    await waitFor('the reload', reads, (n) => n === 3);
  });

  it('restarts a dnsmasq that died, with back-off, and counts it', async () => {
    const log: string[] = [];
    const changes: DnsmasqStatus[] = [];
    const s = make(log, changes);
    s.start(argv());
    const first = (await waitFor('running', () => s.status(), (x) => x.state === 'running')).pid as number;
    process.kill(first, 'SIGKILL');
    const again = await waitFor('running again', () => s.status(), (x) => x.state === 'running' && x.pid !== first);
    expect(again.restarts).toBe(1);
    expect(again.last_exit).toMatch(/^signal SIGKILL \(last line: dnsmasq-dhcp\[\d+\]: read /);
    expect(changes.map((c) => c.state)).toEqual(['starting', 'running', 'restarting', 'starting', 'running']);
    expect(log.some((l) => /^dnsmasq: ended unexpectedly \(signal SIGKILL.*\); restarting in 0\.05 s$/.test(l))).toBe(true);
  });

  it('keeps restarting a dnsmasq that cannot start, backing off, and stops for good when asked', async () => {
    const log: string[] = [];
    const s = make(log);
    s.start([join(dir, 'no-such-dnsmasq')]);
    await waitFor('three restarts', () => s.status().restarts, (n) => n >= 3);
    expect(s.status().last_exit).toMatch(/could not start .*no-such-dnsmasq: ENOENT/);
    const delays = log.filter((l) => l.includes('restarting in')).map((l) => Number(/restarting in ([\d.]+) s/.exec(l)?.[1]));
    expect(delays.slice(0, 3)).toEqual([0.05, 0.1, 0.2]);
    await s.stop();
    const n = s.status().restarts;
    expect(s.status().state).toBe('stopped');
    await new Promise((r) => setTimeout(r, 300));
    expect(s.status().restarts, 'no restart after stop').toBe(n);
  });

  it('stops dnsmasq with ironlens, and stands by (no process) while another replica runs it', async () => {
    const s = make([]);
    s.start(argv());
    const pid = (await waitFor('running', () => s.status(), (x) => x.state === 'running')).pid as number;
    await s.stop({ standby: true });
    expect(s.status()).toMatchObject({ state: 'standby', pid: null, restarts: 0 });
    expect(() => process.kill(pid, 0)).toThrow();
    await s.reload(); // nothing to signal, no error
    s.start(argv());
    await waitFor('running again', () => s.status().state, (x) => x === 'running');
  });

  it('ends a dnsmasq an earlier ironlens left running (its pid file, our hosts file) before it starts its own, and leaves any other alone', async () => {
    // Named dnsmasq (a script's process takes its file's name), started as a killed ironlens leaves it: alone, in its own session.
    mkdirSync(join(dir, 'bin'), { recursive: true });
    const fake = join(dir, 'bin', 'dnsmasq');
    writeFileSync(fake, `#!${process.execPath}\nprocess.on('SIGTERM', () => process.exit(0));\nsetInterval(() => {}, 1000);\n`, { mode: 0o755 });
    const leave = async (hosts: string) => {
      const p = spawn(fake, [`--dhcp-hostsfile=${hosts}`], { detached: true, stdio: 'ignore' });
      await waitFor('the leftover named dnsmasq', () => (existsSync(`/proc/${p.pid}/comm`) ? readFileSync(`/proc/${p.pid}/comm`, 'utf8').trim() : ''), (c) => c === 'dnsmasq');
      return p;
    };
    const pidFile = join(dir, 'dnsmasq.pid');
    const other = await leave(join(dir, 'another-hosts-file'));
    const ours = await leave(HOSTS);
    const notDnsmasq = spawn('sleep', ['600'], { stdio: 'ignore' });
    try {
      const oursEnded = once(ours, 'exit');
      writeFileSync(pidFile, `${ours.pid}\n`);
      const log: string[] = [];
      svc = new DnsmasqService({ hostsFile: HOSTS, pidFile, log: (l) => log.push(l), backoffMs: 50 });
      svc.start(argv());
      await oursEnded;
      const running = await waitFor('running', () => svc!.status(), (x) => x.state === 'running');
      expect(running.restarts).toBe(0);
      expect(log[0]).toBe(`dnsmasq: stopping pid ${ours.pid}, left running by an earlier ironlens (it reads ${HOSTS})`);
      await svc.stop();

      // A pid file that names a dnsmasq of some other hosts file (or no dnsmasq at all): not ours, left alone.
      for (const pid of [other.pid, notDnsmasq.pid]) {
        writeFileSync(pidFile, `${pid}\n`);
        svc = new DnsmasqService({ hostsFile: HOSTS, pidFile, log: () => {}, backoffMs: 50 });
        svc.start(argv());
        await waitFor('running', () => svc!.status(), (x) => x.state === 'running');
        await svc.stop();
      }
      expect(() => process.kill(other.pid!, 0), 'the other dnsmasq still runs').not.toThrow();
      expect(notDnsmasq.exitCode ?? notDnsmasq.signalCode, 'the process that is no dnsmasq still runs').toBeNull();
    } finally {
      for (const p of [other, ours, notDnsmasq]) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
      rmSync(pidFile, { force: true });
    }
  });

  it('logs dnsmasq lines as printable text of bounded length', () => {
    expect(logSafe('a\u0000b\u001b[2Jc\u009bd\u2028e')).toBe('a?b?[2Jc?d?e');
    expect(logSafe('x'.repeat(600))).toHaveLength(501);
  });
});
