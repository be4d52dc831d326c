import { describe, it, expect } from 'vitest';
import { checkGo, relativeReplaces, wrapperGoMod } from './binaries.builder';
import { kubeMinor, stagingVersion, KUBERNETES_VERSION } from './versions.config';

describe('binaries builder (no build)', () => {
  it('maps a Kubernetes tag to its staging module tag and minor', () => {
    expect(stagingVersion('v1.36.3')).toBe('v0.36.3');
    expect(kubeMinor('v1.36.3')).toBe('36');
    expect(() => stagingVersion('v1.36.0-rc.1')).toThrow();
    expect(Number(kubeMinor(KUBERNETES_VERSION))).toBeGreaterThanOrEqual(34); // resource.k8s.io/v1
  });

  it('finds the relative replace directives of a go.mod (k8s.io/kubernetes and etcd shapes)', () => {
    const k8s = [
      'module k8s.io/kubernetes',
      'go 1.26.0',
      'require k8s.io/api v0.0.0',
      'replace (',
      '\tk8s.io/api => ./staging/src/k8s.io/api',
      '\tk8s.io/client-go => ./staging/src/k8s.io/client-go // comment',
      ')',
      'replace example.com/pinned => example.com/pinned v1.2.3',
    ].join('\n');
    expect(relativeReplaces(k8s)).toEqual(['k8s.io/api', 'k8s.io/client-go']);
    const etcd = [
      'replace (',
      '\tgo.etcd.io/etcd/api/v3 => ../api',
      ')',
      'replace go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY',
      'replace go.etcd.io/etcd/pkg/v3 v3.0.0 => ../pkg',
    ].join('\n');
    expect(relativeReplaces(etcd)).toEqual(['go.etcd.io/etcd/api/v3', 'go.etcd.io/etcd/pkg/v3']);
  });

  it('writes a wrapper go.mod that pins each replaced module to a published tag', () => {
    const mod = wrapperGoMod('k8s.io/kubernetes', 'v1.36.3', [['k8s.io/api', 'v0.36.3']]);
    expect(mod).toContain('require k8s.io/kubernetes v1.36.3');
    expect(mod).toContain('\tk8s.io/api => k8s.io/api v0.36.3');
  });

  it('fails with a clear message when go is not on PATH', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await expect(checkGo()).rejects.toThrow(/needs the Go toolchain/);
    } finally {
      process.env.PATH = path;
    }
  });
});
