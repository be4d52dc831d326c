import { usePoll } from '../../../shared/use-poll';
import { useAccess } from '../../access';
import { Badge, ErrorNote, PageHeader, ScrollBox, when } from '../../components/ui';
import { useConsole } from '../../context';
import { Link } from '../../router';

/** Registered clusters (seed 000) with their live ready state (the API probes each one's /readyz). */
export function ClustersPage() {
  const { clusters } = useConsole();
  const access = useAccess();
  // Each poll probes every cluster's API server: 15 s is live enough.
  const list = usePoll(() => clusters.clusters(true), 15_000);
  const items = list.data?.items ?? [];
  return (
    <>
      <PageHeader title="Clusters" lead="Kubernetes clusters registered for llm-d, with their readiness probed live.">
        {access.can('cluster:cluster:create') ? (
          <Link to="/clusters/new" className="btn btn-primary" data-testid="cluster-register-link">
            Register a cluster
          </Link>
        ) : (
          <span className="muted small" data-testid="cluster-register-unavailable">
            Registering is not offered: {access.reason('cluster:cluster:create')}.
          </span>
        )}
      </PageHeader>
      <section className="card" aria-labelledby="clusters-title">
        <h2 id="clusters-title">Registered clusters</h2>
        <ErrorNote error={list.error} testId="clusters-error" />
        <ScrollBox label="Scrollable table">
          <table className="table" data-testid="clusters-table">
            <caption className="sr-only">Clusters</caption>
            <thead>
              <tr>
                <th scope="col">Cluster</th>
                <th scope="col">Ready</th>
                <th scope="col">Gateway</th>
                <th scope="col">Hugging Face token</th>
                <th scope="col">Proxy</th>
                <th scope="col">Registered</th>
              </tr>
            </thead>
            <tbody>
              {items.map((c) => (
                <tr key={c.id} data-testid={`cluster-row-${c.id}`}>
                  <td>
                    {c.draft ? (
                      <Link to={`/clusters/new?draft=${encodeURIComponent(c.id)}`}>{c.name}</Link>
                    ) : (
                      <Link to={`/clusters/${encodeURIComponent(c.id)}`}>{c.name}</Link>
                    )}
                    <div className="small muted mono">{c.id}</div>
                    {c.description && <div className="small muted">{c.description}</div>}
                  </td>
                  <td>
                    {c.draft && <Badge tone="warn">draft</Badge>}{' '}
                    <Badge tone={c.ready ? 'good' : 'bad'} testId={`cluster-ready-${c.id}`}>
                      {c.ready ? 'ready' : 'not ready'}
                    </Badge>
                  </td>
                  <td className="small">{c.gatewayProvider ? `${c.gatewayProvider}${c.gatewayPort ? ` :${c.gatewayPort}` : ''}` : '—'}</td>
                  <td className="small mono">{c.hfTokenSecret ? `${c.hfTokenSecret.namespace}/${c.hfTokenSecret.name}` : '—'}</td>
                  <td className="small">{c.proxy?.mode ?? '—'}</td>
                  <td className="nowrap small">{when(c.createdAt)}</td>
                </tr>
              ))}
              {list.data && items.length === 0 && (
                <tr>
                  <td colSpan={6} className="empty">
                    No cluster registered yet.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </ScrollBox>
      </section>
    </>
  );
}
