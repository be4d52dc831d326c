import type { ReactNode } from 'react';
import { DataTable } from '../../shared/tables';
import { Badge, type Tone } from './ui';

export { type DataRow, DataTable, type RowSelection } from '../../shared/tables';

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
  /** `data-*` attributes of the row. */
  data?: Record<string, string>;
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
        data: it.data,
        cellClass: it.cellClass,
        cells: [...it.cells, <Badge key="badge" tone={it.tone}>{it.label}</Badge>, it.detail],
      }))}
    />
  );
}
