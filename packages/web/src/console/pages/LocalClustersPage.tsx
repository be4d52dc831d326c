import { PageHeader } from '../components/ui';
import { useConsole } from '../context';

/** The kind panel (seed 001), inside the console's navigation. Same origin: the token is shared. */
export function LocalClustersPage() {
  const { kindUrl } = useConsole();
  return (
    <>
      <PageHeader
        title="Local clusters (kind)"
        lead={
          <>
            The kind panel, framed. <a href={kindUrl}>Open it as a full page</a>.
          </>
        }
      />
      <iframe className="kind-frame" src={kindUrl} title="kind panel" data-testid="kind-frame" />
    </>
  );
}
