import { type FormEvent, useState } from 'react';
import { ApiError } from '../../../shared/http';
import { useAction, usePoll } from '../../../shared/use-poll';
import { Badge, Dialog, ErrorNote, type Tone, when } from '../../components/ui';
import { gate, useAccess } from '../../access';
import { useConsole } from '../../context';
import type { BmcRequest, BmcView, LastPower, PowerAction } from '../../metal-api';

/** Power through the device's BMC (issue 21): the state, the actions, the proof of boot, the BMC itself. */

export const ACTIONS: Array<{ action: PowerAction; label: string; confirm: boolean }> = [
  { action: 'on', label: 'Power on', confirm: false },
  { action: 'cycle', label: 'Power cycle', confirm: true },
  { action: 'soft-off', label: 'Soft off', confirm: true },
  { action: 'off', label: 'Power off', confirm: true },
];

export const resultTone: Record<string, Tone> = { booted: 'good', pending: 'info', no_network_boot: 'bad' };

/** What came of the last power action, with its time (`last_power` on the device). */
export function LastPowerNote({ last, testId }: { last: LastPower | undefined | null; testId?: string }) {
  if (!last) return <span className="muted">no power action yet</span>;
  return (
    <span data-testid={testId}>
      {last.result ? <Badge tone={resultTone[last.result] ?? 'muted'}>{last.result.replace(/_/g, ' ')}</Badge> : <Badge tone={last.bmc_ok ? 'good' : 'bad'}>{last.bmc_ok ? 'accepted' : 'refused'}</Badge>}{' '}
      <span className="small">
        {last.action}
        {last.boot ? ' (network boot)' : ''} at {when(last.requested_at)}
        {last.network_boot_seen_at ? `; network boot seen ${when(last.network_boot_seen_at)}` : ''}
      </span>
      {last.detail && <div className="small muted">{last.detail}</div>}
    </span>
  );
}

