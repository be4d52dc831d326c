import { useAction, usePoll } from '../../../shared/use-poll';
import { useAccess } from '../../access';
import { Badge, ErrorNote } from '../../components/ui';
import { useConsole } from '../../context';

/** Seed §16.4: whether /devices/report adds unknown machines to the pool. */
export function AutoRegisterSwitch() {
  const { metal } = useConsole();
  const access = useAccess();
  const mayWrite = access.can('metal:setting:write');
  const setting = usePoll(() => metal.autoRegister(), 30_000);
  const act = useAction();
  const enabled = setting.data?.enabled;
  const toggle = async () => {
    if (enabled === undefined) return;
    const ok = await act.run(() => metal.setAutoRegister(!enabled));
    if (ok) await setting.refresh();
  };
  return (
    <section className="card switch-card" aria-labelledby="auto-register-title">
      <div className="switch-row">
        <div>
          <h2 id="auto-register-title">Auto-register</h2>
          <p className="muted small">When on, a machine iPXE reports for the first time joins the pool as “pooled”. When off, unknown machines are ignored until declared.</p>
        </div>
        <button
          type="button"
          role="switch"
          aria-checked={enabled === true}
          aria-labelledby="auto-register-title"
          className={`switch${enabled ? ' on' : ''}`}
          onClick={() => void toggle()}
          disabled={enabled === undefined || act.pending || !mayWrite}
          title={mayWrite ? undefined : access.reason('metal:setting:write')}
          data-testid="auto-register"
        >
          <span className="switch-knob" aria-hidden="true" />
        </button>
        <Badge tone={enabled ? 'good' : 'muted'} testId="auto-register-state">
          {enabled === undefined ? '…' : enabled ? 'on' : 'off'}
        </Badge>
      </div>
      <ErrorNote error={setting.error ?? act.error} />
    </section>
  );
}
