import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { isoSeconds } from '@ironlens/core';
import type { DnsmasqReloader } from '../adapters/dnsmasq.adapter';

/**
 * ironlens' own dnsmasq (issue 30): started with an argument array, its log lines in ironlens'
 * log, restarted when it dies (1 s, then doubling to 30 s; back to 1 s after a minute of
 * running), stopped with ironlens. It is also the hosts file's reloader: SIGHUP to the child.
 *
 * States: `stopped` (not started, or stopped with ironlens), `standby` (another replica is the
 * hosts-file writer and runs the group's dnsmasq), `starting` (spawned, not yet past reading
 * the hosts file), `running`, `restarting` (it died; the next start is scheduled).
 */
export type DnsmasqState = 'stopped' | 'standby' | 'starting' | 'running' | 'restarting';

export interface DnsmasqStatus {
  state: DnsmasqState;
  pid: number | null;
  /** Restarts after an unexpected exit, since ironlens started. */
  restarts: number;
  /** When the current state began. */
  since: string;
  /** How the last run ended (`exit 2`, `signal SIGKILL`), with its last log line; null before any. */
  last_exit: string | null;
}

export interface DnsmasqServiceOptions {
  /** The hosts file dnsmasq reads: its "read <file>" line means it is ready for a SIGHUP. */
  hostsFile: string;
  /** ironlens' log; dnsmasq's lines (`dnsmasq[pid]: …`, `dnsmasq-dhcp[pid]: …`) with control characters removed. */
  log: (line: string) => void;
  /** The pid file dnsmasq writes (`--pid-file`): a dnsmasq left by a killed ironlens is stopped at start. */
  pidFile?: string;
  /** Told of every state change and restart (metrics). */
  onChange?: (s: DnsmasqStatus) => void;
  /** Default is 1000 ms, doubling up to `maxBackoffMs` (default 30000); reset after `stableMs` (default 60000) of running. */
  backoffMs?: number;
  maxBackoffMs?: number;
  stableMs?: number;
  now?: () => number;
}

/** A line of a child's output as ironlens logs it: printable, one line, at most 500 characters. */
export function logSafe(line: string): string {
  const t = Array.from(line, (ch) => {
    const c = ch.codePointAt(0) ?? 0;
    return c < 0x20 || c === 0x7f || (c >= 0x80 && c < 0xa0) || c === 0x2028 || c === 0x2029 ? '?' : ch;
  }).join('');
  return t.length > 500 ? `${t.slice(0, 500)}…` : t;
}

export class DnsmasqService implements DnsmasqReloader {
  readonly describe = "ironlens' own dnsmasq (IRONLENS_BOOT_SERVICES)";
  private child: ChildProcess | null = null;
  private state: DnsmasqState = 'stopped';
  private since: number;
  private restarts = 0;
  private lastExit: string | null = null;
  private lastLine = '';
  private ready = false;
  private reloadPending = false;
  private wanted = false;
  private timer: NodeJS.Timeout | null = null;
  private delay: number;
  private startedAt = 0;
  private exited: Promise<void> = Promise.resolve();
  private argv: string[] = [];
  private readonly now: () => number;
  private leftover: Promise<void> | null = null;

  constructor(private readonly opts: DnsmasqServiceOptions) {
    this.now = opts.now ?? Date.now;
    this.since = this.now();
    this.delay = opts.backoffMs ?? 1000;
  }

  status(): DnsmasqStatus {
    return { state: this.state, pid: this.child?.pid ?? null, restarts: this.restarts, since: isoSeconds(new Date(this.since)), last_exit: this.lastExit };
  }

  /** Starts dnsmasq with `argv` (this process is the hosts-file writer). Idempotent. */
  start(argv: string[]): void {
    if (this.wanted) return;
    if (argv.length === 0) throw new Error('dnsmasq: no command');
    this.argv = argv;
    this.wanted = true;
    const leftover = this.leftoverPid();
    if (leftover === undefined) {
      this.spawnNow();
      return;
    }
    // It holds the DHCP and TFTP ports: this one starts once it has ended.
    this.leftover = this.endLeftover(leftover).then(() => {
      this.leftover = null;
      if (this.wanted && !this.child && !this.timer) this.spawnNow();
    });
  }

