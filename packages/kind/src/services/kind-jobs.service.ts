import { AppError, isoSeconds, type Job, type JobRunner } from '@ironlens/core';
import type { CancelView, JobView } from '../api/schemas';

/** The kind panel's jobs in the store's `kind` column (namespaced; the API shows `create_cluster`). */
export const CREATE_CLUSTER_JOB = 'kind.create_cluster';

const utc = (iso: string | null) => (iso ? isoSeconds(new Date(iso)) : null);

export function jobView(job: Job): JobView {
  const finishedOk = job.status === 'success';
  return {
    job_id: job.id,
    kind: job.kind.startsWith('kind.') ? job.kind.slice('kind.'.length) : job.kind,
    status: job.status,
    cluster_name: job.subject,
    created_at_utc: utc(job.createdAt)!,
    message: job.message,
    result: job.result ?? null,
    // Progress belongs to a job in flight; a failed or cancelled one keeps where it stopped.
    progress_stage: finishedOk ? null : job.stage,
    progress_percent: finishedOk ? null : job.percent,
    error: job.error,
    cancel_requested: job.cancelRequested,
    started_at_utc: utc(job.startedAt),
    finished_at_utc: utc(job.finishedAt),
    log_tail: job.log,
    actor: job.actor,
  };
}

export class KindJobsService {
  constructor(private readonly runner: JobRunner) {}

  async list(limit: number): Promise<JobView[]> {
    return (await this.runner.repository.list({ kind: CREATE_CLUSTER_JOB, limit })).map(jobView);
  }

  async get(id: string): Promise<JobView> {
    const job = await this.runner.repository.get(id);
    if (!job || job.kind !== CREATE_CLUSTER_JOB) throw new AppError('job_not_found', 'Job not found');
    return jobView(job);
  }

  async cancel(id: string): Promise<CancelView> {
    const job = await this.runner.repository.get(id);
    if (!job || job.kind !== CREATE_CLUSTER_JOB) throw new AppError('job_not_found', 'Job not found');
    await this.runner.cancel(id);
    return {
      job_id: id,
      cancel_requested: true,
      message: 'Cancellation requested: the running step is stopped and whatever the creation made is deleted (kind delete cluster)',
    };
  }
}
