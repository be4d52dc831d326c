import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, KubeConfig } from '@kubernetes/client-node';
import { RestartingProcess } from './restarting-process';

/**
 * The REAL Envoy Gateway controller (`envoy-gateway server`, built from the Go module proxy by
 * scripts/build-envoy-gateway.sh), run outside the cluster against the kube-harness with the
 * Kubernetes provider: it reads the API server through the kubeconfig, writes the GatewayClass'
 * and the Gateway's conditions and addresses, and creates the proxy's Deployment and Service
 * (kwok runs the pods). Its xDS server reads its certificates from the fixed path `/certs`
 * (as in its pod): the process runs in a private mount namespace (`unshare -m`, root) where a
 * certificate directory made by `envoy-gateway certgen --local` is bind-mounted on `/certs`
 * (an empty `/certs` directory is created on the host as the mount point when missing).
 *
 * It also runs `envoy-gateway certgen` against the cluster once the chart made its namespace, as
 * the chart's hook Job would (kwok runs no container), so the certificate Secrets exist.
 * Like its pod, it starts once the chart has created its Deployment (`envoy-gateway-system/envoy-gateway`):
 * Helm installs a chart's CRDs (`crds/`, the `crds` subchart's included) and waits for them before
 * it creates the templates, so the controller finds Envoy Gateway's own CRDs at start. That matters:
 * it checks at start which of its kinds are served and never watches the others (its log says
 * `EnvoyProxy CRD not found, skipping EnvoyProxy watch`), so a controller started before the chart
 * would never see an EnvoyProxy change (a gatewayPort PATCH) or a policy change. Like its pod, it is
 * restarted when it exits, one second later, until `stop()`.
 *
 * Its configuration is the chart's `envoy-gateway-config` without the AI Gateway's extension
 * manager, whose server (the AI Gateway controller, a pod) cannot be reached from outside the
 * cluster.
 */
export class EnvoyGatewayController {
  private certgen?: NodeJS.Timeout;
  private waitDeployment?: NodeJS.Timeout;
  private proc?: RestartingProcess;
  readonly dir = mkdtempSync(join(tmpdir(), `ironlens-eg-${process.pid}-`));
  readonly logPath = join(this.dir, 'envoy-gateway.log');

  constructor(
    private readonly kubeconfigPath: string,
    readonly bin = join(homedir(), '.cache', 'ironlens', 'envoy-gateway', 'v1.8.1', 'envoy-gateway'),
    /**
     * The extension manager of ironlens' Envoy Gateway values (the deployments suite: its
     * `backendResources` make InferencePool a backend Envoy Gateway accepts). Its server, the AI
     * Gateway controller, is not reached from here; the routes' status does not depend on it.
     * Default: none, as above.
     */
    private readonly extensionManager: Record<string, unknown> | null = null,
  ) {
    if (!existsSync(bin)) throw new Error(`envoy-gateway is not at ${bin}: run \`bash scripts/build-envoy-gateway.sh\` (or scripts/install-test-deps.sh)`);
    if (process.getuid?.() !== 0) throw new Error('running Envoy Gateway out of cluster needs root (a private mount namespace for its /certs)');
  }

  start(): void {
    execFileSync(this.bin, ['certgen', '--local', '--config-home', join(this.dir, 'home')], { stdio: 'pipe' });
    const config = join(this.dir, 'envoy-gateway.yaml');
    writeFileSync(
      config,
      [
        'apiVersion: gateway.envoyproxy.io/v1alpha1',
        'kind: EnvoyGateway',
        'gateway:',
        '  controllerName: gateway.envoyproxy.io/gatewayclass-controller',
        'extensionApis:',
        '  enableEnvoyPatchPolicy: true',
        '  enableBackend: true',
        'provider:',
        '  type: Kubernetes',
        ...(this.extensionManager ? [`extensionManager: ${JSON.stringify(this.extensionManager)}`] : []),
        '',
      ].join('\n'),
    );
    if (!existsSync('/certs')) mkdirSync('/certs');
    const proc = new RestartingProcess(this.logPath);
    this.proc = proc;
    // The pod exists once the chart's Deployment does (kwok "runs" it): start then, not before.
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    const apps = kc.makeApiClient(AppsV1Api);
    let asking = false;
    this.waitDeployment = setInterval(() => {
      if (asking) return;
      asking = true;
      apps
        .readNamespacedDeployment({ name: 'envoy-gateway', namespace: 'envoy-gateway-system' })
        .then(() => {
          if (!this.waitDeployment) return;
          clearInterval(this.waitDeployment);
          this.waitDeployment = undefined;
          proc.note("the chart's Deployment envoy-gateway-system/envoy-gateway exists: starting the controller");
          proc.start(
            'unshare',
            ['-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" /certs && exec "$2" server --config-path "$3"', 'sh', join(this.dir, 'home', 'certs', 'envoy-gateway'), this.bin, config],
            { PATH: process.env.PATH, HOME: this.dir, KUBECONFIG: this.kubeconfigPath, ENVOY_GATEWAY_NAMESPACE: 'envoy-gateway-system' },
          );
        })
        .catch(() => undefined)
        .finally(() => {
          asking = false;
        });
    }, 250);
    // What the chart's certgen hook Job does in a cluster (kwok only pretends to run it): the
    // control plane's and the proxies' certificate Secrets in envoy-gateway-system, tried every
    // second until the chart has made that namespace and the Secrets are there.
    this.certgen = setInterval(() => {
      try {
        execFileSync(this.bin, ['certgen'], { stdio: 'pipe', env: { PATH: process.env.PATH, HOME: this.dir, KUBECONFIG: this.kubeconfigPath, ENVOY_GATEWAY_NAMESPACE: 'envoy-gateway-system' }, timeout: 30_000 });
        clearInterval(this.certgen);
      } catch {
        // no namespace yet: next second
      }
    }, 1000);
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
    clearInterval(this.certgen);
    clearInterval(this.waitDeployment);
    this.waitDeployment = undefined;
    await this.proc?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
