import type { JobRunner, OperationsLog } from '@ironlens/core';
import { parseAllDocuments } from 'yaml';
import type { BundleFetcher } from '../adapters/bundle-fetch.adapter';
import type { KubeObjectRef } from '../adapters/kube.adapter';
import type { StackProfile } from '../profile';
import { type ClusterAccess, clusterFailure } from './cluster-access';
import { FIELD_MANAGER } from './manifests';

export const CRDS_JOB = 'clusters.crds';

export type BundleId = 'gateway_api' | 'gateway_api_inference_extension';

export interface BundleResult {
  ok: boolean;
  message: string;
}

/** The two pinned bundles, under `IRONLENS_GITHUB_MIRROR`. */
export function bundleUrls(mirror: string, p: StackProfile): Record<BundleId, string> {
  return {
    gateway_api: `${mirror}/kubernetes-sigs/gateway-api/releases/download/${p.k8s_gateway_api}/standard-install.yaml`,
    gateway_api_inference_extension: `${mirror}/kubernetes-sigs/gateway-api-inference-extension/releases/download/${p.k8s_gateway_api_inference_extension}/v1-manifests.yaml`,
  };
}

/** CRD names each bundle must leave Established for GET to say `ready`. */
export const BUNDLE_MARKERS: Record<BundleId, string[]> = {
  gateway_api: ['gatewayclasses.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io', 'httproutes.gateway.networking.k8s.io'],
  gateway_api_inference_extension: ['inferencepools.inference.networking.k8s.io'],
};

/** Objects of a multi-document YAML bundle (empty documents and `List`s handled). */
export function bundleObjects(text: string): KubeObjectRef[] {
  const out: KubeObjectRef[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) throw new Error(`bundle is not YAML: ${doc.errors[0].message}`);
    const v = doc.toJS() as KubeObjectRef | null;
    if (!v) continue;
    if (v.kind === 'List' && Array.isArray(v.items)) out.push(...(v.items as KubeObjectRef[]));
    else if (v.apiVersion && v.kind && v.metadata?.name) out.push(v);
    else throw new Error('bundle holds a document that is not a Kubernetes object');
  }
  return out;
}

/**
 * Gateway API / Inference Extension CRDs at the profile's versions: fetched through the GitHub
 * mirror and server-side applied (field manager `ironlens`, conflicts forced), in a job.
 */
export class CrdsService {
  constructor(
    private readonly access: ClusterAccess,
    private readonly runner: JobRunner,
    private readonly fetcher: BundleFetcher,
    private readonly ops: OperationsLog,
    private readonly profile: StackProfile,
    private readonly mirror: string,
  ) {}

  async apply(clusterId: string): Promise<Record<BundleId, BundleResult>> {
    const row = await this.access.record(clusterId);
    const kube = this.access.kube(row);
    const urls = bundleUrls(this.mirror, this.profile);
    const job = await this.runner.start({ kind: CRDS_JOB, subject: clusterId, input: { urls } }, async (ctx) => {
      const results = {} as Record<BundleId, BundleResult>;
      for (const id of Object.keys(urls) as BundleId[]) {
        ctx.stage(`apply ${id}`);
        try {
          const objects = bundleObjects(await this.fetcher.fetchText(urls[id], ctx.signal));
          if (objects.length === 0) throw new Error(`${urls[id]} holds no objects`);
          for (const o of objects) await kube.apply(o, FIELD_MANAGER, true);
          ctx.log(`${id}: ${objects.length} object(s) applied`);
          results[id] = { ok: true, message: '' };
        } catch (e) {
          const mapped = clusterFailure(e);
          results[id] = { ok: false, message: mapped instanceof Error ? mapped.message : String(mapped) };
          ctx.log(`${id}: ${results[id].message}`);
        }
      }
      return { result: results };
    });
    const done = await this.runner.wait(job.id);
    const results = (done?.result ?? null) as Record<BundleId, BundleResult> | null;
    const out = results ?? {
      gateway_api: { ok: false, message: done?.error ?? 'job failed' },
      gateway_api_inference_extension: { ok: false, message: done?.error ?? 'job failed' },
    };
    await this.ops.append({ op: 'cluster.crds.apply', status: out.gateway_api.ok && out.gateway_api_inference_extension.ok ? 'ok' : 'failed', cluster_id: clusterId });
    return out;
  }

  async status(clusterId: string): Promise<Record<BundleId, 'ready' | 'missing'>> {
    const row = await this.access.record(clusterId);
    const kube = this.access.kube(row);
    const check = async (id: BundleId) => {
      try {
        const all = await Promise.all(BUNDLE_MARKERS[id].map((n) => kube.crdEstablished(n)));
        return all.every(Boolean) ? 'ready' : 'missing';
      } catch (e) {
        throw clusterFailure(e);
      }
    };
    const [a, b] = await Promise.all([check('gateway_api'), check('gateway_api_inference_extension')]);
    return { gateway_api: a, gateway_api_inference_extension: b };
  }
}
