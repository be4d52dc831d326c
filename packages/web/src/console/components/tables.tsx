import type { ReactNode } from 'react';
import { Badge, type Tone } from './ui';

/** One row of a `DataTable`: its cells in column order, and what the row carries (class, test id, data attributes). */
export interface DataRow {
  key: string;
  cells: ReactNode[];
  className?: string;
  testId?: string;
  /** `data-*` attributes, e.g. `{ outcome: 'ok' }` → `data-outcome="ok"`. */
  data?: Record<string, string>;
  /** Class of each cell by column index (e.g. `mono`). */
  cellClass?: Array<string | undefined>;
  /** `data-testid` of each cell by column index. */
  cellTestId?: Array<string | undefined>;
}

/** The console's table: a caption for screen readers, column headers, rows; `empty` (when given) stands in for no rows. */
export function DataTable({ caption, columns, rows, testId, empty }: { caption: string; columns: ReactNode[]; rows: DataRow[]; testId?: string; empty?: ReactNode }) {
  return (
    <table className="table" data-testid={testId}>
      <caption className="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c, i) => (
            <th key={i} scope="col">
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key} className={r.className} data-testid={r.testId} {...Object.fromEntries(Object.entries(r.data ?? {}).map(([k, v]) => [`data-${k}`, v]))}>
            {r.cells.map((c, i) => (
              <td key={i} className={r.cellClass?.[i]} data-testid={r.cellTestId?.[i]}>
                {c}
              </td>
            ))}
          </tr>
        ))}
        {rows.length === 0 && empty !== undefined && empty !== null && empty !== false && (
          <tr>
            <td colSpan={columns.length} className="empty">
              {empty}
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

/** One item of a batch answer (`succeeded` / `skipped` / `failed`): what it names, its outcome, its detail. */
export interface BatchItem {
  key: string;
  /** The identifying cells (MAC, worker…), in the leading columns' order. */
  cells: ReactNode[];
  tone: Tone;
  label: string;
  detail: ReactNode;
  className?: string;
  testId?: string;
  /** Class of each cell by index: the leading cells, then Result, then Detail. */
  cellClass?: Array<string | undefined>;
}

/** The result of a batch call (bind, disks…): the leading columns, then Result (a badge) and Detail. */
export function BatchResultTable({ caption, columns, items, testId }: { caption: string; columns: ReactNode[]; items: BatchItem[]; testId?: string }) {
  return (
    <DataTable
      caption={caption}
      columns={[...columns, 'Result', 'Detail']}
      testId={testId}
      rows={items.map((it) => ({
        key: it.key,
        className: it.className,
        testId: it.testId,
        cellClass: it.cellClass,
        cells: [...it.cells, <Badge key="badge" tone={it.tone}>{it.label}</Badge>, it.detail],
      }))}
    />
  );
}
