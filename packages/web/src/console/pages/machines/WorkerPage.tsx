import { type FormEvent, useEffect, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, Options, PageHeader, ScrollBox, toneOf, when } from '../../components/ui';
import { gate, useAccess } from '../../access';
import { useConsole } from '../../context';
import { MENU_ITEMS, OS_CHOICES, type ReconcileResult, type WorkerStatus, type WorkerView } from '../../metal-api';
import { Link, navigate } from '../../router';
import { FixedAddressForm, HostReport } from './HostReport';
import { PowerPanel } from './PowerPanel';

/** One worker: readiness, binding, disks, default OS and boot menu, install CD, ledger vs reality. */
export function WorkerPage({ id }: { id: string }) {
  const { metal } = useConsole();
  const worker = usePoll(() => metal.worker(id), 5000, [id]);
  const status = usePoll(() => metal.workerStatus(id), 15_000, [id]);
  const w = worker.data;

  return (
    <>
      <PageHeader title={`Worker ${id}`} lead={<Link to="/machines/workers">← all workers</Link>}>
        {w && (
          <Badge tone={toneOf[w.readiness]} testId="worker-readiness">
            {w.readiness}
          </Badge>
        )}
      </PageHeader>
      <ErrorNote error={worker.error} testId="worker-error" />
      {w && (
        <>
          <section className="card" aria-labelledby="ov-title">
            <h2 id="ov-title">Overview</h2>
            <dl className="facts">
              <dt>Hostname</dt>
              <dd>{w.hostname}</dd>
              <dt>Architecture</dt>
              <dd>{w.arch}</dd>
              <dt>State</dt>
              <dd>{w.state}</dd>
              <dt>Bound device</dt>
              <dd className="mono" data-testid="worker-mac">
                {w.mac ?? 'none'}
              </dd>
              <dt>Default OS</dt>
              <dd data-testid="worker-default-os">{w.default_os ?? '—'}</dd>
              <dt>Install CD</dt>
              <dd>{w.cd ? `${w.cd.iso} on ${w.cd.agent} (${w.cd.iqn})` : 'none'}</dd>
            </dl>
          </section>
          <HostReport w={w} />
          <MacForm id={id} current={w.mac} onDone={() => void worker.refresh()} />
          <FixedAddressForm id={id} current={w.fixed_address ?? null} onDone={() => void worker.refresh()} />
          {w.mac && <WorkerPower mac={w.mac} />}
          <Disks id={id} onDone={() => void Promise.all([worker.refresh(), status.refresh()])} disks={w.disks} />
          <BootForm id={id} defaultOs={w.default_os ?? null} menuDefault={w.boot?.menu_default ?? null} menuTimeout={w.boot?.menu_timeout ?? null} onDone={() => void worker.refresh()} />
          <section className="card" aria-labelledby="st-title">
            <h2 id="st-title">Ledger and reality</h2>
            <p className="muted small">What dnsmasq and the storage agents hold for this worker right now.</p>
            <ErrorNote error={status.error} />
            {status.data && (
              <ul className="plain" data-testid="worker-status">
                <li>dnsmasq: {status.data.actual.dnsmasq ? `${status.data.actual.dnsmasq.hostname} ↔ ${status.data.actual.dnsmasq.mac}` : 'no line'}</li>
                {status.data.actual.disks.map((d) => (
                  <li key={d.os}>
                    disk {d.os}: {d.exists === true ? <Badge tone="good">target present</Badge> : d.exists === false ? <Badge tone="bad">target missing</Badge> : <Badge tone="warn">unknown</Badge>}
                    {d.error ? ` ${d.error}` : ''}
                  </li>
                ))}
                {status.data.actual.cd && <li>CD: {status.data.actual.cd.exists ? 'target present' : 'target missing'}</li>}
                <li>
                  booted from: <span className="mono">{status.data.actual.booted_from ?? '—'}</span>
                  {status.data.actual.image ? ` (${status.data.actual.image.master}, build ${status.data.actual.image.build})` : ''}
                </li>
              </ul>
            )}
            <Drift id={id} items={status.data?.drift ?? []} onDone={() => void Promise.all([worker.refresh(), status.refresh()])} />
          </section>
          <ImageHistory entries={w.image_history ?? []} />
          <DeleteWorker id={id} />
        </>
      )}
    </>
  );
}

