import { usePoll } from '../../../shared/use-poll';
import { useAccess } from '../../access';
import { DataTable } from '../../components/tables';
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
          <DataTable
            caption="Clusters"
            columns={['Cluster', 'Ready', 'Gateway', 'Hugging Face token', 'Proxy', 'Registered']}
            testId="clusters-table"
            empty={list.data && 'No cluster registered yet.'}
            rows={items.map((c) => ({
              key: c.id,
              testId: `cluster-row-${c.id}`,
              cellClass: [undefined, undefined, 'small', 'small mono', 'small', 'nowrap small'],
              cells: [
                <>
                  {c.draft ? (
                    <Link to={`/clusters/new?draft=${encodeURIComponent(c.id)}`}>{c.name}</Link>
                  ) : (
                    <Link to={`/clusters/${encodeURIComponent(c.id)}`}>{c.name}</Link>
                  )}
                  <div className="small muted mono">{c.id}</div>
                  {c.description && <div className="small muted">{c.description}</div>}
                </>,
                <>
                  {c.draft && <Badge tone="warn">draft</Badge>}{' '}
                  <Badge tone={c.ready ? 'good' : 'bad'} testId={`cluster-ready-${c.id}`}>
                    {c.ready ? 'ready' : 'not ready'}
                  </Badge>
                </>,
                c.gatewayProvider ? `${c.gatewayProvider}${c.gatewayPort ? ` :${c.gatewayPort}` : ''}` : '—',
                c.hfTokenSecret ? `${c.hfTokenSecret.namespace}/${c.hfTokenSecret.name}` : '—',
                c.proxy?.mode ?? '—',
                when(c.createdAt),
              ],
            }))}
          />
        </ScrollBox>
      </section>
    </>
  );
}
