import { useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import type { BootstrapRole, PreflightResponse, WorkerNodeInput } from '../../clusters-api';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, ScrollBox } from '../../components/ui';
import { useConsole } from '../../context';
import { Link, navigate } from '../../router';

interface Pick {
  cp: boolean;
  worker: boolean;
  username: string;
}

/**
 * Issue 24: the bootstrap wizard for workers the boot control plane booted (`/bootstrap?workers=a,b`,
 * from the workers list). ironlens knows each one's address and host keys from its host report:
 * the operator picks roles only, nothing to type and no fingerprint to compare.
 */
export function WorkerWizard({ ids }: { ids: string[] }) {
  const { clusters, metal } = useConsole();
  const access = useAccess();
  const workers = usePoll(() => metal.workers(), 10_000);
  const [picks, setPicks] = useState<Record<string, Pick>>(() => Object.fromEntries(ids.map((id, i) => [id, { cp: i === 0, worker: i !== 0 || ids.length === 1, username: 'root' }])));
  const [preflight, setPreflight] = useState<PreflightResponse | null>(null);
  const [register, setRegister] = useState({ on: true, name: '', description: '' });
  const act = useAction();
  const byId = new Map((workers.data ?? []).map((w) => [w.worker_id, w]));
  const edit = (id: string, patch: Partial<Pick>) => {
    setPicks((p) => ({ ...p, [id]: { ...p[id], ...patch } }));
    setPreflight(null);
  };
  const nodes = (): WorkerNodeInput[] =>
    ids.map((id) => {
      const p = picks[id];
      const roles: BootstrapRole[] = [...(p.cp ? (['control-plane'] as const) : []), ...(p.worker ? (['worker'] as const) : [])];
      return { workerId: id, roles, ...(p.username.trim() && p.username.trim() !== 'root' ? { username: p.username.trim() } : {}) };
    });
  const noRole = ids.some((id) => !picks[id].cp && !picks[id].worker);
  const noControlPlane = !ids.some((id) => picks[id].cp);
  const unreported = ids.filter((id) => workers.data && !byId.get(id)?.host);

  const runPreflight = async () => {
    setPreflight(null);
    const r = await act.run(() => clusters.preflight(nodes(), []));
    if (r) setPreflight(r);
  };
  const start = async () => {
    const r = await act.run(() =>
      clusters.startBootstrap({ nodes: nodes(), hostKeys: [], register: register.on ? { name: register.name.trim(), description: register.description.trim() || undefined } : undefined }),
    );
    if (r) navigate(`/bootstrap/${encodeURIComponent(r.bootstrapId)}`);
  };

  return (
    <section className="card" aria-labelledby="wwiz-title" data-testid="worker-wizard">
      <h2 id="wwiz-title">New cluster from {ids.length} worker{ids.length === 1 ? '' : 's'}</h2>
      <p className="muted small">
        Addresses and host keys come from each worker’s own host report; ironlens pins them and logs in with its own key. <Link to="/bootstrap">Enter hosts by hand instead</Link>.
      </p>
      <ErrorNote error={workers.error} />
      <ScrollBox label="Workers to bootstrap">
        <DataTable
          caption="Workers and their roles"
          testId="worker-wizard-table"
          columns={['Worker', 'Address', 'Host key (reported)', 'Control plane', 'Worker', 'User']}
          rows={ids.map((id) => {
            const w = byId.get(id);
            const key = w?.host?.ssh_host_keys.find((k) => k.algorithm === 'ssh-ed25519') ?? w?.host?.ssh_host_keys[0];
            return {
              key: id,
              testId: `wizard-worker-${id}`,
              cellClass: [undefined, 'mono', 'mono small'],
              cells: [
                <Link key="id" to={`/machines/workers/${encodeURIComponent(id)}`}>
                  {id}
                </Link>,
                w?.address ?? (workers.data ? 'not reported' : '…'),
                key ? `${key.algorithm} ${key.fingerprint}` : '—',
                <input key="cp" type="checkbox" aria-label={`${id}: control plane`} checked={picks[id].cp} onChange={(e) => edit(id, { cp: e.target.checked })} data-testid={`wizard-cp-${id}`} />,
                <input key="worker" type="checkbox" aria-label={`${id}: worker`} checked={picks[id].worker} onChange={(e) => edit(id, { worker: e.target.checked })} data-testid={`wizard-worker-role-${id}`} />,
                <input key="user" aria-label={`${id}: user`} value={picks[id].username} onChange={(e) => edit(id, { username: e.target.value })} size={8} />,
              ],
            };
          })}
        />
      </ScrollBox>
      {unreported.length > 0 && <p className="callout warn small">Not reported yet: {unreported.join(', ')}. Boot them from a master image with the host reporter first.</p>}
      {noControlPlane && <p className="callout warn small">At least one worker needs the control-plane role.</p>}
      <div className="form-actions start">
        <button type="button" className="btn btn-primary" {...gate(access, 'cluster:bootstrap:preflight', act.pending || noRole || noControlPlane || unreported.length > 0)} onClick={() => void runPreflight()} data-testid="worker-wizard-preflight">
          Run preflight
        </button>
      </div>
      <ErrorNote error={act.error} testId="worker-wizard-error" />
      {preflight && (
        <div data-testid="worker-wizard-result">
          <h3>
            Preflight {preflight.allPassed ? <Badge tone="good">all passed</Badge> : <Badge tone="bad">not passed</Badge>}
          </h3>
          <ul className="plain">
            {preflight.items.map((n) => (
              <li key={n.host} data-testid={`worker-preflight-${(n as { workerId?: string }).workerId ?? n.host}`}>
                {(n as { workerId?: string }).workerId ?? n.host} ({n.host}): <Badge tone={n.state === 'passed' ? 'good' : 'bad'}>{n.state}</Badge> {n.error ?? ''}
              </li>
            ))}
          </ul>
          <fieldset className="field">
            <legend>When it succeeds</legend>
            <label className="check-field">
              <input type="checkbox" checked={register.on} onChange={(e) => setRegister({ ...register, on: e.target.checked })} data-testid="worker-register-on" />
              <span>Register it as a cluster here (the admin kubeconfig never leaves ironlens)</span>
            </label>
            {register.on && (
              <label className="field">
                <span>Cluster name</span>
                <input value={register.name} onChange={(e) => setRegister({ ...register, name: e.target.value })} required data-testid="worker-register-name" />
              </label>
            )}
          </fieldset>
          <div className="form-actions start">
            <button
              type="button"
              className="btn btn-primary"
              {...gate(access, 'cluster:bootstrap:execute', !preflight.allPassed || act.pending || (register.on && !register.name.trim()))}
              onClick={() => void start()}
              data-testid="worker-wizard-start"
            >
              Start bootstrap
            </button>
          </div>
        </div>
      )}
    </section>
  );
}
