import { type ReactNode, useEffect, useRef } from 'react';

/** One row of a `DataTable`: its cells in column order, and what the row carries (class, test id, data attributes). */
export interface DataRow {
  /** The row's identity: React's key, and what a selection holds. */
  key: string;
  cells: ReactNode[];
  className?: string;
  testId?: string;
  title?: string;
  /** `data-*` attributes, e.g. `{ outcome: 'ok' }` → `data-outcome="ok"`. */
  data?: Record<string, string>;
  /** Class of each cell by column index (e.g. `mono`). */
  cellClass?: Array<string | undefined>;
  /** `data-testid` of each cell by column index. */
  cellTestId?: Array<string | undefined>;
  /** `title` of each cell by column index. */
  cellTitle?: Array<string | undefined>;
  /** With a `selection`: false leaves this row without a checkbox (and out of “select all”). */
  selectable?: boolean;
}

/** Row selection: a checkbox in front of each selectable row, and (with `allLabel`) a select-all checkbox in the header. */
export interface RowSelection {
  /** The selected rows' keys (keys of rows not shown stay selected). */
  selected: readonly string[];
  onChange: (keys: string[]) => void;
  /** The accessible name of a row's checkbox, e.g. `Select gpu-01`. */
  label: (key: string) => string;
  /** The accessible name of the select-all checkbox; without it the header cell only names the column (`header`). */
  allLabel?: string;
  /** The column's name for screen readers when there is no select-all checkbox (default `Select`). */
  header?: string;
  /** `data-testid` of a row's checkbox. */
  testId?: (key: string) => string;
}

/** Props of the one table of the console and the kind page. */
export interface DataTableProps {
  /** Names the table (its `<caption>`), read by screen readers; shown only with `showCaption`. */
  caption: string;
  showCaption?: boolean;
  columns: ReactNode[];
  rows: DataRow[];
  testId?: string;
  /** Stands in for no rows (one cell across the table) when given. */
  empty?: ReactNode;
  emptyClass?: string;
  className?: string;
  selection?: RowSelection;
}

/** The select-all checkbox: checked when every selectable row shown is selected, mixed when some are. */
function SelectAll({ label, checked, mixed, disabled, onChange, testId }: { label: string; checked: boolean; mixed: boolean; disabled: boolean; onChange: () => void; testId?: string }) {
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (ref.current) ref.current.indeterminate = mixed;
  }, [mixed]);
  return <input ref={ref} type="checkbox" aria-label={label} checked={checked} disabled={disabled} onChange={onChange} data-testid={testId} />;
}

/**
 * The table: a caption, column headers, rows; `empty` (when given) stands in for no rows; with
 * `selection`, a leading column of native checkboxes (Tab to reach, Space to toggle) and a
 * select-all that selects every selectable row shown, or clears them when all are selected.
 */
export function DataTable({ caption, showCaption, columns, rows, testId, empty, emptyClass = 'empty', className = 'table', selection }: DataTableProps) {
  const sel = selection ? new Set(selection.selected) : null;
  const pickable = selection ? rows.filter((r) => r.selectable !== false).map((r) => r.key) : [];
  const chosen = sel ? pickable.filter((k) => sel.has(k)).length : 0;
  const all = pickable.length > 0 && chosen === pickable.length;
  const toggle = (key: string) => {
    if (!selection) return;
    selection.onChange(selection.selected.includes(key) ? selection.selected.filter((k) => k !== key) : [...selection.selected, key]);
  };
  const toggleAll = () => {
    if (!selection) return;
    const shown = new Set(pickable);
    const rest = selection.selected.filter((k) => !shown.has(k));
    selection.onChange(all ? rest : [...rest, ...pickable]);
  };
  const width = columns.length + (selection ? 1 : 0);
  return (
    <table className={className} data-testid={testId}>
      <caption className={showCaption ? undefined : 'sr-only'}>{caption}</caption>
      <thead>
        <tr>
          {selection && (
            <th scope="col">
              {selection.allLabel ? (
                <SelectAll label={selection.allLabel} checked={all} mixed={chosen > 0 && !all} disabled={pickable.length === 0} onChange={toggleAll} testId={testId ? `${testId}-select-all` : undefined} />
              ) : (
                <span className="sr-only">{selection.header ?? 'Select'}</span>
              )}
            </th>
          )}
          {columns.map((c, i) => (
            <th key={i} scope="col">
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key} className={r.className} data-testid={r.testId} title={r.title} {...Object.fromEntries(Object.entries(r.data ?? {}).map(([k, v]) => [`data-${k}`, v]))}>
            {selection && (
              <td>
                {r.selectable !== false && (
                  <input type="checkbox" aria-label={selection.label(r.key)} checked={sel?.has(r.key) ?? false} onChange={() => toggle(r.key)} data-testid={selection.testId?.(r.key)} />
                )}
              </td>
            )}
            {r.cells.map((c, i) => (
              <td key={i} className={r.cellClass?.[i]} data-testid={r.cellTestId?.[i]} title={r.cellTitle?.[i]}>
                {c}
              </td>
            ))}
          </tr>
        ))}
        {rows.length === 0 && empty !== undefined && empty !== null && empty !== false && (
          <tr>
            <td colSpan={width} className={emptyClass}>
              {empty}
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}
