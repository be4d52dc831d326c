/**
 * Header with pill navigation; Swagger, ReDoc and Health open in their own named windows (a second
 * click reuses it). `onHealth` opens Health (it needs the token when one is set); `onForgetToken`
 * shows the "Forget token" control while a token is kept.
 */
export function NavBar({ homeUrl, docsUrl, redocUrl, onHealth, onForgetToken }: { homeUrl: string; docsUrl: string; redocUrl: string; onHealth: () => void; onForgetToken?: () => void }) {
  const open = (url: string, name: string) => () => {
    const w = window.open(url, name);
    w?.focus();
  };
  return (
    <header className="topbar">
      <div className="brand">
        <span className="brand-mark" aria-hidden="true">
          ⎈
        </span>
        <span>
          kind panel <small>ironlens</small>
        </span>
      </div>
      <nav className="nav" aria-label="Panel navigation">
        <a className="nav-pill active" href={homeUrl} aria-current="page">
          Dashboard
        </a>
        <button type="button" className="nav-pill" data-testid="nav-swagger" onClick={open(docsUrl, 'kind_swagger')}>
          Swagger
        </button>
        <button type="button" className="nav-pill" data-testid="nav-redoc" onClick={open(redocUrl, 'kind_redoc')}>
          ReDoc
        </button>
        <button type="button" className="nav-pill" data-testid="nav-health" onClick={onHealth}>
          Health
        </button>
        {onForgetToken && (
          <button type="button" className="nav-pill" data-testid="nav-forget-token" title="Remove the console token from this tab" onClick={onForgetToken}>
            Forget token
          </button>
        )}
      </nav>
    </header>
  );
}
