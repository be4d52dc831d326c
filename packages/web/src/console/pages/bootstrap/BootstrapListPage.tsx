import { type FormEvent, useMemo, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import { type BootstrapListItem, type BootstrapNodeInput, type BootstrapRole, fingerprintOf, type HostKeyItem, type HostKeyPin, type PreflightResponse } from '../../clusters-api';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, PageHeader, ScrollBox, when } from '../../components/ui';
import { useConsole } from '../../context';
import { Link, navigate, useLocation } from '../../router';
import { WorkerWizard } from './WorkerWizard';

interface NodeRow {
  key: number;
  host: string;
  port: string;
  cp: boolean;
  worker: boolean;
  username: string;
  privateKey: string;
  password: string;
}

let nextKey = 1;
const newRow = (cp = false): NodeRow => ({ key: nextKey++, host: '', port: '22', cp, worker: !cp, username: 'root', privateKey: '', password: '' });
const pinKey = (host: string, port: number) => `${host}:${port}`;

export const phaseTone = (p: string) => (p === 'succeeded' ? 'good' : p === 'failed' ? 'bad' : p === 'cancelled' ? 'muted' : 'info');

/**
 * The bootstrap wizard (issue 10): node rows with host specs → fetch host keys → confirm each
 * fingerprint explicitly → preflight per node and check → start; and the list of jobs.
 */
export function BootstrapListPage() {
  const { clusters } = useConsole();
  const jobs = usePoll(() => clusters.bootstraps(), 10_000);
  const list: BootstrapListItem[] = jobs.data?.items ?? [];
  // Issue 24: `?workers=a,b` (from the workers list) opens the wizard for those workers.
  const workerIds = (useLocation().search.get('workers') ?? '').split(',').filter(Boolean);
  return (
    <>
      <PageHeader title="Bootstrap" lead="Turn booted machines into a Kubernetes cluster with Kubespray, over SSH with pinned host keys." />
      {workerIds.length ? <WorkerWizard key={workerIds.join(',')} ids={workerIds} /> : <Wizard />}
      <section className="card" aria-labelledby="jobs-title">
        <h2 id="jobs-title">Bootstrap jobs</h2>
        <ErrorNote error={jobs.error} testId="bootstrap-jobs-error" />
        <ul className="plain" data-testid="bootstrap-jobs">
          {list.map((j) => (
            <li key={j.id}>
              <Link to={`/bootstrap/${encodeURIComponent(j.id)}`}>{j.id}</Link> <Badge tone={phaseTone(j.phase)}>{j.phase}</Badge>{' '}
              <span className="muted small">
                {when(j.createdAt)} · {(j.nodes ?? []).map((n) => (n.workerId ? `${n.workerId} (${n.host})` : n.host)).join(', ')}
                {j.register ? ` · registers “${j.register.name}”` : ''}
              </span>
            </li>
          ))}
          {jobs.data && list.length === 0 && <li className="muted">No bootstrap job yet.</li>}
        </ul>
      </section>
    </>
  );
}

