import { ExecAbortedError, isoSeconds, type JobContext, type JobHandler } from '@ironlens/core';
import type { ContainerEngine } from '../adapters/container-engine.adapter';
import type { KindClusters } from '../adapters/kind.adapter';
import type { Kubectl } from '../adapters/kubectl.adapter';
import { isNotFound, type PathLookup } from '../adapters/path-lookup';
import type { ClusterMeta } from '../api/schemas';
import type { ClusterFiles } from '../repositories/cluster-files.repository';
import { patchKubeconfigForHost } from './kubeconfig-patch';

export interface CreateClusterInput {
  name: string;
  /** `v1.29.4`, or null for kind's default node image. */
  versionTag: string | null;
  workers: number;
}

export interface CreateClusterResult {
  cluster_name: string;
  kubernetes_version_tag: string | null;
  node_image: string | null;
  workers: number;
  kubeconfig_path: string;
  kubeconfig_patched_for_host: boolean;
  nodes_ready: boolean;
  nodes_ready_message: string;
}

export interface CreateClusterDeps {
  kind: KindClusters;
  kubectl: Kubectl;
  engine: ContainerEngine;
  files: ClusterFiles;
  onPath: PathLookup;
  apiServerHost?: string;
  nodesReadyTimeoutS: number;
  createTimeoutS: number;
}

/** kind's own stages (`kind create cluster` prints ` • <stage> …` then ` ✓ <stage>`), and the percent each reaches. */
const KIND_STAGES: Array<[RegExp, number]> = [
  [/^Ensuring node image/, 15],
  [/^Preparing nodes/, 25],
  [/^Writing configuration/, 35],
  [/^Starting control-plane/, 45],
  [/^Installing CNI/, 55],
  [/^Installing StorageClass/, 60],
  [/^Joining worker nodes/, 65],
  [/^Waiting/, 68],
];

export const NODE_IMAGE_REPO = 'kindest/node';

export function renderKindConfig(input: { workers: number; nodeImage: string | null }): string {
  const node = (role: string) => `  - role: ${role}\n${input.nodeImage ? `    image: ${input.nodeImage}\n` : ''}`;
  let out = '# Written by ironlens (kind panel).\nkind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n';
  out += node('control-plane');
  for (let i = 0; i < input.workers; i++) out += node('worker');
  return out;
}

/** Turns one line of kind's output into a stage name, if it starts or ends one. */
export function kindStageOf(line: string): { stage: string; percent: number; done: boolean; failed: boolean } | null {
  const m = /^\s*([•✓✗])\s+(.*?)\s*(?:\.\.\.)?\s*$/u.exec(line);
  if (!m) return null;
  const text = m[2].replace(/\s+[^\p{L}\p{N}()/:.,\s-]+(\s+[^\p{L}\p{N}()/:.,\s-]+)*$/u, '').trim();
  const hit = KIND_STAGES.find(([re]) => re.test(text));
  if (!hit) return null;
  return { stage: text, percent: hit[1], done: m[1] === '✓', failed: m[1] === '✗' };
}

/**
 * The stages of a cluster creation: check the tools, write the kind config, `kind create
 * cluster` (its output streamed into the job), export the kubeconfig into the cluster's
 * directory and patch it for the host, wait for nodes Ready, write `meta.json`. Cancel is
 * honoured between stages and kills a running command; a cancelled or failed creation
 * deletes what it made.
 */
export class CreateClusterJob {
  constructor(private readonly deps: CreateClusterDeps) {}

  handler(input: CreateClusterInput): JobHandler {
    return (ctx) => this.run(ctx, input);
  }

