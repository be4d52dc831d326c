/** The cluster manager's domain types (seed 000's JSON shapes). */

// The answer shapes are the API schemas' types (issue 19): one source, `./api`.
import type { HfTokenSecretRef, ProxyConfig } from '../api/clusters';

export { GATEWAY_PROVIDERS, type GatewayProvider, PROXY_MODES, type ProxyMode } from '../api/clusters';
export type { ClusterRecord, DownloadState, DownloadStatus, HfTokenSecretRef, ProxyConfig, SoftwareDownloadStatus } from '../api/clusters';

/** A stored cluster, without its kubeconfig. */
export interface StoredCluster {
  id: string;
  name: string;
  description: string;
  createdAt: string;
  draft: boolean;
  proxy: ProxyConfig;
  gatewayProvider: string | null;
  gatewayNamespace: string;
  gatewayName: string;
  gatewayPublicUrl: string | null;
  gatewayPort: number | null;
  gatewayAuthzHost: string | null;
  inotifyMaxUserInstances: number;
  hfTokenSecret: HfTokenSecretRef | null;
}

export const GATEWAY_PORT_MIN = 30000;
export const GATEWAY_PORT_MAX = 32767;
export const DEFAULT_INOTIFY_MAX_USER_INSTANCES = 8192;
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'llm-d-lens';
export const DEFAULT_GATEWAY_PREFIX = 'lens-gateway';
export const DEFAULT_GATEWAY_NAME = 'lens-gateway';

/** ISO 8601 UTC to the second, as the seed writes it: `2026-09-20T10:15:00Z`. */
export function isoUtc(d = new Date()): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A Kubernetes namespace name (RFC 1123 label, at most 63 characters). */
export function isDnsLabel(v: string): boolean {
  return v.length > 0 && v.length <= 63 && DNS_LABEL.test(v);
}

/** A Kubernetes object name (RFC 1123 subdomain, at most 253 characters). */
export function isDnsSubdomain(v: string): boolean {
  return v.length > 0 && v.length <= 253 && DNS_SUBDOMAIN.test(v);
}

/**
 * The gateway namespace of a registration: the prefix (default `lens-gateway`) with the
 * registration's short id appended; a value already ending in `-<id>` is kept as is. The
 * result must be a DNS label (at most 63 characters), or `null`.
 */
export function gatewayNamespaceFor(prefix: string | null | undefined, id: string): string | null {
  const p = (prefix ?? '').trim() || DEFAULT_GATEWAY_PREFIX;
  const ns = p.endsWith(`-${id}`) ? p : `${p}-${id}`;
  return isDnsLabel(ns) ? ns : null;
}

/** A count from a cluster's answer: a non-negative integer, else 0 (a hostile or broken API server may send anything, and the answer schema serializes integers only). */
export function count(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,15}$/.test(v) ? Number(v) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}
