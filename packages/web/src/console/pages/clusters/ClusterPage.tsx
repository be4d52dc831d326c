import { type FormEvent, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import type { ClusterRecord, CordonResult, Overview } from '../../clusters-api';

type ComponentStatus = Overview['kubernetes']['components']['monitoring'];
import { BatchResultTable, DataTable } from '../../components/tables';
import { Badge, bytes, Dialog, ErrorNote, Meter, PageHeader, ScrollBox, when } from '../../components/ui';
import { useConsole } from '../../context';
import { Link, navigate } from '../../router';
import { DeploymentsCard, GpuAllocationCard } from './DeploymentsCard';
import { GatewayCard } from './GatewayCard';

/** One cluster: overview charts, nodes (cordon/uncordon), components, namespaces, CRDs, token rotation, edit, delete. */
export function ClusterPage({ id }: { id: string }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const mayUpdate = access.can('cluster:cluster:update');
  const mayDelete = access.can('cluster:cluster:delete');
  // The overview reads the whole cluster: every 15 s.
  const ov = usePoll(() => clusters.overview(id), 15_000, [id]);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const c = ov.data?.cluster;
  return (
    <>
      <PageHeader title={c ? c.name : `Cluster ${id}`} lead={<Link to="/clusters">← all clusters</Link>}>
        {c && (
          <>
            <Badge tone={c.ready ? 'good' : 'bad'} testId="cluster-ready">
              {c.ready ? 'ready' : 'not ready'}
            </Badge>
            <button type="button" className="btn" onClick={() => setEditing(true)} disabled={!mayUpdate} title={mayUpdate ? undefined : access.reason('cluster:cluster:update')} data-testid="cluster-edit">
              Edit
            </button>
            <button type="button" className="btn btn-danger" onClick={() => setDeleting(true)} disabled={!mayDelete} title={mayDelete ? undefined : access.reason('cluster:cluster:delete')} data-testid="cluster-delete">
              Delete…
            </button>
          </>
        )}
      </PageHeader>
      <ErrorNote error={ov.error} testId="overview-error" />
      {ov.data && <OverviewCharts ov={ov.data} />}
      {ov.data && <Nodes id={id} ov={ov.data} onDone={() => void ov.refresh()} />}
      {ov.data && <Workloads ov={ov.data} />}
      {c && <CrdCard id={id} />}
      {c && <GatewayCard id={id} />}
      {c && <DeploymentsCard id={id} />}
      {c && <GpuAllocationCard id={id} />}
      {c && <TokenCard cluster={c} />}
      {c && editing && (
        <EditCluster
          cluster={c}
          onClose={() => setEditing(false)}
          onDone={async () => {
            setEditing(false);
            await ov.refresh();
          }}
        />
      )}
      {c && deleting && <DeleteCluster cluster={c} onClose={() => setDeleting(false)} />}
    </>
  );
}

function OverviewCharts({ ov }: { ov: Overview }) {
  const h = ov.kubernetes.hardware;
  const gpuTotal = h.usableGpuCount ?? h.totalGpuCount ?? h.gpuCount;
  return (
    <section className="card" aria-labelledby="hw-title" data-testid="overview">
      <div className="card-head">
        <h2 id="hw-title">Capacity</h2>
        <span className="muted small">as of {when(ov.fetchedAt)}</span>
      </div>
      <div className="stats">
        <div>
          <div className="muted small">Nodes</div>
          <div className="big" data-testid="ov-nodes">
            {h.nodes}
          </div>
          <div className="small muted">
            {h.gpuNodes} with GPUs · {h.cpuCores} CPU cores
          </div>
        </div>
        <div>
          <div className="muted small">GPUs</div>
          <div className="big" data-testid="ov-gpus">
            {h.gpuCount}
          </div>
          <div className="small muted">VRAM {bytes(h.vramBytes)}</div>
        </div>
        <Meter
          label="GPUs in use"
          value={h.allocatedGpuCount ?? 0}
          max={gpuTotal || 0}
          detail={h.allocatedGpuCount == null ? 'unknown' : `${h.allocatedGpuCount} used, ${h.availableGpuCount ?? '?'} free`}
          testId="ov-gpu-meter"
        />
        <Meter
          label="Memory"
          value={h.memoryUsagePercent ?? 0}
          max={h.memoryUsagePercent == null ? 0 : 100}
          detail={h.memoryUsagePercent == null ? 'unknown (no Prometheus reading)' : `${h.memoryUsagePercent.toFixed(1)}% used, ${bytes(h.memoryAvailableBytes)} free of ${bytes(h.memoryBytes)}`}
        />
        <Meter
          label="Disk"
          value={h.diskUsedBytes ?? 0}
          max={h.diskBytes ?? 0}
          detail={h.diskUsedBytes == null ? 'unknown' : `${bytes(h.diskUsedBytes)} used, ${bytes(h.diskAvailableBytes)} free`}
        />
      </div>
      <h3>GPUs per accelerator</h3>
      <div className="stats" data-testid="ov-accelerators">
        {h.accelerators.map((a) => (
          <Meter key={a.id} label={a.id} value={a.gpuCount} max={h.gpuCount || a.gpuCount} detail={`${a.gpuCount} GPU${a.gpuCount === 1 ? '' : 's'}`} />
        ))}
        {h.accelerators.length === 0 && <p className="muted">No GPU found.</p>}
      </div>
      <h3>Components</h3>
      <ul className="plain">
        {componentRows(ov.kubernetes.components).map(([k, v]) => (
          <li key={k}>
            {k}: <Badge tone={v.status === 'ready' ? 'good' : v.installed ? 'warn' : 'muted'}>{v.installed ? v.status : 'not installed'}</Badge> {v.installed && `${v.ready}/${v.desired}`}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Nodes({ id, ov, onDone }: { id: string; ov: Overview; onDone: () => void }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const [sel, setSel] = useState<string[]>([]);
  const [result, setResult] = useState<{ cordon: boolean; items: CordonResult[] } | null>(null);
  const act = useAction();
  const run = async (cordon: boolean) => {
    const r = await act.run(() => (cordon ? clusters.cordon(id, sel) : clusters.uncordon(id, sel)));
    if (r) {
      setResult({ cordon, items: r.items });
      setSel([]);
      onDone();
    }
  };
  return (
    <section className="card" aria-labelledby="nodes-title">
      <div className="card-head">
        <h2 id="nodes-title">Nodes</h2>
        <div className="page-actions">
          <button type="button" className="btn btn-small" {...gate(access, 'cluster:node:operate', !sel.length || act.pending)} onClick={() => void run(true)} data-testid="nodes-cordon">
            Cordon
          </button>
          <button type="button" className="btn btn-small" {...gate(access, 'cluster:node:operate', !sel.length || act.pending)} onClick={() => void run(false)} data-testid="nodes-uncordon">
            Uncordon
          </button>
        </div>
      </div>
      <ErrorNote error={act.error} />
      <div aria-live="polite">
        {result && (
          <ScrollBox label="Cordon results">
            <BatchResultTable
              caption={result.cordon ? 'Cordon results' : 'Uncordon results'}
              columns={['Node']}
              testId="nodes-result"
              items={result.items.map((i) => {
                const failed = !i.ok || !!i.error;
                const state = i.schedulingDisabled == null ? '' : i.schedulingDisabled ? 'scheduling disabled' : 'schedulable';
                return {
                  key: i.name,
                  className: failed ? 'row-not_found' : undefined,
                  cells: [i.name],
                  tone: failed ? ('bad' as const) : ('good' as const),
                  label: failed ? 'failed' : result.cordon ? 'cordoned' : 'uncordoned',
                  detail: failed ? <span className="error-text">{i.error ?? 'failed'}</span> : state,
                };
              })}
            />
          </ScrollBox>
        )}
      </div>
      <ScrollBox label="Nodes table">
        <DataTable
          caption="Nodes"
          testId="nodes-table"
          columns={['Node', 'Role', 'Ready', 'CPU', 'GPUs', 'VRAM', 'Kubernetes / OS']}
          selection={{ selected: sel, onChange: setSel, label: (name) => `Select node ${name}`, allLabel: 'Select all nodes' }}
          rows={ov.kubernetes.nodes.map((n) => ({
            key: n.name,
            testId: `node-row-${n.name}`,
            cellClass: [undefined, undefined, undefined, undefined, undefined, undefined, 'small'],
            cells: [
              n.name,
              n.role,
              <>
                <Badge tone={n.ready ? 'good' : 'bad'}>{n.ready ? 'ready' : 'not ready'}</Badge> {n.schedulingDisabled && <Badge tone="warn">cordoned</Badge>}
              </>,
              n.cpu,
              <>
                {n.gpuCount}{' '}
                <span className="small muted">
                  {Object.entries(n.gpuByProfile)
                    .map(([k, v]) => `${k}×${v}`)
                    .join(', ')}
                </span>
              </>,
              bytes(n.vramBytes),
              <>
                {n.version} · {n.osImage}
              </>,
            ],
          }))}
        />
      </ScrollBox>
    </section>
  );
}

function Workloads({ ov }: { ov: Overview }) {
  return (
    <section className="card" aria-labelledby="ns-title">
      <h2 id="ns-title">Namespaces and deployments</h2>
      <ScrollBox label="Deployments table">
        <DataTable
          caption="Deployments per namespace"
          testId="namespaces-table"
          columns={['Namespace', 'Deployment', 'Ready / desired', 'Available']}
          rows={ov.kubernetes.namespaces.flatMap((ns) =>
            ns.deployments.length
              ? ns.deployments.map((d) => ({ key: `${ns.name}/${d.name}`, cells: [ns.name, d.name, `${d.ready}/${d.desired}`, d.available] }))
              : [{ key: ns.name, cellClass: [undefined, 'muted'], cells: [ns.name, 'no deployments', '', ''] }],
          )}
        />
      </ScrollBox>
    </section>
  );
}

function CrdCard({ id }: { id: string }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const st = usePoll(() => clusters.crds(id), 60_000, [id]);
  const act = useAction();
  const apply = async () => {
    await act.run(() => clusters.applyCrds(id));
    await st.refresh();
  };
  return (
    <section className="card" aria-labelledby="crds-title">
      <h2 id="crds-title">CRDs</h2>
      {st.data && (
        <ul className="plain" data-testid="cluster-crds">
          <li>
            Gateway API: <Badge tone={st.data.gateway_api === 'ready' ? 'good' : 'warn'}>{st.data.gateway_api}</Badge>
          </li>
          <li>
            Inference Extension: <Badge tone={st.data.gateway_api_inference_extension === 'ready' ? 'good' : 'warn'}>{st.data.gateway_api_inference_extension}</Badge>
          </li>
        </ul>
      )}
      <button type="button" className="btn btn-small" onClick={() => void apply()} {...gate(access, 'cluster:crd:install', act.pending)} data-testid="crds-apply">
        Apply again
      </button>
      <ErrorNote error={st.error ?? act.error} />
    </section>
  );
}

function TokenCard({ cluster }: { cluster: ClusterRecord }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const [token, setToken] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await act.run(() => clusters.rotateHfSecret(cluster.id, { token }));
    if (r) {
      setToken('');
      setDone(`Token replaced in ${r.namespace}/${r.name}. Running workloads keep the old one until they are redeployed.`);
    }
  };
  return (
    <section className="card" aria-labelledby="tok-title">
      <h2 id="tok-title">Hugging Face token</h2>
      <p className="small muted">{cluster.hfTokenSecret ? `Secret ${cluster.hfTokenSecret.namespace}/${cluster.hfTokenSecret.name}` : 'No secret recorded yet.'}</p>
      <form className="form inline-form" onSubmit={submit}>
        <label className="field">
          <span>New token (write-only)</span>
          <input type="password" autoComplete="new-password" value={token} onChange={(e) => setToken(e.target.value)} required data-testid="rotate-token" />
        </label>
        <button type="submit" className="btn" {...gate(access, 'cluster:hf-token:update', !token || act.pending || !cluster.hfTokenSecret)} data-testid="rotate-submit">
          Rotate
        </button>
      </form>
      {done && (
        <p className="small" role="status">
          {done}
        </p>
      )}
      <ErrorNote error={act.error} />
    </section>
  );
}

function EditCluster({ cluster, onClose, onDone }: { cluster: ClusterRecord; onClose: () => void; onDone: () => Promise<void> }) {
  const { clusters } = useConsole();
  const [f, setF] = useState({
    name: cluster.name,
    description: cluster.description ?? '',
    gatewayPort: cluster.gatewayPort ? String(cluster.gatewayPort) : '',
    gatewayPublicUrl: cluster.gatewayPublicUrl ?? '',
    gatewayNamespace: cluster.gatewayNamespace ?? '',
    inotify: cluster.inotifyMaxUserInstances ? String(cluster.inotifyMaxUserInstances) : '8192',
  });
  const act = useAction();
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF((o) => ({ ...o, [k]: e.target.value }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() =>
      clusters.update(cluster.id, {
        name: f.name.trim(),
        description: f.description,
        gatewayPort: f.gatewayPort ? Number(f.gatewayPort) : null,
        gatewayPublicUrl: f.gatewayPublicUrl,
        gatewayNamespace: f.gatewayNamespace || null,
        inotifyMaxUserInstances: Number(f.inotify),
      }),
    );
    if (ok) await onDone();
  };
  return (
    <Dialog title={`Edit ${cluster.name}`} open onClose={onClose} testId="cluster-edit-dialog">
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Name</span>
          <input value={f.name} onChange={set('name')} required />
        </label>
        <label className="field">
          <span>Description</span>
          <input value={f.description} onChange={set('description')} />
        </label>
        <label className="field">
          <span>Gateway NodePort (30000–32767)</span>
          <input type="number" min={30000} max={32767} value={f.gatewayPort} onChange={set('gatewayPort')} />
        </label>
        <label className="field">
          <span>Gateway public URL host</span>
          <input value={f.gatewayPublicUrl} onChange={set('gatewayPublicUrl')} />
        </label>
        <label className="field">
          <span>Gateway namespace prefix (the cluster id is appended)</span>
          <input value={f.gatewayNamespace} onChange={set('gatewayNamespace')} maxLength={63} />
        </label>
        <label className="field">
          <span>fs.inotify.max_user_instances on every node</span>
          <input type="number" min={128} value={f.inotify} onChange={set('inotify')} />
        </label>
        <ErrorNote error={act.error} />
        <div className="form-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={act.pending}>
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** Delete, with what goes and what stays spelled out before it runs (seed 000's order and rules). */
function DeleteCluster({ cluster, onClose }: { cluster: ClusterRecord; onClose: () => void }) {
  const { clusters } = useConsole();
  const act = useAction();
  const run = async () => {
    const ok = await act.run(async () => {
      await clusters.remove(cluster.id);
      return true;
    });
    if (ok) navigate('/clusters');
  };
  const gwNs = cluster.gatewayNamespace ?? `lens-gateway-${cluster.id}`;
  return (
    <Dialog title={`Delete ${cluster.name}`} open onClose={onClose} testId="cluster-delete-dialog">
      <h3>Removed</h3>
      <ul data-testid="delete-removed">
        <li>
          the gateway namespace <span className="mono">{gwNs}</span> with its Gateway, payload processor, authorization and routes (must succeed, or nothing else is removed)
        </li>
        {cluster.hfTokenSecret && (
          <li>
            the Hugging Face token Secret <span className="mono">{`${cluster.hfTokenSecret.namespace}/${cluster.hfTokenSecret.name}`}</span>, and its namespace only if ironlens made it or nothing else
            lives there
          </li>
        )}
        {cluster.draft && <li>the draft’s storage volumes (PersistentVolumeClaims and PersistentVolumes)</li>}
        <li>the cluster’s record and its stored kubeconfig in ironlens</li>
      </ul>
      <h3>Kept</h3>
      <ul data-testid="delete-kept">
        <li>the cluster itself, its nodes and every other namespace and workload</li>
        <li>shared gateway controllers and other registrations’ namespaces</li>
        <li>model files on NFS or host-path storage (volumes use the Retain policy)</li>
        <li>default, kube-system, kube-public and kube-node-lease, always</li>
      </ul>
      {!cluster.draft && (
        <p className="callout warn small">A finished cluster with available llm-d deployments or storage volumes is refused (409): remove those first.</p>
      )}
      <ErrorNote error={act.error} testId="delete-error" />
      <div className="form-actions">
        <button type="button" className="btn" onClick={onClose}>
          Cancel
        </button>
        <button type="button" className="btn btn-danger" onClick={() => void run()} disabled={act.pending} data-testid="cluster-delete-confirm">
          Delete {cluster.name}
        </button>
      </div>
    </Dialog>
  );
}

/** Seed 000's components, then each accelerator profile's device plugin (Lens' acceleratorDevicePlugins). */
function componentRows(c: Overview['kubernetes']['components']): Array<[string, ComponentStatus]> {
  const { acceleratorDevicePlugins, ...rest } = c;
  return [...Object.entries(rest), ...Object.entries(acceleratorDevicePlugins ?? {}).map(([id, v]): [string, ComponentStatus] => [`device plugin (${id})`, v])];
}
