import { createHash } from 'node:crypto';
import { type ErrorCode, errorCatalog } from '@ironlens/core';
import type { HelmRelease } from '../adapters/helm.adapter';
import type { BundleId } from '../api/clusters';
import type { ClusterRow } from '../registry/cluster.repository';
import type { GatewayProvider } from '../shared/domain';
import { bundleUrls, type StackProfile } from '../shared/profile';
import { type GatewayInputs, IPP_CHART, IPP_NAME, PROVIDERS, renderGateway } from './gateway.render';

export interface GatewayServiceOptions {
  profile: StackProfile;
  githubMirror: string;
  /** ironlens' console port: the hook's EndpointSlice port; null: the console listener's bound port ({@link GatewaySettings.useConsolePort}). */
  authzPort: number | null;
  /** How long a reconcile waits for a CRD a chart just installed to be served. */
  crdWaitMs: number;
  /** The hook's rate limit per source address: `perSecond` refill, `burst` bucket size. */
  rate: { perSecond: number; burst: number };
}

/** The hook's failure when its port is not known (an ephemeral console port not bound yet). */
const PORT_UNKNOWN_CODE = 'gateway_authz_port_unknown' satisfies ErrorCode;
export const PORT_UNKNOWN = `${PORT_UNKNOWN_CODE}: ${errorCatalog[PORT_UNKNOWN_CODE].message}`;

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * What a registration's gateway is rendered from, shared by the reconcile and the status: the
 * options, the hook's port (configured, or the console's bound one), the inputs of a record, the
 * charts of its provider and the hash of everything a reconcile would apply.
 */
export class GatewaySettings {
  private consolePort: number | null = null;

  constructor(readonly opts: GatewayServiceOptions) {}

  /**
   * The port the console listener bound (`ironlens serve` gives it once it listens): the hook's
   * port when `IRONLENS_GATEWAY_AUTHZ_PORT` is unset and the console listens on port 0.
   */
  useConsolePort(port: number): void {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`console port ${port} is not a port`);
    this.consolePort = port;
  }

  /** The hook's port: the configured one, else the console's bound one; null while neither is known. */
  authzPort(): number | null {
    return this.opts.authzPort ?? this.consolePort;
  }

  /** True when the registration wants a hook whose port is not known yet. */
  hookPortUnknown(i: GatewayInputs): boolean {
    return i.authzHost !== null && i.provider !== 'gke' && i.authzPort === null;
  }

  inputs(row: ClusterRow): GatewayInputs | null {
    if (!row.gatewayProvider) return null;
    return {
      clusterId: row.id,
      provider: row.gatewayProvider as GatewayProvider,
      namespace: row.gatewayNamespace,
      gatewayName: row.gatewayName,
      port: row.gatewayPort,
      authzHost: row.gatewayAuthzHost,
      authzPort: this.authzPort(),
    };
  }

  /** The charts of a registration's provider and its IPP, with their values. */
  releases(i: GatewayInputs, ippValues: Record<string, unknown>): { controlPlane: HelmRelease[]; ipp: HelmRelease } {
    return {
      controlPlane: PROVIDERS[i.provider].charts(this.opts.profile),
      ipp: { release: IPP_NAME, chart: IPP_CHART, version: this.opts.profile.llm_d_inference_payload_processor, namespace: i.namespace, values: ippValues },
    };
  }

  /** The pinned CRD bundles' URLs under the GitHub mirror. */
  bundleUrls(): Record<BundleId, string> {
    return bundleUrls(this.opts.githubMirror, this.opts.profile);
  }

  /** Hash of everything a reconcile would apply: equal to the last applied one means nothing changed. */
  desiredHash(row: ClusterRow): string | null {
    const i = this.inputs(row);
    if (!i) return null;
    const r = renderGateway(i, this.opts.profile);
    const rel = this.releases(i, r.ippValues);
    return sha256(JSON.stringify({ r, rel, crds: this.bundleUrls() }));
  }
}
