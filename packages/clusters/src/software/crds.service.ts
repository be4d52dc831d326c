import { createHash } from 'node:crypto';
import type { JobRunner, OperationsLog } from '@ironlens/core';
import { parseAllDocuments } from 'yaml';
import type { BundleId, BundleResult, CrdApplyResult, CrdStatus } from '../api/clusters';
import type { BundleFetcher } from '../adapters/bundle-fetch.adapter';
import type { KubeObjectRef } from '../adapters/kube.adapter';
import { type BundlePins, bundleUrls, type StackProfile } from '../shared/profile';
import { type ClusterAccess, clusterFailure } from '../registry/cluster-access';
import { FIELD_MANAGER } from '../shared/manifests';

export const CRDS_JOB = 'clusters.crds';

export type { BundleId, BundleResult } from '../api/clusters';

/** CRD names each bundle must leave Established for GET to say `ready`. */
export const BUNDLE_MARKERS: Record<BundleId, string[]> = {
  gateway_api: ['gatewayclasses.gateway.networking.k8s.io', 'gateways.gateway.networking.k8s.io', 'httproutes.gateway.networking.k8s.io'],
  gateway_api_inference_extension: ['inferencepools.inference.networking.k8s.io'],
};

/**
 * What each bundle may hold, by kind and name: the CustomResourceDefinitions of its API groups,
 * and for the Gateway API the `safe-upgrades.gateway.networking.k8s.io` ValidatingAdmissionPolicy
 * and its binding (what v1.5.1's `standard-install.yaml` really holds besides its 8 CRDs:
 * `config/crd/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml` of the Go module
 * `sigs.k8s.io/gateway-api`). Anything else — a ClusterRoleBinding, a Namespace, a ConfigMap, a
 * `List` — refuses the whole bundle before anything is applied.
 */
export const BUNDLE_ALLOWED: Record<BundleId, { crdGroups: string[]; others: Array<{ apiVersion: string; kind: string; name: string }> }> = {
  gateway_api: {
    crdGroups: ['gateway.networking.k8s.io'],
    others: [
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', name: 'safe-upgrades.gateway.networking.k8s.io' },
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', name: 'safe-upgrades.gateway.networking.k8s.io' },
    ],
  },
  gateway_api_inference_extension: { crdGroups: ['inference.networking.k8s.io', 'inference.networking.x-k8s.io'], others: [] },
};

/** Objects of a multi-document YAML bundle (empty documents skipped); anything but a plain object is refused. */
export function bundleObjects(text: string): KubeObjectRef[] {
  const out: KubeObjectRef[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) throw new Error(`bundle is not YAML: ${doc.errors[0].message}`);
    const v = doc.toJS() as KubeObjectRef | null;
    if (!v) continue;
    if (typeof v === 'object' && (v as { kind?: unknown }).kind === 'List') throw new Error('the bundle holds a List; it is not applied');
    if (typeof v === 'object' && typeof v.apiVersion === 'string' && typeof v.kind === 'string' && typeof v.metadata?.name === 'string') out.push(v);
    else throw new Error('the bundle holds a document that is not a Kubernetes object; it is not applied');
  }
  return out;
}

/** Throws unless every object is one `id`'s bundle may hold (see `BUNDLE_ALLOWED`). */
export function checkBundleObjects(id: BundleId, objects: KubeObjectRef[]): void {
  const allowed = BUNDLE_ALLOWED[id];
  for (const o of objects) {
    const what = `${String(o.kind).slice(0, 64)} ${JSON.stringify(String(o.metadata?.name).slice(0, 128))}`;
    if (o.metadata.namespace !== undefined) throw new Error(`the bundle holds a namespaced object (${what}); it is not applied`);
    if (o.apiVersion === 'apiextensions.k8s.io/v1' && o.kind === 'CustomResourceDefinition') {
      const group = (o.spec as { group?: unknown } | undefined)?.group;
      const plural = (o.spec as { names?: { plural?: unknown } } | undefined)?.names?.plural;
      if (typeof group === 'string' && allowed.crdGroups.includes(group) && o.metadata.name === `${String(plural)}.${group}`) continue;
      throw new Error(`the bundle holds a CustomResourceDefinition outside ${allowed.crdGroups.join(', ')} (${what}); it is not applied`);
    }
    if (allowed.others.some((a) => a.apiVersion === o.apiVersion && a.kind === o.kind && a.name === o.metadata.name)) continue;
    throw new Error(`the bundle holds an object that is not one of its CRDs (${what}); it is not applied`);
  }
}

/**
 * Gateway API / Inference Extension CRDs at the profile's versions: fetched through the GitHub
 * mirror (size-capped, redirects only to allowed hosts), checked against the sha256 pinned in
 * `profile/crd-bundles.json` and against `BUNDLE_ALLOWED`, and only then server-side applied
 * (field manager `ironlens`, conflicts forced), in a job. A bundle that fails a check applies nothing.
 */
export class CrdsService {
  constructor(
    private readonly access: ClusterAccess,
    private readonly runner: JobRunner,
    private readonly fetcher: BundleFetcher,
    private readonly ops: OperationsLog,
    private readonly profile: StackProfile,
    private readonly mirror: string,
    private readonly pins: BundlePins,
  ) {}

  /** One pinned bundle from the mirror, checked against its sha256 pin and the allow-list: the objects to apply (the gateway job uses it too). */
  async checkedBundle(id: BundleId, signal?: AbortSignal): Promise<KubeObjectRef[]> {
    const url = bundleUrls(this.mirror, this.profile)[id];
    const text = await this.fetcher.fetchText(url, signal);
    const pin = this.pins[id];
    const sum = createHash('sha256').update(text).digest('hex');
    if (pin && sum !== pin) throw new Error(`${url} has sha256 ${sum}, not the ${pin} pinned in the stack profile; it is not applied`);
    const objects = bundleObjects(text);
    if (objects.length === 0) throw new Error(`${url} holds no objects`);
    checkBundleObjects(id, objects);
    return objects;
  }

  async apply(clusterId: string): Promise<CrdApplyResult> {
    const row = await this.access.record(clusterId);
    const kube = this.access.kube(row);
    const urls = bundleUrls(this.mirror, this.profile);
    const job = await this.runner.start({ kind: CRDS_JOB, subject: clusterId, input: { urls } }, async (ctx) => {
      const results = {} as Record<BundleId, BundleResult>;
      for (const id of Object.keys(urls) as BundleId[]) {
        ctx.stage(`apply ${id}`);
        try {
          const objects = await this.checkedBundle(id, ctx.signal);
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

  async status(clusterId: string): Promise<CrdStatus> {
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
