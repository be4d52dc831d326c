import { type DragEvent, useMemo, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { BatchResultTable } from '../../components/tables';
import { ErrorNote, Options, ScrollBox } from '../../components/ui';
import { gate, useAccess } from '../../access';
import { useConsole } from '../../context';
import { type DiskBatchResult, OS_CHOICES, type WorkerView } from '../../metal-api';

/**
 * Batch disk creation (seed §7.4): the selected workers are assigned to storage agents (drag a
 * worker onto an agent, or “Take over the selected workers”), one master is chosen from the
 * agents' masters (or an empty disk), then each worker gets its disk on its agent.
 */
export function BatchDisks({ workers, selected, onDone }: { workers: WorkerView[]; selected: string[]; onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const agents = usePoll(() => metal.agents(false), 30_000);
  const masters = usePoll(() => metal.masters(), 30_000);
  const [assign, setAssign] = useState<Record<string, string>>({});
  const [type, setType] = useState<'master' | 'empty'>('master');
  const [os, setOs] = useState<string>('ubuntu');
  const [master, setMaster] = useState('');
  const [size, setSize] = useState('40G');
  const [result, setResult] = useState<DiskBatchResult | null>(null);
  const act = useAction();
  const diskAgents = (agents.data ?? []).filter((a) => a.enabled && a.role.disk);
  const chosen = workers.filter((w) => selected.includes(w.worker_id));
  const unassigned = chosen.filter((w) => !assign[w.worker_id]);

  // Master name → agents holding it.
  const masterHolders = useMemo(() => {
    const m = new Map<string, string[]>();
    for (const a of masters.data?.agents ?? []) for (const img of a.masters) m.set(img.name, [...(m.get(img.name) ?? []), a.agent]);
    return m;
  }, [masters.data]);
  const missingMaster = type === 'master' && master ? chosen.filter((w) => assign[w.worker_id] && !(masterHolders.get(master) ?? []).includes(assign[w.worker_id])) : [];

  const moveTo = (agent: string, ids: string[]) => setAssign((a) => ({ ...a, ...Object.fromEntries(ids.map((id) => [id, agent])) }));
  const drop = (agent: string) => (e: DragEvent) => {
    e.preventDefault();
    const id = e.dataTransfer.getData('text/x-worker');
    if (id) moveTo(agent, [id]);
  };
  const execute = async () => {
    const targets = chosen.filter((w) => assign[w.worker_id]).map((w) => ({ worker_id: w.worker_id, agent: assign[w.worker_id] }));
    const r = await act.run(() => metal.createDisksBatch({ type, os, name: type === 'master' ? master : null, size: type === 'empty' ? size : null, targets }));
    if (r) {
      setResult(r);
      onDone();
    }
  };
  const ready = chosen.some((w) => assign[w.worker_id]) && (type === 'empty' ? !!size : !!master);

  const chip = (w: WorkerView) => (
    <li key={w.worker_id} className="chip" draggable onDragStart={(e) => e.dataTransfer.setData('text/x-worker', w.worker_id)} data-testid={`chip-${w.worker_id}`}>
      {w.worker_id}
      {assign[w.worker_id] && (
        <button type="button" className="chip-x" aria-label={`Unassign ${w.worker_id}`} onClick={() => setAssign(({ [w.worker_id]: _, ...rest }) => rest)}>
          ×
        </button>
      )}
    </li>
  );

  return (
    <section className="card" aria-labelledby="batch-disks-title" data-testid="batch-disks">
      <h2 id="batch-disks-title">Create system disks</h2>
      <p className="muted small">Select workers in the table, then assign them to storage agents: drag a worker onto an agent, or use “Take over the selected workers”.</p>
      <div className="grid-4">
        <label className="field">
          <span>Disk source</span>
          <select value={type} onChange={(e) => setType(e.target.value as 'master' | 'empty')} data-testid="disk-type">
            <option value="master">clone a master image</option>
            <option value="empty">empty disk</option>
          </select>
        </label>
        <label className="field">
          <span>OS</span>
          <select value={os} onChange={(e) => setOs(e.target.value)} data-testid="disk-os">
            <Options values={OS_CHOICES} />
          </select>
        </label>
        {type === 'master' ? (
          <label className="field">
            <span>Master (from the agents’ masters)</span>
            <select value={master} onChange={(e) => setMaster(e.target.value)} data-testid="disk-master">
              <option value="">choose a master…</option>
              {(masters.data?.agents ?? []).map((a) => (
                <optgroup key={a.agent} label={`${a.agent}${a.error ? ` (error: ${a.error})` : ''}`}>
                  {a.masters.map((m) => (
                    <option key={`${a.agent}/${m.name}`} value={m.name}>
                      {m.name}
                    </option>
                  ))}
                </optgroup>
              ))}
            </select>
          </label>
        ) : (
          <label className="field">
            <span>Size</span>
            <input value={size} onChange={(e) => setSize(e.target.value)} placeholder="40G" data-testid="disk-size" />
          </label>
        )}
      </div>
      <ErrorNote error={agents.error ?? masters.error} />
      <div className="lanes">
        <div className="lane">
          <h3>Selected, not assigned</h3>
          <ul className="chips" data-testid="lane-unassigned">
            {unassigned.map(chip)}
            {unassigned.length === 0 && <li className="muted small">{chosen.length ? 'every selected worker is assigned' : 'no worker selected'}</li>}
          </ul>
        </div>
        {diskAgents.map((a) => (
          // biome-ignore lint/a11y/noStaticElementInteractions: the drop zone; the button below is the keyboard path
          <div key={a.id} className="lane drop" onDragOver={(e) => e.preventDefault()} onDrop={drop(a.id)} data-testid={`lane-${a.id}`}>
            <h3>{a.id}</h3>
            <p className="muted small">{(masters.data?.agents.find((m) => m.agent === a.id)?.masters ?? []).map((m) => m.name).join(', ') || 'no masters'}</p>
            <ul className="chips">{chosen.filter((w) => assign[w.worker_id] === a.id).map(chip)}</ul>
            <button type="button" className="btn btn-small" disabled={chosen.length === 0} onClick={() => moveTo(a.id, chosen.map((w) => w.worker_id))} data-testid={`take-over-${a.id}`}>
              Take over the selected workers
            </button>
          </div>
        ))}
        {agents.data && diskAgents.length === 0 && <p className="muted">No enabled disk agent: register one under Storage.</p>}
      </div>
      {missingMaster.length > 0 && (
        <p className="callout warn" data-testid="master-missing">
          {master} is not on the agent of {missingMaster.map((w) => w.worker_id).join(', ')}: those disks will fail.
        </p>
      )}
      <div className="form-actions start">
        <button type="button" className="btn btn-primary" {...gate(access, 'metal:disk:write', !ready || act.pending)} onClick={() => void execute()} data-testid="disks-create">
          {act.pending ? 'Creating disks…' : `Create ${chosen.filter((w) => assign[w.worker_id]).length} disk(s)`}
        </button>
      </div>
      {act.pending && (
        <p className="muted" role="status">
          Cloning can take a while on agents without reflink; the page updates when the agents answer.
        </p>
      )}
      <ErrorNote error={act.error} testId="disks-error" />
      {result && (
        <ScrollBox label="Scrollable table">
          <BatchResultTable
            caption="Disk creation results"
            columns={['Worker']}
            testId="disks-result"
            items={[
              ...result.succeeded.map((r) => ({
                key: `s${r.worker_id}`,
                cellClass: [undefined, undefined, 'mono'],
                cells: [r.worker_id],
                tone: 'good' as const,
                label: 'created',
                detail: `${r.iqn} on ${r.agent}`,
              })),
              ...result.skipped.map((r) => ({ key: `k${r.worker_id}`, cells: [r.worker_id], tone: 'warn' as const, label: 'skipped', detail: r.reason })),
              ...result.failed.map((r) => ({ key: `f${r.worker_id}`, cells: [r.worker_id], tone: 'bad' as const, label: 'failed', detail: r.error })),
            ]}
          />
        </ScrollBox>
      )}
    </section>
  );
}
