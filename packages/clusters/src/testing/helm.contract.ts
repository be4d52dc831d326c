import { describe, expect, it } from 'vitest';
import type { Helm } from '../adapters/helm.adapter';

/** What the contract suite runs on: a Helm adapter, a cluster, and a chart its mirror holds. */
export interface HelmContractTarget {
  helm: Helm;
  /** The same adapter with no chart mirror configured. */
  helmWithoutMirror: Helm;
  kubeconfig: string;
  /** A namespace of the cluster's the suite may use, and the names that start with it and `-` (each created by its first install). */
  namespace: string;
  /** A chart the mirror holds: its name, a version as the gateway asks for it, and as `get` reports it. */
  chart: { name: string; version: string; reported: string };
  /** Values the chart accepts, and other values it accepts. */
  values: Record<string, unknown>;
  otherValues: Record<string, unknown>;
}

/**
 * The Helm adapter's contract, as the gateway's reconcile relies on it: one suite, run against
 * the real `HelmCli` (the kube-harness and the chart mirror, in `gateway.kube.test.ts`) and the
 * `FakeHelm` (`fake-helm.test.ts`), so the fake cannot drift from the real one. `target` is
 * called once the suite runs (after the caller's `beforeAll`). Each test installs the releases it
 * reads, under names of its own: any one runs alone (`-t`), in any order.
 */
export function helmContract(name: string, target: () => HelmContractTarget): void {
  describe(`the Helm adapter's contract (${name})`, () => {
    it('get answers null for a release never installed', async () => {
      const t = target();
      expect(await t.helm.get(t.kubeconfig, 'contract-none', t.namespace)).toBeNull();
    });

    it('installs a release: get reports it deployed, at the chart version the mirror holds, with exactly the values given', async () => {
      const t = target();
      const lines: string[] = [];
      await t.helm.upgradeInstall(t.kubeconfig, { release: 'contract-a', namespace: t.namespace, chart: t.chart.name, version: t.chart.version, values: t.values }, { onLine: (l) => lines.push(l) });
      expect(await t.helm.get(t.kubeconfig, 'contract-a', t.namespace)).toEqual({ chart: `${t.chart.name}-${t.chart.reported}`, status: 'deployed', values: t.values });
      expect(lines.length).toBeGreaterThan(0);
    });

    it('an upgrade with other values: get reports the new values, still deployed', async () => {
      const t = target();
      // A namespace of its own: the chart's objects are named by its values, as another test's release here would be.
      const namespace = `${t.namespace}-upgrade`;
      const release = { release: 'contract-u', namespace, chart: t.chart.name, version: t.chart.version };
      await t.helm.upgradeInstall(t.kubeconfig, { ...release, values: t.values });
      expect(await t.helm.get(t.kubeconfig, 'contract-u', namespace)).toMatchObject({ values: t.values });
      await t.helm.upgradeInstall(t.kubeconfig, { ...release, values: t.otherValues });
      expect(await t.helm.get(t.kubeconfig, 'contract-u', namespace)).toEqual({ chart: `${t.chart.name}-${t.chart.reported}`, status: 'deployed', values: t.otherValues });
    });

    it('no values given: get reports {}', async () => {
      const t = target();
      await t.helm.upgradeInstall(t.kubeconfig, { release: 'contract-b', namespace: t.namespace, chart: t.chart.name, version: t.chart.version, values: {} });
      expect(await t.helm.get(t.kubeconfig, 'contract-b', t.namespace)).toEqual({ chart: `${t.chart.name}-${t.chart.reported}`, status: 'deployed', values: {} });
    });

    it('uninstalls a release (a deployment’s delete): get answers null after, and a second uninstall finds nothing', async () => {
      const t = target();
      // A namespace of its own: the chart's objects are named by its values, and the other releases hold those names.
      const ns = `${t.namespace}-u`;
      await t.helm.upgradeInstall(t.kubeconfig, { release: 'contract-u', namespace: ns, chart: t.chart.name, version: t.chart.version, values: {} });
      expect(await t.helm.uninstall(t.kubeconfig, 'contract-u', ns)).toBe(true);
      expect(await t.helm.get(t.kubeconfig, 'contract-u', ns)).toBeNull();
      expect(await t.helm.uninstall(t.kubeconfig, 'contract-u', ns)).toBe(false);
      await expect(t.helm.uninstall(t.kubeconfig, 'contract-u;x', ns)).rejects.toThrow(/DNS labels/);
    });

    it('a release is per namespace: the same name elsewhere is not there', async () => {
      const t = target();
      const namespace = `${t.namespace}-here`;
      await t.helm.upgradeInstall(t.kubeconfig, { release: 'contract-n', namespace, chart: t.chart.name, version: t.chart.version, values: {} });
      expect(await t.helm.get(t.kubeconfig, 'contract-n', namespace)).not.toBeNull();
      expect(await t.helm.get(t.kubeconfig, 'contract-n', `${t.namespace}-other`)).toBeNull();
    });

    it('a version the mirror does not hold fails and installs nothing', async () => {
      const t = target();
      await expect(t.helm.upgradeInstall(t.kubeconfig, { release: 'contract-c', namespace: t.namespace, chart: t.chart.name, version: '99.0.0', values: {} })).rejects.toThrow(/not found|99\.0\.0/);
      expect(await t.helm.get(t.kubeconfig, 'contract-c', t.namespace)).toBeNull();
    });

    it('refuses names that are not DNS labels and versions that are not versions, before anything runs', async () => {
      const t = target();
      const ok = { release: 'contract-d', namespace: t.namespace, chart: t.chart.name, version: t.chart.version, values: {} };
      await expect(t.helm.upgradeInstall(t.kubeconfig, { ...ok, release: '--set=x' })).rejects.toThrow(/DNS labels/);
      await expect(t.helm.upgradeInstall(t.kubeconfig, { ...ok, namespace: 'Kube System' })).rejects.toThrow(/DNS labels/);
      await expect(t.helm.upgradeInstall(t.kubeconfig, { ...ok, version: '>=0.0.0' })).rejects.toThrow(/is not a version/);
      await expect(t.helm.get(t.kubeconfig, 'contract-d;rm', t.namespace)).rejects.toThrow(/DNS labels/);
      expect(await t.helm.get(t.kubeconfig, 'contract-d', t.namespace)).toBeNull();
    });

    it('without a chart mirror, an install is refused saying so', async () => {
      const t = target();
      await expect(t.helmWithoutMirror.upgradeInstall(t.kubeconfig, { release: 'contract-e', namespace: t.namespace, chart: t.chart.name, version: t.chart.version, values: {} })).rejects.toThrow(
        /IRONLENS_CHART_MIRROR is not set/,
      );
    });
  });
}
