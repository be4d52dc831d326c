import type { JobView } from '@ironlens/kind/api';
import { DataTable } from '../../shared/tables';
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
        <DataTable
          caption="Jobs"
          testId="jobs-table"
          columns={['Cluster', 'Status', 'Progress', 'Created', 'Message', <span key="actions" className="sr-only">Actions</span>]}
          empty={props.jobs ? 'No jobs yet.' : null}
          emptyClass="muted"
          rows={(props.jobs ?? []).map((j) => ({
            key: j.job_id,
            testId: `job-row-${j.job_id}`,
            data: { status: j.status },
            cellClass: ['strong', undefined, 'progress-cell', 'nowrap', 'message', 'actions'],
            cellTitle: [j.job_id],
            cells: [
              j.cluster_name,
              <StatusBadge key="status" status={j.status} />,
              isActive(j) || j.progress_stage ? <ProgressBar status={j.status} percent={j.progress_percent} stage={j.progress_stage} /> : <span className="muted">—</span>,
              when(j.created_at_utc),
              j.message ?? <span className="muted">—</span>,
              isActive(j) && (
                <button type="button" className="btn btn-small btn-danger-ghost" disabled={j.cancel_requested} onClick={() => void cancel(j.job_id)}>
                  Cancel
                </button>
              ),
            ],
          }))}
        />
      </div>
    </section>
  );
}
