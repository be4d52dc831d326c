import { type FormEvent, useState } from 'react';

/** Shown in place of the page when an API answered 401: asks for the console token once. */
export function TokenPrompt({ rejected, onSubmit }: { rejected: boolean; onSubmit: (token: string) => void }) {
  const [value, setValue] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) onSubmit(value.trim());
  };
  return (
    <section className="card token-card" data-testid="token-prompt" aria-labelledby="token-title">
      <h1 id="token-title">Sign in with a token</h1>
      <p className="muted">
        The console’s APIs ask for a bearer token: a named token (<code>ironlens token create</code>, or an admin’s Tokens page) or <code>IRONLENS_CONSOLE_TOKEN</code>. It is kept in this browser tab
        only (session storage), until the tab closes or you choose “Sign out”.
      </p>
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Token</span>
          <input type="password" autoComplete="off" data-testid="token-input" value={value} onChange={(e) => setValue(e.target.value)} required />
        </label>
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" data-testid="token-submit" disabled={!value.trim()}>
            Sign in
          </button>
        </div>
      </form>
      {rejected && (
        <p className="error-note" role="alert" data-testid="token-rejected">
          The token was refused (401). Check it and try again.
        </p>
      )}
    </section>
  );
}
