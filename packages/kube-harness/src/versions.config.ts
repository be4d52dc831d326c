/**
 * The pinned component versions. Changing any of these makes the next
 * `ensureKubeBinaries()` rebuild (the cache key is derived from them).
 *
 * Kubernetes >= 1.34 is required so that `resource.k8s.io/v1` (DRA GA) is served.
 * v1.36.x needs Go >= 1.26.0 (its go.mod says `go 1.26.0`); the machine has Go 1.26.
 */
export const KUBERNETES_VERSION = 'v1.36.3';
/** etcd 3.6 is the line Kubernetes 1.36 is tested against. */
export const ETCD_VERSION = 'v3.6.16';
export const KWOK_VERSION = 'v0.8.0';
/** Oldest Go toolchain that can build all three (their go.mod files say `go 1.26.0`). */
export const MIN_GO_VERSION = '1.26.0';

/** `v1.36.3` -> `v0.36.3`: the tag of the published staging modules (k8s.io/api etc). */
export function stagingVersion(kubeVersion: string): string {
  const m = /^v1\.(\d+)\.(\d+)$/.exec(kubeVersion);
  if (!m) throw new Error(`not a released Kubernetes version: ${kubeVersion}`);
  return `v0.${m[1]}.${m[2]}`;
}

export function kubeMinor(kubeVersion: string): string {
  const m = /^v1\.(\d+)\./.exec(kubeVersion);
  if (!m) throw new Error(`not a Kubernetes version: ${kubeVersion}`);
  return m[1];
}
