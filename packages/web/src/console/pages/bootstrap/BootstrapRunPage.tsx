import { useEffect, useRef, useState } from 'react';
import { saveBlob } from '../../../shared/http';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import { BOOTSTRAP_PHASES } from '../../clusters-api';
import { Badge, ErrorNote, PageHeader, ScrollBox } from '../../components/ui';
import { useConsole } from '../../context';
import { Link } from '../../router';
import { phaseTone } from './BootstrapListPage';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** One bootstrap job: live phase and log tail, cancel, the one-time kubeconfig or the registered cluster. */
export function BootstrapRunPage({ id }: { id: string }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const [done, setDone] = useState(false);
  const st = usePoll(() => clusters.bootstrap(id), done ? 0 : 2000, [id, done]);
  // The kubeconfig is handed over once: kept in this page's memory only, never in storage.
  const [kubeconfig, setKubeconfig] = useState<string | null>(null);
  const cancel = useAction();
  const logRef = useRef<HTMLElement>(null);
  const s = st.data;
  useEffect(() => {
    if (s?.kubeconfig) setKubeconfig(s.kubeconfig);
    if (s && FINAL.has(s.phase)) setDone(true);
  }, [s]);
  useEffect(() => {
    const el = logRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [s?.logTail]);
  const clusterId = s?.clusterId ?? null;
  const current = s ? BOOTSTRAP_PHASES.indexOf(s.phase) : -1;

  return (
    <>
      <PageHeader title={`Bootstrap ${id}`} lead={<Link to="/bootstrap">← all bootstrap jobs</Link>}>
        {s && (
          <Badge tone={phaseTone(s.phase)} testId="bootstrap-phase">
            {s.phase}
          </Badge>
        )}
        {s && !FINAL.has(s.phase) && (
          <button type="button" className="btn btn-danger" onClick={() => void cancel.run(() => clusters.cancelBootstrap(id)).then(() => st.refresh())} {...gate(access, 'cluster:bootstrap:cancel', cancel.pending)} data-testid="bootstrap-cancel">
            Cancel
          </button>
        )}
      </PageHeader>
      <ErrorNote error={st.error ?? cancel.error} testId="bootstrap-run-error" />
      {s && (
        <>
          <ol className="steps" aria-label="Phases">
            {BOOTSTRAP_PHASES.map((p, i) => (
              <li key={p} className={p === s.phase ? 'current' : current > i || s.phase === 'succeeded' ? 'done' : ''} aria-current={p === s.phase ? 'step' : undefined}>
                {p}
              </li>
            ))}
          </ol>
          {s.error && (
            <p className="error-note" role="alert">
              {s.error}
            </p>
          )}
          {s.phase === 'succeeded' && (
            <section className="card" aria-labelledby="result-title" data-testid="bootstrap-result">
              <h2 id="result-title">Result</h2>
              {clusterId ? (
                <p>
                  Registered as cluster <Link to={`/clusters/${encodeURIComponent(clusterId)}`}>{clusterId}</Link>.
                </p>
              ) : kubeconfig ? (
                <>
                  <p>The admin kubeconfig is handed over once: download it now, it will not be shown again.</p>
                  <button type="button" className="btn btn-primary" onClick={() => saveBlob(new Blob([kubeconfig], { type: 'application/yaml' }), `${id}-admin.conf`)} data-testid="kubeconfig-download">
                    Download kubeconfig
                  </button>
                </>
              ) : (
                <p className="muted">The kubeconfig was already handed over (it is returned once).</p>
              )}
            </section>
          )}
          <section className="card" aria-labelledby="log-title">
            <h2 id="log-title">Log</h2>
            <ScrollBox label="Bootstrap log tail" className="log-box" boxRef={logRef}>
              <pre className="log" data-testid="bootstrap-log">
                {s.logTail || '(no output yet)'}
              </pre>
            </ScrollBox>
          </section>
        </>
      )}
    </>
  );
}
