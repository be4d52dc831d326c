import { useState } from 'react';
import { useAction } from '../../../shared/use-poll';
import { BatchResultTable } from '../../components/tables';
import { Dialog, ErrorNote, ScrollBox, type Tone } from '../../components/ui';
import { gate, useAccess } from '../../access';
import { useConsole } from '../../context';
import type { BatchPowerResult, PowerAction } from '../../metal-api';
import { ACTIONS, resultTone } from './PowerPanel';

/** One power action on the devices selected in the pool (issue 21): one result per MAC. */
export function BatchPower({ macs, onDone }: { macs: string[]; onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const [action, setAction] = useState<PowerAction>('cycle');
  const [network, setNetwork] = useState(true);
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState<BatchPowerResult | null>(null);
  // The action the shown result is for (the select may have changed since).
  const [ran, setRan] = useState<PowerAction>('cycle');
  const act = useAction();
  const needsConfirm = ACTIONS.find((a) => a.action === action)?.confirm ?? true;
  const boots = network && (action === 'on' || action === 'cycle');

  const run = async () => {
    const r = await act.run(() => metal.powerBatch(macs, action, boots));
    setConfirming(false);
    if (r) {
      setRan(action);
      setResult(r);
      onDone();
    }
  };
  return (
    <section className="card" aria-labelledby="batch-power-title" data-testid="batch-power">
      <h2 id="batch-power-title">Power {macs.length} selected device{macs.length === 1 ? '' : 's'}</h2>
      <div className="toolbar">
        <label className="field inline">
          <span>Action</span>
          <select value={action} onChange={(e) => setAction(e.target.value as PowerAction)} data-testid="batch-power-action">
            {ACTIONS.map((a) => (
              <option key={a.action} value={a.action}>
                {a.label}
              </option>
            ))}
          </select>
        </label>
        <label className="check-field">
          <input type="checkbox" checked={network} onChange={(e) => setNetwork(e.target.checked)} data-testid="batch-power-network" />
          <span>Boot from the network once</span>
        </label>
        <button type="button" className="btn btn-primary" {...gate(access, 'metal:power:operate', macs.length === 0 || act.pending)} onClick={() => (needsConfirm ? setConfirming(true) : void run())} data-testid="batch-power-run">
          Run
        </button>
      </div>
      {!confirming && <ErrorNote error={act.error} />}
      {result && (
        <ScrollBox label="Power results">
          <BatchResultTable
            caption="Power results"
            columns={['MAC', 'Action']}
            testId="batch-power-result"
            items={[
              ...result.succeeded.map((s) => ({
                key: `s${s.mac}`,
                testId: 'power-result-succeeded',
                cellClass: ['mono'],
                cells: [s.mac, `${s.action}${s.boot ? ' (network boot)' : ''}`],
                tone: (s.last_power.result ? (resultTone[s.last_power.result] ?? 'muted') : 'good') as Tone,
                label: s.last_power.result ? s.last_power.result.replace(/_/g, ' ') : 'accepted',
                detail: `state ${s.state}`,
              })),
              ...result.failed.map((f) => ({
                key: `f${String(f.mac)}`,
                className: 'row-not_found',
                testId: 'power-result-failed',
                cellClass: ['mono'],
                cells: [String(f.mac), ran],
                tone: 'bad' as const,
                label: f.code,
                detail: f.detail,
              })),
            ]}
          />
        </ScrollBox>
      )}
      <Dialog title={`${ACTIONS.find((a) => a.action === action)?.label} ${macs.length} devices`} open={confirming} onClose={() => setConfirming(false)} testId="batch-power-confirm">
        <p>
          {macs.length} machine{macs.length === 1 ? '' : 's'} {action === 'cycle' ? 'are reset now, without a shutdown' : action === 'off' ? 'are switched off now, without a shutdown' : 'are asked to shut down'}
          {boots ? ', then boot from the network once' : ''}. Calls to one BMC go one at a time, a few BMCs at once.
        </p>
        <ErrorNote error={act.error} />
        <div className="form-actions">
          <button type="button" className="btn" onClick={() => setConfirming(false)}>
            Cancel
          </button>
          <button type="button" className="btn btn-danger" {...gate(access, 'metal:power:operate', act.pending)} onClick={() => void run()} data-testid="batch-power-confirm-ok">
            {ACTIONS.find((a) => a.action === action)?.label}
          </button>
        </div>
      </Dialog>
    </section>
  );
}
