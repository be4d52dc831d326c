import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { KUBESPRAY_VERSION } from '../kubespray.adapter';
import { type GitHttpServer, makeBareRepo } from './git-server';
import { kubesprayStandInFiles, type StandInControl } from './kubespray-standin';

/** A TCP server that accepts and never speaks: a host that hangs an SSH handshake. Counts open connections. */
export class Tarpit {
  open = 0;
  maxOpen = 0;
  /** When each connection was accepted (ms since the epoch). */
  accepted: number[] = [];
  private readonly sockets = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly address: string,
    readonly port: number,
  ) {}

  static async start(address: string, port = 0): Promise<Tarpit> {
    let self: Tarpit | undefined;
    const server = createServer((s) => {
      const t = self!;
      t.sockets.add(s);
      t.open++;
      t.accepted.push(Date.now());
      t.maxOpen = Math.max(t.maxOpen, t.open);
      s.on('error', () => {});
      s.resume(); // read and drop: a peer's FIN is seen, so 'close' fires
      s.on('close', () => {
        t.open--;
        t.sockets.delete(s);
      });
    });
    await new Promise<void>((r) => server.listen(port, address, r));
    self = new Tarpit(server, address, (server.address() as { port: number }).port);
    return self;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

/** Puts the stand-in Kubespray at `<gitRoot>/kubernetes-sigs/kubespray.git`, tagged like the release. */
export function publishStandInKubespray(gitRoot: string, work: string, control: StandInControl): void {
  makeBareRepo(gitRoot, 'kubernetes-sigs/kubespray', work, kubesprayStandInFiles(control), KUBESPRAY_VERSION);
}

/** Control files for the stand-in playbook, in `dir`. */
export function standInControl(dir: string, kubeconfig: string): StandInControl & { hold(on: boolean): void; arm(on: boolean): void; swapped(): void } {
  mkdirSync(dir, { recursive: true });
  const c = { holdFile: join(dir, 'hold'), armedFile: join(dir, 'armed'), swappedFile: join(dir, 'swapped'), kubeconfig, kubeconfigFile: join(dir, 'admin.conf') };
  writeFileSync(c.kubeconfigFile, kubeconfig, { mode: 0o600 });
  const toggle = (file: string, on: boolean) => {
    if (on) writeFileSync(file, 'x');
    else {
      try {
        unlinkSync(file);
      } catch {
        // absent
      }
    }
  };
  return { ...c, hold: (on) => toggle(c.holdFile, on), arm: (on) => toggle(c.armedFile, on), swapped: () => writeFileSync(c.swappedFile, 'x') };
}

/** Pids of processes whose command line mentions `needle` (to prove a process group was killed). */
export function processesMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p) || Number(p) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(needle)) out.push(Number(p));
    } catch {
      // gone
    }
  }
  return out;
}

export type { GitHttpServer };
