import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type KubeHarness, Pki } from '@ironlens/kube-harness';
import { parseAllDocuments } from 'yaml';
import { upstreamDir } from './gateway-upstream';
import { RestartingProcess } from './restarting-process';

export const LWS_VERSION = 'v0.9.0';

type Webhook = { name: string; clientConfig: { service?: { path?: string }; url?: string; caBundle?: string }; [k: string]: unknown };
type WebhookConfiguration = { apiVersion: string; kind: string; metadata: { name: string; [k: string]: unknown }; webhooks: Webhook[] };

/**
 * The REAL LeaderWorkerSet controller manager (`sigs.k8s.io/lws` `cmd/`, built from the Go module
 * proxy by scripts/build-lws.sh), run outside the cluster against the kube-harness: it reads the
 * API server through the kubeconfig, makes each LeaderWorkerSet's leader StatefulSet, the worker
 * StatefulSet of each group, the headless Service, and writes the LeaderWorkerSet's status.
 *
 * Its webhooks are part of how it works, not an extra: the pod webhook gives a worker its
 * `worker-index` label, a leader its `group-index` and group key, and every pod of a group the
 * `LWS_LEADER_ADDRESS`, `LWS_GROUP_SIZE` and `LWS_WORKER_INDEX` variables (without them the pod
 * controller never makes a group's workers). So its webhook server runs too, on loopback, with a
 * certificate for 127.0.0.1 from a throw-away CA, and the webhook configurations are its own
 * (`config/webhook/manifests.yaml` with the module's `mutating-patch.yaml`/`validating-patch.yaml`:
 * the pod webhooks select only pods labelled `leaderworkerset.sigs.k8s.io/name`), named as its
 * kustomization names them (`lws-`), reaching it by URL with that CA as their `caBundle` instead of
 * through its Service. What its Deployment's configuration does in a cluster, done differently
 * here: no leader election (one process), no internal certificate rotation (the certificate above),
 * no metrics or health listeners.
 */
export class LwsController {
  private proc?: RestartingProcess;
  readonly dir = mkdtempSync(join(tmpdir(), `ironlens-lws-${process.pid}-`));
  readonly logPath = join(this.dir, 'lws.log');
  port = 0;

  constructor(
    private readonly h: KubeHarness,
    readonly bin = join(process.env.IRONLENS_CACHE ?? join(homedir(), '.cache', 'ironlens'), 'lws', LWS_VERSION, 'lws-controller'),
  ) {
    if (!existsSync(bin)) throw new Error(`the LeaderWorkerSet controller is not at ${bin}: run \`bash scripts/build-lws.sh\` (or scripts/install-test-deps.sh)`);
  }

  /** Starts the controller, waits for its webhook server to listen, then registers its webhooks. */
  async start(): Promise<void> {
    const pki = await Pki.create(this.dir, 'ironlens-lws-webhook-ca');
    const serving = await pki.issue({ name: 'tls', cn: 'lws-webhook-service', ips: ['127.0.0.1'], usage: 'server' });
    if (serving.cert !== join(this.dir, 'tls.crt')) throw new Error('the webhook certificate is not where the controller reads it');
    this.port = await freePort();
    const config = join(this.dir, 'lws-config.yaml');
    writeFileSync(
      config,
      [
        'apiVersion: config.lws.x-k8s.io/v1alpha1',
        'kind: Configuration',
        'leaderElection:',
        '  leaderElect: false',
        'internalCertManagement:',
        '  enable: false',
        'webhook:',
        '  host: 127.0.0.1',
        `  port: ${this.port}`,
        `  certDir: ${JSON.stringify(this.dir)}`,
        'metrics:',
        '  bindAddress: "0"',
        'health:',
        '  healthProbeBindAddress: "0"',
        '',
      ].join('\n'),
    );
    // Like its pod, restarted when it exits, one second later, until stop().
    this.proc = new RestartingProcess(this.logPath);
    this.proc.start(this.bin, ['--config', config, '--zap-log-level=info'], { PATH: process.env.PATH, HOME: this.dir, KUBECONFIG: this.h.kubeconfigPath });
    await this.listening();
    await this.h.apply(this.webhookConfigurations(readFileSync(pki.ca.cert).toString('base64')));
  }

  /** The module's webhook configurations, patched as its kustomization does, reaching this process by URL. */
  private webhookConfigurations(caBundle: string): WebhookConfiguration[] {
    const root = join(upstreamDir('sigs.k8s.io/lws', LWS_VERSION), 'config', 'webhook');
    const docs = parseAllDocuments(readFileSync(join(root, 'manifests.yaml'), 'utf8'))
      .map((d) => d.toJSON() as WebhookConfiguration | null)
      .filter((d): d is WebhookConfiguration => !!d);
    const patches: Record<string, string> = { MutatingWebhookConfiguration: 'mutating-patch.yaml', ValidatingWebhookConfiguration: 'validating-patch.yaml' };
    for (const doc of docs) {
      const file = patches[doc.kind];
      if (!file) throw new Error(`unexpected ${doc.kind} in lws' webhook manifests`);
      for (const op of parseAllDocuments(readFileSync(join(root, file), 'utf8')).flatMap((d) => d.toJSON() as Array<{ op: string; path: string; value: Webhook }>)) {
        const m = /^\/webhooks\/(\d+)$/.exec(op.path);
        if (op.op !== 'replace' || !m) throw new Error(`unexpected patch ${op.op} ${op.path} in lws' ${file}`);
        doc.webhooks[Number(m[1])] = op.value;
      }
      doc.metadata = { name: `lws-${doc.metadata.name}` };
      for (const w of doc.webhooks) {
        const path = w.clientConfig.service?.path;
        if (!path) throw new Error(`lws' webhook ${w.name} has no service path`);
        w.clientConfig = { url: `https://127.0.0.1:${this.port}${path}`, caBundle };
      }
    }
    return docs;
  }

  /** Resolves once the webhook server accepts connections (fails when the process exits first). */
  private async listening(): Promise<void> {
    for (;;) {
      const exit = this.proc?.exitCode() ?? null;
      if (exit !== null) throw new Error(`the LeaderWorkerSet controller exited (${exit}):\n${this.log()}`);
      const ok = await new Promise<boolean>((resolve) => {
        const s = tcpConnect({ host: '127.0.0.1', port: this.port }, () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** How many times the process was started. */
  get starts(): number {
    return this.proc?.starts ?? 0;
  }

  /** The controller's log (for a failing assertion's message). */
  log(): string {
    return this.proc?.log() ?? '';
  }

  async stop(): Promise<void> {
    await this.proc?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A loopback port nobody listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}
