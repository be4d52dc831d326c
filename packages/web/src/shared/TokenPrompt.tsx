import { type FormEvent, type ReactNode, useState } from 'react';

export interface TokenPromptProps {
  rejected: boolean;
  onSubmit: (token: string) => void;
  /** The heading; default the console's. */
  title?: string;
  /** Which token and how long it is kept; default the console's text. */
  children?: ReactNode;
  /** The button; default "Sign in". */
  submitLabel?: string;
}

/** Shown in place of the page when an API answered 401 (console and kind page): asks for the token once. */
export function TokenPrompt({ rejected, onSubmit, title = 'Sign in with a token', children, submitLabel = 'Sign in' }: TokenPromptProps) {
  const [value, setValue] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) onSubmit(value.trim());
  };
  return (
    <section className="card token-card" data-testid="token-prompt" aria-labelledby="token-title">
      <h1 id="token-title">{title}</h1>
      <p className="muted">
        {children ?? (
          <>
            The console’s APIs ask for a bearer token: a named token (<code>ironlens token create</code>, or an admin’s Tokens page) or <code>IRONLENS_CONSOLE_TOKEN</code>. It is kept in this browser
            tab only (session storage), until the tab closes or you choose “Sign out”.
          </>
        )}
      </p>
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>Token</span>
          <input type="password" autoComplete="off" data-testid="token-input" value={value} onChange={(e) => setValue(e.target.value)} required />
        </label>
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" data-testid="token-submit" disabled={!value.trim()}>
            {submitLabel}
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
