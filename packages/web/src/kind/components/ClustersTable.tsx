import type { ClusterSummary } from '@ironlens/kind/api';
import { type MouseEvent, useState } from 'react';
import { DataTable } from '../../shared/tables';
import { type KindApi, saveBlob } from '../api';

export function ClustersTable(props: { api: KindApi; clusters?: ClusterSummary[]; error: string | null; onShowWorkloads: (name: string) => void; onChanged: () => void | Promise<void> }) {
  const [note, setNote] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  // The kubeconfig is fetched with the bearer header and saved from a Blob: a plain link cannot carry
  // the header. The link's href stays for copying the address (it works without a token).
  const download = async (e: MouseEvent, name: string) => {
    e.preventDefault();
    try {
      saveBlob(await props.api.kubeconfig(name), `kubeconfig-${name}.yaml`);
    } catch (err) {
      setNote(`kubeconfig of ${name}: ${(err as Error).message}`);
    }
  };
  const remove = async (name: string) => {
    if (!window.confirm(`Delete cluster ${name}? This runs kind delete cluster and removes clusters/${name}/.`)) return;
    setDeleting(name);
    try {
      const r = await props.api.deleteCluster(name);
      setNote(r.summary);
    } catch (e) {
      setNote((e as Error).message);
    } finally {
      setDeleting(null);
      void props.onChanged();
    }
  };
  return (
    <section className="card" data-testid="clusters">
      <div className="card-head">
        <h2>Clusters</h2>
        {props.error && <span className="form-error">{props.error}</span>}
      </div>
      {note && <p className="note">{note}</p>}
      <div className="table-wrap">
        <DataTable
          caption="Clusters"
          testId="clusters-table"
          columns={['Name', 'In kind', 'Kubeconfig', 'Version', 'Workers', <span key="actions" className="sr-only">Actions</span>]}
          empty={props.clusters === undefined ? 'Loading…' : 'No clusters yet.'}
          emptyClass="muted"
          rows={(props.clusters ?? []).map((c) => ({
            key: c.name,
            testId: `cluster-row-${c.name}`,
            cellClass: ['strong', undefined, undefined, undefined, undefined, 'actions'],
            cells: [
              c.name,
              c.registered_in_kind ? <span className="check-ok">yes</span> : <span className="check-bad">no</span>,
              c.has_local_kubeconfig ? (
                <a href={props.api.kubeconfigUrl(c.name)} download={`kubeconfig-${c.name}.yaml`} data-testid={`kubeconfig-${c.name}`} onClick={(e) => void download(e, c.name)}>
                  download
                </a>
              ) : (
                <span className="muted">—</span>
              ),
              c.meta?.kubernetes_version_tag ?? <span className="muted">default</span>,
              c.meta?.worker_nodes ?? <span className="muted">—</span>,
              <>
                <button type="button" className="btn btn-small" data-testid={`workloads-${c.name}`} onClick={() => props.onShowWorkloads(c.name)}>
                  Nodes &amp; pods
                </button>
                <button type="button" className="btn btn-small btn-danger-ghost" data-testid={`delete-${c.name}`} disabled={deleting === c.name} onClick={() => void remove(c.name)}>
                  {deleting === c.name ? 'Deleting…' : 'Delete'}
                </button>
              </>,
            ],
          }))}
        />
      </div>
    </section>
  );
}
