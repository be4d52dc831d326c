import { type FormEvent, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import type { GatewayCondition } from '../../clusters-api';
import { Badge, ErrorNote } from '../../components/ui';
import { useConsole } from '../../context';

/** The shared gateway of a cluster (issue 22): conditions, public URL with a curl line, keys, reconcile. */
export function GatewayCard({ id }: { id: string }) {
  const { clusters } = useConsole();
  const access = useAccess();
  // Keys are an admin's (cluster:gateway-key:read): a token without it is told so instead of polling into a 403.
  const mayReadKeys = access.can('cluster:gateway-key:read');
  const st = usePoll(() => clusters.gatewayStatus(id), 15_000, [id]);
  const keys = usePoll(() => (mayReadKeys ? clusters.gatewayKeys(id) : Promise.resolve(null)), mayReadKeys ? 60_000 : 0, [id, mayReadKeys]);
  const act = useAction();
  const [name, setName] = useState('');
  const [shown, setShown] = useState<{ name: string; key: string } | null>(null);
  const g = st.data;
  const reconcile = async () => {
    await act.run(() => clusters.gatewayReconcile(id));
    await st.refresh();
  };
  const create = async (e: FormEvent) => {
    e.preventDefault();
    const r = await act.run(() => clusters.createGatewayKey(id, name.trim()));
    if (r) {
      setShown(r);
      setName('');
      await keys.refresh();
    }
  };
  const revoke = async (n: string) => {
    await act.run(() => clusters.revokeGatewayKey(id, n));
    await keys.refresh();
  };
  const curl = g?.gatewayPublicUrl ? `curl ${g.gatewayPublicUrl}/models -H 'Authorization: Bearer <key>'` : null;
  const conds = (title: string, list: GatewayCondition[]) => (
    <li>
      {title}:{' '}
      {list.length === 0
        ? <span className="muted">no conditions</span>
        : list.map((c) => (
            <Badge key={c.type} tone={c.status === 'True' ? 'good' : 'warn'}>
              {`${c.type}=${c.status} (${c.reason})`}
            </Badge>
          ))}
    </li>
  );
  return (
    <section className="card" aria-labelledby="gw-title" data-testid="cluster-gateway">
      <div className="card-head">
        <h2 id="gw-title">Gateway</h2>
        <button type="button" className="btn btn-small" onClick={() => void reconcile()} {...gate(access, 'cluster:gateway:update', act.pending || !g?.gatewayProvider)} data-testid="gateway-reconcile">
          Reconcile
        </button>
      </div>
      {g && !g.gatewayProvider && <p className="small muted">No gateway provider: nothing is installed.</p>}
      {g?.gatewayProvider && (
        <ul className="plain">
          <li>
            {g.gatewayProvider} · {g.gatewayNamespace}/{g.gatewayName} ·{' '}
            <Badge tone={g.gatewayReady ? 'good' : 'warn'}>{g.gatewayReady ? 'programmed' : g.gatewayState}</Badge>
          </li>
          {conds(`GatewayClass ${g.gatewayClassName ?? ''}`, g.gatewayClassConditions)}
          {conds('Gateway', g.gatewayConditions)}
          <li>
            IPP: <Badge tone={g.ippReady ? 'good' : 'warn'}>{g.ippReady ? 'available' : g.ippState}</Badge> · control plane:{' '}
            <Badge tone={g.controlPlane.state === 'ready' || g.controlPlane.state === 'none' ? 'good' : 'warn'}>{g.controlPlane.state}</Badge>
          </li>
          <li>
            Authorization hook: <Badge tone={g.authz.state === 'ready' ? 'good' : g.authz.state === 'failed' ? 'bad' : 'warn'}>{g.authz.state}</Badge>
            {g.authz.endpoints.length > 0 && <span className="small"> → {g.authz.endpoints.join(', ')}</span>}
            {g.authz.reason && <span className="small"> {g.authz.reason}</span>}
          </li>
          {g.lastOperation && (
            <li className="small">
              Last reconcile: {g.lastOperation.status} {g.lastOperation.finishedAt ?? ''} {g.error ?? ''}
            </li>
          )}
          {curl && (
            <li>
              <code data-testid="gateway-curl">{curl}</code>{' '}
              <button type="button" className="btn btn-small" onClick={() => void navigator.clipboard?.writeText(curl)}>
                Copy
              </button>
            </li>
          )}
        </ul>
      )}
      <h3>Access keys</h3>
      {shown && (
        <p className="small" role="status" data-testid="gateway-new-key">
          Key {shown.name} (shown once): <code>{shown.key}</code>
        </p>
      )}
      {!mayReadKeys && (
        <p className="small muted" data-testid="gateway-keys-unavailable">
          Keys are not shown: {access.reason('cluster:gateway-key:read')}.
        </p>
      )}
      <ul className="plain" data-testid="gateway-keys">
        {keys.data?.items.map((k) => (
          <li key={k.name}>
            {k.name} <span className="small muted">created {k.createdAt}, last used {k.lastUsedAt ?? 'never'}</span>{' '}
            <button type="button" className="btn btn-small btn-danger" onClick={() => void revoke(k.name)} {...gate(access, 'cluster:gateway-key:delete', act.pending)} data-testid={`gateway-key-revoke-${k.name}`}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <form className="form inline-form" onSubmit={create}>
        <label className="field">
          <span>New key name</span>
          <input value={name} onChange={(e) => setName(e.target.value)} required pattern="[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?" data-testid="gateway-key-name" />
        </label>
        <button type="submit" className="btn" {...gate(access, 'cluster:gateway-key:create', !name || act.pending)} data-testid="gateway-key-create">
          Create key
        </button>
      </form>
      <ErrorNote error={st.error ?? keys.error ?? act.error} />
    </section>
  );
}
