import type { Helm, HelmDeployed, HelmRelease } from '../adapters/helm.adapter';

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const VERSION = /^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/;
const bare = (v: string) => v.replace(/^v/, '');

/**
 * A FAKE of the Helm adapter (`Helm`), in memory, for the gateway's unit tests: releases per
 * cluster (kubeconfig), namespace and name, installed from a chart catalogue that stands in for
 * the chart mirror (chart name → the versions its index holds, as they are written there). It
 * behaves as the real `HelmCli` does where the gateway looks (the contract suite
 * `helm.contract.ts` runs against both): `get` answers null for a release never installed, and
 * `<chart>-<version as the mirror holds it>`, `deployed` and exactly the values given once
 * installed; a version the mirror does not hold fails and installs nothing; names, versions and a
 * missing mirror are refused before anything runs. `failNext` makes the next install fail as a
 * chart that fails to apply does (the release left `failed`).
 */
export class FakeHelm implements Helm {
  private readonly releases = new Map<string, HelmDeployed & { revision: number }>();
  private failure: string | null = null;
  /** Every `upgradeInstall` call, in order (release, namespace, chart, version, values). */
  readonly installs: HelmRelease[] = [];
  /** Every `uninstall` call, in order (`namespace/release`). */
  readonly uninstalls: string[] = [];
  /** Every `get` call, in order (`namespace/release`). */
  readonly gets: string[] = [];

  constructor(private readonly mirror: Record<string, string[]> | null) {}

  private key(kubeconfig: string, namespace: string, release: string): string {
    return JSON.stringify([kubeconfig, namespace, release]);
  }

  /** The next `upgradeInstall` fails with this message, leaving its release `failed`. */
  failNext(message: string): void {
    this.failure = message;
  }

  async get(kubeconfig: string, release: string, namespace: string, signal?: AbortSignal): Promise<HelmDeployed | null> {
    if (!NAME.test(release) || !NAME.test(namespace)) throw new Error('release and namespace must be DNS labels');
    signal?.throwIfAborted();
    this.gets.push(`${namespace}/${release}`);
    const r = this.releases.get(this.key(kubeconfig, namespace, release));
    return r ? { chart: r.chart, status: r.status, values: structuredClone(r.values) } : null;
  }

  async uninstall(kubeconfig: string, release: string, namespace: string, signal?: AbortSignal): Promise<boolean> {
    if (!NAME.test(release) || !NAME.test(namespace)) throw new Error('release and namespace must be DNS labels');
    signal?.throwIfAborted();
    this.uninstalls.push(`${namespace}/${release}`);
    return this.releases.delete(this.key(kubeconfig, namespace, release));
  }

  async upgradeInstall(kubeconfig: string, r: HelmRelease, o: { signal?: AbortSignal; onLine?: (line: string) => void } = {}): Promise<void> {
    if (!NAME.test(r.release) || !NAME.test(r.namespace)) throw new Error('release and namespace must be DNS labels');
    if (!VERSION.test(r.version)) throw new Error(`chart version ${JSON.stringify(r.version)} is not a version`);
    if (!this.mirror) throw new Error('IRONLENS_CHART_MIRROR is not set: charts are only installed from a mirror');
    o.signal?.throwIfAborted();
    this.installs.push(structuredClone(r));
    const held = (this.mirror[r.chart] ?? []).find((v) => bare(v) === bare(r.version));
    if (held === undefined) throw new Error(`Error: chart "${r.chart}" matching ${r.version} not found in the repository`);
    const key = this.key(kubeconfig, r.namespace, r.release);
    const before = this.releases.get(key);
    const next = { chart: `${r.chart}-${held}`, values: JSON.parse(JSON.stringify(r.values)) as Record<string, unknown>, revision: (before?.revision ?? 0) + 1 };
    if (this.failure !== null) {
      const message = this.failure;
      this.failure = null;
      this.releases.set(key, { ...next, status: 'failed' });
      throw new Error(message);
    }
    o.onLine?.(before ? `Release "${r.release}" has been upgraded. Happy Helming!` : `Release "${r.release}" does not exist. Installing it now.`);
    this.releases.set(key, { ...next, status: 'deployed' });
  }
}
