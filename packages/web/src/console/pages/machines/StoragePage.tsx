import { type FormEvent, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import { DataTable } from '../../components/tables';
import { Badge, Dialog, ErrorNote, PageHeader, ScrollBox, toneOf } from '../../components/ui';
import { useConsole } from '../../context';
import type { AgentProbe, AgentView } from '../../metal-api';

/** Storage agents (seed §6, §14, §15): live health and capabilities, probe then register, edit, LUNs. */
export function StoragePage() {
  const { metal } = useConsole();
  // `live=true` asks every agent for /healthz and /capabilities: every 10 s is plenty.
  const agents = usePoll(() => metal.agents(true), 10_000);
  const [editing, setEditing] = useState<AgentView | null>(null);
  const [lunsOf, setLunsOf] = useState<string | null>(null);
  return (
    <>
      <PageHeader title="Storage" lead="The iSCSI storage agents that hold the workers’ system disks and install CDs." />
      <RegisterAgent onDone={() => void agents.refresh()} />
      <section className="card" aria-labelledby="agents-title">
        <h2 id="agents-title">Agents</h2>
        <ErrorNote error={agents.error} testId="agents-error" />
        <ScrollBox label="Scrollable table">
          <DataTable
            caption="Storage agents"
            testId="agents-table"
            columns={['Agent', 'Health', 'URL', 'iSCSI portal', 'Roles', 'Capabilities', 'Tags', <span key="actions" className="sr-only">Actions</span>]}
            empty={agents.data ? 'No agent registered yet: probe one above.' : null}
            rows={(agents.data ?? []).map((a) => ({
              key: a.id,
              testId: `agent-row-${a.id}`,
              cellClass: [undefined, undefined, 'mono', 'mono', undefined, 'small', undefined, 'actions'],
              cells: [
                a.id,
                <>
                  <Badge tone={toneOf[a.health ?? 'ok'] ?? 'warn'} testId={`agent-health-${a.id}`}>
                    {a.health ?? 'unknown'}
                  </Badge>
                  {a.error && <div className="small error-text">{a.error}</div>}
                </>,
                a.base_url,
                a.iscsi_server ?? '—',
                [a.role.disk && 'disk', a.role.cd && 'cd'].filter(Boolean).join(', ') || '—',
                a.capabilities
                  ? Object.entries(a.capabilities)
                      .filter(([, v]) => typeof v === 'string' || typeof v === 'boolean')
                      .map(([k, v]) => `${k}: ${String(v)}`)
                      .join(' · ')
                  : '—',
                a.tags.join(', ') || '—',
                <>
                  <button type="button" className="btn btn-small" onClick={() => setEditing(a)} aria-label={`Edit ${a.id}`} data-testid={`agent-edit-${a.id}`}>
                    Edit
                  </button>
                  <button type="button" className="btn btn-small" onClick={() => setLunsOf(lunsOf === a.id ? null : a.id)} aria-expanded={lunsOf === a.id} aria-label={`LUNs of ${a.id}`} data-testid={`agent-luns-${a.id}`}>
                    LUNs
                  </button>
                </>,
              ],
            }))}
          />
        </ScrollBox>
      </section>
      {lunsOf && <Luns agentId={lunsOf} />}
      {editing && (
        <EditAgent
          agent={editing}
          onClose={() => setEditing(null)}
          onDone={async () => {
            setEditing(null);
            await agents.refresh();
          }}
        />
      )}
    </>
  );
}

function RegisterAgent({ onDone }: { onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  // Probing reaches outside ironlens (an operator's); registering stores an agent and its token (an admin's).
  const mayProbe = access.can('metal:agent:probe');
  const mayRegister = access.can('metal:agent:write');
  const [url, setUrl] = useState('');
  const [token, setToken] = useState('');
  const [probe, setProbe] = useState<AgentProbe | null>(null);
  const [f, setF] = useState({ id: '', iscsi_server: '', disk: true, cd: false, tags: '' });
  const act = useAction();
  const runProbe = async (e: FormEvent) => {
    e.preventDefault();
    setProbe(null);
    const p = await act.run(() => metal.probeAgent({ base_url: url.trim(), token: token || null }));
    if (p) {
      setProbe(p);
      setF((o) => ({ ...o, iscsi_server: p.iscsi_server, disk: p.role.disk, cd: p.role.cd, tags: p.tags.join(', ') }));
    }
  };
  const register = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() =>
      metal.createAgent({
        id: f.id.trim(),
        base_url: probe?.base_url ?? url.trim(),
        token: token || null,
        ...agentFieldsBody(f),
      }),
    );
    if (ok) {
      setProbe(null);
      setUrl('');
      setToken('');
      setF({ id: '', iscsi_server: '', disk: true, cd: false, tags: '' });
      onDone();
    }
  };
  return (
    <section className="card" aria-labelledby="reg-title" data-testid="agent-register">
      <h2 id="reg-title">Register an agent</h2>
      <p className="muted small">First probe it: the control plane calls its /healthz and /capabilities and shows what it found. Nothing is written until you register.</p>
      <form className="form" onSubmit={runProbe}>
        <div className="grid-2">
          <label className="field">
            <span>Agent URL</span>
            <input type="url" value={url} onChange={(e) => {
                setUrl(e.target.value);
                setProbe(null);
              }} required placeholder="http://storage-01:4840" data-testid="agent-url" />
          </label>
          <label className="field">
            <span>Agent token (write-only; ${'{'}ENV{'}'} placeholders allowed)</span>
            <input type="password" autoComplete="new-password" value={token} onChange={(e) => setToken(e.target.value)} data-testid="agent-token" />
          </label>
        </div>
        <div className="form-actions start">
          <button type="submit" className="btn" disabled={!url.trim() || act.pending || !mayProbe} title={mayProbe ? undefined : access.reason('metal:agent:probe')} data-testid="agent-probe">
            Probe
          </button>
        </div>
      </form>
      <ErrorNote error={act.error} testId="agent-register-error" />
      {probe && (
        <form className="form" onSubmit={register} data-testid="agent-probe-result">
          <p>
            <Badge tone="good">reachable</Badge> backend <strong>{probe.backend}</strong>, base IQN <span className="mono">{probe.base_iqn ?? '—'}</span>, clone {probe.clone ?? '—'}, file system{' '}
            {probe.fs_type ?? '—'}, CD {probe.role.cd ? 'yes' : 'no'}.
          </p>
          <div className="grid-4">
            <label className="field">
              <span>Agent id</span>
              <input value={f.id} onChange={(e) => setF((o) => ({ ...o, id: e.target.value }))} required placeholder="storage-01" data-testid="agent-id" />
            </label>
            <AgentFields f={f} setF={setF} iscsiTestId="agent-iscsi" />
          </div>
          <div className="form-actions start">
            <button type="submit" className="btn btn-primary" disabled={!f.id.trim() || act.pending || !mayRegister} title={mayRegister ? undefined : access.reason('metal:agent:write')} data-testid="agent-register-submit">
              Register agent
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

/** The agent fields the register and edit forms share (iSCSI portal, tags, roles). */
interface AgentFieldValues {
  iscsi_server: string;
  tags: string;
  disk: boolean;
  cd: boolean;
}

/** What both forms send of those fields: empty portal is none, tags split on commas. */
function agentFieldsBody(f: AgentFieldValues) {
  return {
    iscsi_server: f.iscsi_server.trim() || null,
    role: { disk: f.disk, cd: f.cd },
    tags: f.tags
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  };
}

/** The iSCSI portal, tags and roles inputs, one component for the register form and the edit dialog. */
function AgentFields<F extends AgentFieldValues>({ f, setF, iscsiTestId }: { f: F; setF: (fn: (o: F) => F) => void; iscsiTestId?: string }) {
  return (
    <>
      <label className="field">
        <span>iSCSI portal address</span>
        <input value={f.iscsi_server} onChange={(e) => setF((o) => ({ ...o, iscsi_server: e.target.value }))} data-testid={iscsiTestId} />
      </label>
      <label className="field">
        <span>Tags (comma separated)</span>
        <input value={f.tags} onChange={(e) => setF((o) => ({ ...o, tags: e.target.value }))} />
      </label>
      <fieldset className="field">
        <legend>Roles</legend>
        <label className="check-field">
          <input type="checkbox" checked={f.disk} onChange={(e) => setF((o) => ({ ...o, disk: e.target.checked }))} />
          <span>system disks</span>
        </label>
        <label className="check-field">
          <input type="checkbox" checked={f.cd} onChange={(e) => setF((o) => ({ ...o, cd: e.target.checked }))} />
          <span>install CDs</span>
        </label>
      </fieldset>
    </>
  );
}

function EditAgent({ agent, onClose, onDone }: { agent: AgentView; onClose: () => void; onDone: () => Promise<void> }) {
  const { metal } = useConsole();
  const access = useAccess();
  const mayWrite = access.can('metal:agent:write');
  const [f, setF] = useState({
    base_url: agent.base_url,
    token: '',
    iscsi_server: agent.iscsi_server ?? '',
    disk: agent.role.disk,
    cd: agent.role.cd,
    tags: agent.tags.join(', '),
    enabled: agent.enabled,
  });
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() =>
      metal.updateAgent(agent.id, {
        base_url: f.base_url.trim(),
        // Empty keeps the stored token: it is never shown, only replaced.
        token: f.token || null,
        ...agentFieldsBody(f),
        enabled: f.enabled,
      }),
    );
    if (ok) await onDone();
  };
  return (
    <Dialog title={`Edit ${agent.id}`} open onClose={onClose} testId="agent-edit">
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Agent URL</span>
          <input type="url" value={f.base_url} onChange={(e) => setF((o) => ({ ...o, base_url: e.target.value }))} required />
        </label>
        <label className="field">
          <span>New token (leave empty to keep the stored one; it is never shown)</span>
          <input type="password" autoComplete="new-password" value={f.token} onChange={(e) => setF((o) => ({ ...o, token: e.target.value }))} data-testid="agent-edit-token" />
        </label>
        <AgentFields f={f} setF={setF} />
        <label className="check-field">
          <input type="checkbox" checked={f.enabled} onChange={(e) => setF((o) => ({ ...o, enabled: e.target.checked }))} />
          <span>enabled</span>
        </label>
        <ErrorNote error={act.error} />
        <div className="form-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={act.pending || !mayWrite} title={mayWrite ? undefined : access.reason('metal:agent:write')} data-testid="agent-edit-save">
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function Luns({ agentId }: { agentId: string }) {
  const { metal } = useConsole();
  const access = useAccess();
  const luns = usePoll(() => metal.luns(agentId), 15_000, [agentId]);
  const [deleteFile, setDeleteFile] = useState(false);
  const act = useAction();
  const remove = async (iqn: string) => {
    const ok = await act.run(() => metal.deleteLun(agentId, iqn, deleteFile));
    if (ok !== undefined) await luns.refresh();
  };
  const scan = async () => {
    await act.run(() => metal.scanLuns(agentId));
    await luns.refresh();
  };
  const [iso, setIso] = useState('');
  const addCd = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() => metal.createCdLun(agentId, iso.trim()));
    if (ok !== undefined) {
      setIso('');
      await luns.refresh();
    }
  };
  return (
    <section className="card" aria-labelledby="luns-title" data-testid="luns">
      <div className="card-head">
        <h2 id="luns-title">LUNs on {agentId}</h2>
        <button type="button" className="btn btn-small" onClick={() => void scan()} {...gate(access, 'metal:lun:write', act.pending)} data-testid="luns-rescan">
          Rescan
        </button>
      </div>
      <ErrorNote error={luns.error ?? act.error} testId="luns-error" />
      <form className="form inline-form" onSubmit={addCd} aria-label="New install CD target">
        <label className="field">
          <span>New install CD target: ISO file on this agent</span>
          <input value={iso} onChange={(e) => setIso(e.target.value)} placeholder="Win11_24H2.iso" required data-testid="cd-iso" />
        </label>
        <button type="submit" className="btn" {...gate(access, 'metal:lun:write', !iso.trim() || act.pending)} data-testid="cd-create">
          Create CD target
        </button>
      </form>
      <label className="check-field">
        <input type="checkbox" checked={deleteFile} onChange={(e) => setDeleteFile(e.target.checked)} />
        <span>When deleting a target, also delete its backing file</span>
      </label>
      <ScrollBox label="iSCSI targets">
        <DataTable
          caption="iSCSI targets"
          columns={['IQN', 'Backing', 'Allowed initiators', <span key="a" className="sr-only">Actions</span>]}
          testId="luns-table"
          empty={luns.data && 'No targets.'}
          rows={(luns.data ?? []).map((t) => ({
            key: t.iqn,
            cellClass: ['mono', 'mono', 'mono'],
            cells: [
              t.iqn,
              (t.luns ?? []).map((l) => l.backing).join(', ') || '—',
              (t.acl ?? []).join(', ') || '—',
              <button key="d" type="button" className="btn btn-small btn-danger" onClick={() => void remove(t.iqn)} {...gate(access, 'metal:lun:delete', act.pending)} aria-label={`Delete target ${t.iqn}`}>
                Delete
              </button>,
            ],
          }))}
        />
      </ScrollBox>
    </section>
  );
}