/** A device's power: state read from the BMC on demand, actions (off/cycle/soft-off confirmed), last result, BMC settings. */
export function PowerPanel({ mac, last, onDone }: { mac: string; last: LastPower | undefined | null; onDone?: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  // A BMC's URL and username are secrets' metadata (operators and admins): a viewer is not asked them.
  const mayReadBmc = access.can('metal:bmc:read');
  const bmc = usePoll(
    () =>
      mayReadBmc
        ? metal.bmc(mac).catch((e) => {
            if (e instanceof ApiError && e.status === 409) return null;
            throw e;
          })
        : Promise.resolve(undefined),
    0,
    [mac, mayReadBmc],
  );
  const [state, setState] = useState<{ state: string; checked_at: string } | null>(null);
  const [network, setNetwork] = useState(true);
  const [confirm, setConfirm] = useState<PowerAction | null>(null);
  const [editing, setEditing] = useState(false);
  const act = useAction();

  const read = async () => {
    const s = await act.run(() => metal.powerState(mac));
    if (s) setState(s);
  };
  const run = async (action: PowerAction) => {
    const a = await act.run(() => metal.power(mac, action, network && action !== 'off' && action !== 'soft-off'));
    if (a) {
      setState({ state: a.state, checked_at: a.checked_at });
      setConfirm(null);
      onDone?.();
    }
  };
  // Without the BMC's record, the controls are offered and the API says when there is no BMC.
  const configured = mayReadBmc ? !!bmc.data : true;

  return (
    <section className="card" aria-labelledby={`power-title-${mac}`} data-testid="power-panel">
      <div className="card-head">
        <h2 id={`power-title-${mac}`}>Power</h2>
        {state && (
          <span data-testid="power-state">
            <Badge tone={state.state === 'on' ? 'good' : state.state === 'off' ? 'muted' : 'warn'}>{state.state}</Badge> <span className="small muted">read {when(state.checked_at)}</span>
          </span>
        )}
      </div>
      <ErrorNote error={bmc.error} />
      {mayReadBmc && bmc.data === null && !editing && <p className="muted">No BMC configured for this device.</p>}
      {bmc.data && !editing && (
        <p className="small" data-testid="bmc-summary">
          {bmc.data.driver === 'redfish' ? `Redfish ${bmc.data.url}${bmc.data.verify_tls ? '' : ' (certificate not verified)'}` : `IPMI ${bmc.data.host}:${bmc.data.port}`} as{' '}
          <span className="mono">{bmc.data.username}</span>, password {bmc.data.password_set ? 'set' : 'not set'}
        </p>
      )}
      {configured && !editing && (
        <>
          <div className="toolbar">
            <button type="button" className="btn btn-small" onClick={() => void read()} {...gate(access, 'metal:power:read', act.pending)} data-testid="power-read">
              Read state
            </button>
            {ACTIONS.map((a) => (
              <button
                key={a.action}
                type="button"
                className={`btn btn-small${a.action === 'off' ? ' btn-danger' : ''}`}
                {...gate(access, 'metal:power:operate', act.pending)}
                onClick={() => (a.confirm ? setConfirm(a.action) : void run(a.action))}
                data-testid={`power-${a.action}`}
              >
                {a.label}
              </button>
            ))}
            <label className="check-field">
              <input type="checkbox" checked={network} onChange={(e) => setNetwork(e.target.checked)} data-testid="power-network" />
              <span>Boot from the network once (on, cycle)</span>
            </label>
          </div>
          <p>
            Last action: <LastPowerNote last={last} testId="last-power" />
          </p>
        </>
      )}
      {!confirm && <ErrorNote error={act.error} testId="power-error" />}
      {editing ? (
        <BmcForm
          mac={mac}
          current={bmc.data ?? null}
          onClose={() => setEditing(false)}
          onDone={async () => {
            setEditing(false);
            await bmc.refresh();
          }}
        />
      ) : (
        <div className="form-actions">
          <button type="button" className="btn btn-small" onClick={() => setEditing(true)} {...gate(access, 'metal:bmc:write')} data-testid="bmc-edit">
            {configured ? 'Edit BMC' : 'Configure BMC'}
          </button>
        </div>
      )}
      <Dialog title={`${ACTIONS.find((a) => a.action === confirm)?.label ?? ''} ${mac}`} open={!!confirm} onClose={() => setConfirm(null)} testId="power-confirm">
        {confirm && (
          <>
            <p>
              {confirm === 'cycle'
                ? `The machine is reset now: whatever runs on it stops without a shutdown${network ? ', and it boots from the network once' : ''}.`
                : confirm === 'soft-off'
                  ? 'The operating system is asked to shut down (ACPI); the machine goes off when it has.'
                  : 'The machine is switched off now, without a shutdown: unsaved work on it is lost.'}
            </p>
            <ErrorNote error={act.error} />
            <div className="form-actions">
              <button type="button" className="btn" onClick={() => setConfirm(null)}>
                Cancel
              </button>
              <button type="button" className="btn btn-danger" {...gate(access, 'metal:power:operate', act.pending)} onClick={() => void run(confirm)} data-testid="power-confirm-ok">
                {ACTIONS.find((a) => a.action === confirm)?.label}
              </button>
            </div>
          </>
        )}
      </Dialog>
    </section>
  );
}

/** The BMC form: the password field is always empty; left empty it keeps the stored one. */
function BmcForm({ mac, current, onClose, onDone }: { mac: string; current: BmcView | null; onClose: () => void; onDone: () => Promise<void> }) {
  const { metal } = useConsole();
  const access = useAccess();
  const [driver, setDriver] = useState<'redfish' | 'ipmi'>(current?.driver ?? 'redfish');
  const [url, setUrl] = useState(current?.url ?? '');
  const [verifyTls, setVerifyTls] = useState(current?.verify_tls ?? true);
  const [host, setHost] = useState(current?.host ?? '');
  const [port, setPort] = useState(String(current?.port ?? 623));
  const [username, setUsername] = useState(current?.username ?? '');
  const [password, setPassword] = useState('');
  const act = useAction();
  const keep = !!current?.password_set && current.driver === driver;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body: BmcRequest =
      driver === 'redfish' ? { driver, url, verify_tls: verifyTls, username, ...(password ? { password } : {}) } : { driver, host, port: Number(port), username, ...(password ? { password } : {}) };
    const ok = await act.run(() => metal.setBmc(mac, body));
    setPassword('');
    if (ok) await onDone();
  };
  const remove = async () => {
    const ok = await act.run(() => metal.deleteBmc(mac));
    if (ok) await onDone();
  };
  return (
    <form className="form" onSubmit={submit} data-testid="bmc-form" autoComplete="off">
      <label className="field">
        <span>Driver</span>
        <select value={driver} onChange={(e) => setDriver(e.target.value as 'redfish' | 'ipmi')} data-testid="bmc-driver">
          <option value="redfish">Redfish</option>
          <option value="ipmi">IPMI (ipmitool lanplus)</option>
        </select>
      </label>
      {driver === 'redfish' ? (
        <>
          <label className="field">
            <span>System URL</span>
            <input type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://bmc-01/redfish/v1/Systems/1" required data-testid="bmc-url" />
          </label>
          <label className="check-field">
            <input type="checkbox" checked={verifyTls} onChange={(e) => setVerifyTls(e.target.checked)} data-testid="bmc-verify-tls" />
            <span>Verify the BMC's TLS certificate</span>
          </label>
        </>
      ) : (
        <>
          <label className="field">
            <span>Host</span>
            <input value={host} onChange={(e) => setHost(e.target.value)} placeholder="bmc-01.example" required data-testid="bmc-host" />
          </label>
          <label className="field">
            <span>Port</span>
            <input type="number" min={1} max={65535} value={port} onChange={(e) => setPort(e.target.value)} data-testid="bmc-port" />
          </label>
        </>
      )}
      <label className="field">
        <span>User</span>
        <input value={username} onChange={(e) => setUsername(e.target.value)} required autoComplete="off" data-testid="bmc-username" />
      </label>
      <label className="field">
        <span>Password{keep ? ' (set; leave empty to keep it)' : ''}</span>
        <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} required={!keep} autoComplete="new-password" data-testid="bmc-password" />
      </label>
      <ErrorNote error={act.error} testId="bmc-error" />
      <div className="form-actions">
        <button type="button" className="btn" onClick={onClose}>
          Cancel
        </button>
        {current && (
          <button type="button" className="btn btn-danger" onClick={() => void remove()} {...gate(access, 'metal:bmc:write', act.pending)} data-testid="bmc-delete">
            Remove BMC
          </button>
        )}
        <button type="submit" className="btn btn-primary" {...gate(access, 'metal:bmc:write', act.pending)} data-testid="bmc-save">
          Save BMC
        </button>
      </div>
    </form>
  );
}
