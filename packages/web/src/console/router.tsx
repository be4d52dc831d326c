import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from 'react';

/** Client-side routing over the History API: every page has its own URL, deep links work. */

const listeners = new Set<() => void>();
const notify = () => {
  for (const l of listeners) l();
};
if (typeof window !== 'undefined') window.addEventListener('popstate', notify);

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.scrollTo(0, 0);
  notify();
}

const subscribe = (l: () => void) => {
  listeners.add(l);
  return () => listeners.delete(l);
};
const snapshot = () => location.pathname + location.search;

/** The current path and query, re-rendered on every navigation. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const full = useSyncExternalStore(subscribe, snapshot);
  const q = full.indexOf('?');
  const path = (q === -1 ? full : full.slice(0, q)).replace(/\/+$/, '') || '/';
  return { path, search: new URLSearchParams(q === -1 ? '' : full.slice(q)) };
}

/** An `<a>` that navigates inside the app (a modified click opens a tab as usual). */
export function Link({ to, onClick, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={click} {...rest} />;
}

export type Route =
  | { page: 'devices' }
  | { page: 'workers' }
  | { page: 'worker'; id: string }
  | { page: 'storage' }
  | { page: 'operations' }
  | { page: 'rollouts' }
  | { page: 'rollout'; id: string }
  | { page: 'clusters' }
  | { page: 'cluster-new' }
  | { page: 'cluster'; id: string }
  | { page: 'deploy'; id: string }
  | { page: 'deployment'; id: string }
  | { page: 'bootstrap' }
  | { page: 'bootstrap-run'; id: string }
  | { page: 'local-clusters' }
  | { page: 'access' }
  | { page: 'not-found' };

/** The page a path names. `/` and `/machines` open the device pool. */
export function routeOf(path: string): Route {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const [a, b, c, d] = parts;
  if (!a) return { page: 'devices' };
  if (a === 'machines') {
    if (!b || (b === 'devices' && !c)) return { page: 'devices' };
    if (b === 'workers' && !c) return { page: 'workers' };
    if (b === 'workers' && c && !d) return { page: 'worker', id: c };
    if (b === 'storage' && !c) return { page: 'storage' };
    if (b === 'operations' && !c) return { page: 'operations' };
    if (b === 'rollouts' && !c) return { page: 'rollouts' };
    if (b === 'rollouts' && c && !d) return { page: 'rollout', id: c };
  }
  if (a === 'clusters') {
    if (!b) return { page: 'clusters' };
    if (b === 'new' && !c) return { page: 'cluster-new' };
    if (!c) return { page: 'cluster', id: b };
    if (c === 'deploy' && !d) return { page: 'deploy', id: b };
  }
  if (a === 'deployments' && b && !c) return { page: 'deployment', id: b };
  if (a === 'bootstrap') {
    if (!b) return { page: 'bootstrap' };
    if (!c) return { page: 'bootstrap-run', id: b };
  }
  if (a === 'local-clusters' && !b) return { page: 'local-clusters' };
  if (a === 'access' && !b) return { page: 'access' };
  return { page: 'not-found' };
}
