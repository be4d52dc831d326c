import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';

/**
 * The pod network of the deployments suite: kwok gives pods IPs from a CIDR of the test's choice
 * (`podCidr`), and this class makes those addresses real on this machine only — a network
 * namespace of its own, joined to the host by a veth pair, with the pod CIDR routed into it and
 * no route out of it (its only neighbour is the host's end of the veth). The kube-harness API
 * server reaches the pods through its egress stand-in (`routeNetwork`), which dials pod IPs on
 * the host, so its service and pod proxy land on the model-server stand-ins listening at the
 * pods' own IPs (`pod-network.process.ts`, run inside the namespace). Needs root and `ip`.
 */
export class PodNetwork {
  private child?: ChildProcess;
  private seq = 0;
  private readonly pending = new Map<number, (v: Record<string, unknown>) => void>();
  readonly ns: string;
  private readonly host: string;
  private readonly peer: string;
  /** The host's and the namespace's ends of the veth (a /30 of TEST-NET-2). */
  private readonly hostIp: string;
  private readonly nsIp: string;

  private constructor(readonly cidr: string) {
    const tag = randomBytes(3).toString('hex');
    this.ns = `ilpods-${tag}`;
    this.host = `ilp${tag}h`;
    this.peer = `ilp${tag}n`;
    const quad = (randomBytes(1)[0] % 63) * 4;
    this.hostIp = `198.51.100.${quad + 1}`;
    this.nsIp = `198.51.100.${quad + 2}`;
  }

  /** A pod CIDR for kwok (`10.<200-249>.0.1/16`) whose /16 no route of this machine covers yet. */
  private static freeCidr(): string {
    for (let i = 0; i < 50; i++) {
      const b = 200 + (randomBytes(1)[0] % 50);
      const routes = execFileSync('ip', ['-4', 'route', 'show', `10.${b}.0.0/16`], { encoding: 'utf8' }).trim();
      const inside = execFileSync('ip', ['-4', 'route', 'show', 'match', `10.${b}.0.1`], { encoding: 'utf8' }).trim().split('\n').filter((l) => l && !l.startsWith('default'));
      if (!routes && inside.length === 0) return `10.${b}.0.1/16`;
    }
    throw new Error('no free 10.x.0.0/16 for the pod network');
  }

  /**
   * Makes the pod network on a free `10.<200-249>.0.0/16` (another suite may be making one at the
   * same time: a CIDR whose route is taken meanwhile is given up for the next). Start kwok with
   * its `podCidr` afterwards.
   */
  static async create(): Promise<PodNetwork> {
    if (process.getuid?.() !== 0) throw new Error('the pod network needs root (a network namespace and a veth pair)');
    for (let attempt = 1; ; attempt++) {
      const m = /^10\.(\d{1,3})\./.exec(PodNetwork.freeCidr())!;
      const net = new PodNetwork(`10.${m[1]}.0.0/16`);
      try {
        await net.up();
        return net;
      } catch (e) {
        if (attempt >= 5) throw e;
      }
    }
  }

  /** The pod CIDR as kwok's `--cidr` takes it (the first address and the prefix). */
  get podCidr(): string {
    return this.cidr.replace(/\.0\.0\/16$/, '.0.1/16');
  }

  private ip(...args: string[]): void {
    execFileSync('ip', args, { stdio: 'pipe' });
  }

  private async up(): Promise<void> {
    try {
      this.ip('netns', 'add', this.ns);
      this.ip('link', 'add', this.host, 'type', 'veth', 'peer', 'name', this.peer);
      this.ip('link', 'set', this.peer, 'netns', this.ns);
      this.ip('addr', 'add', `${this.hostIp}/30`, 'dev', this.host);
      this.ip('link', 'set', this.host, 'up');
      this.ip('netns', 'exec', this.ns, 'ip', 'addr', 'add', `${this.nsIp}/30`, 'dev', this.peer);
      this.ip('netns', 'exec', this.ns, 'ip', 'link', 'set', this.peer, 'up');
      this.ip('netns', 'exec', this.ns, 'ip', 'link', 'set', 'lo', 'up');
      // The pod CIDR goes into the namespace, from the host's end of the veth; nothing goes out of it.
      this.ip('route', 'add', this.cidr, 'dev', this.host, 'src', this.hostIp);
      const script = new URL('./pod-network.process.ts', import.meta.url).pathname;
      this.child = spawn('ip', ['netns', 'exec', this.ns, process.execPath, '--import', 'tsx', script], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
      const rl = createInterface({ input: this.child.stdout! });
      await new Promise<void>((resolve, reject) => {
        this.child!.once('exit', (code) => reject(new Error(`the pod network's process exited (${code})`)));
        rl.on('line', (line) => {
          const v = JSON.parse(line) as Record<string, unknown>;
          if (v.ready) return resolve();
          const cb = this.pending.get(Number(v.id));
          this.pending.delete(Number(v.id));
          cb?.(v);
        });
      });
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  private send(c: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = ++this.seq;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child!.stdin!.write(`${JSON.stringify({ id, ...c })}\n`);
    });
  }

  /** Runs a vLLM stand-in for a container's `vllm serve` arguments at the pod's IP; `{exit, log}` when vLLM would have exited. */
  async serve(ip: string, args: string[]): Promise<{ listening?: string; exit?: number; log: string; error?: string }> {
    return (await this.send({ op: 'serve', ip, args })) as never;
  }

  async sidecar(ip: string, port: number, to: number): Promise<void> {
    const r = await this.send({ op: 'sidecar', ip, port, to });
    if (r.error) throw new Error(String(r.error));
  }

  async stop(ip: string): Promise<void> {
    await this.send({ op: 'stop', ip });
  }

  async close(): Promise<void> {
    const c = this.child;
    if (c?.pid && c.exitCode === null) {
      const gone = new Promise((r) => c.once('exit', r));
      try {
        process.kill(-c.pid, 'SIGTERM');
      } catch {
        // gone
      }
      await gone;
    }
    for (const args of [
      ['route', 'del', this.cidr, 'dev', this.host],
      ['link', 'del', this.host],
      ['netns', 'del', this.ns],
    ]) {
      try {
        this.ip(...args);
      } catch {
        // not there
      }
    }
  }
}
