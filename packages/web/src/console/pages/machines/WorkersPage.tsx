import { type FormEvent, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import { DataTable } from '../../components/tables';
import { Badge, Dialog, ErrorNote, Options, PageHeader, ScrollBox, toneOf } from '../../components/ui';
import { useConsole } from '../../context';
import { MENU_ITEMS, type WorkerView } from '../../metal-api';
import { Link, navigate } from '../../router';
import { BatchDisks } from './BatchDisks';
import { bootedAgo, useNow } from './HostReport';

/** Workers (seed §4, §7, §11): identities with their binding, disks and boot settings. */
export function WorkersPage() {
  const { metal } = useConsole();
  const access = useAccess();
  const mayCreate = access.can('metal:worker:write');
  const mayDelete = access.can('metal:worker:delete');
  const workers = usePoll(() => metal.workers(), 5000);
  const [selected, setSelected] = useState<string[]>([]);
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<string[] | null>(null);
  const list = workers.data ?? [];
  const now = useNow();

  return (
    <>
      <PageHeader title="Workers" lead="Each worker is an identity a machine boots as: its MAC binding, its iSCSI system disks, its default OS and boot menu.">
        <button type="button" className="btn btn-primary" onClick={() => setCreating(true)} disabled={!mayCreate} title={mayCreate ? undefined : access.reason('metal:worker:write')} data-testid="worker-create-open">
          New worker
        </button>
      </PageHeader>
      <section className="card" aria-labelledby="workers-title">
        <div className="card-head">
          <h2 id="workers-title">Workers</h2>
          <div className="page-actions">
            <span className="muted" aria-live="polite">
              {selected.length} selected
            </span>
            <button
              type="button"
              className="btn btn-small btn-primary"
              {...gate(access, ['cluster:bootstrap:preflight', 'cluster:bootstrap:execute'], selected.length === 0)}
              onClick={() => navigate(`/bootstrap?workers=${selected.map(encodeURIComponent).join(',')}`)}
              data-testid="workers-create-cluster"
            >
              Create a Kubernetes cluster
            </button>
            <button type="button" className="btn btn-small btn-danger" disabled={selected.length === 0 || !mayDelete} title={mayDelete ? undefined : access.reason('metal:worker:delete')} onClick={() => setDeleting(selected)} data-testid="workers-delete-selected">
              Delete selected
            </button>
          </div>
        </div>
        <ErrorNote error={workers.error} testId="workers-error" />
        <ScrollBox label="Scrollable table">
          <DataTable
            caption="Workers"
            testId="workers-table"
            columns={['Worker', 'Hostname', 'MAC', 'Address', 'Booted', 'Readiness', 'Disks', 'Default OS', 'Boot menu', 'CD']}
            selection={{ selected, onChange: setSelected, label: (id) => `Select ${id}`, allLabel: 'Select all workers', testId: (id) => `select-${id}` }}
            empty={workers.data ? 'No workers yet.' : null}
            rows={list.map((w) => ({
              key: w.worker_id,
              testId: `worker-row-${w.worker_id}`,
              cellClass: [undefined, undefined, 'mono', 'mono'],
              cellTestId: [undefined, undefined, undefined, `address-${w.worker_id}`, `booted-${w.worker_id}`],
              cells: [
                <Link key="id" to={`/machines/workers/${encodeURIComponent(w.worker_id)}`}>
                  {w.worker_id}
                </Link>,
                w.hostname,
                w.mac ?? '—',
                w.address ?? '—',
                bootedAgo(w, now),
                <Badge key="readiness" tone={toneOf[w.readiness]} testId={`readiness-${w.worker_id}`}>
                  {w.readiness}
                </Badge>,
                w.disks.length ? w.disks.map((d) => `${d.os} @ ${d.agent}`).join(', ') : '—',
                w.default_os ?? '—',
                w.boot?.menu_default ? `${w.boot.menu_default}${w.boot.menu_timeout != null ? `, ${w.boot.menu_timeout} ms` : ''}` : '—',
                w.cd ? w.cd.iso : '—',
              ],
            }))}
          />
        </ScrollBox>
      </section>
      <BatchDisks workers={list} selected={selected} onDone={() => void workers.refresh()} />
      {creating && (
        <CreateWorkerDialog
          onClose={() => setCreating(false)}
          onDone={async () => {
            setCreating(false);
            await workers.refresh();
          }}
        />
      )}
      {deleting && (
        <DeleteWorkersDialog
          ids={deleting}
          workers={list}
          onClose={() => setDeleting(null)}
          onDone={async () => {
            setDeleting(null);
            setSelected([]);
            await workers.refresh();
          }}
        />
      )}
    </>
  );
}

function CreateWorkerDialog({ onClose, onDone }: { onClose: () => void; onDone: () => Promise<void> }) {
  const { metal } = useConsole();
  const pooled = usePoll(() => metal.devices('pooled'), 0);
  const [f, setF] = useState({ worker_id: '', hostname: '', arch: '', mac: '', windows_iso: '', menu_default: '', menu_timeout: '' });
  const act = useAction();
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF((o) => ({ ...o, [k]: e.target.value }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const boot = f.menu_default || f.menu_timeout ? { menu_default: f.menu_default || null, menu_timeout: f.menu_timeout === '' ? null : Number(f.menu_timeout) } : null;
    const ok = await act.run(() =>
      metal.createWorker({
        worker_id: f.worker_id.trim(),
        hostname: f.hostname.trim() || null,
        arch: f.arch.trim() || null,
        mac: f.mac || null,
        windows_iso: f.windows_iso.trim() || null,
        boot,
      }),
    );
    if (ok) await onDone();
  };
  return (
    <Dialog title="New worker" open onClose={onClose} testId="worker-create">
      <form className="form" onSubmit={submit}>
        <div className="grid-2">
          <label className="field">
            <span>Worker id</span>
            <input value={f.worker_id} onChange={set('worker_id')} required pattern="[A-Za-z0-9._\-]{1,63}" placeholder="worker-01" data-testid="worker-id" />
          </label>
          <label className="field">
            <span>Hostname (default: the id)</span>
            <input value={f.hostname} onChange={set('hostname')} data-testid="worker-hostname" />
          </label>
          <label className="field">
            <span>Architecture (default: the server’s)</span>
            <input value={f.arch} onChange={set('arch')} placeholder="x86_64" />
          </label>
          <label className="field">
            <span>Bind a pooled device</span>
            <select value={f.mac} onChange={set('mac')} data-testid="worker-mac">
              <option value="">none for now</option>
              {(pooled.data ?? []).map((d) => (
                <option key={d.mac} value={d.mac}>
                  {d.mac} {d.fingerprint.product ? `(${d.fingerprint.product})` : ''}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Install CD: ISO file on the CD agent</span>
            <input value={f.windows_iso} onChange={set('windows_iso')} placeholder="Win11_24H2.iso" data-testid="worker-iso" />
          </label>
          <label className="field">
            <span>Boot menu default</span>
            <select value={f.menu_default} onChange={set('menu_default')}>
              <option value="">menu (no default)</option>
              <Options values={MENU_ITEMS} />
            </select>
          </label>
          <label className="field">
            <span>Menu timeout (ms, 0 waits forever)</span>
            <input type="number" min={0} value={f.menu_timeout} onChange={set('menu_timeout')} />
          </label>
        </div>
        <ErrorNote error={pooled.error ?? act.error} testId="worker-create-error" />
        <div className="form-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={act.pending || !f.worker_id.trim()} data-testid="worker-create-submit">
            Create worker
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteWorkersDialog({ ids, workers, onClose, onDone }: { ids: string[]; workers: WorkerView[]; onClose: () => void; onDone: () => Promise<void> }) {
  const { metal } = useConsole();
  const [deleteDisk, setDeleteDisk] = useState(false);
  const [failures, setFailures] = useState<string[]>([]);
  const act = useAction();
  const run = async () => {
    const errs: string[] = [];
    await act.run(async () => {
      for (const id of ids) {
        try {
          await metal.deleteWorker(id, deleteDisk);
        } catch (err) {
          errs.push(`${id}: ${(err as Error).message}`);
        }
      }
    });
    setFailures(errs);
    if (errs.length === 0) await onDone();
  };
  const disks = workers.filter((w) => ids.includes(w.worker_id)).reduce((n, w) => n + w.disks.length, 0);
  return (
    <Dialog title={`Delete ${ids.length} worker${ids.length > 1 ? 's' : ''}`} open onClose={onClose} testId="worker-delete">
      <p>
        {ids.join(', ')} will be removed: bound devices go back to the pool and dnsmasq is rewritten; their {disks} system disk target{disks === 1 ? '' : 's'} and install CD are removed from the
        storage agents.
      </p>
      <label className="check-field">
        <input type="checkbox" checked={deleteDisk} onChange={(e) => setDeleteDisk(e.target.checked)} />
        <span>Also delete the disk image files (cannot be undone)</span>
      </label>
      {failures.length > 0 && (
        <ul className="error-note" role="alert">
          {failures.map((f) => (
            <li key={f}>{f}</li>
          ))}
        </ul>
      )}
      <ErrorNote error={act.error} />
      <div className="form-actions">
        <button type="button" className="btn" onClick={onClose}>
          Cancel
        </button>
        <button type="button" className="btn btn-danger" onClick={() => void run()} disabled={act.pending} data-testid="worker-delete-confirm">
          Delete
        </button>
      </div>
    </Dialog>
  );
}
