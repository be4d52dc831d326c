import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StackProfile } from '../shared/profile';

/**
 * The REAL upstream fixtures of the gateway suite, from the directories
 * `scripts/fetch-gateway-fixtures.sh` fills from the Go module proxy
 * (`~/.cache/ironlens/upstream/<module>@<version>`): the Gateway API and Inference Extension
 * CRDs as their release assets hold them, and the provider and IPP charts packaged by the real
 * `helm package` under their upstream names and versions.
 */

const HINT = 'run `bash scripts/fetch-gateway-fixtures.sh` (or scripts/install-test-deps.sh)';

export function upstreamDir(module: string, version: string): string {
  const dir = join(process.env.IRONLENS_CACHE ?? join(homedir(), '.cache', 'ironlens'), 'upstream', `${module.replaceAll('/', '+')}@${version}`);
  if (!existsSync(dir)) throw new Error(`${module}@${version} is not in ${dir}: ${HINT}`);
  return dir;
}

/** helm from `IRONLENS_HELM` or the pinned build's cache path. */
export function testHelm(): string {
  const p = process.env.IRONLENS_HELM ?? join(homedir(), '.cache', 'ironlens', 'helm', 'v3.21.4', 'helm');
  if (!existsSync(p)) throw new Error(`helm is not at ${p}: run \`bash scripts/build-helm.sh\` (or scripts/install-test-deps.sh)`);
  return p;
}

const yamlFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'));

/** gateway-api-inference-extension's `v1-manifests.yaml`: the `inference.networking.k8s.io` (v1) CRDs. */
export function realInferenceExtensionBundle(p: StackProfile): string {
  const dir = join(upstreamDir('sigs.k8s.io/gateway-api-inference-extension', p.k8s_gateway_api_inference_extension), 'config', 'crd', 'bases');
  return readdirSync(dir)
    .filter((f) => f.startsWith('inference.networking.k8s.io_') && f.endsWith('.yaml'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n---\n');
}

/**
 * Packages the provider and IPP charts with the real helm: `{file name → bytes}` plus the index;
 * with `inferencePool`, also the Inference Extension's `inferencepool` chart (the deployments'),
 * as its release script does (`hack/push-chart.sh`: its `epplib` dependency built in, packaged at
 * the release's version).
 */
export function packageCharts(p: StackProfile, o: { inferencePool?: boolean } = {}): { dir: string; charts: string[] } {
  const helm = testHelm();
  const work = mkdtempSync(join(tmpdir(), `ironlens-charts-${process.pid}-`));
  const out = join(work, 'repo');
  const pkg = (src: string, name: string, version: string, prepare?: (dir: string) => void) => {
    const dir = join(work, name);
    cpSync(src, dir, { recursive: true });
    prepare?.(dir);
    execFileSync(helm, ['package', dir, '--version', version, '--app-version', version, '--destination', out], { stdio: 'pipe', env: helmEnv(work) });
    return `${name}-${version}.tgz`;
  };
  const eg = upstreamDir('github.com/envoyproxy/gateway', p.gateway_providers.envoy_gateway);
  const aieg = upstreamDir('github.com/envoyproxy/ai-gateway', p.gateway_providers.envoy_ai_gateway);
  const ipp = upstreamDir('github.com/llm-d/llm-d-inference-payload-processor', p.llm_d_inference_payload_processor);
  const egVersion = p.gateway_providers.envoy_gateway;
  const charts = [
    // The release pipeline renders values.yaml from values.tmpl.yaml with the release's image.
    pkg(join(eg, 'charts', 'gateway-helm'), 'gateway-helm', egVersion, (dir) => {
      const tmpl = readFileSync(join(dir, 'values.tmpl.yaml'), 'utf8');
      writeFileSync(join(dir, 'values.yaml'), tmpl.replaceAll(placeholder('GatewayImage'), `docker.io/envoyproxy/gateway:${egVersion}`).replaceAll(placeholder('GatewayImagePullPolicy'), 'IfNotPresent'));
      rmSync(join(dir, 'values.tmpl.yaml'));
    }),
    pkg(join(aieg, 'manifests', 'charts', 'ai-gateway-crds-helm'), 'ai-gateway-crds-helm', p.gateway_providers.envoy_ai_gateway),
    pkg(join(aieg, 'manifests', 'charts', 'ai-gateway-helm'), 'ai-gateway-helm', p.gateway_providers.envoy_ai_gateway),
    pkg(join(ipp, 'config', 'charts', 'payload-processor'), 'payload-processor', p.llm_d_inference_payload_processor.replace(/^v/, '')),
  ];
  if (o.inferencePool) {
    const gie = upstreamDir('sigs.k8s.io/gateway-api-inference-extension', p.k8s_gateway_api_inference_extension);
    const tree = join(work, 'gie-charts');
    cpSync(join(gie, 'config', 'charts'), tree, { recursive: true });
    execFileSync(helm, ['dependency', 'build', join(tree, 'inferencepool')], { stdio: 'pipe', env: helmEnv(work) });
    const v = p.k8s_gateway_api_inference_extension;
    execFileSync(helm, ['package', join(tree, 'inferencepool'), '--version', v, '--app-version', v, '--destination', out], { stdio: 'pipe', env: helmEnv(work) });
    charts.push(`inferencepool-${v}.tgz`);
  }
  // Relative URLs: the index works wherever the repository is served.
  execFileSync(helm, ['repo', 'index', out], { stdio: 'pipe', env: helmEnv(work) });
  return { dir: out, charts };
}

/** `${Name}`, the release pipeline's placeholder in values.tmpl.yaml. */
const placeholder = (name: string) => ['$', '{', name, '}'].join('');

function helmEnv(work: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: work, HELM_CACHE_HOME: join(work, '.cache'), HELM_CONFIG_HOME: join(work, '.config'), HELM_DATA_HOME: join(work, '.data') };
}

/**
 * A Helm chart repository on 127.0.0.1 (`index.yaml` and the packaged charts) that counts
 * every request, so a test can prove what the install fetched and that it fetched nothing else.
 */
export class CountingChartMirror {
  private server?: Server;
  url = '';
  readonly requests: string[] = [];

  constructor(readonly dir: string) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      this.requests.push(`${req.method} ${path}`);
      const name = path.replace(/^\/+/, '');
      const file = join(this.dir, name);
      if (!/^[A-Za-z0-9._-]+$/.test(name) || !existsSync(file) || !statSync(file).isFile()) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': name.endsWith('.yaml') ? 'application/x-yaml' : 'application/gzip' }).end(readFileSync(file));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    const a = this.server.address();
    this.url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
