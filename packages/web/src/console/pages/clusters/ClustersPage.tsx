import { PageHeader } from '../../components/ui';

export function ClustersPage() {
  return <PageHeader title="ClustersPage" lead="Coming with the cluster manager API." />;
}
