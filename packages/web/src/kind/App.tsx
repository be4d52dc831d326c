import { useCallback, useEffect, useState } from 'react';
import { TokenPrompt } from '../shared/TokenPrompt';
import { type ConsoleToken, useConsoleToken } from '../shared/token';
import { usePoll } from '../shared/use-poll';
import { isActive, type KindApi } from './api';
import { ClustersTable } from './components/ClustersTable';
import { CreateForm } from './components/CreateForm';
import { EnvironmentCard } from './components/EnvironmentCard';
import { JobsTable } from './components/JobsTable';
import { NavBar } from './components/NavBar';
import { WorkloadsModal } from './components/WorkloadsModal';

/** Tables refresh about every 3.5 s, as the original panel does. */
export const REFRESH_MS = 3500;

export function App({ api, token, docsUrl, redocUrl }: { api: KindApi; token: ConsoleToken; docsUrl: string; redocUrl: string }) {
  const auth = useConsoleToken(token);
  const health = usePoll(api.health, 15_000);
  const stats = usePoll(api.stats, REFRESH_MS);
  const clusters = usePoll(api.clusters, REFRESH_MS);
  const [jobsFast, setJobsFast] = useState(false);
  // While a job runs, its row follows it more closely.
  const jobs = usePoll(() => api.jobs(30), jobsFast ? 1000 : REFRESH_MS);
  const anyActive = jobs.data?.some(isActive) ?? false;
  useEffect(() => setJobsFast(anyActive), [anyActive]);
  const [modal, setModal] = useState<string | null>(null);

  const refreshAll = useCallback(async () => {
    await Promise.all([stats.refresh(), clusters.refresh(), jobs.refresh()]);
  }, [stats.refresh, clusters.refresh, jobs.refresh]);

  // A new token: fetch everything again at once rather than at the next tick.
  const healthRefresh = health.refresh;
  useEffect(() => {
    if (auth.token) void Promise.all([healthRefresh(), refreshAll()]);
  }, [auth.token, healthRefresh, refreshAll]);

  const openHealth = () => {
    // Opened now (inside the click, so no popup blocker), filled when the answer is in.
    const w = window.open(auth.token ? '' : api.healthUrl, 'kind_health');
    w?.focus();
    if (!auth.token || !w) return;
    api.health().then(
      (h) => {
        w.location.href = URL.createObjectURL(new Blob([JSON.stringify(h, null, 2)], { type: 'application/json' }));
      },
      (e) => {
        w.document.body.textContent = (e as Error).message;
      },
    );
  };

  const locked = auth.required && !auth.token;
  return (
    <>
      <NavBar homeUrl={`${api.base.replace(/\/api\/v1$/, '')}/`} docsUrl={docsUrl} redocUrl={redocUrl} onHealth={openHealth} onForgetToken={
          auth.token
            ? () => {
                token.forget();
                void refreshAll();
              }
            : undefined
        } />
      <main className="page">
        {locked ? (
          <TokenPrompt rejected={auth.rejected} onSubmit={(t) => token.set(t)} title="Console token required" submitLabel="Use token">
            This panel’s API asks for a bearer token (<code>IRONLENS_CONSOLE_TOKEN</code> or <code>KIND_K8S_TOKEN</code> on the server). It is kept in this browser tab only, until you close it or
            choose “Forget token”.
          </TokenPrompt>
        ) : (
          <>
            <EnvironmentCard health={health.data} healthError={health.error} stats={stats.data} apiBase={api.base} onRefresh={() => void Promise.all([health.refresh(), refreshAll()])} />
            <CreateForm api={api} onChanged={refreshAll} />
            <ClustersTable api={api} clusters={clusters.data} error={clusters.error} onShowWorkloads={setModal} onChanged={refreshAll} />
            <JobsTable api={api} jobs={jobs.data} error={jobs.error} onChanged={refreshAll} />
          </>
        )}
      </main>
      {modal !== null && !locked && <WorkloadsModal api={api} name={modal} onClose={() => setModal(null)} />}
    </>
  );
}
