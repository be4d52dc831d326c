import { PageHeader } from '../../components/ui';

export function ClusterNewPage() {
  return <PageHeader title="ClusterNewPage" lead="Coming with the cluster manager API." />;
}