  /**
   * Stops dnsmasq: SIGTERM, SIGKILL after 5 s. `standby`: another replica runs it now (the state
   * says so); otherwise ironlens is stopping.
   */
  async stop(opts: { standby?: boolean } = {}): Promise<void> {
    this.wanted = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.leftover) await this.leftover;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await this.exited;
      clearTimeout(killer);
    }
    this.setState(opts.standby ? 'standby' : 'stopped');
  }

  /** SIGHUP: dnsmasq reads the hosts file again. Before it read it once, the start's own read will do (or a SIGHUP then). */
  async reload(): Promise<void> {
    const child = this.child;
    if (!this.wanted || !child || child.exitCode !== null || child.signalCode !== null) return;
    if (!this.ready) {
      this.reloadPending = true;
      return;
    }
    child.kill('SIGHUP');
  }

  private setState(s: DnsmasqState): void {
    if (s !== this.state) {
      this.state = s;
      this.since = this.now();
    }
    this.opts.onChange?.(this.status());
  }

  /** A dnsmasq a killed ironlens left running (its pid file names a live dnsmasq reading our hosts file): it would hold port 67. */
  private leftoverPid(): number | undefined {
    if (!this.opts.pidFile) return undefined;
    try {
      const pid = Number(readFileSync(this.opts.pidFile, 'utf8').trim());
      if (!Number.isInteger(pid) || pid <= 1 || pid === this.child?.pid) return undefined;
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return comm === 'dnsmasq' && cmdline.includes(`--dhcp-hostsfile=${this.opts.hostsFile}`) ? pid : undefined;
    } catch {
      return undefined; // no pid file, gone, or not ours
    }
  }

  /** SIGTERM to the leftover, SIGKILL after 5 s; resolves once it is gone. */
  private async endLeftover(pid: number): Promise<void> {
    const alive = () => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    this.opts.log(`dnsmasq: stopping pid ${pid}, left running by an earlier ironlens (it reads ${this.opts.hostsFile})`);
    for (let waited = 0; alive(); waited += 50) {
      if (waited === 5000) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          return;
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private spawnNow(): void {
    this.timer = null;
    if (!this.wanted) return;
    this.ready = false;
    this.lastLine = '';
    this.startedAt = this.now();
    const [cmd, ...args] = this.argv;
    let child: ChildProcess;
    try {
      child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      this.lastExit = `could not start: ${(err as Error).message}`;
      this.scheduleRestart();
      return;
    }
    this.child = child;
    this.setState('starting');
    const onLine = (raw: string) => {
      const line = logSafe(raw);
      if (!line.trim()) return;
      this.lastLine = line;
      // dnsmasq tags its own lines (`dnsmasq[pid]: …`, `dnsmasq-dhcp[pid]: …`).
      this.opts.log(line.startsWith('dnsmasq') ? line : `dnsmasq: ${line}`);
      if (!this.ready && line.includes(`read ${this.opts.hostsFile}`)) {
        this.ready = true;
        this.setState('running');
        if (this.reloadPending) {
          this.reloadPending = false;
          child.kill('SIGHUP');
        }
      }
    };
    for (const stream of [child.stdout, child.stderr]) if (stream) createInterface({ input: stream }).on('line', onLine);
    this.exited = new Promise((resolve) => {
      let done = false;
      const finish = (how: string) => {
        if (done) return;
        done = true;
        if (this.child === child) this.child = null;
        this.lastExit = `${how}${this.lastLine ? ` (last line: ${this.lastLine})` : ''}`;
        resolve();
        if (this.wanted) {
          this.opts.log(`dnsmasq: ended unexpectedly (${this.lastExit}); restarting in ${this.nextDelay() / 1000} s`);
          this.scheduleRestart();
        }
      };
      // A binary that cannot be started (ENOENT, EACCES): no pid, and maybe no 'close'.
      child.once('error', (err) => finish(`could not start ${cmd}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
      child.once('close', (code, signal) => finish(signal ? `signal ${signal}` : `exit ${code}`));
    });
  }

  private nextDelay(): number {
    // A dnsmasq that ran a while gets the short delay again.
    if (this.now() - this.startedAt >= (this.opts.stableMs ?? 60_000)) this.delay = this.opts.backoffMs ?? 1000;
    return this.delay;
  }

  private scheduleRestart(): void {
    const wait = this.nextDelay();
    this.delay = Math.min(wait * 2, this.opts.maxBackoffMs ?? 30_000);
    this.restarts++;
    this.setState('restarting');
    this.timer = setTimeout(() => this.spawnNow(), wait);
    this.timer.unref();
  }
}
