import { type FormEvent, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, PageHeader, ScrollBox, type Tone, when } from '../../components/ui';
import { useConsole } from '../../context';
import type { RolloutWorkerView } from '../../metal-api';
import { Link, navigate } from '../../router';

/** The tone of a rollout's state and of a worker's phase. */
export const rolloutTone: Record<string, Tone> = {
  running: 'info',
  pausing: 'warn',
  paused: 'warn',
  aborting: 'warn',
  aborted: 'muted',
  succeeded: 'good',
  queued: 'muted',
  done: 'good',
  rolled_back: 'bad',
  rollback_failed: 'bad',
  rolling_back: 'warn',
  pending: 'muted',
  failed: 'bad',
};

/**
 * Rollouts (issue 31): a new master across workers, batch by batch. The list, a form to start one
 * (worker ids or a prefix, the master from the agents' listing, max unavailable as a count or a
 * percent), and a link to each one's page.
 */
export function RolloutsPage() {
  const { metal } = useConsole();
  const list = usePoll(() => metal.rollouts(), 5000);
  return (
    <>
      <PageHeader title="Rollouts" lead="A new master image across running workers: drain, re-clone beside the old disk, power-cycle with a one-time network boot, prove the boot, re-admit — batch by batch, with a rollback." />
      <NewRollout />
      <section className="card" aria-labelledby="ro-list-title">
        <h2 id="ro-list-title">Rollouts</h2>
        <ErrorNote error={list.error} testId="rollouts-error" />
        <ScrollBox label="Scrollable table">
          <DataTable
            caption="Rollouts"
            columns={['Rollout', 'Master', 'State', 'Progress', 'Max unavailable', 'Started', 'By', 'Reason']}
            testId="rollouts-table"
            empty="No rollout yet."
            rows={(list.data?.rollouts ?? []).map((r) => ({
              key: r.id,
              testId: `rollout-${r.id}`,
              data: { state: r.state },
              cellClass: ['mono', 'mono'],
              cells: [
                <Link key="id" to={`/machines/rollouts/${encodeURIComponent(r.id)}`}>
                  {r.id}
                </Link>,
                r.master,
                <Badge key="st" tone={rolloutTone[r.state] ?? 'muted'}>
                  {r.state}
                </Badge>,
                `${r.counts.done} done, ${r.counts.rolled_back} rolled back, ${r.counts.in_flight} in flight, ${r.counts.queued} queued of ${r.counts.total}`,
                `${r.max_unavailable} (batches of ${r.batch_size})`,
                when(r.created_at),
                r.actor ?? '—',
                r.reason ?? '',
              ],
            }))}
          />
        </ScrollBox>
      </section>
    </>
  );
}

function NewRollout() {
  const { metal } = useConsole();
  const access = useAccess();
  const masters = usePoll(() => metal.masters(), 0);
  const [workers, setWorkers] = useState('');
  const [prefix, setPrefix] = useState('');
  const [master, setMaster] = useState('');
  const [maxUnavailable, setMaxUnavailable] = useState('1');
  const act = useAction();
  const names = [...new Set((masters.data?.agents ?? []).flatMap((a) => a.masters.map((m) => m.name)))].sort();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ids = workers
      .split(/[\s,]+/)
      .map((s) => s.trim())
      .filter(Boolean);
    const mu = /^\d+$/.test(maxUnavailable.trim()) ? Number(maxUnavailable.trim()) : maxUnavailable.trim();
    const created = await act.run(() => metal.createRollout({ ...(ids.length ? { workers: ids } : { selector: { prefix: prefix.trim() } }), master, max_unavailable: mu }));
    if (created) navigate(`/machines/rollouts/${encodeURIComponent(created.id)}`);
  };
  return (
    <section className="card" aria-labelledby="ro-new-title">
      <h2 id="ro-new-title">New rollout</h2>
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Workers (ids, separated by spaces or commas)</span>
          <input value={workers} onChange={(e) => setWorkers(e.target.value)} placeholder="gpu-01 gpu-02" data-testid="rollout-workers" />
        </label>
        <label className="field">
          <span>…or every worker whose id starts with</span>
          <input value={prefix} onChange={(e) => setPrefix(e.target.value)} placeholder="gpu-" disabled={workers.trim() !== ''} data-testid="rollout-prefix" />
        </label>
        <label className="field">
          <span>Master image</span>
          <select value={master} onChange={(e) => setMaster(e.target.value)} required data-testid="rollout-master">
            <option value="">choose a master…</option>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Max unavailable (a count, or a percent like 10%)</span>
          <input value={maxUnavailable} onChange={(e) => setMaxUnavailable(e.target.value)} required pattern="^([1-9][0-9]*|[1-9][0-9]?%|100%)$" data-testid="rollout-max-unavailable" />
        </label>
        <button type="submit" className="btn btn-primary" {...gate(access, 'metal:rollout:write', act.pending || !master || (!workers.trim() && !prefix.trim()))} data-testid="rollout-create">
          Start the rollout
        </button>
      </form>
      <ErrorNote error={masters.error ?? act.error} testId="rollout-create-error" />
    </section>
  );
}

