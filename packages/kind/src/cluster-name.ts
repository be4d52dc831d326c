import { AppError } from '@ironlens/core';

/**
 * kind's own rule is `^[a-z0-9.-]+$` and at most 50 characters (it appends
 * `-control-plane` to make a 64-character host name). We also require a letter or
 * digit first, as container names do, which keeps `-x` from reading as a flag and
 * `.`/`..` from naming a directory outside the clusters directory.
 */
export const CLUSTER_NAME_RE = /^[a-z0-9][a-z0-9.-]{0,49}$/;

export function isValidClusterName(name: unknown): name is string {
  return typeof name === 'string' && CLUSTER_NAME_RE.test(name);
}

export function assertClusterName(name: unknown): string {
  if (!isValidClusterName(name)) {
    throw new AppError(
      'kind_cluster_name_invalid',
      `invalid cluster name ${JSON.stringify(name)}: use lowercase letters, digits, '.' and '-', starting with a letter or digit, at most 50 characters`,
    );
  }
  return name;
}

/** `1.29.4` or `v1.29.4` → `v1.29.4`. */
export const VERSION_RE = /^v?(\d+)\.(\d+)\.(\d+)$/;

export function versionTag(version: string): string {
  const m = VERSION_RE.exec(version.trim());
  if (!m) throw new AppError('kind_version_invalid', `invalid Kubernetes version ${JSON.stringify(version)}: expected 1.29.4 or v1.29.4`);
  return `v${m[1]}.${m[2]}.${m[3]}`;
}
