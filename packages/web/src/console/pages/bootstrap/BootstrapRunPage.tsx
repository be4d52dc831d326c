import { PageHeader } from '../../components/ui';

export function BootstrapRunPage({ id }: { id: string }) {
  return <PageHeader title="BootstrapRunPage" lead={`${id}: coming with the cluster manager API.`} />;
}
