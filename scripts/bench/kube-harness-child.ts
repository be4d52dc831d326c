/**
 * `@ironlens/kube-harness` in a process of its own, driven over IPC by `bench-clusters.ts`.
 *
 * The harness' kubelet Summary stand-ins (one TLS listener per fake node) and its konnectivity
 * stand-in are JavaScript: in the benchmark's process they would run on the cluster manager's
 * event loop, and every Summary scrape would charge ironlens for the kubelets' TLS handshakes and
 * JSON. Real kubelets run on their nodes, so here they run in this child (still on the same
 * machine and cores).
 *
 * Messages in: `{ op: 'start', nodes, gpu, ip? }`, `{ op: 'prometheus', samples }` (exposes the
 * Prometheus stand-in through a Service once, then serves `samples`), `{ op: 'stop' }`.
 * Messages out: `{ op: 'started', kubeconfig, server, pids }`, `{ op: 'prometheus', namespace, name }`,
 * `{ op: 'error', message }`. The harness is stopped when the parent goes away.
 */
import { type KubeHarness, type Sample as PromSample, startKubeCluster } from '@ironlens/kube-harness';

type Message = { op: 'start'; nodes: number; gpu: boolean; ip?: string } | { op: 'prometheus'; samples: PromSample[] } | { op: 'stop' };

let h: KubeHarness | undefined;
let exposed: { namespace: string; name: string } | undefined;
let stopping = false;

const send = (m: Record<string, unknown>) => process.send?.(m);

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await h?.stop().catch(() => {});
  }
  process.exit(code);
}

process.on('message', (m: Message) => {
  void (async () => {
    try {
      if (m.op === 'start') {
        h = await startKubeCluster({ nodes: m.nodes, gpu: m.gpu, ...(m.ip ? { ip: m.ip } : {}) });
        send({ op: 'started', kubeconfig: h.kubeconfig, server: h.server, pids: h.pids });
      } else if (m.op === 'prometheus') {
        if (!h) throw new Error('not started');
        exposed ??= await h.exposePrometheus();
        h.prometheus.set(m.samples);
        send({ op: 'prometheus', namespace: exposed.namespace, name: exposed.name });
      } else if (m.op === 'stop') {
        await stop(0);
      }
    } catch (e) {
      send({ op: 'error', message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    }
  })();
});
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