function Wizard() {
  const { clusters } = useConsole();
  const access = useAccess();
  const [rows, setRows] = useState<NodeRow[]>(() => [newRow(true), newRow(false)]);
  const [keys, setKeys] = useState<HostKeyItem[] | null>(null);
  const [confirmed, setConfirmed] = useState<Set<string>>(new Set());
  const [preflight, setPreflight] = useState<PreflightResponse | null>(null);
  const [register, setRegister] = useState({ on: false, name: '', description: '' });
  const pubKey = usePoll(() => clusters.sshPublicKey(), 0);
  const act = useAction();

  const reset = () => {
    setKeys(null);
    setConfirmed(new Set());
    setPreflight(null);
  };
  const edit = (key: number, patch: Partial<NodeRow>) => {
    setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r)));
    reset();
  };
  const nodes = (): BootstrapNodeInput[] =>
    rows
      .filter((r) => r.host.trim())
      .map((r) => {
        const roles: BootstrapRole[] = [...(r.cp ? (['control-plane'] as const) : []), ...(r.worker ? (['worker'] as const) : [])];
        const n: BootstrapNodeInput = { host: r.host.trim(), port: Number(r.port) || 22, roles, username: r.username.trim() || 'root' };
        if (r.privateKey.trim()) n.privateKey = r.privateKey;
        if (r.password) n.password = r.password;
        return n;
      });
  const pins = useMemo<HostKeyPin[]>(
    () =>
      (keys ?? []).flatMap((k) => {
        const f = fingerprintOf(k);
        return f && confirmed.has(pinKey(k.host, k.port)) ? [{ host: k.host, port: k.port, fingerprint: f.fingerprint }] : [];
      }),
    [keys, confirmed],
  );
  const allConfirmed = !!keys && keys.length > 0 && keys.every((k) => fingerprintOf(k) && confirmed.has(pinKey(k.host, k.port)));
  const noControlPlane = !rows.some((r) => r.host.trim() && r.cp);

  const fetchKeys = async (e: FormEvent) => {
    e.preventDefault();
    reset();
    const r = await act.run(() => clusters.hostKeys(nodes().map((n) => ({ host: n.host, port: n.port }))));
    if (r) setKeys(r.items);
  };
  const runPreflight = async () => {
    setPreflight(null);
    const r = await act.run(() => clusters.preflight(nodes(), pins));
    if (r) setPreflight(r);
  };
  const start = async () => {
    const r = await act.run(() =>
      clusters.startBootstrap({ nodes: nodes(), hostKeys: pins, register: register.on ? { name: register.name.trim(), description: register.description.trim() || undefined } : undefined }),
    );
    if (r) navigate(`/bootstrap/${encodeURIComponent(r.bootstrapId)}`);
  };

  return (
    <section className="card" aria-labelledby="wiz-title" data-testid="bootstrap-wizard">
      <h2 id="wiz-title">New cluster</h2>
      <form className="form" onSubmit={fetchKeys}>
        <p className="muted small">
          A host may be a spec: <code>10.0.0.5</code>, <code>10.0.0.10-12</code>, a comma list, or a host name. Nodes that give neither a key nor a password are reached with ironlens’ own key
          {pubKey.data ? ':' : '.'}
        </p>
        {pubKey.data && (
          <pre className="log small" data-testid="ssh-public-key">
            {pubKey.data.publicKey}
          </pre>
        )}
        {rows.map((r, i) => (
          <fieldset key={r.key} className="node-row" data-testid={`node-${i}`}>
            <legend>Node row {i + 1}</legend>
            <div className="grid-4">
              <label className="field">
                <span>Host or range</span>
                <input value={r.host} onChange={(e) => edit(r.key, { host: e.target.value })} placeholder="10.0.0.10-12" data-testid={`node-host-${i}`} />
              </label>
              <label className="field">
                <span>SSH port</span>
                <input type="number" min={1} max={65535} value={r.port} onChange={(e) => edit(r.key, { port: e.target.value })} data-testid={`node-port-${i}`} />
              </label>
              <label className="field">
                <span>User</span>
                <input value={r.username} onChange={(e) => edit(r.key, { username: e.target.value })} />
              </label>
              <fieldset className="field">
                <legend>Roles</legend>
                <label className="check-field">
                  <input type="checkbox" checked={r.cp} onChange={(e) => edit(r.key, { cp: e.target.checked })} data-testid={`node-cp-${i}`} />
                  <span>control plane</span>
                </label>
                <label className="check-field">
                  <input type="checkbox" checked={r.worker} onChange={(e) => edit(r.key, { worker: e.target.checked })} />
                  <span>worker</span>
                </label>
              </fieldset>
              <label className="field">
                <span>Private key (optional, never stored)</span>
                <textarea rows={2} value={r.privateKey} onChange={(e) => edit(r.key, { privateKey: e.target.value })} spellCheck={false} />
              </label>
              <label className="field">
                <span>Password (optional, never stored)</span>
                <input type="password" autoComplete="new-password" value={r.password} onChange={(e) => edit(r.key, { password: e.target.value })} />
              </label>
              <div className="form-actions start">
                <button type="button" className="btn btn-small" onClick={() => {
                    setRows((rs) => rs.filter((x) => x.key !== r.key));
                    reset();
                  }} disabled={rows.length <= 1} aria-label={`Remove node row ${i + 1}`}>
                  Remove
                </button>
              </div>
            </div>
          </fieldset>
        ))}
        <div className="form-actions start">
          <button type="button" className="btn" onClick={() => setRows((rs) => [...rs, newRow(false)])}>
            Add a node row
          </button>
          <button type="submit" className="btn btn-primary" {...gate(access, 'cluster:bootstrap:preflight', act.pending || !rows.some((r) => r.host.trim()))} data-testid="fetch-host-keys">
            Fetch host keys
          </button>
        </div>
        {noControlPlane && <p className="callout warn small">At least one node needs the control-plane role.</p>}
      </form>
      <ErrorNote error={act.error} testId="bootstrap-error" />
      {keys && (
        <div data-testid="host-keys">
          <h3>Host keys</h3>
          <p className="small muted">Compare each fingerprint with a trusted source (the machine’s console, your inventory) before confirming it. ssh will refuse any other key.</p>
          <ul className="plain">
            {keys.map((k) => {
              const id = pinKey(k.host, k.port);
              const f = fingerprintOf(k);
              return (
                <li key={id} data-testid={`hostkey-${k.host}`}>
                  {!f ? (
                    <span className="error-text">
                      {k.host}:{k.port} — {'error' in k ? k.error : 'no key'}
                    </span>
                  ) : (
                    <label className="check-field">
                      <input
                        type="checkbox"
                        checked={confirmed.has(id)}
                        onChange={(e) => {
                          setConfirmed((s) => {
                            const n = new Set(s);
                            if (e.target.checked) n.add(id);
                            else n.delete(id);
                            return n;
                          });
                          setPreflight(null);
                        }}
                        data-testid={`confirm-${k.host}`}
                      />
                      <span>
                        I confirm <span className="mono">{k.host}:{k.port}</span> has the {f.algorithm} key <span className="mono">{f.fingerprint}</span>
                      </span>
                    </label>
                  )}
                </li>
              );
            })}
          </ul>
          <div className="form-actions start">
            <button type="button" className="btn btn-primary" {...gate(access, 'cluster:bootstrap:preflight', !allConfirmed || noControlPlane || act.pending)} onClick={() => void runPreflight()} data-testid="run-preflight">
              Run preflight
            </button>
          </div>
        </div>
      )}
      {preflight && (
        <div data-testid="preflight">
          <h3>
            Preflight {preflight.allPassed ? <Badge tone="good">all passed</Badge> : <Badge tone="bad">not passed</Badge>}
          </h3>
          <ScrollBox label="Preflight table">
            <DataTable
              caption="Preflight per node and check"
              testId="preflight-table"
              columns={['Node', 'Check', 'Status', 'Detail']}
              rows={preflight.items.flatMap((n) =>
                n.checks.map((c, j) => ({
                  key: `${n.host}/${c.id}`,
                  className: c.status === 'failed' ? 'row-conflict' : undefined,
                  testId: `check-${n.host}-${c.id}`,
                  cellClass: [undefined, undefined, undefined, 'small'],
                  cells: [
                    j === 0 ? `${n.host} (${n.roles.join(', ')})` : '',
                    c.label,
                    <Badge key="status" tone={c.status === 'passed' ? 'good' : c.status === 'failed' ? 'bad' : 'muted'}>
                      {c.status}
                    </Badge>,
                    c.detail ?? (j === 0 ? (n.error ?? '') : ''),
                  ],
                })),
              )}
            />
          </ScrollBox>
          <fieldset className="field">
            <legend>When it succeeds</legend>
            <label className="check-field">
              <input type="checkbox" checked={register.on} onChange={(e) => setRegister({ ...register, on: e.target.checked })} data-testid="register-on" />
              <span>Register it as a cluster here (the admin kubeconfig never leaves ironlens)</span>
            </label>
            {register.on && (
              <div className="grid-2">
                <label className="field">
                  <span>Cluster name</span>
                  <input value={register.name} onChange={(e) => setRegister({ ...register, name: e.target.value })} required data-testid="register-name" />
                </label>
                <label className="field">
                  <span>Description</span>
                  <input value={register.description} onChange={(e) => setRegister({ ...register, description: e.target.value })} />
                </label>
              </div>
            )}
          </fieldset>
          <div className="form-actions start">
            <button type="button" className="btn btn-primary" {...gate(access, 'cluster:bootstrap:execute', !preflight.allPassed || act.pending || (register.on && !register.name.trim()))} onClick={() => void start()} data-testid="bootstrap-start">
              Start bootstrap
            </button>
          </div>
        </div>
      )}
    </section>
  );
}
