import { usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, Meter, ScrollBox, type Tone } from '../../components/ui';
import { useConsole } from '../../context';
import { Link, navigate } from '../../router';

const TONE: Record<string, Tone> = { ready: 'good', rolled_back: 'warn', failed: 'bad', cleaned: 'muted' };

/** The cluster's model deployments (issue 28), with the way to deploy one. */
export function DeploymentsCard({ id }: { id: string }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const list = usePoll(() => clusters.deployments(id), 5000, [id]);
  const live = (list.data?.items ?? []).filter((d) => d.status !== 'cleaned');
  return (
    <section className="card" aria-labelledby="deployments-title" data-testid="cluster-deployments">
      <div className="card-head">
        <h2 id="deployments-title">Model deployments</h2>
        <button type="button" className="btn btn-primary btn-small" onClick={() => navigate(`/clusters/${id}/deploy`)} {...gate(access, 'deployment:run:create', false)} data-testid="deploy-open">
          Deploy a model
        </button>
      </div>
      <ErrorNote error={list.error} />
      {live.length === 0 && <p className="small muted">No model deployed here yet.</p>}
      {live.length > 0 && (
        <ScrollBox label="Deployments of the cluster">
          <DataTable
            caption="Model deployments"
            testId="cluster-deployments-table"
            columns={['Deployment', 'Model', 'Path', 'Status', 'Replicas', 'Reason']}
            rows={live.map((d) => ({
              key: d.execution_id,
              cells: [
                <Link key="l" to={`/deployments/${d.execution_id}`}>
                  {d.display_name}
                </Link>,
                d.model,
                d.guide,
                <Badge key="s" tone={TONE[d.status] ?? 'info'}>
                  {d.status}
                </Badge>,
                `${d.replicas} × TP ${d.tensor_parallel_size}`,
                <span key="r" className="small">
                  {d.reason ?? ''}
                </span>,
              ],
            }))}
          />
        </ScrollBox>
      )}
    </section>
  );
}

/** GPU allocation per node (issue 28): allocatable, requested by live pods, free; the host report of booted workers beside. */
export function GpuAllocationCard({ id }: { id: string }) {
  const { clusters } = useConsole();
  const inv = usePoll(() => clusters.accelerators(id), 15_000, [id]);
  const rows = (inv.data?.accelerators ?? []).flatMap((a) => a.nodes.map((n) => ({ a: a.accelerator, n })));
  return (
    <section className="card" aria-labelledby="alloc-title" data-testid="gpu-allocation">
      <h2 id="alloc-title">GPU allocation per node</h2>
      <ErrorNote error={inv.error} />
      {inv.data && rows.length === 0 && <p className="small muted">No node offers an accelerator.</p>}
      <div className="stats">
        {rows.map(({ a, n }) => (
          <Meter key={`${a}/${n.node}`} label={`${n.node} · ${n.product ?? a}`} value={n.requested} max={n.allocatable} detail={`${n.requested} of ${n.allocatable} allocated, ${n.free} free`} testId={`alloc-${n.node}`} />
        ))}
      </div>
      {rows.some(({ n }) => n.reported) && (
        <ScrollBox label="Host reports">
          <DataTable
            caption="Booted workers: what their host report says"
            columns={['Node', 'Worker', 'Reported GPUs', 'Mismatch']}
            rows={rows
              .filter(({ n }) => n.reported)
              .map(({ n }) => ({ key: n.node, cells: [n.node, n.reported!.workerId, `${n.reported!.accelerators} × ${n.reported!.product ?? '?'}`, n.mismatch ?? 'none'] }))}
          />
        </ScrollBox>
      )}
    </section>
  );
}
