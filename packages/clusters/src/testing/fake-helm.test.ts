import { FakeHelm } from './fake-helm';
import { helmContract } from './helm.contract';

// The Helm contract against the FAKE (the same suite runs against the real helm and chart mirror
// in gateway.kube.test.ts): the payload processor's chart as the mirror's index holds it.
const mirror = { 'payload-processor': ['0.1.0'] };
const fake = new FakeHelm(mirror);
helmContract('FakeHelm', () => ({
  helm: fake,
  helmWithoutMirror: new FakeHelm(null),
  kubeconfig: 'apiVersion: v1\nkind: Config\n',
  namespace: 'helm-contract',
  chart: { name: 'payload-processor', version: 'v0.1.0', reported: '0.1.0' },
  values: { payloadProcessor: { name: 'contract-ipp', port: 9004 }, provider: { name: 'none' }, inferenceGateway: { name: 'contract-gw' } },
  otherValues: { payloadProcessor: { name: 'contract-ipp', port: 9005 }, provider: { name: 'none' } },
}));
