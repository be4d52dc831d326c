/**
 * A page for `tables.browser.test.ts`: one `DataTable` with row selection over four rows (`c` not
 * selectable), a filter that hides rows, and the selection shown as text.
 */
import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { DataTable } from './tables';

const ROWS = ['a', 'b', 'c', 'd'];

function Fixture() {
  const [selected, setSelected] = useState<string[]>([]);
  const [filter, setFilter] = useState<'all' | 'ad' | 'none'>('all');
  const shown = ROWS.filter((k) => filter === 'all' || (filter === 'ad' && (k === 'a' || k === 'd')));
  return (
    <main>
      <h1>DataTable</h1>
      <button type="button" onClick={() => setFilter('all')}>
        Show all
      </button>
      <button type="button" onClick={() => setFilter('ad')}>
        Show a and d
      </button>
      <button type="button" onClick={() => setFilter('none')}>
        Show none
      </button>
      <DataTable
        caption="Machines"
        testId="machines"
        columns={['Name', 'Note']}
        empty="Nothing to show."
        selection={{ selected, onChange: setSelected, label: (k) => `Select ${k}`, allLabel: 'Select all machines', testId: (k) => `pick-${k}` }}
        rows={shown.map((k) => ({ key: k, testId: `row-${k}`, selectable: k !== 'c', cells: [k, k === 'c' ? 'not selectable' : ''] }))}
      />
      <p>
        Selected: <output data-testid="selected">{[...selected].sort().join(',') || 'none'}</output>
      </p>
    </main>
  );
}

const root = document.getElementById('root');
if (root)
  createRoot(root).render(
    <StrictMode>
      <Fixture />
    </StrictMode>,
  );
