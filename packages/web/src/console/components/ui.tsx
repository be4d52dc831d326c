import { type ReactNode, type Ref, useEffect, useId, useRef } from 'react';

/** An API error, shown with its message (never swallowed). */
export function ErrorNote({ error, testId }: { error: string | null | undefined; testId?: string }) {
  if (!error) return null;
  return (
    <p className="error-note" role="alert" data-testid={testId ?? 'error'}>
      {error}
    </p>
  );
}

export type Tone = 'good' | 'warn' | 'bad' | 'info' | 'muted';

export function Badge({ tone, children, testId }: { tone: Tone; children: ReactNode; testId?: string }) {
  return (
    <span className={`badge badge-${tone}`} data-testid={testId}>
      {children}
    </span>
  );
}

export const toneOf: Record<string, Tone> = {
  pooled: 'info',
  bound: 'good',
  revoked: 'bad',
  ready: 'good',
  partial: 'warn',
  idle: 'muted',
  ok: 'good',
  error: 'bad',
  unreachable: 'bad',
  disabled: 'muted',
  failed: 'bad',
  succeeded: 'good',
  skipped: 'warn',
  running: 'info',
  queued: 'info',
  cancelled: 'muted',
  conflict: 'bad',
  not_found: 'bad',
  mismatch: 'warn',
};

/** A modal dialog (`<dialog>`: focus is kept inside, Escape closes it). */
export function Dialog({ title, open, onClose, children, testId }: { title: string; open: boolean; onClose: () => void; children: ReactNode; testId?: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onClose={onClose} data-testid={testId}>
      {open && (
        <>
          <div className="dialog-head">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="btn btn-ghost" onClick={onClose} aria-label="Close">
              ×
            </button>
          </div>
          {children}
        </>
      )}
    </dialog>
  );
}

export function PageHeader({ title, children, lead }: { title: string; lead?: ReactNode; children?: ReactNode }) {
  return (
    <header className="page-header">
      <div>
        <h1>{title}</h1>
        {lead && <p className="muted lead">{lead}</p>}
      </div>
      {children && <div className="page-actions">{children}</div>}
    </header>
  );
}

/** Memory in MiB (as iPXE reports it) for people. */
export function mem(mib: number | null | undefined): string {
  if (mib == null) return '—';
  return mib >= 1024 ? `${(mib / 1024).toFixed(mib % 1024 ? 1 : 0)} GiB` : `${mib} MiB`;
}

export function bytes(n: number | null | undefined): string {
  if (n == null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

export function when(ts: string | null | undefined): string {
  if (!ts) return '—';
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleString();
}

/** Percent bar with its label, for progress and used/remaining. */
export function Meter({ label, value, max, detail, testId }: { label: string; value: number; max: number; detail?: string; testId?: string }) {
  const pct = max > 0 ? Math.max(0, Math.min(100, (value / max) * 100)) : 0;
  return (
    <div className="meter" data-testid={testId}>
      <div className="meter-label">
        <span>{label}</span>
        <span className="muted">{detail ?? `${Math.round(pct)}%`}</span>
      </div>
      <div className="meter-track" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(pct)}>
        <div className="meter-fill" style={{ width: `${pct}%` }} />
      </div>
    </div>
  );
}

/** A box that scrolls sideways on narrow screens; focusable so the keyboard can scroll it too. */
export function ScrollBox({ label, children, className, boxRef }: { label: string; children: ReactNode; className?: string; boxRef?: Ref<HTMLElement> }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be keyboard-reachable (WCAG 2.1.1, axe scrollable-region-focusable)
    <section className={className ? `table-wrap ${className}` : 'table-wrap'} tabIndex={0} aria-label={label} ref={boxRef}>
      {children}
    </section>
  );
}

/** One `<option>` per value, the value as its label (OS choices, boot menu items). */
export function Options({ values }: { values: readonly string[] }) {
  return (
    <>
      {values.map((v) => (
        <option key={v} value={v}>
          {v}
        </option>
      ))}
    </>
  );
}
