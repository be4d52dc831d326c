import { type FormEvent, useState } from 'react';
import { usePoll } from '../../../shared/use-poll';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, PageHeader, ScrollBox, toneOf, when } from '../../components/ui';
import { useConsole } from '../../context';

const PAGE_SIZES = [25, 50, 100, 250];

/**
 * The operations log (seed §12): oldest first, paged by cursor (`since` = the last id seen),
 * filtered by MAC. The page being read is polled, so new entries appear on the last page.
 */
export function OperationsPage() {
  const { metal } = useConsole();
  const [macInput, setMacInput] = useState('');
  const [mac, setMac] = useState('');
  const [limit, setLimit] = useState(50);
  // The cursors of the pages before this one: a stack, so "Previous" is exact.
  const [cursors, setCursors] = useState<number[]>([0]);
  const since = cursors[cursors.length - 1];
  const page = usePoll(() => metal.operations({ since, limit, mac: mac || undefined }), 5000, [since, limit, mac]);
  const entries = page.data?.entries ?? [];
  const full = entries.length === limit;

  const filter = (e: FormEvent) => {
    e.preventDefault();
    setMac(macInput.trim());
    setCursors([0]);
  };
  return (
    <>
      <PageHeader title="Operations log" lead="Every change of state, oldest first, with the client that made it. Secrets are redacted before they are written." />
      <section className="card" aria-labelledby="ops-title">
        <h2 id="ops-title" className="sr-only">
          Entries
        </h2>
        <form className="toolbar" onSubmit={filter}>
          <label className="field inline grow">
            <span>MAC</span>
            <input value={macInput} onChange={(e) => setMacInput(e.target.value)} placeholder="00:0c:29:aa:bb:01" data-testid="ops-mac" />
          </label>
          <label className="field inline">
            <span>Per page</span>
            <select
              value={limit}
              onChange={(e) => {
                setLimit(Number(e.target.value));
                setCursors([0]);
              }}
            >
              {PAGE_SIZES.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" className="btn" data-testid="ops-filter">
            Filter
          </button>
          {mac && (
            <button
              type="button"
              className="btn btn-ghost"
              onClick={() => {
                setMac('');
                setMacInput('');
                setCursors([0]);
              }}
            >
              Clear filter
            </button>
          )}
        </form>
        <ErrorNote error={page.error} testId="ops-error" />
        <ScrollBox label="Scrollable table">
          <DataTable
            caption="Operations"
            columns={['#', 'Time', 'Operation', 'Status', 'MAC', 'Worker', 'Actor', 'Details']}
            testId="ops-table"
            empty={page.data && `No entries${mac ? ` for ${mac}` : ''}.`}
            rows={entries.map((e) => {
              const { id, ts, op, status, mac: m, worker_id, actor, ...rest } = e;
              return {
                key: String(id),
                cellClass: [undefined, 'nowrap', 'mono', undefined, 'mono', undefined, undefined, 'mono small'],
                cellTestId: [undefined, undefined, undefined, undefined, undefined, undefined, 'ops-actor'],
                cells: [
                  id,
                  when(ts),
                  op,
                  <Badge key="s" tone={toneOf[status] ?? (status === 'ok' ? 'good' : 'warn')}>
                    {status}
                  </Badge>,
                  typeof m === 'string' ? m : '—',
                  typeof worker_id === 'string' ? worker_id : '—',
                  typeof actor === 'string' ? actor : '—',
                  Object.keys(rest).length ? JSON.stringify(rest) : '',
                ],
              };
            })}
          />
        </ScrollBox>
        <nav className="pager" aria-label="Pages">
          <button type="button" className="btn btn-small" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))} data-testid="ops-prev">
            Previous
          </button>
          <span className="muted" aria-live="polite">
            Page {cursors.length}
          </span>
          <button type="button" className="btn btn-small" disabled={!full} onClick={() => setCursors((c) => [...c, page.data?.next_cursor ?? since])} data-testid="ops-next">
            Next
          </button>
        </nav>
      </section>
    </>
  );
}
