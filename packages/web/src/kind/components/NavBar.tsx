/** Header with pill navigation; Swagger, ReDoc and Health open in their own named windows (a second click reuses it). */
export function NavBar({ homeUrl, healthUrl, docsUrl, redocUrl }: { homeUrl: string; healthUrl: string; docsUrl: string; redocUrl: string }) {
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
        <button type="button" className="nav-pill" data-testid="nav-health" onClick={open(healthUrl, 'kind_health')}>
          Health
        </button>
      </nav>
    </header>
  );
}
