import type { HealthView, StatsView } from '@ironlens/kind/api';
import { Check, StatusBadge } from './StatusBadge';

/** One card: the panel and its environment (tools, engine) with the dashboard statistics. */
export function EnvironmentCard(props: { health?: HealthView; healthError: string | null; stats?: StatsView; apiBase: string; onRefresh: () => void }) {
  const { health, stats } = props;
  return (
    <section className="card hero" data-testid="environment">
      <div className="hero-head">
        <div>
          <h1>Local kind clusters</h1>
          <p className="muted">
            Create, inspect and delete <code>kind</code> clusters on this machine. API at <code>{props.apiBase}</code>.
          </p>
        </div>
        <div className="hero-status">
          {health ? <StatusBadge status={health.status} /> : <span className="badge badge-muted">{props.healthError ? 'unreachable' : 'checking…'}</span>}
          <button type="button" className="btn btn-ghost" onClick={props.onRefresh}>
            Refresh
          </button>
        </div>
      </div>
      <div className="env-row">
        {health ? (
          <>
            <Check ok={health.kind_in_path} label="kind on PATH" />
            <Check ok={health.kubectl_in_path} label="kubectl on PATH" />
            <Check ok={health.container_engine_ok} label={`${health.container_cli} engine`} />
          </>
        ) : (
          <span className="muted">{props.healthError ?? 'Checking the environment…'}</span>
        )}
      </div>
      {health?.container_engine_detail && <p className="env-detail">{health.container_engine_detail}</p>}
      <dl className="stats" data-testid="stats">
        <Stat label="kind clusters" value={stats?.kind_clusters_count} />
        <Stat label="cluster folders" value={stats?.local_cluster_dirs_count} />
        <Stat label="workers (meta)" value={stats ? (stats.total_workers_from_meta ?? '—') : undefined} />
        <Stat label="jobs" value={stats?.jobs_total} />
        <Stat label="failed jobs" value={stats?.jobs_recent_failed} tone={stats && stats.jobs_recent_failed > 0 ? 'bad' : undefined} />
      </dl>
    </section>
  );
}

function Stat({ label, value, tone }: { label: string; value: number | string | undefined; tone?: string }) {
  return (
    <div className={`stat ${tone ? `stat-${tone}` : ''}`}>
      <dt>{label}</dt>
      <dd>{value ?? '·'}</dd>
    </div>
  );
}