  private async run(job: JobContext, input: CreateClusterInput): Promise<{ result: CreateClusterResult; message: string }> {
    const { kind, kubectl, engine, files } = this.deps;
    let current = '';
    // The same context, remembering the stage so a failure can say where it happened.
    const ctx: JobContext = Object.create(job, {
      stage: {
        value: (text: string, percent?: number) => {
          current = text;
          job.stage(text, percent);
        },
      },
    });
    const name = input.name;
    const nodeImage = input.versionTag ? `${NODE_IMAGE_REPO}:${input.versionTag}` : null;
    let dirCreated = false;
    let kindStarted = false;
    let kindSaysExists = false;

    try {
      ctx.stage('Checking kind, kubectl and the container engine', 2);
      if (!(await this.deps.onPath('kind'))) throw new Error('kind is not installed or not on PATH');
      if (!(await this.deps.onPath('kubectl'))) throw new Error('kubectl is not installed or not on PATH');
      const st = await engine.status();
      if (!st.ok) throw new Error(`the container engine (${engine.name}) is not answering: ${st.detail ?? 'unknown error'}`);
      ctx.throwIfCancelled();

      ctx.stage(`Writing kind config (${input.workers} worker${input.workers === 1 ? '' : 's'}${nodeImage ? `, ${nodeImage}` : ''})`, 5);
      dirCreated = await files.create(name);
      await files.removeKubeconfig(name);
      const configFile = await files.writeKindConfig(name, renderKindConfig({ workers: input.workers, nodeImage }));
      ctx.throwIfCancelled();

      ctx.stage('kind create cluster', 10);
      kindStarted = true;
      let lastKindStage = '';
      try {
        await kind.create(name, configFile, {
          signal: ctx.signal,
          timeoutMs: this.deps.createTimeoutS * 1000,
          onLine: (line) => {
            if (!line.trim()) return;
            ctx.log(line);
            if (/already exist for a cluster with the name/.test(line)) kindSaysExists = true;
            const s = kindStageOf(line);
            if (!s || s.failed) return;
            if (s.stage !== lastKindStage) ctx.stage(`kind create cluster: ${s.stage}`, s.done ? s.percent : s.percent - 5);
            else if (s.done) ctx.progress(s.percent);
            lastKindStage = s.stage;
          },
        });
      } catch (err) {
        if (err instanceof ExecAbortedError) throw err;
        if (isNotFound(err)) throw new Error('kind is not installed or not on PATH');
        const detail = lastErrorLine((err as { result?: { stderr?: string } }).result?.stderr) ?? (err as Error).message;
        throw new Error(`kind create cluster failed: ${detail}`);
      }
      ctx.throwIfCancelled();

      ctx.stage('Exporting kubeconfig', 75);
      const kubeconfigPath = files.kubeconfigPath(name);
      try {
        await kind.exportKubeconfig(name, kubeconfigPath);
      } catch (err) {
        throw new Error(`kind export kubeconfig failed: ${lastErrorLine((err as { result?: { stderr?: string } }).result?.stderr) ?? (err as Error).message}`);
      }
      ctx.throwIfCancelled();

      ctx.stage('Patching kubeconfig for the host', 80);
      const exported = await files.readKubeconfig(name);
      if (exported === null) throw new Error('kind export kubeconfig wrote no file');
      const patched = patchKubeconfigForHost(exported, this.deps.apiServerHost);
      await files.writeKubeconfig(name, patched.text);
      ctx.log(`API server: ${patched.servers.join(', ')}`);
      ctx.throwIfCancelled();

      ctx.stage('Waiting for nodes Ready', 85);
      const ready = await kubectl.waitNodesReady(kubeconfigPath, this.deps.nodesReadyTimeoutS, ctx.signal);
      for (const line of ready.output.split('\n')) if (line.trim()) ctx.log(line);
      const nodesReady = ready.rc === 0;
      const nodesReadyMessage = ready.output.trim() || (nodesReady ? 'all nodes Ready' : `kubectl wait exited ${ready.rc}`);
      ctx.throwIfCancelled();

      ctx.stage('Writing meta.json', 95);
      const meta: ClusterMeta = {
        cluster_name: name,
        kubernetes_version_tag: input.versionTag,
        node_image: nodeImage,
        worker_nodes: input.workers,
        kubeconfig_patched_for_host: true,
        nodes_ready: nodesReady,
        container_cli: engine.name,
        created_at_utc: isoSeconds(),
      };
      await files.writeMeta(name, meta);

      return {
        message: nodesReady ? 'Cluster created' : 'Cluster created; not every node is Ready yet',
        result: {
          cluster_name: name,
          kubernetes_version_tag: input.versionTag,
          node_image: nodeImage,
          workers: input.workers,
          kubeconfig_path: kubeconfigPath,
          kubeconfig_patched_for_host: true,
          nodes_ready: nodesReady,
          nodes_ready_message: nodesReadyMessage,
        },
      };
    } catch (err) {
      await this.cleanUp(job, name, current, { kindStarted: kindStarted && !kindSaysExists, dirCreated, cancelled: job.cancelRequested });
      throw err;
    }
  }

  /** Removes what this creation made: the kind cluster (`kind delete cluster`) and a directory it created. */
  private async cleanUp(ctx: JobContext, name: string, stoppedAt: string, made: { kindStarted: boolean; dirCreated: boolean; cancelled: boolean }): Promise<void> {
    if (!made.kindStarted && !made.dirCreated) return;
    const what = made.cancelled ? 'Cancelled' : 'Failed';
    ctx.stage(`${what}: cleaning up`);
    if (made.kindStarted) {
      const r = await this.deps.kind.delete(name);
      ctx.log(r.ok ? `kind delete cluster --name ${name}: OK` : `kind delete cluster --name ${name} failed: ${r.output}`);
    }
    if (made.dirCreated) {
      await this.deps.files.remove(name).catch((e) => ctx.log(`removing the cluster directory failed: ${(e as Error).message}`));
    } else {
      // The directory was there before: keep it, but the kubeconfig we were writing is not valid.
      await this.deps.files.removeKubeconfig(name).catch(() => {});
    }
    // The job keeps where it stopped as its last stage.
    ctx.stage(`${what} at: ${stoppedAt} (cleaned up)`);
    await ctx.flush();
  }
}

function lastErrorLine(text: string | undefined): string | null {
  if (!text) return null;
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const err = [...lines].reverse().find((l) => /^ERROR:/.test(l));
  return err ?? lines[lines.length - 1] ?? null;
}
