import type { ClusterSummary } from '@ironlens/kind/api';
import { type MouseEvent, useState } from 'react';
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
        <table data-testid="clusters-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>In kind</th>
              <th>Kubeconfig</th>
              <th>Version</th>
              <th>Workers</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {props.clusters === undefined && (
              <tr>
                <td colSpan={6} className="muted">
                  Loading…
                </td>
              </tr>
            )}
            {props.clusters?.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  No clusters yet.
                </td>
              </tr>
            )}
            {props.clusters?.map((c) => (
              <tr key={c.name} data-testid={`cluster-row-${c.name}`}>
                <td className="strong">{c.name}</td>
                <td>{c.registered_in_kind ? <span className="check-ok">yes</span> : <span className="check-bad">no</span>}</td>
                <td>
                  {c.has_local_kubeconfig ? (
                    <a href={props.api.kubeconfigUrl(c.name)} download={`kubeconfig-${c.name}.yaml`} data-testid={`kubeconfig-${c.name}`} onClick={(e) => void download(e, c.name)}>
                      download
                    </a>
                  ) : (
                    <span className="muted">—</span>
                  )}
                </td>
                <td>{c.meta?.kubernetes_version_tag ?? <span className="muted">default</span>}</td>
                <td>{c.meta?.worker_nodes ?? <span className="muted">—</span>}</td>
                <td className="actions">
                  <button type="button" className="btn btn-small" data-testid={`workloads-${c.name}`} onClick={() => props.onShowWorkloads(c.name)}>
                    Nodes &amp; pods
                  </button>
                  <button type="button" className="btn btn-small btn-danger-ghost" data-testid={`delete-${c.name}`} disabled={deleting === c.name} onClick={() => void remove(c.name)}>
                    {deleting === c.name ? 'Deleting…' : 'Delete'}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
