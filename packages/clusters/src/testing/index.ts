// Test helpers of the cluster manager for other packages' tests (never imported by production code).
export { emptyClusterAnswers, type HostileAnswer, HostileApiServer } from './hostile-api-server';
export { upstreamGatewayApiObjects } from './upstream-crd-bundles';
export { FakeHelm } from './fake-helm';
