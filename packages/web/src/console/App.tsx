import { type ReactNode, useEffect, useState } from 'react';
import { TokenPrompt } from '../shared/TokenPrompt';
import { useConsoleToken } from '../shared/token';
import { AccessContext, accessOf, useWhoami } from './access';
import { ConsoleContext, type ConsoleEnv } from './context';
import { AccessPage } from './pages/AccessPage';
import { BootstrapListPage } from './pages/bootstrap/BootstrapListPage';
import { BootstrapRunPage } from './pages/bootstrap/BootstrapRunPage';
import { ClusterNewPage } from './pages/clusters/ClusterNewPage';
import { ClusterPage } from './pages/clusters/ClusterPage';
import { ClustersPage } from './pages/clusters/ClustersPage';
import { DeployWizardPage } from './pages/deployments/DeployWizardPage';
import { DeploymentPage } from './pages/deployments/DeploymentPage';
import { LocalClustersPage } from './pages/LocalClustersPage';
import { DevicesPage } from './pages/machines/DevicesPage';
import { OperationsPage } from './pages/machines/OperationsPage';
import { RolloutPage, RolloutsPage } from './pages/machines/RolloutsPage';
import { StoragePage } from './pages/machines/StoragePage';
import { WorkerPage } from './pages/machines/WorkerPage';
import { WorkersPage } from './pages/machines/WorkersPage';
import { Link, type Route, routeOf, useLocation } from './router';

interface NavItem {
  to: string;
  label: string;
  /** Pages that light this item up. */
  pages: Route['page'][];
}

const NAV: Array<{ group: string; items: NavItem[] }> = [
  {
    group: 'Machines',
    items: [
      { to: '/machines/devices', label: 'Devices', pages: ['devices'] },
      { to: '/machines/workers', label: 'Workers', pages: ['workers', 'worker'] },
      { to: '/machines/storage', label: 'Storage', pages: ['storage'] },
      { to: '/machines/rollouts', label: 'Rollouts', pages: ['rollouts', 'rollout'] },
      { to: '/machines/operations', label: 'Operations log', pages: ['operations'] },
    ],
  },
  {
    group: 'Kubernetes',
    items: [
      { to: '/clusters', label: 'Clusters', pages: ['clusters', 'cluster', 'deploy', 'deployment'] },
      { to: '/clusters/new', label: 'Register a cluster', pages: ['cluster-new'] },
      { to: '/bootstrap', label: 'Bootstrap', pages: ['bootstrap', 'bootstrap-run'] },
      { to: '/local-clusters', label: 'Local clusters (kind)', pages: ['local-clusters'] },
    ],
  },
  {
    group: 'Access',
    items: [{ to: '/access', label: 'Tokens', pages: ['access'] }],
  },
];

const TITLES: Record<Route['page'], string> = {
  devices: 'Devices',
  workers: 'Workers',
  worker: 'Worker',
  storage: 'Storage',
  operations: 'Operations log',
  rollouts: 'Rollouts',
  rollout: 'Rollout',
  clusters: 'Clusters',
  'cluster-new': 'Register a cluster',
  cluster: 'Cluster',
  deploy: 'Deploy a model',
  deployment: 'Model deployment',
  bootstrap: 'Bootstrap',
  'bootstrap-run': 'Bootstrap run',
  'local-clusters': 'Local clusters',
  access: 'Access tokens',
  'not-found': 'Not found',
};

