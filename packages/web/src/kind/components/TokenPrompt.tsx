import { type FormEvent, useState } from 'react';

/** Shown when the API answers 401: asks for the console token (kept in this tab's sessionStorage). */
export function TokenPrompt({ rejected, onSubmit }: { rejected: boolean; onSubmit: (token: string) => void }) {
  const [value, setValue] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) onSubmit(value.trim());
  };
  return (
    <section className="card token-card" data-testid="token-prompt">
      <h2>Console token required</h2>
      <p className="muted">
        This panel’s API asks for a bearer token (<code>IRONLENS_CONSOLE_TOKEN</code> or <code>KIND_K8S_TOKEN</code> on the server). It is kept in this browser tab only, until you close it or
        choose “Forget token”.
      </p>
      <form className="token-form" onSubmit={submit}>
        <label>
          Token
          <input type="password" autoComplete="off" data-testid="token-input" value={value} onChange={(e) => setValue(e.target.value)} required />
        </label>
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" data-testid="token-submit" disabled={!value.trim()}>
            Use token
          </button>
        </div>
      </form>
      {rejected && (
        <p className="form-error" data-testid="token-rejected">
          The token was refused (401). Check it and try again.
        </p>
      )}
    </section>
  );
}
