import type { WorkloadsView } from '@ironlens/kind/api';
import { useEffect, useState } from 'react';
import type { KindApi } from '../api';

/** Nodes and pods of one cluster (`kubectl get nodes -o wide`, `kubectl get pods -A`). Escape or the backdrop closes it. */
export function WorkloadsModal({ api, name, onClose }: { api: KindApi; name: string; onClose: () => void }) {
  const [data, setData] = useState<WorkloadsView>();
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.workloads(name).then(setData, (e) => setError((e as Error).message));
  }, [api, name]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  return (
    <div className="modal-backdrop">
      <button type="button" className="modal-scrim" aria-label="Close" tabIndex={-1} onClick={onClose} data-testid="modal-backdrop" />
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="modal-title" data-testid="workloads-modal">
        <div className="modal-head">
          <h2 id="modal-title">
            {name}: nodes &amp; pods
          </h2>
          <button type="button" className="btn btn-ghost" data-testid="modal-close" onClick={onClose} aria-label="Close">
            ✕
          </button>
        </div>
        {error && <p className="form-error">{error}</p>}
        {!data && !error && <p className="muted">Asking kubectl…</p>}
        {data?.error && (
          <p className="form-error" data-testid="workloads-error">
            {data.error}
          </p>
        )}
        {data && data.nodes_output !== null && (
          <>
            <h3>
              Nodes <small className="muted">rc {data.nodes_rc}</small>
            </h3>
            <pre data-testid="workloads-nodes">{data.nodes_output}</pre>
          </>
        )}
        {data && data.pods_output !== null && (
          <>
            <h3>
              Pods <small className="muted">rc {data.pods_rc}</small>
            </h3>
            <pre data-testid="workloads-pods">{data.pods_output}</pre>
          </>
        )}
      </div>
    </div>
  );
}