function page(route: Route): ReactNode {
  switch (route.page) {
    case 'devices':
      return <DevicesPage />;
    case 'workers':
      return <WorkersPage />;
    case 'worker':
      return <WorkerPage id={route.id} />;
    case 'storage':
      return <StoragePage />;
    case 'operations':
      return <OperationsPage />;
    case 'rollouts':
      return <RolloutsPage />;
    case 'rollout':
      return <RolloutPage id={route.id} />;
    case 'clusters':
      return <ClustersPage />;
    case 'cluster-new':
      return <ClusterNewPage />;
    case 'cluster':
      return <ClusterPage id={route.id} />;
    case 'deploy':
      return <DeployWizardPage clusterId={route.id} />;
    case 'deployment':
      return <DeploymentPage id={route.id} />;
    case 'bootstrap':
      return <BootstrapListPage />;
    case 'bootstrap-run':
      return <BootstrapRunPage id={route.id} />;
    case 'local-clusters':
      return <LocalClustersPage />;
    case 'access':
      return <AccessPage />;
    default:
      return (
        <section className="card">
          <h1>Page not found</h1>
          <p>
            Nothing lives at this address. Start from <Link to="/machines/devices">the device pool</Link>.
          </p>
        </section>
      );
  }
}

export function App({ env }: { env: ConsoleEnv }) {
  const { path } = useLocation();
  const route = routeOf(path);
  const tokenState = useConsoleToken(env.token);
  const who = useWhoami(env.auth, tokenState.token);
  const [menuOpen, setMenuOpen] = useState(false);
  // Close the menu and retitle on every navigation.
  useEffect(() => {
    setMenuOpen(false);
    document.title = `${TITLES[route.page]} · ironlens console`;
  }, [path]);

  return (
    <ConsoleContext.Provider value={env}>
      <AccessContext.Provider value={accessOf(who)}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <div className="shell">
        <header className="topbar">
          <Link to="/machines/devices" className="brand">
            <span className="brand-mark" aria-hidden="true">
              il
            </span>
            <span>
              ironlens <small>console</small>
            </span>
          </Link>
          <button type="button" className="btn btn-ghost menu-toggle" aria-expanded={menuOpen} aria-controls="sidenav" onClick={() => setMenuOpen((o) => !o)} data-testid="menu-toggle">
            Menu
          </button>
        </header>
        <nav id="sidenav" className={`sidenav${menuOpen ? ' open' : ''}`} aria-label="Console">
          {NAV.map((g) => (
            <div key={g.group} className="nav-group">
              <h2 className="nav-group-title">{g.group}</h2>
              <ul>
                {g.items.map((it) => {
                  const active = it.pages.includes(route.page);
                  return (
                    <li key={it.to}>
                      <Link to={it.to} className={`nav-link${active ? ' active' : ''}`} aria-current={active ? 'page' : undefined} data-testid={`nav-${it.to.replace(/\//g, '-').slice(1)}`}>
                        {it.label}
                      </Link>
                    </li>
                  );
                })}
              </ul>
            </div>
          ))}
          <div className="nav-group">
            <h2 className="nav-group-title">More</h2>
            <ul>
              <li>
                <a className="nav-link" href={env.kindUrl} data-testid="nav-kind-panel">
                  kind panel (full page)
                </a>
              </li>
              <li>
                <a className="nav-link" href={env.docsUrl} target="_blank" rel="noreferrer">
                  API docs (Swagger)
                </a>
              </li>
              <li>
                <a className="nav-link" href={env.redocUrl} target="_blank" rel="noreferrer">
                  API docs (ReDoc)
                </a>
              </li>
            </ul>
          </div>
          {who && who.name !== 'anonymous' && (
            <p className="signed-in muted" data-testid="signed-in">
              Signed in as <strong>{who.name}</strong> ({who.role})
            </p>
          )}
          {tokenState.token && (
            <button type="button" className="btn btn-ghost forget" onClick={() => env.token.forget()} data-testid="forget-token" title="Remove the token from this tab">
              Sign out
            </button>
          )}
        </nav>
        <main id="main" className="main" tabIndex={-1}>
          {tokenState.required && !tokenState.token ? (
            <TokenPrompt rejected={tokenState.rejected} onSubmit={(t) => env.token.set(t)} />
          ) : (
            // A new token remounts the page, so everything is fetched again with it.
            <div key={tokenState.token ?? 'no-token'} className="page">
              {page(route)}
            </div>
          )}
        </main>
      </div>
      </AccessContext.Provider>
    </ConsoleContext.Provider>
  );
}
