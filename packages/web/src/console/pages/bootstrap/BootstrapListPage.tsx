import { PageHeader } from '../../components/ui';

export function BootstrapListPage() {
  return <PageHeader title="BootstrapListPage" lead="Coming with the cluster manager API." />;
}
