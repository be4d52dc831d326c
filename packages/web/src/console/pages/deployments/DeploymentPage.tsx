import { useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import type { DeploymentExecution } from '../../clusters-api';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, PageHeader, ScrollBox, type Tone, when } from '../../components/ui';
import { useConsole } from '../../context';
import { Link, navigate } from '../../router';

const TONE: Record<string, Tone> = { ready: 'good', rolled_back: 'warn', failed: 'bad', deploying: 'info', validated: 'info', rendered: 'info', rolling_back: 'warn', cleaned: 'muted', draft: 'muted' };

/** One model deployment (issue 28): status and stage, readiness and who asserted it, placement, pods, events, logs, the curl line. */
export function DeploymentPage({ id }: { id: string }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const d = usePoll(() => clusters.deployment(id), 2000, [id]);
  const pods = usePoll(() => clusters.deploymentPods(id), 3000, [id]);
  const events = usePoll(() => clusters.deploymentEvents(id), 5000, [id]);
  const act = useAction();
  const [logOf, setLogOf] = useState<{ pod: string; previous: boolean } | null>(null);
  const logs = usePoll(() => (logOf ? clusters.podLogs(id, logOf.pod, { previous: logOf.previous, tail: 200 }) : Promise.resolve(null)), logOf ? 5000 : 0, [id, logOf?.pod, logOf?.previous]);
  const e = d.data;
  const busy = e && ['validated', 'rendered', 'deploying', 'rolling_back'].includes(e.status);
  return (
    <>
      <PageHeader title={e ? e.display_name : `Deployment ${id}`} lead={e ? <Link to={`/clusters/${e.cluster_id}`}>← the cluster</Link> : undefined}>
        {e && (
          <>
            <Badge tone={TONE[e.status] ?? 'muted'} testId="deployment-status">
              {e.status}
            </Badge>
            <button type="button" className="btn" onClick={() => void act.run(() => clusters.cancelDeployment(id))} {...gate(access, 'deployment:run:cancel', act.pending || !busy)} data-testid="deployment-cancel">
              Cancel
            </button>
            <button
              type="button"
              className="btn btn-danger"
              onClick={async () => {
                // 204: the answer is null; an error is undefined (and shown).
                if ((await act.run(() => clusters.deleteDeployment(id))) !== undefined) navigate(`/clusters/${e.cluster_id}`);
              }}
              {...gate(access, 'deployment:execution:delete', act.pending || e.status === 'cleaned')}
              data-testid="deployment-delete"
            >
              Delete
            </button>
          </>
        )}
      </PageHeader>
      <ErrorNote error={d.error ?? act.error} testId="deployment-error" />
      {e && <Summary e={e} />}
      {e && <Readiness e={e} />}
      <section className="card" aria-labelledby="pods-title">
        <h2 id="pods-title">Pods</h2>
        <ErrorNote error={pods.error ?? pods.data?.error ?? null} />
        <ScrollBox label="Pods table">
          <DataTable
            caption="Model-server pods"
            testId="deployment-pods"
            columns={['Pod', 'Role', 'Node', 'Ready', 'Status', 'Restarts', 'Log']}
            rows={(pods.data?.pods ?? []).map((p) => ({
              key: p.name,
              testId: `pod-row-${p.name}`,
              cells: [
                p.name,
                p.role ?? '—',
                p.node_name ?? <span className="muted">not scheduled</span>,
                <Badge key="r" tone={p.ready ? 'good' : 'warn'}>
                  {p.ready ? 'ready' : 'not ready'}
                </Badge>,
                <span key="s" title={p.message ?? undefined}>
                  {p.status_reason}
                  {p.message ? <span className="small muted"> — {p.message}</span> : null}
                </span>,
                p.restarts,
                <button key="l" type="button" className="btn btn-small" onClick={() => setLogOf({ pod: p.name, previous: p.restarts > 0 })} data-testid={`pod-logs-${p.name}`}>
                  Logs
                </button>,
              ],
            }))}
          />
        </ScrollBox>
        {logOf && (
          <div data-testid="pod-log">
            <h3>
              Log of {logOf.pod}
              {logOf.previous ? ' (the previous container)' : ''}
            </h3>
            <ErrorNote error={logs.error} />
            <pre className="log">
              {logs.data?.logs || '(empty)'}
            </pre>
          </div>
        )}
      </section>
      <section className="card" aria-labelledby="events-title">
        <h2 id="events-title">Events</h2>
        <ScrollBox label="Events table">
          <DataTable
            caption="Events of the deployment's namespace"
            testId="deployment-events"
            columns={['When', 'Type', 'Reason', 'Object', 'Message']}
            rows={(events.data?.events ?? [])
              .slice(-50)
              .reverse()
              .map((ev, i) => ({ key: `${i}-${ev.object}-${ev.reason}`, cells: [when(ev.last_timestamp), ev.type, ev.reason, ev.object, ev.message] }))}
          />
        </ScrollBox>
      </section>
    </>
  );
}