/** One rollout: its state, pause/resume/abort, every batch and every worker's steps. */
export function RolloutPage({ id }: { id: string }) {
  const { metal } = useConsole();
  const access = useAccess();
  const r = usePoll(() => metal.rollout(id), 3000, [id]);
  const act = useAction();
  const ro = r.data;
  const control = (what: 'pause' | 'resume' | 'abort') => act.run(() => (what === 'pause' ? metal.pauseRollout(id) : what === 'resume' ? metal.resumeRollout(id) : metal.abortRollout(id))).then(() => r.refresh());
  return (
    <>
      <PageHeader title={`Rollout ${id}`} lead={<Link to="/machines/rollouts">← all rollouts</Link>}>
        {ro && (
          <Badge tone={rolloutTone[ro.state] ?? 'muted'} testId="rollout-state">
            {ro.state}
          </Badge>
        )}
      </PageHeader>
      <ErrorNote error={r.error ?? act.error} testId="rollout-error" />
      {ro && (
        <>
          <section className="card" aria-labelledby="ro-ov-title">
            <h2 id="ro-ov-title">Overview</h2>
            <dl className="facts">
              <dt>Master</dt>
              <dd className="mono">{ro.master}</dd>
              <dt>Batches</dt>
              <dd>
                {ro.batches.length} of up to {ro.batch_size} (max unavailable {ro.max_unavailable}); now {ro.current_batch === null ? '—' : ro.current_batch + 1}
              </dd>
              <dt>Workers</dt>
              <dd data-testid="rollout-counts">
                {ro.counts.done} done, {ro.counts.rolled_back} rolled back, {ro.counts.in_flight} in flight, {ro.counts.queued} queued
              </dd>
              <dt>Started</dt>
              <dd>
                {when(ro.created_at)} by {ro.actor ?? '—'}
              </dd>
              {ro.reason && (
                <>
                  <dt>Reason</dt>
                  <dd data-testid="rollout-reason">{ro.reason}</dd>
                </>
              )}
            </dl>
            <div className="toolbar">
              <button type="button" className="btn" {...gate(access, 'metal:rollout:write', act.pending || ro.state !== 'running')} onClick={() => void control('pause')} data-testid="rollout-pause">
                Pause after this batch
              </button>
              <button type="button" className="btn" {...gate(access, 'metal:rollout:write', act.pending || ro.state !== 'paused')} onClick={() => void control('resume')} data-testid="rollout-resume">
                Resume
              </button>
              <button type="button" className="btn btn-danger" {...gate(access, 'metal:rollout:write', act.pending || !['running', 'pausing', 'paused'].includes(ro.state))} onClick={() => void control('abort')} data-testid="rollout-abort">
                Abort (roll back the batch in flight)
              </button>
            </div>
          </section>
          {ro.batches.map((b) => (
            <section key={b.index} className="card" aria-labelledby={`ro-b${b.index}`} data-testid={`rollout-batch-${b.index}`}>
              <h2 id={`ro-b${b.index}`}>
                Batch {b.index + 1} <Badge tone={rolloutTone[b.state] ?? 'muted'}>{b.state}</Badge>
              </h2>
              <ScrollBox label="Scrollable table">
                <DataTable
                  caption={`Batch ${b.index + 1}`}
                  columns={['Worker', 'Phase', 'Node', 'Old disk', 'New disk', 'Last step', 'Reason']}
                  rows={ro.workers.filter((w) => w.batch === b.index).map((w) => workerRow(w))}
                />
              </ScrollBox>
            </section>
          ))}
        </>
      )}
    </>
  );
}

function workerRow(w: RolloutWorkerView) {
  const last = w.steps.at(-1);
  return {
    key: w.worker_id,
    testId: `rollout-worker-${w.worker_id}`,
    data: { phase: w.phase },
    cellClass: ['mono', undefined, 'mono', 'mono', 'mono'],
    cells: [
      <Link key="w" to={`/machines/workers/${encodeURIComponent(w.worker_id)}`}>
        {w.worker_id}
      </Link>,
      <Badge key="p" tone={rolloutTone[w.phase] ?? 'info'}>
        {w.phase}
      </Badge>,
      w.node ? `${w.node.name} (${w.node.cluster_id})` : '—',
      w.old_disk ? `${w.old_disk.iqn}${w.old_disk.master ? ` (${w.old_disk.master})` : ''}` : '—',
      w.new_disk ? w.new_disk.iqn : '—',
      last ? `${when(last.at)} ${last.step} ${last.status}${last.detail ? `: ${last.detail}` : ''}` : '—',
      w.reason ?? '',
    ],
  };
}
