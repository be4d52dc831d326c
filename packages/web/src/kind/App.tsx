import { useCallback, useEffect, useState } from 'react';
import { isActive, type KindApi } from './api';
import { ClustersTable } from './components/ClustersTable';
import { CreateForm } from './components/CreateForm';
import { EnvironmentCard } from './components/EnvironmentCard';
import { JobsTable } from './components/JobsTable';
import { NavBar } from './components/NavBar';
import { WorkloadsModal } from './components/WorkloadsModal';
import { usePoll } from './use-poll';

/** Tables refresh about every 3.5 s, as the original panel does. */
export const REFRESH_MS = 3500;

export function App({ api, docsUrl, redocUrl }: { api: KindApi; docsUrl: string; redocUrl: string }) {
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

  return (
    <>
      <NavBar homeUrl={`${api.base.replace(/\/api\/v1$/, '')}/`} healthUrl={`${api.base}/health`} docsUrl={docsUrl} redocUrl={redocUrl} />
      <main className="page">
        <EnvironmentCard health={health.data} healthError={health.error} stats={stats.data} apiBase={api.base} onRefresh={() => void Promise.all([health.refresh(), refreshAll()])} />
        <CreateForm api={api} onChanged={refreshAll} />
        <ClustersTable api={api} clusters={clusters.data} error={clusters.error} onShowWorkloads={setModal} onChanged={refreshAll} />
        <JobsTable api={api} jobs={jobs.data} error={jobs.error} onChanged={refreshAll} />
      </main>
      {modal !== null && <WorkloadsModal api={api} name={modal} onClose={() => setModal(null)} />}
    </>
  );
}
