import type { JobView } from '@ironlens/kind/api';
import { isActive, type KindApi } from '../api';
import { ProgressBar, StatusBadge } from './StatusBadge';

function when(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function JobsTable(props: { api: KindApi; jobs?: JobView[]; error: string | null; onChanged: () => void | Promise<void> }) {
  const cancel = async (id: string) => {
    try {
      await props.api.cancelJob(id);
    } finally {
      void props.onChanged();
    }
  };
  return (
    <section className="card" data-testid="jobs">
      <div className="card-head">
        <h2>Jobs</h2>
        {props.error && <span className="form-error">{props.error}</span>}
      </div>
      <div className="table-wrap">
        <table data-testid="jobs-table">
          <thead>
            <tr>
              <th>Cluster</th>
              <th>Status</th>
              <th>Progress</th>
              <th>Created</th>
              <th>Message</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {props.jobs?.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  No jobs yet.
                </td>
              </tr>
            )}
            {props.jobs?.map((j) => (
              <tr key={j.job_id} data-testid={`job-row-${j.job_id}`} data-status={j.status}>
                <td className="strong" title={j.job_id}>
                  {j.cluster_name}
                </td>
                <td>
                  <StatusBadge status={j.status} />
                </td>
                <td className="progress-cell">{isActive(j) || j.progress_stage ? <ProgressBar status={j.status} percent={j.progress_percent} stage={j.progress_stage} /> : <span className="muted">—</span>}</td>
                <td className="nowrap">{when(j.created_at_utc)}</td>
                <td className="message">{j.message ?? <span className="muted">—</span>}</td>
                <td className="actions">
                  {isActive(j) && (
                    <button type="button" className="btn btn-small btn-danger-ghost" disabled={j.cancel_requested} onClick={() => void cancel(j.job_id)}>
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
