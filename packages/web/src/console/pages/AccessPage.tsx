import { type FormEvent, useState } from 'react';
import { usePoll } from '../../shared/use-poll';
import { useAccess } from '../access';
import { DataTable } from '../components/tables';
import { Badge, Dialog, ErrorNote, PageHeader, ScrollBox, when } from '../components/ui';
import { useConsole } from '../context';

const ROLES = ['viewer', 'operator', 'admin'] as const;

/** Named tokens (issue 20): admins create them (the token shown once, with a copy button) and revoke them. */
export function AccessPage() {
  const { auth } = useConsole();
  const access = useAccess();
  const allowed = access.can('auth:token:admin');
  const list = usePoll(() => (allowed ? auth.listTokens() : Promise.resolve({ tokens: [] })), 10_000, [allowed]);
  const [name, setName] = useState('');
  const [role, setRole] = useState<(typeof ROLES)[number]>('viewer');
  const [expires, setExpires] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; token: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<string | null>(null);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const t = await auth.createToken({ name: name.trim(), role, ...(expires.trim() ? { expires: expires.trim() } : {}) });
      setCreated({ name: t.name, token: t.token });
      setCopied(false);
      setName('');
      setExpires('');
      await list.refresh();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const revoke = async (n: string) => {
    setError(null);
    try {
      await auth.revokeToken(n);
      setRevoking(null);
      await list.refresh();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const copy = async () => {
    if (!created) return;
    try {
      await navigator.clipboard.writeText(created.token);
      setCopied(true);
    } catch {
      // No clipboard permission: the field is selected for a manual copy.
      (document.getElementById('created-token') as HTMLInputElement | null)?.select();
    }
  };

  if (!allowed) {
    return (
      <>
        <PageHeader title="Access tokens" />
        <section className="card">
          <p className="muted" data-testid="access-denied">
            Only an admin manages tokens: {access.reason('auth:token:admin')}.
          </p>
        </section>
      </>
    );
  }
  return (
    <>
      <PageHeader title="Access tokens" lead="Named API tokens with a role. A token is shown once, when it is created; the server keeps only its hash." />
      <section className="card" aria-labelledby="new-token-title">
        <h2 id="new-token-title">New token</h2>
        <form className="form" onSubmit={create} data-testid="token-create-form">
          <label className="field">
            <span>Name</span>
            <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} data-testid="new-token-name" />
          </label>
          <label className="field">
            <span>Role</span>
            <select value={role} onChange={(e) => setRole(e.target.value as (typeof ROLES)[number])} data-testid="new-token-role">
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Expires after (optional: 10s, 5m, 12h, 30d)</span>
            <input value={expires} onChange={(e) => setExpires(e.target.value)} maxLength={16} data-testid="new-token-expires" />
          </label>
          <div className="form-actions">
            <button type="submit" className="btn btn-primary" disabled={!name.trim()} data-testid="new-token-submit">
              Create token
            </button>
          </div>
        </form>
        <ErrorNote error={error} testId="access-error" />
        {created && (
          <div className="created-token" data-testid="created-token-box">
            <p>
              Token <strong>{created.name}</strong>: copy it now, it is not shown again.
            </p>
            <label className="field">
              <span>Token</span>
              <input id="created-token" readOnly value={created.token} onFocus={(e) => e.target.select()} className="mono" data-testid="created-token" />
            </label>
            <div className="form-actions">
              <button type="button" className="btn" onClick={() => void copy()} data-testid="copy-token">
                {copied ? 'Copied' : 'Copy'}
              </button>
              <button type="button" className="btn btn-ghost" onClick={() => setCreated(null)} data-testid="dismiss-token">
                Done
              </button>
            </div>
          </div>
        )}
      </section>
      <section className="card" aria-labelledby="tokens-title">
        <h2 id="tokens-title">Tokens</h2>
        <ErrorNote error={list.error} testId="tokens-error" />
        <ScrollBox label="Scrollable table">
          <DataTable
            caption="Named tokens"
            columns={['Name', 'Role', 'Created', 'Expires', 'Last used', 'State', <span key="a" className="sr-only">Actions</span>]}
            testId="tokens-table"
            rows={(list.data?.tokens ?? []).map((t) => ({
              key: t.name,
              testId: `token-row-${t.name}`,
              cellClass: [undefined, undefined, 'nowrap', 'nowrap', 'nowrap'],
              cells: [
                t.name,
                t.role,
                when(t.created_at),
                t.expires_at ? when(t.expires_at) : '—',
                t.last_used_at ? when(t.last_used_at) : '—',
                t.revoked_at ? (
                  <Badge key="s" tone="muted">
                    revoked
                  </Badge>
                ) : (
                  <Badge key="s" tone="good">
                    active
                  </Badge>
                ),
                !t.revoked_at && (
                  <button key="r" type="button" className="btn btn-small btn-danger" onClick={() => setRevoking(t.name)} data-testid={`revoke-${t.name}`} aria-label={`Revoke ${t.name}`}>
                    Revoke
                  </button>
                ),
              ],
            }))}
          />
        </ScrollBox>
      </section>
      <Dialog title="Revoke token" open={!!revoking} onClose={() => setRevoking(null)} testId="revoke-dialog">
        <p>
          Revoke <strong>{revoking}</strong>? Every request with it is refused within a second, on every replica.
        </p>
        <div className="form-actions">
          <button type="button" className="btn btn-danger" onClick={() => revoking && void revoke(revoking)} data-testid="revoke-confirm">
            Revoke
          </button>
          <button type="button" className="btn btn-ghost" onClick={() => setRevoking(null)}>
            Cancel
          </button>
        </div>
      </Dialog>
    </>
  );
}
