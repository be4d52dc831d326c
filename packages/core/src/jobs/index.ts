// Jobs: persisted, cancellable long-running work shared by every subsystem.
export { ExecAbortedError, type ExecStreamingOptions, execStreaming } from './exec-streaming';
export { ACTIVE_STATUSES, FINISHED_STATUSES, isFinished, type Job, type JobLease, type JobPatch, type JobStatus, JobsRepository, type JobsTable, type JobsTables, jobsMigrations, type NewJob } from './job.repository';
export { INTERRUPTED_MESSAGE, JobCancelledError, jobLeaseFromEnv, type JobContext, type JobHandler, type JobObserver, type JobOutcome, JobRunner, type JobRunnerOptions, type StartJob } from './job.runner';
