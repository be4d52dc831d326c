import { PageHeader } from '../../components/ui';

export function ClusterPage({ id }: { id: string }) {
  return <PageHeader title="ClusterPage" lead={`${id}: coming with the cluster manager API.`} />;
}
