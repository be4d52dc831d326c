import { request } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * STAND-IN for Envoy Gateway's controller (github.com/envoyproxy/gateway, v1.8.1), used where
 * the real controller cannot run next to the harness: it writes the status conditions the real
 * controller writes, with its reasons, through the real API server's status subresources —
 * GatewayClasses of `gateway.envoyproxy.io/gatewayclass-controller`: `Accepted=True`
 * (reason `Accepted`); their Gateways: `Accepted=True` (reason `Accepted`) and
 * `Programmed=True` (reason `Programmed`) once the Gateway exists, with the Gateway's
 * `metadata.generation` as `observedGeneration`. It writes no addresses (a NodePort Service has
 * no load-balancer address) and no listener status.
 */
export class FakeEnvoyGatewayController {
  static readonly CONTROLLER = 'gateway.envoyproxy.io/gatewayclass-controller';
  private timer?: NodeJS.Timeout;
  private readonly kc = new KubeConfig();
  private busy = false;
  /** Status writes done (for a test that wants to see it working). */
  writes = 0;

  constructor(kubeconfig: string) {
    this.kc.loadFromString(kubeconfig);
  }

  private async call(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const server = this.kc.getCurrentCluster()!.server;
    const opts: { headers: Record<string, string> } & Record<string, unknown> = { headers: {} };
    await this.kc.applyToHTTPSOptions(opts as never);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(server + path),
        { ...opts, method, headers: { ...opts.headers, accept: 'application/json', ...(payload ? { 'content-type': 'application/merge-patch+json' } : {}) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown = null;
            try {
              json = text ? JSON.parse(text) : null;
            } catch {
              // not JSON (a 404 page before the CRDs exist)
            }
            resolve({ status: res.statusCode ?? 0, json });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  start(intervalMs = 300): void {
    this.timer = setInterval(() => {
      if (this.busy) return;
      this.busy = true;
      this.tick()
        .catch(() => undefined)
        .finally(() => {
          this.busy = false;
        });
    }, intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private condition(type: string, reason: string, message: string, generation: number) {
    return { type, status: 'True', reason, message, observedGeneration: generation, lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') };
  }

  private same(have: Array<{ type: string; status: string; reason: string; observedGeneration?: number }> | undefined, want: Array<{ type: string; reason: string; observedGeneration: number }>): boolean {
    return want.every((w) => have?.some((h) => h.type === w.type && h.status === 'True' && h.reason === w.reason && h.observedGeneration === w.observedGeneration));
  }

  async tick(): Promise<void> {
    const GW = '/apis/gateway.networking.k8s.io/v1';
    const classes = await this.call('GET', `${GW}/gatewayclasses`);
    if (classes.status !== 200) return;
    type Obj = { metadata: { name: string; namespace?: string; generation?: number }; spec: Record<string, unknown>; status?: { conditions?: Array<{ type: string; status: string; reason: string; observedGeneration?: number }> } };
    const ours = new Set<string>();
    for (const c of (classes.json as { items: Obj[] }).items) {
      if (c.spec.controllerName !== FakeEnvoyGatewayController.CONTROLLER) continue;
      ours.add(c.metadata.name);
      const gen = c.metadata.generation ?? 1;
      const want = [this.condition('Accepted', 'Accepted', 'Valid GatewayClass', gen)];
      if (this.same(c.status?.conditions, want)) continue;
      await this.call('PATCH', `${GW}/gatewayclasses/${c.metadata.name}/status`, { status: { conditions: want } });
      this.writes++;
    }
    const gateways = await this.call('GET', `${GW}/gateways`);
    if (gateways.status !== 200) return;
    for (const g of (gateways.json as { items: Obj[] }).items) {
      if (!ours.has(String(g.spec.gatewayClassName))) continue;
      const gen = g.metadata.generation ?? 1;
      const want = [
        this.condition('Accepted', 'Accepted', 'The Gateway has been scheduled by Envoy Gateway', gen),
        this.condition('Programmed', 'Programmed', 'Address assigned to the Gateway, 1/1 envoy replicas available', gen),
      ];
      if (this.same(g.status?.conditions, want)) continue;
      await this.call('PATCH', `${GW}/namespaces/${g.metadata.namespace}/gateways/${g.metadata.name}/status`, { status: { conditions: want } });
      this.writes++;
    }
  }
}
