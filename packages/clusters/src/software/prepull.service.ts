import { AppError, type JobRunner, type OperationsLog } from '@ironlens/core';
import type { V1Pod } from '@kubernetes/client-node';
import type { ImageState, PrepullStatus } from '../api/clusters';
import { type ClusterAccess, onCluster } from '../registry/cluster-access';
import { count } from '../shared/domain';
import { ensureNamespace, FIELD_MANAGER, PREPULL_NAMESPACE, prepullDaemonSet, prepullDaemonSetName } from '../shared/manifests';
import type { StackProfile } from '../shared/profile';
import type { PrepullRepository } from './download.repository';

export const PREPULL_JOB = 'clusters.prepull';

export type { ImageState, PrepullStatus } from '../api/clusters';

export const ACCELERATOR_IMAGES: Record<string, string> = { nvidia: 'llm-d-cuda', intel: 'llm-d-xpu' };

/** A puller container that restarted this often, or sits in CrashLoopBackOff, is `failed`. */
const CRASH_RESTARTS = 3;

/**
 * Image pre-pull: a privileged DaemonSet in `lens-images` on every node; its state is read live
 * from the cluster, and what was asked is kept in the store, so GET works after a restart.
 */
export class PrepullService {
  constructor(
    private readonly access: ClusterAccess,
    private readonly repo: PrepullRepository,
    private readonly runner: JobRunner,
    private readonly ops: OperationsLog,
    private readonly profile: StackProfile,
    private readonly helperImage: string,
  ) {}

  imagesFor(accelerators: string[]): string[] {
    const p = this.profile;
    const images = [
      `ghcr.io/llm-d/llm-d-router-endpoint-picker:${p.llm_d_router}`,
      `ghcr.io/llm-d/llm-d-router-disagg-sidecar:${p.llm_d_router}`,
      `ghcr.io/llm-d/llm-d-inference-payload-processor:${p.llm_d_inference_payload_processor}`,
    ];
    for (const a of accelerators) images.push(`ghcr.io/llm-d/${ACCELERATOR_IMAGES[a]}:${p.llm_d}`);
    return images;
  }

  async start(clusterId: string, accelerators: string[]): Promise<PrepullStatus> {
    const row = await this.access.record(clusterId);
    const unknown = accelerators.filter((a) => !Object.hasOwn(ACCELERATOR_IMAGES, a));
    if (unknown.length) throw new AppError('invalid_accelerator', `unknown accelerator(s): ${unknown.join(', ')}; use ${Object.keys(ACCELERATOR_IMAGES).join(', ')}`);
    const accs = [...new Set(accelerators)];
    const images = this.imagesFor(accs);
    const kube = this.access.kube(row);
    const job = await this.runner.start({ kind: PREPULL_JOB, subject: clusterId, input: { accelerators: accs, images } }, async (ctx) => {
      ctx.stage('apply pre-pull DaemonSet');
      await ensureNamespace(kube, PREPULL_NAMESPACE);
      await kube.apply(prepullDaemonSet(clusterId, images, this.helperImage), FIELD_MANAGER, true);
      return { result: { images } };
    });
    const done = await this.runner.wait(job.id);
    if (done?.status !== 'success') {
      // Re-run the failing call in the request to report it as the API's error.
      await onCluster(async () => {
        await ensureNamespace(kube, PREPULL_NAMESPACE);
        await kube.apply(prepullDaemonSet(clusterId, images, this.helperImage), FIELD_MANAGER, true);
      });
    }
    await this.repo.put(this.access.db, { clusterId, accelerators: accs, images, jobId: job.id, requestedAt: new Date().toISOString() });
    await this.ops.append({ op: 'cluster.images.prepull', status: 'ok', cluster_id: clusterId, accelerators: accs });
    return this.status(clusterId);
  }

  async status(clusterId: string): Promise<PrepullStatus> {
    const row = await this.access.record(clusterId);
    const asked = await this.repo.get(this.access.db, clusterId);
    const kube = this.access.kube(row);
    const name = prepullDaemonSetName(clusterId);
    const [ds, pods] = await onCluster(() =>
      Promise.all([kube.getDaemonSet(PREPULL_NAMESPACE, name), kube.listPods({ namespace: PREPULL_NAMESPACE, labelSelector: `app.kubernetes.io/name=lens-prepull,ironlens.dev/cluster=${clusterId}` })]),
    );
    if (!ds) return { state: 'idle', desired: 0, ready: 0, images: [], nodes: [] };
    const containers = (ds.spec?.template?.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.env?.find((e) => e.name === 'IMAGE')?.value ?? '' }));
    const images = asked?.images?.length ? asked.images : containers.map((c) => c.image);
    const desired = count(ds.status?.desiredNumberScheduled);
    const live = (pods as V1Pod[]).filter((p) => !p.metadata?.deletionTimestamp);
    const nodes = live
      .map((p) => ({
        node: p.spec?.nodeName ?? '',
        phase: p.status?.phase ?? 'Pending',
        ready: !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        restarts: (p.status?.containerStatuses ?? []).reduce((s, c) => s + count(c.restartCount), 0),
      }))
      .sort((a, b) => a.node.localeCompare(b.node));
    const outImages = images.map((image) => {
      const container = containers.find((c) => c.image === image)?.name;
      let ready = 0;
      let failed = false;
      for (const p of live) {
        const cs = p.status?.containerStatuses?.find((c) => c.name === container);
        if (!cs) continue;
        if (cs.ready) ready++;
        else if (count(cs.restartCount) >= CRASH_RESTARTS || cs.state?.waiting?.reason === 'CrashLoopBackOff') failed = true;
      }
      const state: ImageState = failed ? 'failed' : desired > 0 && ready >= desired ? 'ready' : 'pulling';
      return { name: image, ready, desired, state };
    });
    const readyNodes = nodes.filter((n) => n.ready).length;
    const state: PrepullStatus['state'] = outImages.some((i) => i.state === 'failed') ? 'failed' : outImages.length > 0 && outImages.every((i) => i.state === 'ready') ? 'ready' : 'pulling';
    return { state, desired, ready: readyNodes, images: outImages, nodes };
  }
}

