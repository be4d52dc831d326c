import type { JobView, VersionsView } from '@ironlens/kind/api';
import { type FormEvent, useEffect, useState } from 'react';
import { isActive, type KindApi } from '../api';
import { ProgressBar, StatusBadge } from './StatusBadge';

const NAME_RE = /^[a-z0-9][a-z0-9.-]{0,49}$/;

/** The create form (name, version list, workers) with the job's live progress and a cancel button. */
export function CreateForm({ api, onChanged }: { api: KindApi; onChanged: () => void | Promise<void> }) {
  const [versions, setVersions] = useState<VersionsView>();
  const [name, setName] = useState('');
  const [version, setVersion] = useState('');
  const [workers, setWorkers] = useState(1);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [jobId, setJobId] = useState<string | null>(null);
  const [job, setJob] = useState<JobView | null>(null);

  useEffect(() => {
    api.versions().then(setVersions, (e) => setVersions({ tags: [], skipped: false, error: (e as Error).message }));
  }, [api]);

  // Follow the job this form started, once a second, until it finishes.
  useEffect(() => {
    if (!jobId) return;
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const j = await api.job(jobId);
        if (stop) return;
        setJob(j);
        if (!isActive(j)) {
          void onChanged();
          return;
        }
      } catch (e) {
        if (!stop) setError((e as Error).message);
      }
      if (!stop) timer = setTimeout(tick, 700);
    };
    void tick();
    return () => {
      stop = true;
      if (timer) clearTimeout(timer);
    };
  }, [api, jobId, onChanged]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    if (!NAME_RE.test(name)) {
      setError('Name: lowercase letters, digits, "." and "-", starting with a letter or digit, at most 50 characters.');
      return;
    }
    setBusy(true);
    try {
      const r = await api.createCluster({ name, kubernetes_version: version.trim() || null, workers });
      setJob(null);
      setJobId(r.job_id);
      void onChanged();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const cancel = async () => {
    if (!jobId) return;
    try {
      await api.cancelJob(jobId);
      setJob(await api.job(jobId));
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const running = job !== null && isActive(job);
  const tags = versions?.tags ?? [];

  return (
    <section className="card" data-testid="create">
      <h2>Create a cluster</h2>
      <form className="create-form" onSubmit={submit}>
        <label htmlFor="kind-create-name">
          <span>Name</span>
          <input id="kind-create-name" data-testid="create-name" value={name} onChange={(e) => setName(e.target.value.trim())} placeholder="dev" autoComplete="off" maxLength={50} required />
        </label>
        <label htmlFor="kind-create-version">
          <span>Kubernetes version</span>
          {tags.length > 0 ? (
            <select id="kind-create-version" data-testid="create-version" value={version} onChange={(e) => setVersion(e.target.value)}>
              <option value="">kind default</option>
              {tags.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          ) : (
            <input id="kind-create-version" data-testid="create-version" value={version} onChange={(e) => setVersion(e.target.value)} placeholder="kind default (e.g. 1.31.0)" autoComplete="off" />
          )}
          <small className="muted" data-testid="versions-note">
            {versions === undefined
              ? 'Loading kindest/node tags…'
              : versions.skipped
                ? 'Version list skipped (KIND_K8S_SKIP_VERSION_LIST); type a version or keep the default.'
                : versions.error
                  ? `Version list unavailable: ${versions.error}`
                  : `${tags.length} stable kindest/node tags`}
          </small>
        </label>
        <label className="narrow" htmlFor="kind-create-workers">
          <span>Workers</span>
          <input id="kind-create-workers" data-testid="create-workers" type="number" min={0} max={10} value={workers} onChange={(e) => setWorkers(Math.max(0, Math.min(10, Number(e.target.value) || 0)))} />
        </label>
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" data-testid="create-submit" disabled={busy || running}>
            {busy ? 'Starting…' : 'Create'}
          </button>
        </div>
      </form>
      {error && (
        <p className="form-error" role="alert" data-testid="create-error">
          {error}
        </p>
      )}
      {job && (
        <div className="job-live" data-testid="create-job" data-status={job.status}>
          <div className="job-live-head">
            <span>
              <strong>{job.cluster_name}</strong> <StatusBadge status={job.status} />
            </span>
            {running && (
              <button type="button" className="btn btn-danger" data-testid="create-cancel" onClick={cancel} disabled={job.cancel_requested}>
                {job.cancel_requested ? 'Cancelling…' : 'Cancel'}
              </button>
            )}
          </div>
          {(running || job.status !== 'success') && <ProgressBar testId="create-progress" status={job.status} percent={job.progress_percent} stage={job.progress_stage} />}
          {!running && <p className={job.status === 'success' ? 'ok-text' : 'muted'}>{job.message ?? job.error ?? job.status}</p>}
          {job.log_tail && job.log_tail.length > 0 && (
            <details className="log">
              <summary>Log</summary>
              <pre>{job.log_tail.join('\n')}</pre>
            </details>
          )}
        </div>
      )}
    </section>
  );
}
