const TONE: Record<string, string> = {
  ok: 'good',
  success: 'good',
  degraded: 'warn',
  queued: 'info',
  running: 'info',
  failed: 'bad',
  cancelled: 'muted',
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${TONE[status] ?? 'muted'}`}>{status}</span>;
}

export function Check({ ok, label }: { ok: boolean; label: string }) {
  return (
    <span className={`check ${ok ? 'check-ok' : 'check-bad'}`}>
      <span aria-hidden="true">{ok ? '✓' : '✗'}</span> {label}
    </span>
  );
}

export function ProgressBar({ percent, stage, status, testId }: { percent: number | null; stage: string | null; status?: string; testId?: string }) {
  const p = Math.max(0, Math.min(100, percent ?? 0));
  return (
    <div className={`progress progress-${status ?? 'running'}`} data-testid={testId}>
      <div className="progress-track" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={p}>
        <div className="progress-fill" style={{ width: `${p}%` }} />
      </div>
      <div className="progress-label">
        <span className="progress-stage" data-testid={testId ? `${testId}-stage` : undefined}>
          {stage ?? 'waiting…'}
        </span>
        <span className="progress-percent" data-testid={testId ? `${testId}-percent` : undefined}>
          {p}%
        </span>
      </div>
    </div>
  );
}
