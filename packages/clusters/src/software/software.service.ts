import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { JobRunner, OperationsLog } from '@ironlens/core';
import type { GitClone } from '../adapters/git.adapter';
import type { ClusterAccess } from '../registry/cluster-access';
import type { DownloadStatus, SoftwareDownloadStatus } from '../shared/domain';
import type { StackProfile } from '../shared/profile';
import type { DownloadRepository, DownloadRow } from './download.repository';

export const DOWNLOAD_JOB = 'clusters.download';

const COMPONENTS = {
  llmD: { repo: 'llm-d/llm-d', profileKey: 'llm_d' },
  llmDBenchmark: { repo: 'llm-d/llm-d-benchmark', profileKey: 'llm_d_lensmark' },
} as const;
type Component = keyof typeof COMPONENTS;

/**
 * The cache directory of one repository at one ref: `<cache>/<repo>/<readable ref>-<hash of ref>`,
 * so two refs can never share a directory (`a/b` and `a-b` differ by their hash).
 */
export function cacheDirFor(cacheRoot: string, repo: string, ref: string): string {
  const readable = ref.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
  const hash = createHash('sha256').update(ref).digest('hex').slice(0, 12);
  return join(cacheRoot, repo.split('/')[1], `${readable}-${hash}`);
}

/**
 * Downloads of the pinned llm-d and llm-d-benchmark sources: `git clone` of the profile's tags
 * through the GitHub mirror into a cache under the data dir, as jobs. The state of each
 * component is a row in the store, so it survives a restart (a clone cut short by a restart
 * reads as failed, interrupted).
 */
export class SoftwareService {
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly access: ClusterAccess,
    private readonly repo: DownloadRepository,
    private readonly runner: JobRunner,
    private readonly git: GitClone,
    private readonly ops: OperationsLog,
    private readonly profile: StackProfile,
    private readonly mirror: string,
    private readonly cacheRoot: string,
  ) {}

  private refOf(c: Component): string {
    return this.profile[COMPONENTS[c].profileKey];
  }

  async status(clusterId: string): Promise<SoftwareDownloadStatus> {
    await this.access.record(clusterId);
    const rows = await this.repo.list(this.access.db, clusterId);
    const out = {} as SoftwareDownloadStatus;
    for (const c of Object.keys(COMPONENTS) as Component[]) {
      const ref = this.refOf(c);
      const row = rows.find((r) => r.component === c && r.ref === ref);
      out[c] = row ? await this.settle(row) : { ref, state: 'idle', path: null, error: null };
    }
    return out;
  }

  /** A `downloading` row whose job is over (this process restarted) reads as the job ended. */
  private async settle(row: DownloadRow): Promise<DownloadStatus> {
    if (row.state === 'downloading' && row.jobId && !this.runner.isRunningHere(row.jobId)) {
      const job = await this.runner.repository.get(row.jobId);
      if (job?.status === 'success') {
        const path = (job.result as { path?: string } | null)?.path ?? null;
        await this.repo.put(this.access.db, { ...row, state: 'ready', path, error: null });
        return { ref: row.ref, state: 'ready', path, error: null };
      }
      if (!job || job.status === 'failed' || job.status === 'cancelled') {
        const error = job?.error ?? 'interrupted';
        await this.repo.put(this.access.db, { ...row, state: 'failed', error });
        return { ref: row.ref, state: 'failed', path: null, error };
      }
    }
    return { ref: row.ref, state: row.state, path: row.path, error: row.error };
  }

  /** POST: schedule both clones (already-cached refs are ready at once) and return the snapshot. */
  async start(clusterId: string): Promise<SoftwareDownloadStatus> {
    await this.access.record(clusterId);
    const current = await this.status(clusterId);
    for (const c of Object.keys(COMPONENTS) as Component[]) {
      const now = current[c];
      if (now.state === 'downloading') continue;
      if (now.state === 'ready' && now.path && existsSync(now.path)) continue;
      const ref = this.refOf(c);
      const dest = cacheDirFor(this.cacheRoot, COMPONENTS[c].repo, ref);
      if (existsSync(join(dest, '.git'))) {
        await this.repo.put(this.access.db, { clusterId, component: c, ref, state: 'ready', path: dest, error: null, jobId: null });
        continue;
      }
      const url = `${this.mirror}/${COMPONENTS[c].repo}.git`;
      const job = await this.runner.start({ kind: DOWNLOAD_JOB, subject: `${clusterId}:${c}`, input: { url, ref } }, async (ctx) => {
        ctx.stage(`git clone ${url} @ ${ref}`);
        await this.cloneOnce(url, ref, dest, ctx.signal, (l) => ctx.log(l));
        await this.repo.put(this.access.db, { clusterId, component: c, ref, state: 'ready', path: dest, error: null, jobId: ctx.id });
        return { result: { path: dest } };
      });
      await this.repo.put(this.access.db, { clusterId, component: c, ref, state: 'downloading', path: null, error: null, jobId: job.id });
      // A failure is written by the job's watcher below, not thrown into the request. When the
      // store is already closed (shutdown), `status()` settles the row from the job at the next start.
      void this.runner
        .wait(job.id)
        .then(async (done) => {
          if (done && done.status !== 'success' && (await this.access.exists(clusterId))) {
            await this.repo.put(this.access.db, { clusterId, component: c, ref, state: 'failed', path: null, error: done.error ?? 'failed', jobId: job.id });
          }
        })
        .catch(() => {});
    }
    await this.ops.append({ op: 'cluster.software.download', status: 'ok', cluster_id: clusterId });
    return this.status(clusterId);
  }

  /** One clone per destination at a time (two clusters asking for the same ref share it); clone to a temp dir, then rename. */
  private cloneOnce(url: string, ref: string, dest: string, signal: AbortSignal, onLine: (l: string) => void): Promise<void> {
    const running = this.inflight.get(dest);
    if (running) return running;
    const p = (async () => {
      if (existsSync(join(dest, '.git'))) return;
      await mkdir(dirname(dest), { recursive: true });
      const tmp = `${dest}.partial-${process.pid}-${Date.now()}`;
      try {
        await this.git.clone(url, ref, tmp, { signal, onLine });
        await rm(dest, { recursive: true, force: true });
        await rename(tmp, dest);
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
    })().finally(() => this.inflight.delete(dest));
    this.inflight.set(dest, p);
    return p;
  }
}