function Summary({ e }: { e: DeploymentExecution }) {
  const copy = () => void navigator.clipboard?.writeText(e.curl ?? '');
  return (
    <section className="card" aria-labelledby="sum-title" data-testid="deployment-summary">
      <h2 id="sum-title">
        {e.model} <span className="small muted">({e.guide}, revision {e.revision})</span>
      </h2>
      <dl className="facts">
        <dt>Stage</dt>
        <dd data-testid="deployment-stage">{e.stage ?? '—'}</dd>
        <dt>Reason</dt>
        <dd data-testid="deployment-reason">{e.reason ?? '—'}</dd>
        <dt>Accelerators</dt>
        <dd>
          {e.accelerator} · {e.replicas} × TP {e.tensor_parallel_size}
          {e.prefill ? ` · prefill ${e.prefill.replicas} × TP ${e.prefill.tensor_parallel_size}` : ''}
          {e.pins.gpuProduct ? ` · pinned to ${e.pins.gpuProduct}` : ''}
          {e.pins.node ? ` · on ${e.pins.node}` : ''}
        </dd>
        <dt>Namespace</dt>
        <dd>{e.namespace}</dd>
        <dt>Endpoint</dt>
        <dd>{e.endpoint ?? e.baseline_endpoint ?? '—'}</dd>
        {e.smoke && (
          <>
            <dt>Smoke request</dt>
            <dd data-testid="deployment-smoke">
              answered {e.smoke.status_code} in {e.smoke.latency_ms} ms ({when(e.smoke.at)})
            </dd>
          </>
        )}
      </dl>
      {e.curl && (
        <p>
          <code data-testid="deployment-curl">{e.curl}</code>{' '}
          <button type="button" className="btn btn-small" onClick={copy} data-testid="deployment-curl-copy">
            Copy
          </button>
          <span className="small muted"> Replace $KEY with a gateway key of the cluster (shown once, when it is created).</span>
        </p>
      )}
      {e.logs && (
        <>
          <h3>Last log lines of the failing container</h3>
          <pre className="log" data-testid="deployment-logs">
            {e.logs}
          </pre>
        </>
      )}
      {e.job && (
        <>
          <h3>Stages</h3>
          <ol className="small" data-testid="deployment-stages">
            {e.job.log
              .filter((l) => l.startsWith('==> '))
              .map((l, i) => (
                <li key={`${i}-${l}`}>{l.slice(4)}</li>
              ))}
          </ol>
        </>
      )}
    </section>
  );
}

function Readiness({ e }: { e: DeploymentExecution }) {
  const r = e.readiness;
  const checks: Array<[string, { ok: boolean; reason: string | null; by: string } | null]> = r
    ? [
        ['Model-server pods', r.pods],
        ['InferencePool', r.inferencePool],
        ['HTTPRoute', r.httpRoute],
        ['Smoke request', r.smoke],
      ]
    : [];
  return (
    <section className="card" aria-labelledby="ready-title">
      <h2 id="ready-title">Readiness</h2>
      {!r && <p className="small muted">Not read yet.</p>}
      {r && (
        <ScrollBox label="Readiness table">
          <DataTable
            caption="Readiness, and who asserted each fact"
            testId="deployment-readiness"
            columns={['Check', 'State', 'By', 'Detail']}
            rows={checks
              .filter(([, c]) => c !== null)
              .map(([name, c]) => ({
                key: name,
                cells: [
                  name,
                  <Badge key="b" tone={c!.ok ? 'good' : 'warn'}>
                    {c!.ok ? 'ok' : 'not yet'}
                  </Badge>,
                  c!.by,
                  c!.reason ?? '',
                ],
              }))}
          />
        </ScrollBox>
      )}
      {e.placement && (
        <p className="small" data-testid="deployment-placement">
          Placed: {e.placement.assignments.map((a) => `${a.role} ${a.replica} → ${a.node} (${a.devices})`).join(', ') || 'no accelerators'}
        </p>
      )}
    </section>
  );
}
