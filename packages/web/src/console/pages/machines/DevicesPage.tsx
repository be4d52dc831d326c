import { type FormEvent, useMemo, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { useAccess } from '../../access';
import { DataTable } from '../../components/tables';
import { Badge, Dialog, ErrorNote, mem, PageHeader, ScrollBox, toneOf, when } from '../../components/ui';
import { useConsole } from '../../context';
import type { Device, WorkerView } from '../../metal-api';
import { Link } from '../../router';
import { AutoRegisterSwitch } from './AutoRegisterSwitch';
import { firmwareLabel, lastBootStage } from './boot-stage';
import { BatchBind } from './BatchBind';
import { BatchPower } from './BatchPower';
import { LastPowerNote, PowerPanel } from './PowerPanel';

type StateFilter = 'all' | 'pooled' | 'bound' | 'revoked';

/** MAC without separators, lower case: `00:0C:29-AA…` and `000c29aa…` match each other. */
export const macKey = (s: string) => s.toLowerCase().replace(/[^0-9a-f]/g, '');

function matches(d: Device, q: string): boolean {
  if (!q) return true;
  const t = q.trim().toLowerCase();
  const k = macKey(t);
  if (k.length >= 2 && macKey(d.mac).includes(k)) return true;
  return (d.fingerprint.serial ?? '').toLowerCase().includes(t) || (d.uuid ?? '').toLowerCase().includes(t);
}

/** The device pool (seed §16): what iPXE reported, bound or not, with bind / unbind / revoke. */
export function DevicesPage() {
  const { metal } = useConsole();
  const access = useAccess();
  // Actions the token's role lacks are not offered; the page says why (issue 20).
  const canBind = access.can('metal:device:bind');
  const canUnbind = access.can('metal:device:unbind');
  const canRevoke = access.can('metal:device:revoke');
  const [state, setState] = useState<StateFilter>('all');
  const [search, setSearch] = useState('');
  // A device reported by /devices/report shows up within one poll, no reload.
  const devices = usePoll(() => metal.devices(state), 3000, [state]);
  const workers = usePoll(() => metal.workers(), 10_000);
  const [binding, setBinding] = useState<Device | null>(null);
  const [confirm, setConfirm] = useState<{ device: Device; action: 'unbind' | 'revoke' } | null>(null);
  const [showBatch, setShowBatch] = useState(false);
  // Power (issue 21): rows picked for a batch action, and the device whose power dialog is open.
  const [picked, setPicked] = useState<string[]>([]);
  const [powering, setPowering] = useState<Device | null>(null);
  const act = useAction();
  const shown = useMemo(() => (devices.data ?? []).filter((d) => matches(d, search)), [devices.data, search]);
  const workerOf = useMemo(() => new Map((workers.data ?? []).map((w) => [w.worker_id, w])), [workers.data]);

  const runConfirm = async () => {
    if (!confirm) return;
    const { device, action } = confirm;
    const ok = await act.run(() => (action === 'unbind' ? metal.unbind(device.mac) : metal.revokeDevice(device.mac)));
    if (ok) {
      setConfirm(null);
      await devices.refresh();
    }
  };

  return (
    <>
      <PageHeader title="Devices" lead="Machines iPXE has reported (the device pool), and which worker each one boots as.">
        {canBind && (
          <button type="button" className="btn" onClick={() => setShowBatch((s) => !s)} aria-expanded={showBatch} data-testid="batch-toggle">
            Batch bind
          </button>
        )}
      </PageHeader>
      {!canBind && (
        <p className="muted card" data-testid="bind-unavailable">
          Binding is not offered: {access.reason('metal:device:bind')}.
        </p>
      )}
      <AutoRegisterSwitch />
      {showBatch && <BatchBind onDone={() => void devices.refresh()} />}
      {picked.length > 0 && <BatchPower macs={picked} onDone={() => void devices.refresh()} />}
      <section className="card" aria-labelledby="pool-title">
        <div className="card-head">
          <h2 id="pool-title">Device pool</h2>
          <span className="muted" data-testid="device-count" aria-live="polite">
            {devices.data ? `${shown.length} of ${devices.data.length}` : 'loading…'}
          </span>
        </div>
        <div className="toolbar">
          <label className="field inline">
            <span>State</span>
            <select value={state} onChange={(e) => setState(e.target.value as StateFilter)} data-testid="device-state-filter">
              <option value="all">all</option>
              <option value="pooled">pooled</option>
              <option value="bound">bound</option>
              <option value="revoked">revoked</option>
            </select>
          </label>
          <label className="field inline grow">
            <span>Search by MAC or serial</span>
            <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="00:0c:29… or serial" data-testid="device-search" />
          </label>
        </div>
        <ErrorNote error={devices.error} testId="devices-error" />
        <ErrorNote error={act.error && !confirm ? act.error : null} />
        <ScrollBox label="Scrollable table">
          <DataTable
            caption="Devices in the pool"
            testId="devices-table"
            columns={['MAC', 'State', 'Worker', 'Model', 'Serial', 'CPU and memory', 'NIC', 'Firmware', 'Last boot', 'Last seen', 'Last power action', <span key="actions" className="sr-only">Actions</span>]}
            selection={{
              selected: picked,
              onChange: setPicked,
              label: (mac) => `Select ${mac} for a power action`,
              allLabel: 'Select all shown devices for a power action',
              testId: (mac) => `pick-${macKey(mac)}`,
            }}
            empty={devices.data ? (devices.data.length === 0 ? 'No devices yet. A machine appears here when its iPXE calls /devices/report.' : 'No device matches the filter.') : null}
            rows={shown.map((d) => ({
              key: d.mac,
              testId: `device-row-${macKey(d.mac)}`,
              selectable: d.state !== 'revoked',
              cellClass: ['mono', undefined, undefined, undefined, 'mono', undefined, undefined, undefined, undefined, 'nowrap', undefined, 'actions'],
              cells: [
                d.mac,
                <>
                  <Badge tone={toneOf[d.state]}>{d.state}</Badge>
                  {d.source === 'manual' && <span className="muted small"> manual</span>}
                </>,
                d.bound_worker_id ? <Link to={`/machines/workers/${encodeURIComponent(d.bound_worker_id)}`}>{d.bound_worker_id}</Link> : '—',
                <>
                  {d.fingerprint.manufacturer ?? '—'}
                  {d.fingerprint.product && <div className="small muted">{d.fingerprint.product}</div>}
                </>,
                d.fingerprint.serial ?? '—',
                <>
                  {d.fingerprint.cpumodel ?? '—'}
                  <div className="small muted">
                    {mem(d.fingerprint.mem_total)}
                    {d.fingerprint.mem_type ? ` ${d.fingerprint.mem_type}` : ''}
                    {d.fingerprint.mem_speed ? ` @${d.fingerprint.mem_speed}` : ''}
                  </div>
                </>,
                [d.fingerprint.chip, d.fingerprint.busid].filter(Boolean).join(' ') || '—',
                <span key="fw" data-testid={`firmware-${macKey(d.mac)}`}>
                  {firmwareLabel(d.fingerprint.platform)}
                </span>,
                (() => {
                  const b = lastBootStage(d, d.bound_worker_id ? workerOf.get(d.bound_worker_id) : null);
                  return (
                    <span key="boot" data-testid={`last-boot-${macKey(d.mac)}`}>
                      {b.text}
                      {b.at && <div className="small muted">{when(b.at)}</div>}
                    </span>
                  );
                })(),
                when(d.last_seen),
                d.last_power ? <LastPowerNote last={d.last_power} testId={`last-power-${macKey(d.mac)}`} /> : '—',
                <>
                  {d.state !== 'revoked' && access.can('metal:power:operate') && (
                    <button type="button" className="btn btn-small" onClick={() => setPowering(d)} data-testid={`power-${macKey(d.mac)}`} aria-label={`Power ${d.mac}`}>
                      Power
                    </button>
                  )}
                  {d.state !== 'revoked' && canBind && (
                    <button type="button" className="btn btn-small" onClick={() => setBinding(d)} data-testid={`bind-${macKey(d.mac)}`} aria-label={`${d.state === 'bound' ? 'Re-bind' : 'Bind'} ${d.mac}`}>
                      {d.state === 'bound' ? 'Re-bind' : 'Bind'}
                    </button>
                  )}
                  {d.state === 'bound' && canUnbind && (
                    <button type="button" className="btn btn-small" onClick={() => setConfirm({ device: d, action: 'unbind' })} data-testid={`unbind-${macKey(d.mac)}`} aria-label={`Unbind ${d.mac}`}>
                      Unbind
                    </button>
                  )}
                  {d.state !== 'revoked' && canRevoke && (
                    <button type="button" className="btn btn-small btn-danger" onClick={() => setConfirm({ device: d, action: 'revoke' })} data-testid={`revoke-${macKey(d.mac)}`} aria-label={`Revoke ${d.mac}`}>
                      Revoke
                    </button>
                  )}
                </>,
              ],
            }))}
          />
        </ScrollBox>
      </section>
      {binding && (
        <BindDialog
          device={binding}
          workers={workers.data ?? []}
          devices={devices.data ?? []}
          onClose={() => setBinding(null)}
          onDone={async () => {
            setBinding(null);
            await Promise.all([devices.refresh(), workers.refresh()]);
          }}
        />
      )}
      <Dialog title={`Power ${powering?.mac ?? ''}`} open={!!powering} onClose={() => setPowering(null)} testId="power-dialog">
        {powering && <PowerPanel mac={powering.mac} last={(devices.data ?? []).find((x) => x.mac === powering.mac)?.last_power ?? powering.last_power} onDone={() => void devices.refresh()} />}
      </Dialog>
      <Dialog title={confirm?.action === 'revoke' ? 'Revoke device' : 'Unbind device'} open={!!confirm} onClose={() => setConfirm(null)} testId="confirm-dialog">
        {confirm && (
          <>
            {confirm.action === 'unbind' ? (
              <p>
                <span className="mono">{confirm.device.mac}</span> goes back to the pool. Worker <strong>{confirm.device.bound_worker_id}</strong> keeps its disks but no machine boots as it until
                another device is bound; dnsmasq is rewritten now.
              </p>
            ) : (
              <p>
                <span className="mono">{confirm.device.mac}</span> is revoked: it is unbound{confirm.device.bound_worker_id ? ` from ${confirm.device.bound_worker_id}` : ''}, gets no boot variables,
                cannot be bound again and its reports are ignored.
              </p>
            )}
            <ErrorNote error={act.error} />
            <div className="form-actions">
              <button type="button" className="btn" onClick={() => setConfirm(null)}>
                Cancel
              </button>
              <button type="button" className={`btn ${confirm.action === 'revoke' ? 'btn-danger' : 'btn-primary'}`} onClick={() => void runConfirm()} disabled={act.pending} data-testid="confirm-ok">
                {confirm.action === 'revoke' ? 'Revoke' : 'Unbind'}
              </button>
            </div>
          </>
        )}
      </Dialog>
    </>
  );
}

function BindDialog({ device, workers, devices, onClose, onDone }: { device: Device; workers: WorkerView[]; devices: Device[]; onClose: () => void; onDone: () => Promise<void> }) {
  const { metal } = useConsole();
  const [workerId, setWorkerId] = useState('');
  const [force, setForce] = useState(false);
  const act = useAction();
  const target = workers.find((w) => w.worker_id === workerId);
  const workerDevice = target?.mac ? devices.find((d) => macKey(d.mac) === macKey(target.mac ?? '')) : undefined;
  const deviceBoundElsewhere = device.state === 'bound' && device.bound_worker_id !== workerId ? device.bound_worker_id : null;
  const workerHasOther = target?.mac && macKey(target.mac) !== macKey(device.mac) ? target.mac : null;
  const needsForce = !!(deviceBoundElsewhere || workerHasOther);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() => metal.bind(device.mac, workerId, force));
    if (ok) await onDone();
  };
  return (
    <Dialog title={`Bind ${device.mac}`} open onClose={onClose} testId="bind-dialog">
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Worker</span>
          <select value={workerId} onChange={(e) => setWorkerId(e.target.value)} required data-testid="bind-worker">
            <option value="">choose a worker…</option>
            {workers.map((w) => (
              <option key={w.worker_id} value={w.worker_id}>
                {w.worker_id}
                {w.mac ? ` (bound to ${w.mac})` : ' (no device)'}
              </option>
            ))}
          </select>
        </label>
        {needsForce && (
          <div className="callout warn" data-testid="force-consequence">
            <p>
              <strong>This is a re-bind.</strong>
            </p>
            <ul>
              {deviceBoundElsewhere && (
                <li>
                  Worker <strong>{deviceBoundElsewhere}</strong> loses this machine: it stays registered with its disks, but nothing boots as it until another device is bound.
                </li>
              )}
              {workerHasOther && (
                <li>
                  Device <span className="mono">{workerHasOther}</span>
                  {workerDevice ? ` (${workerDevice.fingerprint.product ?? 'unknown product'})` : ''} is unbound from <strong>{workerId}</strong> and goes back to the pool; at its next boot it gets
                  no boot variables.
                </li>
              )}
              <li>
                At its next boot <span className="mono">{device.mac}</span> boots as <strong>{workerId}</strong>, from {workerId}’s system disks. dnsmasq is rewritten at once.
              </li>
            </ul>
            <label className="check-field">
              <input type="checkbox" checked={force} onChange={(e) => setForce(e.target.checked)} data-testid="bind-force" />
              <span>Force the re-bind (I understand the consequences above)</span>
            </label>
          </div>
        )}
        <ErrorNote error={act.error} testId="bind-error" />
        <div className="form-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={!workerId || act.pending || (needsForce && !force)} data-testid="bind-submit">
            {needsForce ? 'Force re-bind' : 'Bind'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
