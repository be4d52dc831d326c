import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { execStreaming } from '@ironlens/core';

/** One `helm upgrade --install` of a chart from the chart mirror. */
export interface HelmRelease {
  release: string;
  namespace: string;
  /** The chart's upstream name (`gateway-helm`), resolved under the mirror. */
  chart: string;
  version: string;
  values: Record<string, unknown>;
}

export interface HelmDeployed {
  chart: string;
  status: string;
  values: Record<string, unknown>;
}

/** What the gateway job needs from Helm, for one cluster (its kubeconfig given per call). */
export interface Helm {
  /** The deployed release, or null when there is none. */
  get(kubeconfig: string, release: string, namespace: string, signal?: AbortSignal): Promise<HelmDeployed | null>;
  upgradeInstall(kubeconfig: string, r: HelmRelease, o?: { signal?: AbortSignal; onLine?: (line: string) => void }): Promise<void>;
  /** `helm uninstall` of a release (a deployment's delete); false when there was none. */
  uninstall(kubeconfig: string, release: string, namespace: string, signal?: AbortSignal): Promise<boolean>;
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const VERSION = /^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/;

/** `helm` from `IRONLENS_HELM`, else the first `helm` on `PATH`; null when there is none. */
export function findHelm(env: Record<string, string | undefined>): string | null {
  if (env.IRONLENS_HELM) return env.IRONLENS_HELM;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'helm'))) return join(dir, 'helm');
  }
  return null;
}

/** The chart argument for a mirror: `oci://prefix/<chart>`, or `--repo <url> <chart>` for an HTTP Helm repository. */
export function chartArgs(mirror: string, chart: string): string[] {
  if (!NAME.test(chart)) throw new Error(`chart name ${JSON.stringify(chart)} is not a chart name`);
  if (mirror.startsWith('oci://')) return [`${mirror.replace(/\/+$/, '')}/${chart}`];
  const u = new URL(mirror);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('IRONLENS_CHART_MIRROR must be an http(s) URL or an oci:// prefix');
  return ['--repo', mirror.replace(/\/+$/, ''), chart];
}

/**
 * The real Helm CLI, driven with argument arrays. Helm's own state (cache, config, data) lives
 * under ironlens' data dir, never in the user's home; the kubeconfig is written for the length of
 * one command to a 0600 file in a 0700 directory of its own and removed after (Helm reads a
 * kubeconfig only from a file), never passed on the command line.
 */
export class HelmCli implements Helm {
  constructor(
    private readonly bin: string | null,
    private readonly mirror: string | null,
    private readonly home: string,
    private readonly timeoutMs = 10 * 60_000,
  ) {}

  private need(): string {
    if (!this.bin) throw new Error('helm was not found: set IRONLENS_HELM or put helm on PATH (scripts/build-helm.sh builds the pinned one)');
    return this.bin;
  }

  private async withKubeconfig<T>(kubeconfig: string, fn: (dir: string, env: NodeJS.ProcessEnv) => Promise<T>): Promise<T> {
    await mkdir(this.home, { recursive: true, mode: 0o700 });
    const dir = await mkdtemp(join(this.home, 'run-'));
    await chmod(dir, 0o700);
    try {
      const kc = join(dir, 'kubeconfig');
      await writeFile(kc, kubeconfig, { mode: 0o600 });
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: this.home,
        KUBECONFIG: kc,
        HELM_CACHE_HOME: join(this.home, 'cache'),
        HELM_CONFIG_HOME: join(this.home, 'config'),
        HELM_DATA_HOME: join(this.home, 'data'),
        HELM_NO_PLUGINS: '1',
      };
      return await fn(dir, env);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async get(kubeconfig: string, release: string, namespace: string, signal?: AbortSignal): Promise<HelmDeployed | null> {
    if (!NAME.test(release) || !NAME.test(namespace)) throw new Error('release and namespace must be DNS labels');
    const bin = this.need();
    return this.withKubeconfig(kubeconfig, async (_dir, env) => {
      const list = await execStreaming([bin, 'list', '--namespace', namespace, '--filter', `^${release}$`, '--output', 'json', '--all'], { env, signal, timeoutMs: 60_000 });
      const rows = JSON.parse(list.stdout || '[]') as Array<{ name: string; chart: string; status: string }>;
      const row = rows.find((r) => r.name === release);
      if (!row) return null;
      const values = await execStreaming([bin, 'get', 'values', release, '--namespace', namespace, '--output', 'json'], { env, signal, timeoutMs: 60_000 });
      return { chart: row.chart, status: row.status, values: (JSON.parse(values.stdout || 'null') ?? {}) as Record<string, unknown> };
    });
  }

  async uninstall(kubeconfig: string, release: string, namespace: string, signal?: AbortSignal): Promise<boolean> {
    if (!NAME.test(release) || !NAME.test(namespace)) throw new Error('release and namespace must be DNS labels');
    const bin = this.need();
    return this.withKubeconfig(kubeconfig, async (_dir, env) => {
      const r = await execStreaming([bin, 'uninstall', release, '--namespace', namespace, '--wait=false', '--timeout', '5m'], { env, signal, timeoutMs: 6 * 60_000, allowFailure: true });
      if (r.code === 0) return true;
      if (/not found/i.test(r.stderr)) return false;
      throw new Error(`helm uninstall ${namespace}/${release} failed: ${r.stderr.trim().split('\n').pop()?.slice(0, 300) ?? `exit ${r.code}`}`);
    });
  }

  async upgradeInstall(kubeconfig: string, r: HelmRelease, o: { signal?: AbortSignal; onLine?: (line: string) => void } = {}): Promise<void> {
    if (!NAME.test(r.release) || !NAME.test(r.namespace)) throw new Error('release and namespace must be DNS labels');
    if (!VERSION.test(r.version)) throw new Error(`chart version ${JSON.stringify(r.version)} is not a version`);
    if (!this.mirror) throw new Error('IRONLENS_CHART_MIRROR is not set: charts are only installed from a mirror');
    const bin = this.need();
    const mirror = this.mirror;
    await this.withKubeconfig(kubeconfig, async (dir, env) => {
      const values = join(dir, 'values.json');
      await writeFile(values, JSON.stringify(r.values), { mode: 0o600 });
      const argv = [
        bin,
        'upgrade',
        '--install',
        r.release,
        ...chartArgs(mirror, r.chart),
        '--version',
        r.version,
        '--namespace',
        r.namespace,
        '--create-namespace',
        '--values',
        values,
        '--wait=false',
        '--timeout',
        '10m',
      ];
      await execStreaming(argv, { env, signal: o.signal, timeoutMs: this.timeoutMs, onLine: (l) => o.onLine?.(l) });
    });
  }
}