function MacForm({ id, current, onDone }: { id: string; current: string | null; onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const pooled = usePoll(() => metal.devices('pooled'), 0);
  const [mac, setMac] = useState('');
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() => metal.setWorkerMac(id, mac));
    if (ok) {
      setMac('');
      onDone();
    }
  };
  return (
    <section className="card" aria-labelledby="mac-title">
      <h2 id="mac-title">Device binding</h2>
      <form className="form inline-form" onSubmit={submit}>
        <label className="field">
          <span>{current ? 'Replace the bound device with a pooled one' : 'Bind a pooled device'}</span>
          <select value={mac} onChange={(e) => setMac(e.target.value)} required data-testid="worker-set-mac">
            <option value="">choose a device…</option>
            {(pooled.data ?? []).map((d) => (
              <option key={d.mac} value={d.mac}>
                {d.mac} {d.fingerprint.serial ? `serial ${d.fingerprint.serial}` : ''}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="btn" {...gate(access, 'metal:worker:write', !mac || act.pending)} data-testid="worker-set-mac-submit">
          Set MAC
        </button>
      </form>
      {current && <p className="muted small">Replacing it returns {current} to the pool.</p>}
      <ErrorNote error={pooled.error ?? act.error} />
    </section>
  );
}

function Disks({ id, disks, onDone }: { id: string; disks: Array<{ os: string; agent: string; iqn: string; filename: string; source: { type: string; name?: string; size?: string } }>; onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const masters = usePoll(() => metal.masters(), 0);
  const agents = usePoll(() => metal.agents(false), 0);
  const [f, setF] = useState({ type: 'master' as 'master' | 'empty', os: 'ubuntu', master: '', size: '40G', agent: '' });
  const [deleteFile, setDeleteFile] = useState(false);
  const act = useAction();
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF((o) => ({ ...o, [k]: e.target.value }));
  // The master dropdown lists the chosen agent's masters (all agents' when the placement is automatic).
  const masterAgents = (masters.data?.agents ?? []).filter((a) => !f.agent || a.agent === f.agent);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() =>
      metal.createDisk(id, { type: f.type, os: f.os, name: f.type === 'master' ? f.master : null, size: f.type === 'empty' ? f.size : null, disk_agent: f.agent || null }),
    );
    if (ok) onDone();
  };
  const remove = async (os: string) => {
    const ok = await act.run(() => metal.deleteDisk(id, os, deleteFile));
    if (ok) onDone();
  };
  return (
    <section className="card" aria-labelledby="disks-title">
      <h2 id="disks-title">System disks</h2>
      <ScrollBox label="Scrollable table">
        <DataTable
          caption="System disks"
          columns={['OS', 'Agent', 'IQN', 'File', 'Source', <span key="a" className="sr-only">Actions</span>]}
          testId="worker-disks"
          empty="No system disk yet."
          rows={disks.map((d) => ({
            key: d.os,
            testId: `disk-${d.os}`,
            cellClass: [undefined, undefined, 'mono', 'mono'],
            cells: [
              d.os,
              d.agent,
              d.iqn,
              d.filename,
              d.source.type === 'master' ? `master ${d.source.name ?? ''}` : `empty ${d.source.size ?? ''}`,
              <button key="d" type="button" className="btn btn-small btn-danger" onClick={() => void remove(d.os)} {...gate(access, 'metal:disk:delete', act.pending)} data-testid={`disk-delete-${d.os}`} aria-label={`Delete the ${d.os} disk`}>
                Delete
              </button>,
            ],
          }))}
        />
      </ScrollBox>
      {disks.length > 0 && (
        <label className="check-field">
          <input type="checkbox" checked={deleteFile} onChange={(e) => setDeleteFile(e.target.checked)} />
          <span>When deleting a disk, also delete its image file</span>
        </label>
      )}
      <form className="form" onSubmit={submit} aria-label="Add a system disk">
        <h3>Add a disk</h3>
        <div className="grid-4">
          <label className="field">
            <span>OS</span>
            <select value={f.os} onChange={set('os')} data-testid="add-disk-os">
              <Options values={OS_CHOICES} />
            </select>
          </label>
          <label className="field">
            <span>Storage agent</span>
            <select value={f.agent} onChange={set('agent')} data-testid="add-disk-agent">
              <option value="">automatic (fewest disks)</option>
              {(agents.data ?? [])
                .filter((a) => a.enabled && a.role.disk)
                .map((a) => (
                  <option key={a.id} value={a.id}>
                    {a.id}
                  </option>
                ))}
            </select>
          </label>
          <label className="field">
            <span>Source</span>
            <select value={f.type} onChange={set('type')} data-testid="add-disk-type">
              <option value="master">clone a master</option>
              <option value="empty">empty disk</option>
            </select>
          </label>
          {f.type === 'master' ? (
            <label className="field">
              <span>Master</span>
              <select value={f.master} onChange={set('master')} required data-testid="add-disk-master">
                <option value="">choose a master…</option>
                {masterAgents.map((a) => (
                  <optgroup key={a.agent} label={a.agent}>
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
              <input value={f.size} onChange={set('size')} required placeholder="40G" />
            </label>
          )}
        </div>
        <div className="form-actions start">
          <button type="submit" className="btn btn-primary" {...gate(access, 'metal:disk:write', act.pending)} data-testid="add-disk-submit">
            {act.pending ? 'Creating…' : 'Create disk'}
          </button>
        </div>
      </form>
      <ErrorNote error={masters.error ?? act.error} testId="disk-error" />
    </section>
  );
}

function BootForm({ id, defaultOs, menuDefault, menuTimeout, onDone }: { id: string; defaultOs: string | null; menuDefault: string | null; menuTimeout: number | null; onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const [f, setF] = useState({ os: defaultOs ?? '', menu_default: menuDefault ?? '', menu_timeout: menuTimeout == null ? '' : String(menuTimeout) });
  useEffect(() => setF({ os: defaultOs ?? '', menu_default: menuDefault ?? '', menu_timeout: menuTimeout == null ? '' : String(menuTimeout) }), [defaultOs, menuDefault, menuTimeout]);
  const act = useAction();
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF((o) => ({ ...o, [k]: e.target.value }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() => metal.setDefaultOs(id, { os: f.os || null, menu_default: f.menu_default || null, menu_timeout: f.menu_timeout === '' ? null : Number(f.menu_timeout) }));
    if (ok) onDone();
  };
  return (
    <section className="card" aria-labelledby="boot-title">
      <h2 id="boot-title">Default OS and boot menu</h2>
      <form className="form" onSubmit={submit}>
        <div className="grid-4">
          <label className="field">
            <span>Default OS</span>
            <select value={f.os} onChange={set('os')} data-testid="boot-os">
              <option value="">none</option>
              <Options values={OS_CHOICES} />
            </select>
          </label>
          <label className="field">
            <span>Menu default</span>
            <select value={f.menu_default} onChange={set('menu_default')} data-testid="boot-menu-default">
              <option value="">the default OS</option>
              <Options values={MENU_ITEMS} />
            </select>
          </label>
          <label className="field">
            <span>Menu timeout (ms)</span>
            <input type="number" min={0} value={f.menu_timeout} onChange={set('menu_timeout')} data-testid="boot-menu-timeout" />
          </label>
        </div>
        <div className="form-actions start">
          <button type="submit" className="btn btn-primary" {...gate(access, 'metal:worker:write', act.pending)} data-testid="boot-save">
            Save boot settings
          </button>
        </div>
      </form>
      <ErrorNote error={act.error} testId="boot-error" />
    </section>
  );
}

function DeleteWorker({ id }: { id: string }) {
  const { metal } = useConsole();
  const access = useAccess();
  const [armed, setArmed] = useState(false);
  const [deleteDisk, setDeleteDisk] = useState(false);
  const act = useAction();
  const run = async () => {
    const ok = await act.run(() => metal.deleteWorker(id, deleteDisk));
    if (ok) navigate('/machines/workers');
  };
  return (
    <section className="card danger-zone" aria-labelledby="del-title">
      <h2 id="del-title">Delete this worker</h2>
      <p className="muted small">Its device returns to the pool, its disk targets and install CD are removed from the agents.</p>
      <label className="check-field">
        <input type="checkbox" checked={deleteDisk} onChange={(e) => setDeleteDisk(e.target.checked)} />
        <span>Also delete the disk image files</span>
      </label>
      <div className="form-actions start">
        {armed ? (
          <>
            <button type="button" className="btn btn-danger" onClick={() => void run()} {...gate(access, 'metal:worker:delete', act.pending)} data-testid="worker-delete-yes">
              Yes, delete {id}
            </button>
            <button type="button" className="btn" onClick={() => setArmed(false)}>
              Keep it
            </button>
          </>
        ) : (
          <button type="button" className="btn btn-danger" onClick={() => setArmed(true)} {...gate(access, 'metal:worker:delete')} data-testid="worker-delete-arm">
            Delete worker…
          </button>
        )}
      </div>
      <ErrorNote error={act.error} />
    </section>
  );
}

/** The bound device's power (issue 21), with its last action's proof of boot, polled. */
function WorkerPower({ mac }: { mac: string }) {
  const { metal } = useConsole();
  const device = usePoll(() => metal.device(mac), 5000, [mac]);
  return <PowerPanel mac={mac} last={device.data?.last_power} onDone={() => void device.refresh()} />;
}

/** What is out of step (issue 31), and the reconcile of what ironlens owns. */
function Drift({ id, items, onDone }: { id: string; items: NonNullable<WorkerStatus['drift']>; onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const act = useAction();
  const [done, setDone] = useState<ReconcileResult | null>(null);
  const summary = done ? (done.actions.length ? done.actions.map((a) => `${a.action} ${a.target}: ${a.ok ? 'ok' : a.detail}`).join('; ') : 'nothing to do') : null;
  if (!items.length) {
    return (
      <p className="muted small" data-testid="worker-drift-none">
        Nothing out of step.{summary ? ` Reconciled: ${summary}.` : ''}
      </p>
    );
  }
  const reconcile = async () => {
    const r = await act.run(() => metal.reconcileWorker(id));
    if (r) {
      setDone(r);
      onDone();
    }
  };
  return (
    <div data-testid="worker-drift">
      <h3>Out of step</h3>
      <ul className="plain">
        {items.map((d) => (
          <li key={`${d.kind}-${d.expected}`} data-kind={d.kind}>
            <Badge tone={d.fixable ? 'warn' : 'bad'}>{d.kind}</Badge> {d.detail}
          </li>
        ))}
      </ul>
      {items.some((d) => d.fixable) && (
        <button type="button" className="btn" {...gate(access, 'metal:drift:reconcile', act.pending)} onClick={() => void reconcile()} data-testid="worker-reconcile">
          Reconcile
        </button>
      )}
      {summary && <p className="muted small">Reconciled: {summary}.</p>}
      <ErrorNote error={act.error} />
    </div>
  );
}

/** Which masters the worker's system disk came from, newest first (issue 31). */
function ImageHistory({ entries }: { entries: NonNullable<WorkerView['image_history']> }) {
  return (
    <section className="card" aria-labelledby="img-title">
      <h2 id="img-title">Image history</h2>
      <ScrollBox label="Scrollable table">
        <DataTable
          caption="Image history"
          columns={['When', 'Master', 'Disk', 'Outcome', 'By', 'Rollout', 'Detail']}
          testId="worker-image-history"
          empty="No disk made from a master yet."
          rows={entries.map((e, i) => ({
            key: `${e.at}-${i}`,
            data: { outcome: e.outcome },
            cellClass: [undefined, 'mono', 'mono'],
            cells: [
              when(e.at),
              e.master ?? '—',
              e.iqn,
              <Badge key="o" tone={e.outcome === 'rolled_out' || e.outcome === 'created' ? 'good' : 'bad'}>
                {e.outcome}
              </Badge>,
              e.actor ?? '—',
              e.rollout_id ? (
                <Link key="r" to={`/machines/rollouts/${encodeURIComponent(e.rollout_id)}`}>
                  {e.rollout_id}
                </Link>
              ) : (
                '—'
              ),
              e.detail ?? '',
            ],
          }))}
        />
      </ScrollBox>
    </section>
  );
}
