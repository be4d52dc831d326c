import { type ChangeEvent, useMemo, useState } from 'react';
import { useAction } from '../../../shared/use-poll';
import { BatchResultTable, DataTable } from '../../components/tables';
import { Badge, ErrorNote, ScrollBox, toneOf } from '../../components/ui';
import { gate, useAccess } from '../../access';
import { useConsole } from '../../context';
import type { BatchBindResult, BatchPreview } from '../../metal-api';
import { parsePairs } from './batch-pairs';

interface PreviewRow {
  mac: string;
  worker_id: string;
  outcome: 'ok' | 'mismatch' | 'conflict' | 'not_found';
  detail: string;
}

function previewRows(p: BatchPreview): PreviewRow[] {
  return [
    ...p.conflicts.map((c) => ({ mac: String(c.mac), worker_id: c.worker_id, outcome: 'conflict' as const, detail: c.reason })),
    ...p.not_found.map((c) => ({ mac: String(c.mac), worker_id: c.worker_id, outcome: 'not_found' as const, detail: c.reason })),
    ...p.matched.map((m) =>
      m.fingerprint_mismatch
        ? { mac: m.mac, worker_id: m.worker_id, outcome: 'mismatch' as const, detail: `fingerprint differs from the report: ${m.fingerprint_mismatch.fields.join(', ')}` }
        : { mac: m.mac, worker_id: m.worker_id, outcome: 'ok' as const, detail: `device ${m.device_state}, worker ${m.worker_state}` },
    ),
  ];
}

const OUTCOME_LABEL: Record<PreviewRow['outcome'], string> = { ok: 'ok', mismatch: 'fingerprint mismatch', conflict: 'conflict', not_found: 'not found' };

/** Seed §16.9–16.10: paste or upload pairs → preview (writes nothing) → execute → per-row results. */
export function BatchBind({ onDone }: { onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const [text, setText] = useState('');
  const [preview, setPreview] = useState<BatchPreview | null>(null);
  const [result, setResult] = useState<BatchBindResult | null>(null);
  const act = useAction();
  const parsed = useMemo(() => parsePairs(text), [text]);

  const edit = (v: string) => {
    setText(v);
    setPreview(null);
    setResult(null);
  };
  const upload = async (e: ChangeEvent<HTMLInputElement>) => {
    const f = e.target.files?.[0];
    if (f) edit(await f.text());
  };
  const runPreview = async () => {
    setResult(null);
    const p = await act.run(() => metal.previewBatch({ mode: 'manifest', pairs: parsed.pairs }));
    if (p) setPreview(p);
  };
  const execute = async () => {
    const r = await act.run(() => metal.bindBatch({ mode: 'manifest', pairs: parsed.pairs }));
    if (r) {
      setResult(r);
      onDone();
    }
  };
  const rows = preview ? previewRows(preview) : [];

  return (
    <section className="card" aria-labelledby="batch-title" data-testid="batch-bind">
      <h2 id="batch-title">Batch bind</h2>
      <p className="muted small">
        One pair per line: <code>mac worker_id [serial]</code>, or a CSV whose first line names the columns (<code>mac,worker_id,manufacturer,product,serial,uuid</code>). Declared fingerprint
        fields are compared with what the machine reported.
      </p>
      <div className="grid-2">
        <label className="field">
          <span>Pairs</span>
          <textarea rows={6} value={text} onChange={(e) => edit(e.target.value)} placeholder={'00:0c:29:aa:bb:01 worker-01\n00:0c:29:aa:bb:02 worker-02'} data-testid="batch-text" spellCheck={false} />
        </label>
        <label className="field">
          <span>…or upload a file (CSV or text)</span>
          <input type="file" accept=".csv,.txt,text/csv,text/plain" onChange={(e) => void upload(e)} data-testid="batch-file" />
        </label>
      </div>
      {parsed.errors.length > 0 && (
        <ul className="error-note" role="alert" data-testid="batch-parse-errors">
          {parsed.errors.map((e) => (
            <li key={e}>{e}</li>
          ))}
        </ul>
      )}
      <div className="form-actions start">
        <button type="button" className="btn" onClick={() => void runPreview()} {...gate(access, 'metal:device:preview', parsed.pairs.length === 0 || act.pending)} data-testid="batch-preview">
          Preview {parsed.pairs.length ? `${parsed.pairs.length} pair${parsed.pairs.length > 1 ? 's' : ''}` : ''}
        </button>
        <button type="button" className="btn btn-primary" onClick={() => void execute()} {...gate(access, 'metal:device:bind', !preview || preview.summary.ok === 0 || act.pending || !!result)} data-testid="batch-execute">
          Bind {preview ? `${preview.summary.ok} matched` : ''}
        </button>
      </div>
      <ErrorNote error={act.error} testId="batch-error" />
      {preview && !result && (
        <ScrollBox label="Scrollable table">
          <p data-testid="batch-summary" aria-live="polite">
            {preview.summary.total} pairs: {preview.summary.ok} can be bound, {preview.summary.conflict} in conflict, {preview.summary.not_found} not found. Nothing is written until you choose
            Bind.
          </p>
          <DataTable
            caption="Batch bind preview"
            columns={['MAC', 'Worker', 'Outcome', 'Detail']}
            testId="batch-preview-table"
            rows={rows.map((r) => ({
              key: `${r.mac}|${r.worker_id}|${r.outcome}`,
              className: `row-${r.outcome}`,
              data: { outcome: r.outcome },
              testId: `preview-row-${r.outcome}`,
              cellClass: ['mono'],
              cells: [r.mac, r.worker_id, <Badge key="o" tone={toneOf[r.outcome] ?? 'good'}>{OUTCOME_LABEL[r.outcome]}</Badge>, r.detail],
            }))}
          />
        </ScrollBox>
      )}
      {result && (
        <ScrollBox label="Scrollable table">
          <p data-testid="batch-result-summary" aria-live="polite">
            {result.succeeded.length} bound, {result.skipped.length} skipped, {result.failed.length} failed.
          </p>
          <BatchResultTable
            caption="Batch bind results"
            columns={['MAC', 'Worker']}
            testId="batch-result-table"
            items={[
              ...result.succeeded.map((r) => ({
                key: `s${r.mac}`,
                testId: 'result-row-succeeded',
                cellClass: ['mono'],
                cells: [r.mac, r.worker_id],
                tone: 'good' as const,
                label: 'bound',
                detail: r.fingerprint_mismatch ? `bound despite fingerprint mismatch: ${r.fingerprint_mismatch.fields.join(', ')}` : '',
              })),
              ...result.skipped.map((r) => ({ key: `k${r.mac}${r.worker_id}`, className: 'row-conflict', testId: 'result-row-skipped', cellClass: ['mono'], cells: [r.mac, r.worker_id], tone: 'warn' as const, label: 'skipped', detail: r.reason })),
              ...result.failed.map((r) => ({ key: `f${String(r.mac)}${r.worker_id}`, className: 'row-not_found', testId: 'result-row-failed', cellClass: ['mono'], cells: [String(r.mac), r.worker_id], tone: 'bad' as const, label: 'failed', detail: r.error })),
            ]}
          />
        </ScrollBox>
      )}
    </section>
  );
}
